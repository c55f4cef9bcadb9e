// Scalar functions of the element-wise family that reproduce MLX's CPU values (see elementwise_common.h,
// which includes this file; include that one, first, in kernel files).
//
// MLX's Linux CPU build evaluates exp, sin, cos, erf and erfinv with its own single-precision
// polynomials (also for float64 inputs) and everything else with the C library; the functions here
// follow the same algorithms so that float32 results agree bit for bit.
#pragma once

#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kiln/dtype.h"
#include "backend/cpu/ordering.h"

namespace kiln::ew {

// a*b + c with a single rounding, as the FMA instruction of the vector levels (cpu/vmath_isa.h) gives
// it. The product of two floats is exact in double; the double sum is rounded to odd (where it is
// inexact, its last bit is made 1, toward the exact value: TwoSum gives the error), so rounding it to
// float is the one rounding of the exact a*b + c. Rounded to nearest instead, a sum that lands halfway
// between two floats rounds twice: about one case in 2^29 (4 inputs of sin over every float).
// Unlike std::fma this compiles to plain SSE2 arithmetic and vectorizes.
inline float fma_f(float a, float b, float c) {
  const double p = static_cast<double>(a) * static_cast<double>(b), d = static_cast<double>(c);
  const double s = p + d;
  const double bd = s - p;
  const double err = (p - (s - bd)) + (d - bd);  // p + d = s + err exactly (NaN where s is not finite)
  const uint64_t u = std::bit_cast<uint64_t>(s);
  const bool odd = (err < 0.0 || err > 0.0) && (u & 1u) == 0;  // false for NaN: infinite sums stay as they are
  const uint64_t v = odd ? ((err > 0.0) == (s > 0.0) ? u + 1 : u - 1) : u;
  return static_cast<float>(std::bit_cast<double>(v));
}

// Round half to even without a libm call (vectorizable); |x| >= 2^23 (or 2^52) is already integral.
template <typename F>
inline F rint_f(F x) {
  constexpr F big = std::is_same_v<F, double> ? F(4503599627370496.0) : F(8388608.0f);
  F ax = std::fabs(x);
  F r = (ax + big) - big;
  return ax < big ? std::copysign(r, x) : x;
}
template <typename F>
inline F floor_f(F x) {
  F r = rint_f(x);
  return r - (r > x ? F(1) : F(0));
}
// The result has x's sign (ceil(-0.3) is -0, as IEEE and MLX); -0 + 1·0 would give +0.
template <typename F>
inline F ceil_f(F x) {
  F r = rint_f(x);
  return std::copysign(r + (r < x ? F(1) : F(0)), x);
}

// MLX's exp: 2^(x·log2 e) split into an integer power (built in the exponent bits) and a degree-6
// polynomial for the fraction (Cephes constants). Saturates to inf above 88 and to 0 below -88.
inline float exp_f(float x0) {
  float xc = x0 > 88.0f ? 88.0f : x0;
  xc = xc < -88.0f ? -88.0f : xc;
  xc = x0 == x0 ? xc : 0.0f;  // NaN: keep the int conversion below defined
  float t = xc * 1.442695f;
  double h = static_cast<double>(t) + 0.5;  // exact in double
  int32_t i = static_cast<int32_t>(h);
  if (static_cast<double>(i) > h) --i;  // floor
  float f = t - static_cast<float>(i);
  float p = 1.535336188319500e-4f;
  p = fma_f(p, f, 1.339887440266574e-3f);
  p = fma_f(p, f, 9.618437357674640e-3f);
  p = fma_f(p, f, 5.550332471162809e-2f);
  p = fma_f(p, f, 2.402264791363012e-1f);
  p = fma_f(p, f, 6.931472028550421e-1f);
  p = fma_f(p, f, 1.0f);
  float r = std::bit_cast<float>(static_cast<uint32_t>(i + 127) << 23) * p;
  r = x0 > 88.0f ? std::numeric_limits<float>::infinity() : r;
  r = x0 < -88.0f ? 0.0f : r;
  return x0 != x0 ? x0 : r;
}

// x86's float -> uint32 conversion of y >= 0 as compilers emit it: through int64, so the result is
// the low 32 bits, and 0 from 2^63 on or for NaN. Written with float arithmetic so that it vectorizes:
// y mod 2^32 is exact in float.
inline uint32_t float_to_u32_x86(float y) {
  float hi = floor_f(y * 2.3283064365386963e-10f);  // floor(y / 2^32)
  float r = y - hi * 4294967296.0f;
  r = y < 9.2233720368547758e18f ? r : 0.0f;  // also maps NaN to 0
  float top = r >= 2147483648.0f ? 2147483648.0f : 0.0f;
  uint32_t u = static_cast<uint32_t>(static_cast<int32_t>(r - top));
  return u + (top != 0.0f ? 0x80000000u : 0u);
}

// MLX's sin/cos: Cephes single-precision range reduction by pi/4 and two minimax polynomials.
// Computed in float for every real input type; the sign comes from the input in its own type.
template <bool Sine, typename T>
inline float sincos_f(T in) {
  bool neg = in < T(0);
  float x = std::fabs(static_cast<float>(in));
  float y = x * 1.27323954473516f;
  uint32_t j = float_to_u32_x86(y);
  j = (j + 1u) & ~1u;
  y = static_cast<float>(j);
  bool poly = (j & 2u) != 0;
  x = fma_f(y, -0.78515625f, x);
  x = fma_f(y, -2.4187564849853515625e-4f, x);
  x = fma_f(y, -3.77489497744594108e-8f, x);
  float z = x * x;
  float y1 = fma_f(z, 2.443315711809948e-5f, -1.388731625493765e-3f);
  float y2 = fma_f(z, -1.9515295891e-4f, 8.3321608736e-3f);
  y1 = fma_f(y1, z, 4.166664568298827e-2f);
  y2 = fma_f(y2, z, -1.6666654611e-1f);
  y1 = y1 * z;
  y2 = y2 * z;
  y1 = y1 * z;
  y2 = fma_f(x, y2, x);
  y1 = fma_f(z, -0.5f, y1);
  y1 = y1 + 1.0f;
  if constexpr (Sine) {
    bool s = neg != ((j & 4u) != 0);
    float v = poly ? y1 : y2;
    return s ? -v : v;
  } else {
    bool s = ((j - 2u) & 4u) != 0;
    float v = poly ? y2 : y1;
    return s ? v : -v;
  }
}

// MLX's erf: Abramowitz-Stegun 7.1.26 with its exp; odd in x (erf(0) is -0, as in MLX).
inline float erf_f(float v) {
  float t = 1.0f / fma_f(0.3275911f, std::fabs(v), 1.0f);
  float r = fma_f(1.061405429f, t, -1.453152027f);
  r = fma_f(r, t, 1.421413741f);
  r = fma_f(r, t, -0.284496736f);
  r = fma_f(r, t, 0.254829592f);
  float e = -exp_f(-v * v);
  return fma_f(e * t, r, 1.0f);  // |erf(v)|; the caller applies the sign
}

// MLX's erfinv: Giles' single-precision approximation in w = log(1 - a^2), two polynomials.
inline float erfinv_f(float a) {
  float t = std::log(fma_f(a, 0.0f - a, 1.0f));
  float p;
  if (std::fabs(t) > 6.125f) {
    p = 3.03697567e-10f;
    p = fma_f(p, t, 2.93243101e-8f);
    p = fma_f(p, t, 1.22150334e-6f);
    p = fma_f(p, t, 2.84108955e-5f);
    p = fma_f(p, t, 3.93552968e-4f);
    p = fma_f(p, t, 3.02698812e-3f);
    p = fma_f(p, t, 4.83185798e-3f);
    p = fma_f(p, t, -2.64646143e-1f);
    p = fma_f(p, t, 8.40016484e-1f);
  } else {
    p = 5.43877832e-9f;
    p = fma_f(p, t, 1.43285448e-7f);
    p = fma_f(p, t, 1.22774793e-6f);
    p = fma_f(p, t, 1.12963626e-7f);
    p = fma_f(p, t, -5.61530760e-5f);
    p = fma_f(p, t, -1.47697632e-4f);
    p = fma_f(p, t, 2.31468678e-3f);
    p = fma_f(p, t, 1.15392581e-2f);
    p = fma_f(p, t, -2.32015476e-1f);
    p = fma_f(p, t, 8.86226892e-1f);
  }
  return a * p;
}

// MLX orders complex numbers lexicographically (real part first) in comparisons, maximum and minimum.
inline bool cgt(complex64_t a, complex64_t b) { return cpu::ordered_greater(a, b); }
inline bool cge(complex64_t a, complex64_t b) {
  return a.real() > b.real() || (a.real() == b.real() && a.imag() >= b.imag());
}

// log1p for complex values, accurate near zero (MLX's formula).
inline complex64_t log1p_c(complex64_t z) {
  float x = z.real(), y = z.imag();
  float theta = std::atan2(y, x + 1.0f);
  if (std::abs(z) < 0.5f) {
    float r = x * (2.0f + x) + y * y;
    if (r == 0.0f) return {x, theta};
    return {0.5f * std::log1p(r), theta};
  }
  return {std::log(std::hypot(x + 1.0f, y)), theta};
}

// Integer arithmetic that wraps (no signed-overflow UB, no int promotion surprises).
template <typename T>
using wide_unsigned_t = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;
template <typename T>
inline T wrap_add(T a, T b) {
  using U = wide_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <typename T>
inline T wrap_sub(T a, T b) {
  using U = wide_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <typename T>
inline T wrap_mul(T a, T b) {
  using U = wide_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

}  // namespace kiln::ew
