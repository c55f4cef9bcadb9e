// Shared by the libFuzzer targets: importing bytes from memory with small limits, and inputs for a
// stored signature filled with deterministic but varied values (small integers, extremes, NaN).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "format/bytes.h"
#include "kiln/export.h"
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

}  // namespace kiln_fuzz
