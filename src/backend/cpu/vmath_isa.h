// The vector-math kernels written once for any SIMD width: included by vmath_avx2.cpp and
// vmath_avx512.cpp after each defines `struct D`, its vector type and operations (below), in an
// anonymous namespace. Those files are compiled with their own -m flags, so this header (and they)
// include nothing with external-linkage inline code: only <immintrin.h>, sleef.h and vmath.h.
//
// D provides: V (float vector), I (int32 vector), M (lane mask), N (lanes); set/seti; add sub mul
// div fma vmin vmax vabs vneg vfloor vsqrt; pow2_times(p, n) (p · 2^n for integral n in [-127, 127],
// 0 where n = -127, as MLX's exp builds the power from exponent bits); cvtt (truncating float -> int32), cvt (int32 -> float),
// as_f/as_i (bit casts); addi subi andi slli<k> srli<k>; lt gt ge eq unord (masks); mxor mor;
// sel/seli (mask ? yes : no); ne le (masks); loadu storeu, load_n store_n (the first n lanes, n < N);
// load_bool (bool bytes to a mask) store_bool (a mask to bool bytes), of n <= N lanes; and the SLEEF
// functions tan tanh35 sinh cosh asin acos atan asinh acosh atanh log log2 log10 log1p expm1 pow atan2
// (the 1.0-ULP ones, tanh35 SLEEF's 3.5-ULP tanh).
//
// The polynomial functions follow the scalar ones of kernels/elementwise/elementwise_math.h step
// for step, with one rounding per FMA (the hardware instruction, as the scalar fma_f emulates), so the
// results are the same bits at every width. Compiled with -ffp-contract=off: nothing else fuses.
#pragma once

namespace kiln::cpu::vmath_detail {
namespace {

using V = D::V;
using I = D::I;
using M = D::M;

// MLX's exp (elementwise_math.h exp_f).
inline V exp_v(V x0) {
  V xc = D::vmin(D::vmax(x0, D::set(-88.0f)), D::set(88.0f));  // NaN -> -88; restored below
  V t = D::mul(xc, D::set(1.442695f));
  // floor(t + 0.5) exactly: t + 0.5 rounds in float, but never across an integer (|t| < 128).
  V n = D::vfloor(D::add(t, D::set(0.5f)));
  V f = D::sub(t, n);
  V p = D::set(1.535336188319500e-4f);
  p = D::fma(p, f, D::set(1.339887440266574e-3f));
  p = D::fma(p, f, D::set(9.618437357674640e-3f));
  p = D::fma(p, f, D::set(5.550332471162809e-2f));
  p = D::fma(p, f, D::set(2.402264791363012e-1f));
  p = D::fma(p, f, D::set(6.931472028550421e-1f));
  p = D::fma(p, f, D::set(1.0f));
  V r = D::pow2_times(p, n);
  r = D::sel(D::gt(x0, D::set(88.0f)), D::set(__builtin_inff()), r);
  r = D::sel(D::lt(x0, D::set(-88.0f)), D::set(0.0f), r);
  return D::sel(D::unord(x0, x0), x0, r);
}

// float_to_u32_x86 (elementwise_math.h): the low 32 bits of the int64 conversion, 0 from 2^63 or NaN.
inline I to_u32_x86(V y) {
  V hi = D::vfloor(D::mul(y, D::set(2.3283064365386963e-10f)));
  V r = D::sub(y, D::mul(hi, D::set(4294967296.0f)));
  r = D::sel(D::lt(y, D::set(9.2233720368547758e18f)), r, D::set(0.0f));
  M top = D::ge(r, D::set(2147483648.0f));
  I u = D::cvtt(D::sub(r, D::sel(top, D::set(2147483648.0f), D::set(0.0f))));
  return D::addi(u, D::seli(top, D::seti(static_cast<int>(0x80000000u)), D::seti(0)));
}

// uint32 -> float with one rounding: the high half scaled by 2^16 is exact, the sum rounds once.
inline V u32_to_float(I j) {
  V hi = D::cvt(D::template srli<16>(j));
  V lo = D::cvt(D::andi(j, D::seti(0xffff)));
  return D::add(D::mul(hi, D::set(65536.0f)), lo);
}

inline M bit_set(I j, int bit) { return D::eqi(D::andi(j, D::seti(bit)), D::seti(bit)); }

// MLX's sin/cos (elementwise_math.h sincos_f).
template <bool Sine>
inline V sincos_v(V in) {
  M neg = D::lt(in, D::set(0.0f));
  V x = D::vabs(in);
  V y = D::mul(x, D::set(1.27323954473516f));
  // Every lane in [0, 2^31 - 128] (and none NaN), as nearly every input is: there the int64
  // conversion's low half is the int32 conversion, j + 1 stays below 2^31, and converting j back as a
  // signed integer rounds once, as u32_to_float does: the same bits in 3 instructions instead of ~16.
  const bool small = D::bitsof(D::lt(y, D::set(2147483520.0f))) == (1u << D::N) - 1u;
  I j = small ? D::cvtt(y) : to_u32_x86(y);
  j = D::andi(D::addi(j, D::seti(1)), D::seti(~1));
  y = small ? D::cvt(j) : u32_to_float(j);
  M poly = bit_set(j, 2);
  x = D::fma(y, D::set(-0.78515625f), x);
  x = D::fma(y, D::set(-2.4187564849853515625e-4f), x);
  x = D::fma(y, D::set(-3.77489497744594108e-8f), x);
  V z = D::mul(x, x);
  V y1 = D::fma(z, D::set(2.443315711809948e-5f), D::set(-1.388731625493765e-3f));
  V y2 = D::fma(z, D::set(-1.9515295891e-4f), D::set(8.3321608736e-3f));
  y1 = D::fma(y1, z, D::set(4.166664568298827e-2f));
  y2 = D::fma(y2, z, D::set(-1.6666654611e-1f));
  y1 = D::mul(y1, z);
  y2 = D::mul(y2, z);
  y1 = D::mul(y1, z);
  y2 = D::fma(x, y2, x);
  y1 = D::fma(z, D::set(-0.5f), y1);
  y1 = D::add(y1, D::set(1.0f));
  if constexpr (Sine) {
    M s = D::mxor(neg, bit_set(j, 4));
    V v = D::sel(poly, y1, y2);
    return D::sel(s, D::vneg(v), v);
  } else {
    M s = bit_set(D::subi(j, D::seti(2)), 4);
    V v = D::sel(poly, y2, y1);
    return D::sel(s, v, D::vneg(v));
  }
}

// 1/(1 + e^|x|) mirrored for x >= 0 (unary_math.cpp SigmoidOp).
inline V sigmoid_v(V x) {
  V y = D::div(D::set(1.0f), D::add(D::set(1.0f), exp_v(D::vabs(x))));
  return D::sel(D::lt(x, D::set(0.0f)), y, D::sub(D::set(1.0f), y));
}

// MLX's erf with the sign of x applied (elementwise_math.h erf_f, unary_math.cpp ErfOp).
inline V erf_v(V v) {
  V t = D::div(D::set(1.0f), D::fma(D::set(0.3275911f), D::vabs(v), D::set(1.0f)));
  V r = D::fma(D::set(1.061405429f), t, D::set(-1.453152027f));
  r = D::fma(r, t, D::set(1.421413741f));
  r = D::fma(r, t, D::set(-0.284496736f));
  r = D::fma(r, t, D::set(0.254829592f));
  V e = D::vneg(exp_v(D::mul(D::vneg(v), v)));
  V res = D::fma(D::mul(e, t), r, D::set(1.0f));
  return D::sel(D::gt(v, D::set(0.0f)), res, D::vneg(res));
}

// tanh: SLEEF's 3.5-ULP function (3.4x faster than its 1.0-ULP one) where it stays within 1.5 ULP,
// |x| >= 0.4 (its largest error there over every float is 1.50 ULP, in [2, 5); below 0.4 it reaches 2.86),
// and below that x + x·z·P(z), z = x², with P a degree-5 fit of (tanh(x) − x)/x³ on [0, 0.16] (0.59
// ULP). The C library's tanhf, which MLX calls, is off by up to 2.16 ULP. NaN lanes are recomputed by
// the C library (run1_fix); ±0 and denormals (z underflows to 0) give x itself, ±inf ±1.
inline V tanh_v(V x) {
  V z = D::mul(x, x);
  V p = D::set(2.8847097419202328e-3f);
  p = D::fma(p, z, D::set(-8.716518990695477e-3f));
  p = D::fma(p, z, D::set(2.1854154765605927e-2f));
  p = D::fma(p, z, D::set(-5.396743491292e-2f));
  p = D::fma(p, z, D::set(1.3333331048488617e-1f));
  p = D::fma(p, z, D::set(-3.333333432674408e-1f));
  // z = 0 (±0, denormals): x itself, which keeps the sign of a zero (the sum would make -0 into +0).
  V small = D::sel(D::eq(z, D::set(0.0f)), x, D::fma(D::mul(x, z), p, x));
  return D::sel(D::lt(D::vabs(x), D::set(0.4f)), small, D::tanh35(x));
}

// binary.cpp LogAddExpOp for float: NaN in a wins, else the comparison picks (a NaN b propagates);
// an infinite operand gives the maximum.
inline V logaddexp_v(V a, V b) {
  M an = D::unord(a, a);
  V hi = D::sel(an, a, D::sel(D::gt(a, b), a, b));
  V lo = D::sel(an, a, D::sel(D::lt(a, b), a, b));
  V r = D::add(hi, D::log1p(exp_v(D::sub(lo, hi))));
  M inf = D::mor(D::eq(lo, D::set(-__builtin_inff())), D::eq(hi, D::set(__builtin_inff())));
  return D::sel(inf, hi, r);
}

inline V add_v(V a, V b) { return D::add(a, b); }
inline V sub_v(V a, V b) { return D::sub(a, b); }
inline V mul_v(V a, V b) { return D::mul(a, b); }
inline V div_v(V a, V b) { return D::div(a, b); }
inline V sqrt_v(V x) { return D::vsqrt(x); }
inline V rsqrt_v(V x) { return D::div(D::set(1.0f), D::vsqrt(x)); }

inline V abs_v(V x) { return D::vabs(x); }
inline V neg_v(V x) { return D::vneg(x); }
inline V square_v(V x) { return D::mul(x, x); }
inline V max_v(V a, V b) { return D::sel(D::unord(a, a), a, D::sel(D::gt(a, b), a, b)); }
inline V min_v(V a, V b) { return D::sel(D::unord(a, a), a, D::sel(D::lt(a, b), a, b)); }

inline M eq_m(V a, V b) { return D::eq(a, b); }
inline M ne_m(V a, V b) { return D::ne(a, b); }
inline M gt_m(V a, V b) { return D::gt(a, b); }
inline M ge_m(V a, V b) { return D::ge(a, b); }
inline M lt_m(V a, V b) { return D::lt(a, b); }
inline M le_m(V a, V b) { return D::le(a, b); }

template <M (*F)(V, V)>
void run_cmp(const float* a, const float* b, bool* d, size_t n) {
  size_t i = 0;
  for (; i + D::N <= n; i += D::N) D::store_bool(d + i, F(D::loadu(a + i), D::loadu(b + i)), D::N);
  if (i < n) D::store_bool(d + i, F(D::load_n(a + i, n - i), D::load_n(b + i, n - i)), n - i);
}

void run_select(const bool* c, const float* a, const float* b, float* d, size_t n) {
  size_t i = 0;
  for (; i + D::N <= n; i += D::N) {
    D::storeu(d + i, D::sel(D::load_bool(c + i, D::N), D::loadu(a + i), D::loadu(b + i)));
  }
  if (i < n) {
    const size_t m = n - i;
    D::store_n(d + i, D::sel(D::load_bool(c + i, m), D::load_n(a + i, m), D::load_n(b + i, m)), m);
  }
}

template <V (*F)(V)>
void run1(const float* s, float* d, size_t n) {
  size_t i = 0;
  for (; i + D::N <= n; i += D::N) D::storeu(d + i, F(D::loadu(s + i)));
  if (i < n) D::store_n(d + i, F(D::load_n(s + i, n - i)), n - i);
}

template <V (*F)(V, V)>
void run2(const float* a, const float* b, float* d, size_t n) {
  size_t i = 0;
  for (; i + D::N <= n; i += D::N) D::storeu(d + i, F(D::loadu(a + i), D::loadu(b + i)));
  if (i < n) D::store_n(d + i, F(D::load_n(a + i, n - i), D::load_n(b + i, n - i)), n - i);
}

// SLEEF's functions with the lanes that `Bad` marks recomputed by the C library (libm_unary /
// libm_binary, vmath.cpp): NaN inputs (so that NaN payloads and pow(1, sNaN) are the C library's)
// and the ranges where SLEEF's 1-ULP bound does not hold (see the masks below). Rare lanes: the
// check is one compare and one test per vector.
template <V (*F)(V), M (*Bad)(V), VUnary Fn>
void run1_fix(const float* s, float* d, size_t n) {
  size_t i = 0;
  for (; i < n; i += D::N) {
    const size_t m = n - i < D::N ? n - i : D::N;
    V x = m == D::N ? D::loadu(s + i) : D::load_n(s + i, m);
    V r = F(x);
    unsigned bad = D::bitsof(Bad(x));
    if (__builtin_expect(bad != 0, 0)) {
      alignas(64) float xs[D::N], rs[D::N];
      D::storeu(xs, x);
      D::storeu(rs, r);
      for (size_t k = 0; k < m; ++k)
        if (bad & (1u << k)) rs[k] = libm_unary(Fn, xs[k]);
      r = D::loadu(rs);
    }
    if (m == D::N) D::storeu(d + i, r);
    else D::store_n(d + i, r, m);
  }
}

template <V (*F)(V, V), VBinary Fn>
void run2_fix(const float* a, const float* b, float* d, size_t n) {
  size_t i = 0;
  for (; i < n; i += D::N) {
    const size_t m = n - i < D::N ? n - i : D::N;
    V x = m == D::N ? D::loadu(a + i) : D::load_n(a + i, m);
    V y = m == D::N ? D::loadu(b + i) : D::load_n(b + i, m);
    V r = F(x, y);
    unsigned bad = D::bitsof(D::unord(x, y));
    if (__builtin_expect(bad != 0, 0)) {
      alignas(64) float xs[D::N], ys[D::N], rs[D::N];
      D::storeu(xs, x);
      D::storeu(ys, y);
      D::storeu(rs, r);
      for (size_t k = 0; k < m; ++k)
        if (bad & (1u << k)) rs[k] = libm_binary(Fn, xs[k], ys[k]);
      r = D::loadu(rs);
    }
    if (m == D::N) D::storeu(d + i, r);
    else D::store_n(d + i, r, m);
  }
}

inline M nan_lanes(V x) { return D::unord(x, x); }
// sinh/cosh: SLEEF overflows to inf from |x| = 88.7 (the C library from 89.4).
inline M sinh_bad(V x) { return D::mor(D::unord(x, x), D::gt(D::vabs(x), D::set(88.0f))); }
// asinh/acosh: SLEEF's bound holds below 1.8e19 (its documentation); above it the result overflows.
inline M asinh_bad(V x) { return D::mor(D::unord(x, x), D::gt(D::vabs(x), D::set(1e18f))); }
// log1p: SLEEF gives inf above about 1e38.
inline M log1p_bad(V x) { return D::mor(D::unord(x, x), D::gt(x, D::set(1e38f))); }

constexpr Table make_table() {
  Table t{};
  auto u = [&](VUnary f, UnaryFn fn) { t.unary[static_cast<int>(f)] = fn; };
  u(VUnary::Exp, run1<exp_v>);
  u(VUnary::Sin, run1<sincos_v<true>>);
  u(VUnary::Cos, run1<sincos_v<false>>);
  u(VUnary::Sigmoid, run1<sigmoid_v>);
  u(VUnary::Erf, run1<erf_v>);
  u(VUnary::Tan, run1_fix<D::tan, nan_lanes, VUnary::Tan>);
  u(VUnary::Tanh, run1_fix<tanh_v, nan_lanes, VUnary::Tanh>);
  u(VUnary::Sinh, run1_fix<D::sinh, sinh_bad, VUnary::Sinh>);
  u(VUnary::Cosh, run1_fix<D::cosh, sinh_bad, VUnary::Cosh>);
  u(VUnary::ArcSin, run1_fix<D::asin, nan_lanes, VUnary::ArcSin>);
  u(VUnary::ArcCos, run1_fix<D::acos, nan_lanes, VUnary::ArcCos>);
  u(VUnary::ArcTan, run1_fix<D::atan, nan_lanes, VUnary::ArcTan>);
  u(VUnary::ArcSinh, run1_fix<D::asinh, asinh_bad, VUnary::ArcSinh>);
  u(VUnary::ArcCosh, run1_fix<D::acosh, asinh_bad, VUnary::ArcCosh>);
  u(VUnary::ArcTanh, run1_fix<D::atanh, nan_lanes, VUnary::ArcTanh>);
  u(VUnary::Log, run1_fix<D::log, nan_lanes, VUnary::Log>);
  u(VUnary::Log2, run1_fix<D::log2, nan_lanes, VUnary::Log2>);
  u(VUnary::Log10, run1_fix<D::log10, nan_lanes, VUnary::Log10>);
  u(VUnary::Log1p, run1_fix<D::log1p, log1p_bad, VUnary::Log1p>);
  u(VUnary::Expm1, run1_fix<D::expm1, nan_lanes, VUnary::Expm1>);
  u(VUnary::Sqrt, run1<sqrt_v>);
  u(VUnary::Rsqrt, run1<rsqrt_v>);
  u(VUnary::Abs, run1<abs_v>);
  u(VUnary::Negative, run1<neg_v>);
  u(VUnary::Square, run1<square_v>);
  t.binary[static_cast<int>(VBinary::Power)] = run2_fix<D::pow, VBinary::Power>;
  t.binary[static_cast<int>(VBinary::ArcTan2)] = run2_fix<D::atan2, VBinary::ArcTan2>;
  t.binary[static_cast<int>(VBinary::LogAddExp)] = run2<logaddexp_v>;
  t.binary[static_cast<int>(VBinary::Add)] = run2<add_v>;
  t.binary[static_cast<int>(VBinary::Subtract)] = run2<sub_v>;
  t.binary[static_cast<int>(VBinary::Multiply)] = run2<mul_v>;
  t.binary[static_cast<int>(VBinary::Divide)] = run2<div_v>;
  t.binary[static_cast<int>(VBinary::Maximum)] = run2<max_v>;
  t.binary[static_cast<int>(VBinary::Minimum)] = run2<min_v>;
  auto c = [&](VCompare f, CompareFn fn) { t.compare[static_cast<int>(f)] = fn; };
  c(VCompare::Equal, run_cmp<eq_m>);
  c(VCompare::NotEqual, run_cmp<ne_m>);
  c(VCompare::Greater, run_cmp<gt_m>);
  c(VCompare::GreaterEqual, run_cmp<ge_m>);
  c(VCompare::Less, run_cmp<lt_m>);
  c(VCompare::LessEqual, run_cmp<le_m>);
  t.select = run_select;
  return t;
}

}  // namespace
}  // namespace kiln::cpu::vmath_detail
