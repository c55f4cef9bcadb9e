// Helpers for the fast-row, quantized and graph-rewrite tests: deterministic data, values as doubles, closeness
// checks, and a minimal .npy reader for the MLX golden files (little-endian, C order, plain dtypes).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <kiln/kiln.h>

#include "core/row_patterns.h"

namespace fast_test {

// The evaluator's graph rewrite passes (row patterns, products over a concatenation, slice pushdown) on or
// off for a scope (KILN_PATTERNS's switch), restored on leaving it.
struct RewritePasses {
  explicit RewritePasses(bool on) { kiln::detail::set_row_patterns_enabled(on); }
  ~RewritePasses() { kiln::detail::set_row_patterns_enabled(true); }
  RewritePasses(const RewritePasses&) = delete;
  RewritePasses& operator=(const RewritePasses&) = delete;
};

namespace mx = kiln;

// Deterministic values in [lo, hi).
inline std::vector<float> randu(size_t n, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::vector<float> v(n);
  uint64_t s = 0x9E3779B97F4A7C15ull ^ (uint64_t(seed) * 0xBF58476D1CE4E5B9ull);
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = lo + (hi - lo) * static_cast<float>((s >> 40) & 0xFFFFFF) / 16777216.0f;
  }
  return v;
}

inline size_t numel(const mx::Shape& s) {
  size_t n = 1;
  for (int d : s) n *= static_cast<size_t>(d);
  return n;
}

// A dtype array from deterministic float data (rounded to the dtype), evaluated.
inline mx::array rand_array(const mx::Shape& shape, mx::Dtype t, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  mx::array a(randu(numel(shape), seed, lo, hi), shape, mx::float32);
  a = mx::astype(a, t);
  a.eval();
  return a;
}

// Logical row-major values of any array (any strides) as doubles.
inline std::vector<double> vals(mx::array a) {
  a.eval();
  std::vector<double> out(a.size());
  const auto& sh = a.shape();
  const auto& st = a.strides();
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t off = 0, r = static_cast<int64_t>(i);
    for (int d = static_cast<int>(sh.size()) - 1; d >= 0; --d) {
      off += (r % sh[d]) * st[d];
      r /= sh[d];
    }
    const char* p = static_cast<const char*>(a.raw_data()) + off * static_cast<int64_t>(a.itemsize());
    double v = 0;
    switch (a.dtype().val) {
      case mx::Dtype::Val::float16: { mx::float16_t h; std::memcpy(&h, p, 2); v = float(h); break; }
      case mx::Dtype::Val::bfloat16: { mx::bfloat16_t h; std::memcpy(&h, p, 2); v = float(h); break; }
      case mx::Dtype::Val::float32: { float f; std::memcpy(&f, p, 4); v = f; break; }
      case mx::Dtype::Val::float64: { std::memcpy(&v, p, 8); break; }
      case mx::Dtype::Val::int32: { int32_t x; std::memcpy(&x, p, 4); v = x; break; }
      case mx::Dtype::Val::uint32: { uint32_t x; std::memcpy(&x, p, 4); v = x; break; }
      case mx::Dtype::Val::uint8: { v = static_cast<uint8_t>(*p); break; }
      case mx::Dtype::Val::bool_: { v = *p != 0; break; }
      default: throw std::runtime_error("vals: unsupported dtype");
    }
    out[i] = v;
  }
  return out;
}

inline double tol_for(mx::Dtype t) {
  if (t == mx::float16) return 4e-3;
  if (t == mx::bfloat16) return 3e-2;
  if (t == mx::float64) return 1e-10;
  return 2e-5;
}

inline void expect_close(const mx::array& got, const std::vector<double>& want, double rtol, double atol,
                         const std::string& what = "") {
  std::vector<double> g = vals(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool both_nan = std::isnan(g[i]) && std::isnan(want[i]);
    if (!both_nan && !(std::abs(g[i] - want[i]) <= atol + rtol * std::abs(want[i]))) {
      if (++bad <= 5) ADD_FAILURE() << what << " index " << i << ": got " << g[i] << " want " << want[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what;
}

// ---- a minimal .npy reader (the golden files use float32, int32, uint32 and uint8) ----
inline mx::array read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(1, 5, "NUMPY") != 0) throw std::runtime_error("not npy: " + path);
  const int major = static_cast<uint8_t>(bytes[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    hstart = 10;
  } else {
    uint32_t l;
    std::memcpy(&l, bytes.data() + 8, 4);
    hlen = l;
    hstart = 12;
  }
  const std::string h = bytes.substr(hstart, hlen);
  auto field = [&](const std::string& key) {
    size_t p = h.find("'" + key + "'");
    return h.substr(h.find(':', p) + 1);
  };
  std::string descr = field("descr");
  descr = descr.substr(descr.find('\'') + 1);
  descr = descr.substr(0, descr.find('\''));
  std::string sh = field("shape");
  sh = sh.substr(sh.find('(') + 1, sh.find(')') - sh.find('(') - 1);
  mx::Shape shape;
  std::stringstream ss(sh);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoi(tok));
  }
  mx::Dtype t = descr == "<f4"   ? mx::float32
                : descr == "<i4" ? mx::int32
                : descr == "<u4" ? mx::uint32
                : descr == "|u1" ? mx::uint8
                : descr == "<f2" ? mx::float16
                                 : throw std::runtime_error("unsupported descr " + descr);
  const size_t off = hstart + hlen;
  return mx::array::from_bytes(bytes.data() + off, bytes.size() - off, shape, t);
}

inline std::string golden(const std::string& rel) {
  return std::string(KILN_TEST_DATA) + "/golden/mlx-0.30.1/" + rel;
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no exception>";
}

}  // namespace fast_test
