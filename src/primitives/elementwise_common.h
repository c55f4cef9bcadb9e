// Shared pieces of the element-wise family (unary.cpp, unary_math.cpp, unary_ops.cpp, binary*.cpp,
// ternary.cpp): scalar functions that reproduce the values of MLX's CPU backend, kernel helpers and
// infer rules.
//
// MLX's Linux CPU build evaluates exp, sin, cos, erf and erfinv with its own single-precision
// polynomials (also for float64 inputs) and everything else with the C library; the scalar functions
// here follow the same algorithms so that float32 results agree bit for bit.
//
// Include this header FIRST in every element-wise .cpp: the pragma below must precede all other code
// of the translation unit. Neither errno nor floating-point exception flags are results of these
// kernels; without them GCC vectorizes sqrt and the branch-free selects of the loops.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-math-errno", "no-trapping-math")
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "backend/cpu/loops.h"
#include "kiln/ops/elementwise.h"
#include "kiln/primitive.h"
#include "primitives/common.h"

namespace kiln::ew {

using cpu::acc_t;
using cpu::is_complex_v;
using cpu::is_float_v;
using cpu::is_half_v;

// ---------------------------------------------------------------------------------------------
// Dtype rules

// MLX's at_least_float: integers and bool compute in float32, inexact types keep their dtype.
inline Dtype at_least_float(Dtype t) { return is_inexact(t) ? t : float32; }

// ---------------------------------------------------------------------------------------------
// Scalar math

// a*b + c with a single rounding. The product of two floats is exact in double, so only the sum is
// rounded twice, which changes the float result in about one case in 2^29. Unlike std::fma this
// compiles to plain SSE2 arithmetic and vectorizes. (unary_avx2.cpp uses the FMA instruction.)
inline float fma_f(float a, float b, float c) {
  return static_cast<float>(static_cast<double>(a) * static_cast<double>(b) + static_cast<double>(c));
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
template <typename F>
inline F ceil_f(F x) {
  F r = rint_f(x);
  return r + (r < x ? F(1) : F(0));
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
inline bool cgt(complex64_t a, complex64_t b) {
  return a.real() > b.real() || (a.real() == b.real() && a.imag() > b.imag());
}
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

// ---------------------------------------------------------------------------------------------
// Kernel helpers

// The output shares the input's buffer (MLX's no-op kernels: Copy, Abs of unsigned, Floor of ints, ...).
inline void share_input(const array& in, array& out) { out.set_view(in, in.strides(), in.offset()); }

// `a` seen with shape `shape` (stride 0 on broadcast dims). Kernels use it when a loaded graph hands
// them operands of different shapes; op builders always broadcast first.
array broadcast_view(const array& a, const Shape& shape);

// Tiled traversal for element-wise loops whose arrays collapse to two dimensions and where some input
// walks the inner dimension with a large stride but the outer one contiguously (a transposed view):
// row by row, that input would touch a new cache line per element. Square tiles keep every array's
// lines in cache. body(offsets) is called per element with each array's offset (out first).
template <size_t N>
struct Tiled2D {
  int64_t rows = 0, cols = 0;
  std::array<int64_t, N> row_st{}, col_st{};
};
template <size_t N>
bool plan_tiled_2d(const std::array<const array*, N>& arrays, Tiled2D<N>& p) {
  const array& out = *arrays[0];
  if (out.size() < (1u << 14)) return false;
  std::array<const Strides*, N> st;
  for (size_t k = 0; k < N; ++k) st[k] = &arrays[k]->strides();
  auto c = cpu::collapse<N>(out.shape(), st);
  if (c.shape.size() != 2) return false;
  bool transposed = false;
  for (size_t k = 1; k < N; ++k) {
    int64_t inner = c.strides[k][1], outer = c.strides[k][0];
    transposed |= (inner > 1 || inner < -1) && (outer == 1 || outer == -1);
  }
  if (!transposed) return false;
  p.rows = c.shape[0];
  p.cols = c.shape[1];
  for (size_t k = 0; k < N; ++k) {
    p.row_st[k] = c.strides[k][0];
    p.col_st[k] = c.strides[k][1];
  }
  return true;
}
template <size_t N, typename Body>
void run_tiled_2d(const Tiled2D<N>& p, const std::array<int64_t, N>& base, Body body) {
  constexpr int64_t kTile = 64;
  const int64_t row_tiles = (p.rows + kTile - 1) / kTile;
  cpu::parallel_for(static_cast<size_t>(row_tiles), 1, [&](size_t tb, size_t te) {
    for (int64_t t = static_cast<int64_t>(tb); t < static_cast<int64_t>(te); ++t) {
      const int64_t i0 = t * kTile, i1 = std::min(p.rows, i0 + kTile);
      for (int64_t j0 = 0; j0 < p.cols; j0 += kTile) {
        const int64_t j1 = std::min(p.cols, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i) {
          std::array<int64_t, N> off;
          for (size_t k = 0; k < N; ++k) off[k] = base[k] + i * p.row_st[k] + j0 * p.col_st[k];
          for (int64_t j = j0; j < j1; ++j) {
            body(off);
            for (size_t k = 0; k < N; ++k) off[k] += p.col_st[k];
          }
        }
      }
    }
  });
}

// out[i] = f(a[i]) over any layout: tiles for transposed inputs, else the shared strided loop.
template <typename In, typename Out, typename F>
void unary_run(const array& in, array& out, F f) {
  Tiled2D<2> p;
  if (!in.row_contiguous() && plan_tiled_2d<2>({&out, &in}, p)) {
    out.alloc();
    Out* d = out.data<Out>();
    const In* s = static_cast<const In*>(in.buffer()->ptr);
    run_tiled_2d<2>(p, {0, in.offset()}, [&](const std::array<int64_t, 2>& o) { d[o[0]] = f(s[o[1]]); });
    return;
  }
  cpu::unary_loop<In, Out>(in, out, f);
}

// out[i] = f(a[i], b[i]) with inputs of type T; operands of another shape are broadcast views.
template <typename T, typename Out, typename F>
void binary_run(const array& a0, const array& b0, array& out, F f) {
  const array& a = a0.shape() == out.shape() ? a0 : broadcast_view(a0, out.shape());
  const array& b = b0.shape() == out.shape() ? b0 : broadcast_view(b0, out.shape());
  Tiled2D<3> p;
  if (!(a.row_contiguous() && b.row_contiguous()) && plan_tiled_2d<3>({&out, &a, &b}, p)) {
    out.alloc();
    Out* d = out.data<Out>();
    const T* x = static_cast<const T*>(a.buffer()->ptr);
    const T* y = static_cast<const T*>(b.buffer()->ptr);
    run_tiled_2d<3>(p, {0, a.offset(), b.offset()},
                    [&](const std::array<int64_t, 3>& o) { d[o[0]] = f(x[o[1]], y[o[2]]); });
    return;
  }
  cpu::binary_loop<T, T, Out>(a, b, out, f);
}

// float32 exp/sin/cos/sigmoid/erf over a contiguous range with AVX2+FMA (unary_avx2.cpp); returns
// false, doing nothing, when the CPU or the build lacks them.
enum class Avx2Op { Exp, Sin, Cos, Sigmoid, Erf };
bool avx2_unary_f32(Avx2Op op, const float* src, float* dst, size_t n);

// 16-bit floats to float and back, in blocks (unary_half.cpp; F16C when available). Same bits as the
// float16_t / bfloat16_t conversions.
void to_float(const float16_t* src, float* dst, size_t n);
void to_float(const bfloat16_t* src, float* dst, size_t n);
void from_float(const float* src, float16_t* dst, size_t n);
void from_float(const float* src, bfloat16_t* dst, size_t n);

// Row-major 16-bit arrays of one shape go through float blocks: body(ins..., out, n) computes n floats.
// This is "compute in float, round once" with vectorizable conversions and a float inner loop.
inline constexpr size_t kHalfBlock = 1024;
template <typename H, typename Body>
void half_blocks(const array& in, array& out, Body body) {
  out.alloc();
  const H* s = in.data<H>();
  H* d = out.data<H>();
  cpu::parallel_for(out.size(), cpu::kGrainMedium, [&](size_t b, size_t e) {
    alignas(32) float x[kHalfBlock], y[kHalfBlock];
    for (size_t i = b; i < e; i += kHalfBlock) {
      size_t m = std::min(kHalfBlock, e - i);
      to_float(s + i, x, m);
      body(x, y, m);
      from_float(y, d + i, m);
    }
  });
}
template <typename H, typename Body>
void half_blocks(const array& a, const array& b, array& out, Body body) {
  out.alloc();
  const H* s = a.data<H>();
  const H* t = b.data<H>();
  H* d = out.data<H>();
  cpu::parallel_for(out.size(), cpu::kGrainMedium, [&](size_t lo, size_t hi) {
    alignas(32) float x[kHalfBlock], y[kHalfBlock], z[kHalfBlock];
    for (size_t i = lo; i < hi; i += kHalfBlock) {
      size_t m = std::min(kHalfBlock, hi - i);
      to_float(s + i, x, m);
      to_float(t + i, y, m);
      body(x, y, z, m);
      from_float(z, d + i, m);
    }
  });
}

// Unary kernel for ops that MLX evaluates on inexact types only: Op::apply(x) for x of type float,
// double and (when Complex) complex64_t; float16/bfloat16 compute in float and round once.
template <typename Op, bool Complex = true>
void unary_fp(const array& in, array& out) {
  // Ops MLX computes with its own polynomials (kAvx2) have AVX2+FMA float32 loops.
  auto float_block = [](const float* x, float* y, size_t n) {
    if constexpr (requires { Op::kAvx2; }) {
      if (avx2_unary_f32(Op::kAvx2, x, y, n)) return;
    }
    for (size_t i = 0; i < n; ++i) y[i] = Op::apply(x[i]);
  };
  cpu::dispatch_all(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float>) {
      if (in.row_contiguous()) {
        out.alloc();
        const float* s = in.data<float>();
        float* d = out.data<float>();
        cpu::parallel_for(out.size(), cpu::kGrainMedium, [&](size_t b, size_t e) { float_block(s + b, d + b, e - b); });
      } else {
        unary_run<T, T>(in, out, [](T v) { return Op::apply(v); });
      }
    } else if constexpr (is_half_v<T>) {
      if (in.row_contiguous()) half_blocks<T>(in, out, float_block);
      else unary_run<T, T>(in, out, [](T v) { return T(Op::apply(static_cast<float>(v))); });
    } else if constexpr (is_float_v<T>) {
      unary_run<T, T>(in, out, [](T v) { return Op::apply(v); });
    } else if constexpr (is_complex_v<T> && Complex) {
      unary_run<T, T>(in, out, [](T v) { return Op::apply(v); });
    }
    // Other dtypes never get here: the infer rule rejects them.
  });
}

// ---------------------------------------------------------------------------------------------
// Infer rules

std::vector<ArraySpec> same_infer(const State&, const std::vector<ArraySpec>& in);
std::vector<ArraySpec> bool_unary_infer(const State&, const std::vector<ArraySpec>& in);
// Unary ops evaluated on inexact types only (Exp, Sin, ...): output like the input.
std::vector<ArraySpec> inexact_unary_infer(const State&, const std::vector<ArraySpec>& in);
// Erf, ErfInv: real floating types only.
std::vector<ArraySpec> float_unary_infer(const State&, const std::vector<ArraySpec>& in);
// Binary ops: both inputs must have one dtype (the op builders cast them); the shape is their
// broadcast. Returns that shape with the inputs' dtype.
ArraySpec binary_spec(const char* name, const std::vector<ArraySpec>& in);

// Throws "[name] <what> but found <dtype>." when `ok` is false.
void check_dtype(bool ok, const char* name, const char* what, Dtype found);

// ---------------------------------------------------------------------------------------------
// Registration of the sub-families (called from register_unary / register_binary).
void register_unary_math();
void register_binary_compare();
void register_ternary();

}  // namespace kiln::ew
