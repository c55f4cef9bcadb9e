// The bodies of the libFuzzer targets, shared with tests/unit/test_regress.cpp (which replays every
// committed finding): each returns "" when the input was handled (accepted, or refused with kiln's
// error) and otherwise says what went wrong; a crash or sanitizer report is a finding by itself.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <stdexcept>
#include <string>

#include "core/kernels.h"
#include "format/bytes.h"
#include "format/codec.h"
#include "format/validate.h"
#include "kiln/export.h"
#include "kiln/primitive.h"
#include "trace/tape.h"

namespace kiln_fuzz {

// Small limits keep each run fast: every recorded array is at most 256 KiB.
inline kiln::ImportOptions fuzz_options() {
  kiln::ImportOptions o;
  o.max_array_bytes = 256 << 10;
  o.max_call_bytes = 4 << 20;
  return o;
}

inline kiln::ImportedFunction import_bytes(const uint8_t* data, size_t size, const kiln::ImportOptions& o) {
  auto src = std::make_shared<kiln::format::MemorySource>(std::vector<uint8_t>(data, data + size), "<fuzz>");
  return kiln::detail::import_source(std::move(src), o);
}

// An input of `spec`: raw bytes from a small generator (so floats include NaN, Inf and huge values),
// every other element replaced by a small integer in [-4, 4] (useful as an index).
inline kiln::array make_input(const kiln::ArraySpec& spec, uint64_t seed) {
  kiln::array a(spec.shape, spec.dtype);
  auto* p = static_cast<uint8_t*>(a.raw_data());
  size_t n = a.size(), w = spec.dtype.size;
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    uint8_t* e = p + i * w;
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = s >> 11;
    if (spec.dtype == kiln::bool_) {
      e[0] = r & 1;
    } else if (i % 2 == 0) {
      std::memcpy(e, &r, std::min<size_t>(w, sizeof r));
    } else {
      int32_t v = static_cast<int32_t>(r % 9) - 4;
      kiln::convert_values(&v, kiln::int32, e, spec.dtype, 1);
    }
  }
  return a;
}

// fuzz_reader: parse and validate, then build the FileInfo (what `kiln inspect` prints).
inline std::string check_reader(const uint8_t* data, size_t size) {
  try {
    auto f = import_bytes(data, size, kiln::ImportOptions{});
    size_t n = 0;
    for (auto& fn : f.info().functions) n += fn.tape.size() + fn.outputs.size();
    (void)n;
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return "";
}

// fuzz_run: import with small limits and run every stored function (at most 4) on inputs of its
// recorded signature. Outputs must have the dtypes, and unless shapeless the shapes, the validated
// file records.
inline std::string check_run(const uint8_t* data, size_t size) {
  constexpr uint64_t kMaxInputBytes = 256 << 10;  // the recorded input shapes are not limited by ImportOptions
  std::unique_ptr<kiln::ImportedFunction> f;
  try {
    f = std::make_unique<kiln::ImportedFunction>(import_bytes(data, size, fuzz_options()));
  } catch (const std::invalid_argument&) {
    return "";
  } catch (const std::runtime_error&) {
    return "";
  }
  const auto& info = f->info();
  size_t runs = 0;
  for (auto& fn : info.functions) {
    if (++runs > 4) break;
    uint64_t bytes = 0;
    for (auto& s : fn.inputs) bytes += std::min<uint64_t>(kiln::format::spec_bytes(s), kMaxInputBytes + 1);
    if (bytes > kMaxInputBytes) continue;
    kiln::Args args;
    kiln::Kwargs kwargs;
    for (size_t i = 0; i < fn.inputs.size(); ++i) {
      auto a = make_input(fn.inputs[i], i);
      if (i < fn.num_positional()) {
        args.push_back(a);
      } else {
        kwargs.emplace(fn.kwarg_keys[i - fn.num_positional()], a);
      }
    }
    try {
      auto outs = (*f)(args, kwargs);
      kiln::eval(outs);
      if (outs.size() != fn.outputs.size()) return "wrong number of outputs";
      for (size_t k = 0; k < outs.size(); ++k) {
        if (!outs[k].is_available()) return "an output was not evaluated";
        if (outs[k].dtype() != fn.outputs[k].dtype) return "an output has another dtype than recorded";
        if (!info.shapeless && outs[k].shape() != fn.outputs[k].shape) return "an output has another shape than recorded";
      }
    } catch (const std::invalid_argument&) {
    } catch (const std::runtime_error&) {
    }
  }
  return "";
}

// fuzz_node: one primitive node without the file around it. Layout: u8 row · u8 n_inputs (0-4) ·
// per input: u8 ndim (0-4), ndim x u8 dim (0-7), u8 dtype code · the row's state bytes (file codec)
// · anything after the state is ignored. The row's rule must accept or refuse with kiln's error; when
// it accepts small arrays, the CPU kernel runs on varied input values.
inline std::string check_node(const uint8_t* data, size_t size) {
  constexpr uint64_t kMaxBytes = 64 << 10;
  static const std::vector<const kiln::PrimitiveDef*> rows = [] {
    std::vector<const kiln::PrimitiveDef*> out;
    for (auto* d : kiln::registry::all()) {
      if (!(d->flags & kiln::kNotSerializable)) out.push_back(d);
    }
    return out;
  }();
  if (size < 2) return "";
  const kiln::PrimitiveDef& def = *rows[data[0] % rows.size()];
  size_t n_in = data[1] % 5, p = 2;
  std::vector<kiln::ArraySpec> in;
  for (size_t i = 0; i < n_in; ++i) {
    if (p >= size) return "";
    kiln::ArraySpec s;
    size_t nd = data[p++] % 5;
    for (size_t k = 0; k < nd; ++k) {
      if (p >= size) return "";
      s.shape.push_back(data[p++] % 8);
    }
    if (p >= size) return "";
    s.dtype = kiln::dtype_from_code(data[p++] % kiln::Dtype::num_types);
    in.push_back(std::move(s));
  }
  if (static_cast<int>(n_in) < def.min_inputs || (def.max_inputs >= 0 && static_cast<int>(n_in) > def.max_inputs)) {
    return "";
  }
  try {
    kiln::format::MemorySource src(std::vector<uint8_t>(data + p, data + size));
    kiln::format::ByteReader r(src);
    kiln::State state = kiln::format::read_state(r, def, kiln::format::kV0_30_1);
    if (!def.infer) return "";  // outputs come from a record: the file targets cover these rows
    std::vector<kiln::ArraySpec> out = def.infer(state, in);
    if (def.num_outputs >= 0 && out.size() != static_cast<size_t>(def.num_outputs)) {
      return def.name + ": the rule gives " + std::to_string(out.size()) + " outputs";
    }
    if (def.check) def.check(state, in, out);
    (void)def.display_name(state);
    (void)kiln::format::state_text(def, state);
    uint64_t bytes = 0;
    for (auto& s : out) bytes += std::min(kiln::format::spec_bytes(s), kMaxBytes + 1);
    for (auto& s : in) bytes += kiln::format::spec_bytes(s);
    if (bytes > kMaxBytes || !kiln::detail::kernels_for(kiln::Device{}).find(def)) return "";
    std::vector<kiln::array> inputs;
    for (size_t i = 0; i < in.size(); ++i) inputs.push_back(make_input(in[i], i + size));
    auto outs = kiln::make_arrays(def, state, inputs, out, kiln::Stream{});
    kiln::eval(outs);
    for (size_t k = 0; k < outs.size(); ++k) {
      if (!outs[k].is_available() || outs[k].shape() != out[k].shape || outs[k].dtype() != out[k].dtype) {
        return def.name + ": output " + std::to_string(k) + " differs from what the rule said";
      }
    }
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  }
  return "";
}

}  // namespace kiln_fuzz
