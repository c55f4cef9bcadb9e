// Helpers shared by the element-wise tests: build arrays from doubles, read any (strided) array back
// as doubles, and compare against reference values with a tolerance fitting the dtype.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <limits>
#include <string>
#include <vector>

#include <kiln/kiln.h>

namespace ew_test {

namespace mx = kiln;

inline constexpr double N = std::numeric_limits<double>::quiet_NaN();
inline constexpr double I = std::numeric_limits<double>::infinity();

// An array of dtype `t` holding `v` (converted from double), 1-D unless `shape` is given.
inline mx::array make(const std::vector<double>& v, mx::Dtype t, mx::Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int32_t>(v.size())};
  return mx::array(v.data(), shape, t);
}

inline mx::array make_c(const std::vector<std::complex<float>>& v) {
  return mx::array(v.data(), mx::Shape{static_cast<int32_t>(v.size())}, mx::complex64);
}

// Element `i` (row-major) of an evaluated array of element type T, following its strides.
template <typename T>
T at(const mx::array& a, size_t i) {
  int64_t off = a.offset();
  for (int d = static_cast<int>(a.ndim()) - 1; d >= 0; --d) {
    int64_t n = a.shape(d);
    off += static_cast<int64_t>(i % n) * a.strides(d);
    i /= n;
  }
  return static_cast<const T*>(a.buffer()->ptr)[off];
}

// All elements as doubles (complex: the real parts; see values_c).
inline std::vector<double> values(mx::array a) {
  a.eval();
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    switch (a.dtype().val) {
      case mx::Dtype::Val::bool_: out[i] = at<bool>(a, i); break;
      case mx::Dtype::Val::uint8: out[i] = at<uint8_t>(a, i); break;
      case mx::Dtype::Val::uint16: out[i] = at<uint16_t>(a, i); break;
      case mx::Dtype::Val::uint32: out[i] = at<uint32_t>(a, i); break;
      case mx::Dtype::Val::uint64: out[i] = static_cast<double>(at<uint64_t>(a, i)); break;
      case mx::Dtype::Val::int8: out[i] = at<int8_t>(a, i); break;
      case mx::Dtype::Val::int16: out[i] = at<int16_t>(a, i); break;
      case mx::Dtype::Val::int32: out[i] = at<int32_t>(a, i); break;
      case mx::Dtype::Val::int64: out[i] = static_cast<double>(at<int64_t>(a, i)); break;
      case mx::Dtype::Val::float16: out[i] = static_cast<float>(at<mx::float16_t>(a, i)); break;
      case mx::Dtype::Val::float32: out[i] = at<float>(a, i); break;
      case mx::Dtype::Val::float64: out[i] = at<double>(a, i); break;
      case mx::Dtype::Val::bfloat16: out[i] = static_cast<float>(at<mx::bfloat16_t>(a, i)); break;
      case mx::Dtype::Val::complex64: out[i] = at<std::complex<float>>(a, i).real(); break;
    }
  }
  return out;
}

inline std::vector<std::complex<float>> values_c(mx::array a) {
  a.eval();
  std::vector<std::complex<float>> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = at<std::complex<float>>(a, i);
  return out;
}

// Relative tolerance in units of the dtype's epsilon: MLX rounds some 16-bit intermediates that kiln
// keeps in float, so 16-bit results may differ by one unit in the last place.
inline double tolerance(mx::Dtype t) {
  if (t == mx::float16) return 0x1p-10;
  if (t == mx::bfloat16) return 0x1p-7;
  if (t == mx::float32 || t == mx::complex64) return 0x1p-23;
  if (t == mx::float64) return 0x1p-51;
  return 0.0;
}

inline bool close(double got, double want, mx::Dtype t, double ulps = 1.0) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want) || tolerance(t) == 0.0) return got == want && std::signbit(got) == std::signbit(want);
  double tol = ulps * tolerance(t) * std::fabs(want);
  if (t == mx::float16) tol = std::max(tol, 0x1p-24);
  return std::fabs(got - want) <= tol;
}

// Checks every element and reports the first few mismatches with their index.
inline void expect_values(const mx::array& got, const std::vector<double>& want, const std::string& what,
                          double ulps = 1.0) {
  auto v = values(got);
  ASSERT_EQ(v.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < v.size() && bad < 5; ++i) {
    if (!close(v[i], want[i], got.dtype(), ulps)) {
      ++bad;
      ADD_FAILURE() << what << " [" << i << "]: got " << v[i] << ", want " << want[i];
    }
  }
}

}  // namespace ew_test
