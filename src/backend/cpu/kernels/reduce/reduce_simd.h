// Small vectorizable building blocks for the reduction family's kernels: a NaN-propagating max/min of a
// contiguous float run (GCC/Clang vector extensions: the compilers do not vectorize the NaN test on
// their own), and an exp for float that the compiler can vectorize (std::exp is a library call).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace kiln::reduce {

// Max (IsMax) or min of p[0..n) for float or double; NaN if any element is NaN; +-inf when n == 0.
template <bool IsMax, typename T>
T extreme_contig(const T* p, int64_t n) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  using I = std::conditional_t<std::is_same_v<T, float>, int32_t, int64_t>;
  constexpr int W = 16 / sizeof(T);
  typedef T V __attribute__((vector_size(16)));
  typedef I M __attribute__((vector_size(16)));
  const T init = IsMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
  V a0, a1;
  M bad0 = {}, bad1 = {};
  for (int k = 0; k < W; ++k) a0[k] = a1[k] = init;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    V x0, x1;
    std::memcpy(&x0, p + i, sizeof(V));
    std::memcpy(&x1, p + i + W, sizeof(V));
    M t0 = IsMax ? (x0 > a0) : (x0 < a0);
    M t1 = IsMax ? (x1 > a1) : (x1 < a1);
    a0 = reinterpret_cast<V>((reinterpret_cast<M>(x0) & t0) | (reinterpret_cast<M>(a0) & ~t0));
    a1 = reinterpret_cast<V>((reinterpret_cast<M>(x1) & t1) | (reinterpret_cast<M>(a1) & ~t1));
    bad0 |= (x0 != x0);
    bad1 |= (x1 != x1);
  }
  T r = init;
  bool bad = false;
  for (int k = 0; k < W; ++k) {
    r = (IsMax ? a0[k] > r : a0[k] < r) ? a0[k] : r;
    r = (IsMax ? a1[k] > r : a1[k] < r) ? a1[k] : r;
    bad |= (bad0[k] | bad1[k]) != 0;
  }
  for (; i < n; ++i) {
    r = (IsMax ? p[i] > r : p[i] < r) ? p[i] : r;
    bad |= p[i] != p[i];
  }
  return bad ? std::numeric_limits<T>::quiet_NaN() : r;
}

// Sum of p[0..n) with 8 independent accumulators (vectorizes; the order differs from a sequential sum).
template <typename T>
T sum_contig(const T* p, int64_t n) {
  T acc[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) acc[k] += p[i + k];
  }
  for (; i < n; ++i) acc[0] += p[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// exp for float within about 1.2 ulp of std::exp, written with vector extensions so it vectorizes
// (std::exp is a library call, and the compilers do not if-convert the clamps on their own):
// x = k*ln2 + r with |r| <= ln2/2 (ln2 split in two parts so k*ln2 is exact), a degree-7 Taylor
// polynomial for e^r, and 2^k from exponent bits in two halves so underflow to subnormals and overflow
// to inf come out right. NaN stays NaN.
typedef float Vf __attribute__((vector_size(16)));
typedef int32_t Vi __attribute__((vector_size(16)));

inline Vf select(Vi mask, Vf a, Vf b) {
  return reinterpret_cast<Vf>((reinterpret_cast<Vi>(a) & mask) | (reinterpret_cast<Vi>(b) & ~mask));
}

inline Vf exp_v(Vf x) {
  const Vf zero = {};
  x = select(x < -104.0f, zero - 104.0f, x);
  x = select(x > 89.0f, zero + 89.0f, x);
  const Vf t = x * 1.44269504088896341f;
  Vf k = (t + 12582912.0f) - 12582912.0f;  // round to nearest: 1.5 * 2^23 drops the fraction
  const Vf r = (x - k * 0.693145751953125f) - k * 1.428606765330187045e-06f;
  Vf q = zero + 1.0f / 5040.0f;
  q = q * r + 1.0f / 720.0f;
  q = q * r + 1.0f / 120.0f;
  q = q * r + 1.0f / 24.0f;
  q = q * r + 1.0f / 6.0f;
  q = q * r + 0.5f;
  q = q * r + 1.0f;
  q = q * r + 1.0f;
  k = select(k != k, zero, k);  // NaN input: q is NaN already; keep the conversion defined
  const Vi ki = __builtin_convertvector(k, Vi);
  const Vi k1 = ki >> 1, k2 = ki - k1;
  return q * reinterpret_cast<Vf>((k1 + 127) << 23) * reinterpret_cast<Vf>((k2 + 127) << 23);
}

inline float fast_exp(float x) {
  Vf v = {x, x, x, x};
  return exp_v(v)[0];
}

// y[i] = exp(x[i] - shift) for i < n.
inline void exp_shifted(const float* x, float shift, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    Vf v;
    std::memcpy(&v, x + i, sizeof(v));
    v = exp_v(v - shift);
    std::memcpy(y + i, &v, sizeof(v));
  }
  if (i < n) {
    Vf v = {};
    std::memcpy(&v, x + i, (n - i) * sizeof(float));
    v = exp_v(v - shift);
    std::memcpy(y + i, &v, (n - i) * sizeof(float));
  }
}

inline void exp_shifted(const double* x, double shift, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i] - shift);
}

inline double fast_exp(double x) { return std::exp(x); }

}  // namespace kiln::reduce
