// Helpers for the matmul, linalg and npy tests: read an evaluated array through its own strides
// (independent of the kernels under test), random inputs, a scalar-loop matrix product in double,
// and access to the golden corpus.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <kiln/kiln.h>

namespace lt {

namespace mx = kiln;

// Element values of `a` in row-major order, converted to T.
template <typename T>
std::vector<T> values(mx::array a) {
  a.eval();
  std::vector<T> out;
  out.reserve(a.size());
  if (a.size() == 0) return out;
  const char* base = static_cast<const char*>(a.buffer()->ptr);
  const size_t isz = a.itemsize();
  std::vector<int64_t> idx(a.ndim(), 0);
  for (size_t n = 0; n < a.size(); ++n) {
    int64_t off = a.offset();
    for (size_t d = 0; d < a.ndim(); ++d) off += idx[d] * a.strides()[d];
    T v;
    mx::convert_values(base + off * static_cast<int64_t>(isz), a.dtype(), &v, mx::storage_dtype_of<T>, 1);
    out.push_back(v);
    for (int d = static_cast<int>(a.ndim()) - 1; d >= 0; --d) {
      if (++idx[d] < a.shape()[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Complex values (real arrays give a zero imaginary part).
inline std::vector<std::complex<double>> cvalues(mx::array a) {
  std::vector<std::complex<double>> out;
  if (a.dtype() == mx::complex64) {
    for (auto v : values<mx::complex64_t>(a)) out.emplace_back(v.real(), v.imag());
  } else {
    for (auto v : values<double>(a)) out.emplace_back(v, 0.0);
  }
  return out;
}

inline std::vector<float> randn(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

// A float32 array of standard normal values.
inline mx::array random(const mx::Shape& shape, uint32_t seed) {
  size_t n = 1;
  for (auto d : shape) n *= static_cast<size_t>(d);
  return mx::array(randn(n, seed), shape);
}

// Row-major reference product of (batch, M, K) and (batch, K, N) value lists, in double.
inline std::vector<double> ref_matmul(const std::vector<double>& a, const std::vector<double>& b, int batch, int M,
                                      int N, int K) {
  std::vector<double> c(static_cast<size_t>(batch) * M * N, 0.0);
  for (int t = 0; t < batch; ++t)
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = 0;
        for (int k = 0; k < K; ++k) s += a[(size_t(t) * M + i) * K + k] * b[(size_t(t) * K + k) * N + j];
        c[(size_t(t) * M + i) * N + j] = s;
      }
  return c;
}

inline void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol,
                        const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], tol * (1.0 + std::abs(want[i]))) << what << " at " << i;
  }
}

// Path of a file in the golden corpus.
inline std::string golden(const std::string& rel) { return std::string(KILN_TEST_DATA) + "/golden/mlx-0.30.1/" + rel; }

// The message of the std::exception `f` throws ("" when it does not throw).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace lt
