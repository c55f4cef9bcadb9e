// Hand-built .mlxfn files for the hostile-file tests: a small writer over format::ByteWriter that
// can say anything the format can (wrong counts, undefined ids, bad codes), and helpers that import
// bytes from memory and return the error text.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "format/codec.h"
#include "format/record.h"
#include "kiln/export.h"
#include "test_export_util.h"
#include "test_util.h"
#include "trace/tape.h"

namespace kiln_test {

using test_util::kSanitized;

class FileBuilder {
 public:
  using Fmt = kiln::format::ByteWriter;
  explicit FileBuilder(int32_t count = 1, bool shapeless = false) {
    kiln::format::write_header(w, kiln::format::kV0_30_1, count, shapeless);
  }
  // F1-F5: keyword names, inputs (id, spec), output ids and the tape length.
  FileBuilder& record(const std::vector<std::pair<uint64_t, kiln::ArraySpec>>& inputs,
                      const std::vector<uint64_t>& outputs, uint64_t tape_len,
                      const std::vector<std::string>& kwargs = {}) {
    w.u64(kwargs.size());
    for (auto& k : kwargs) w.str(k);
    w.u64(inputs.size());
    for (auto& [id, s] : inputs) w.u64(id);
    w.u64(inputs.size());
    for (auto& [id, s] : inputs) {
      kiln::format::write_shape(w, s.shape);
      kiln::format::write_dtype(w, s.dtype);
    }
    kiln::format::write_ids(w, outputs);
    w.u64(tape_len);
    return *this;
  }
  FileBuilder& input_ref(uint64_t id) {
    w.u64(id);
    w.boolean(false);
    w.boolean(false);
    return *this;
  }
  // A constant with its payload (first occurrence) or a later reference (payload empty, spec unused).
  FileBuilder& constant(uint64_t id, const kiln::ArraySpec& s, const std::vector<uint8_t>& payload) {
    w.u64(id);
    w.boolean(false);
    w.boolean(true);
    kiln::format::write_shape(w, s.shape);
    kiln::format::write_dtype(w, s.dtype);
    w.raw(payload.data(), payload.size());
    return *this;
  }
  FileBuilder& constant_ref(uint64_t id) {
    w.u64(id);
    w.boolean(false);
    w.boolean(true);
    return *this;
  }
  // A single-output node; `state` writes the state bytes.
  FileBuilder& node(uint64_t id, const std::string& name, const std::vector<uint64_t>& inputs, const kiln::ArraySpec& out,
                    const std::function<void(Fmt&)>& state = {}) {
    node_head(id, name, inputs, state);
    w.u64(0);
    kiln::format::write_shape(w, out.shape);
    kiln::format::write_dtype(w, out.dtype);
    return *this;
  }
  FileBuilder& multi_node(uint64_t id, const std::string& name, const std::vector<uint64_t>& inputs,
                          const std::vector<uint64_t>& out_ids, const std::vector<kiln::ArraySpec>& outs,
                          const std::function<void(Fmt&)>& state = {}) {
    node_head(id, name, inputs, state);
    w.u64(out_ids.size() - 1);
    kiln::format::write_ids(w, out_ids);
    w.u64(outs.size());
    for (auto& s : outs) kiln::format::write_shape(w, s.shape);
    w.u64(outs.size());
    for (auto& s : outs) kiln::format::write_dtype(w, s.dtype);
    return *this;
  }
  std::vector<uint8_t> bytes() const { return w.flatten(); }

  Fmt w;

 private:
  void node_head(uint64_t id, const std::string& name, const std::vector<uint64_t>& inputs,
                 const std::function<void(Fmt&)>& state) {
    w.u64(id);
    w.boolean(true);
    kiln::format::write_ids(w, inputs);
    kiln::format::write_stream(w, {0, 0, 0});
    w.str(name);
    if (state) state(w);
  }
};

inline kiln::ImportedFunction import_bytes(const std::vector<uint8_t>& bytes,
                                           const kiln::ImportOptions& o = kiln::ImportOptions{}) {
  return kiln::detail::import_source(std::make_shared<kiln::format::MemorySource>(bytes, "<test>"), o);
}

// The error text of importing `bytes`, or "" when the file imports.
inline std::string import_error(const std::vector<uint8_t>& bytes, const kiln::ImportOptions& o = kiln::ImportOptions{}) {
  try {
    import_bytes(bytes, o);
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

inline std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace kiln_test
