// AVX2+FMA loops for the float32 math that MLX computes with its own polynomials (exp, sin, cos and
// sigmoid, erf built on exp). They follow the scalar functions of elementwise_common.h step for step,
// eight lanes at a time and with the hardware FMA, so the results are the same bits. Chosen at run
// time; other CPUs use the portable loops.
#include "backend/cpu/kernels/elementwise/elementwise_common.h"  // first: it sets the kernels' float options

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define KILN_EW_AVX2 1
#endif

namespace kiln::ew {

#ifdef KILN_EW_AVX2
namespace {

#define KILN_AVX2 __attribute__((target("avx2,fma"), always_inline)) inline

KILN_AVX2 __m256 set(float v) { return _mm256_set1_ps(v); }
KILN_AVX2 __m256 fma8(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
KILN_AVX2 __m256 fma8(__m256 a, float b, float c) { return _mm256_fmadd_ps(a, set(b), set(c)); }
KILN_AVX2 __m256 neg8(__m256 v) { return _mm256_xor_ps(v, set(-0.0f)); }
KILN_AVX2 __m256 abs8(__m256 v) { return _mm256_andnot_ps(set(-0.0f), v); }
KILN_AVX2 __m256 sel8(__m256 mask, __m256 yes, __m256 no) { return _mm256_blendv_ps(no, yes, mask); }

KILN_AVX2 __m256 exp8(__m256 x0) {
  __m256 xc = _mm256_min_ps(_mm256_max_ps(x0, set(-88.0f)), set(88.0f));  // NaN -> -88
  __m256 t = _mm256_mul_ps(xc, set(1.442695f));
  // floor(t + 0.5) exactly: truncate, then round the (exact) fraction up or down.
  __m256i i = _mm256_cvttps_epi32(t);
  __m256 fr = _mm256_sub_ps(t, _mm256_cvtepi32_ps(i));
  i = _mm256_sub_epi32(i, _mm256_castps_si256(_mm256_cmp_ps(fr, set(0.5f), _CMP_GE_OQ)));
  i = _mm256_add_epi32(i, _mm256_castps_si256(_mm256_cmp_ps(fr, set(-0.5f), _CMP_LT_OQ)));
  __m256 f = _mm256_sub_ps(t, _mm256_cvtepi32_ps(i));
  __m256 p = set(1.535336188319500e-4f);
  p = fma8(p, f, set(1.339887440266574e-3f));
  p = fma8(p, f, set(9.618437357674640e-3f));
  p = fma8(p, f, set(5.550332471162809e-2f));
  p = fma8(p, f, set(2.402264791363012e-1f));
  p = fma8(p, f, set(6.931472028550421e-1f));
  p = fma8(p, f, set(1.0f));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(i, _mm256_set1_epi32(127)), 23);
  __m256 r = _mm256_mul_ps(_mm256_castsi256_ps(e), p);
  r = sel8(_mm256_cmp_ps(x0, set(88.0f), _CMP_GT_OQ), set(std::numeric_limits<float>::infinity()), r);
  r = sel8(_mm256_cmp_ps(x0, set(-88.0f), _CMP_LT_OQ), _mm256_setzero_ps(), r);
  return sel8(_mm256_cmp_ps(x0, x0, _CMP_UNORD_Q), x0, r);
}

// float_to_u32_x86 for eight lanes.
KILN_AVX2 __m256i to_u32_x86(__m256 y) {
  __m256 hi = _mm256_floor_ps(_mm256_mul_ps(y, set(2.3283064365386963e-10f)));
  __m256 r = _mm256_sub_ps(y, _mm256_mul_ps(hi, set(4294967296.0f)));
  r = _mm256_and_ps(r, _mm256_cmp_ps(y, set(9.2233720368547758e18f), _CMP_LT_OQ));
  __m256 top_mask = _mm256_cmp_ps(r, set(2147483648.0f), _CMP_GE_OQ);
  __m256i u = _mm256_cvttps_epi32(_mm256_sub_ps(r, _mm256_and_ps(top_mask, set(2147483648.0f))));
  return _mm256_add_epi32(u, _mm256_and_si256(_mm256_castps_si256(top_mask), _mm256_set1_epi32(INT32_MIN)));
}

// uint32 -> float with one rounding: the high half scaled by 2^16 is exact, the sum rounds once.
KILN_AVX2 __m256 u32_to_float(__m256i j) {
  __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(j, 16));
  __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(j, _mm256_set1_epi32(0xffff)));
  return _mm256_add_ps(_mm256_mul_ps(hi, set(65536.0f)), lo);
}

KILN_AVX2 __m256 bit_set(__m256i j, int bit) {
  __m256i b = _mm256_set1_epi32(bit);
  return _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(j, b), b));
}

template <bool Sine>
KILN_AVX2 __m256 sincos8(__m256 in) {
  __m256 neg = _mm256_cmp_ps(in, _mm256_setzero_ps(), _CMP_LT_OQ);
  __m256 x = abs8(in);
  __m256 y = _mm256_mul_ps(x, set(1.27323954473516f));
  __m256i j = to_u32_x86(y);
  j = _mm256_and_si256(_mm256_add_epi32(j, _mm256_set1_epi32(1)), _mm256_set1_epi32(~1));
  y = u32_to_float(j);
  __m256 poly = bit_set(j, 2);
  x = fma8(y, set(-0.78515625f), x);
  x = fma8(y, set(-2.4187564849853515625e-4f), x);
  x = fma8(y, set(-3.77489497744594108e-8f), x);
  __m256 z = _mm256_mul_ps(x, x);
  __m256 y1 = fma8(z, 2.443315711809948e-5f, -1.388731625493765e-3f);
  __m256 y2 = fma8(z, -1.9515295891e-4f, 8.3321608736e-3f);
  y1 = fma8(y1, z, set(4.166664568298827e-2f));
  y2 = fma8(y2, z, set(-1.6666654611e-1f));
  y1 = _mm256_mul_ps(y1, z);
  y2 = _mm256_mul_ps(y2, z);
  y1 = _mm256_mul_ps(y1, z);
  y2 = fma8(x, y2, x);
  y1 = fma8(z, set(-0.5f), y1);
  y1 = _mm256_add_ps(y1, set(1.0f));
  if constexpr (Sine) {
    __m256 s = _mm256_xor_ps(neg, bit_set(j, 4));
    __m256 v = sel8(poly, y1, y2);
    return sel8(s, neg8(v), v);
  } else {
    __m256 s = bit_set(_mm256_sub_epi32(j, _mm256_set1_epi32(2)), 4);
    __m256 v = sel8(poly, y2, y1);
    return sel8(s, v, neg8(v));
  }
}

KILN_AVX2 __m256 sigmoid8(__m256 x) {
  __m256 y = _mm256_div_ps(set(1.0f), _mm256_add_ps(set(1.0f), exp8(abs8(x))));
  return sel8(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ), y, _mm256_sub_ps(set(1.0f), y));
}

KILN_AVX2 __m256 erf8(__m256 v) {
  __m256 t = _mm256_div_ps(set(1.0f), fma8(set(0.3275911f), abs8(v), set(1.0f)));
  __m256 r = fma8(set(1.061405429f), t, set(-1.453152027f));
  r = fma8(r, t, set(1.421413741f));
  r = fma8(r, t, set(-0.284496736f));
  r = fma8(r, t, set(0.254829592f));
  __m256 e = neg8(exp8(_mm256_mul_ps(neg8(v), v)));
  __m256 res = fma8(_mm256_mul_ps(e, t), r, set(1.0f));
  return sel8(_mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ), res, neg8(res));
}

template <Avx2Op Op>
KILN_AVX2 __m256 apply8(__m256 x) {
  if constexpr (Op == Avx2Op::Exp) return exp8(x);
  else if constexpr (Op == Avx2Op::Sin) return sincos8<true>(x);
  else if constexpr (Op == Avx2Op::Cos) return sincos8<false>(x);
  else if constexpr (Op == Avx2Op::Sigmoid) return sigmoid8(x);
  else return erf8(x);
}

template <Avx2Op Op>
__attribute__((target("avx2,fma"))) void run(const float* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, apply8<Op>(_mm256_loadu_ps(src + i)));
  if (i < n) {  // the tail through a padded vector
    alignas(32) float buf[8] = {};
    for (size_t k = i; k < n; ++k) buf[k - i] = src[k];
    _mm256_store_ps(buf, apply8<Op>(_mm256_load_ps(buf)));
    for (size_t k = i; k < n; ++k) dst[k] = buf[k - i];
  }
}

}  // namespace

bool avx2_unary_f32(Avx2Op op, const float* src, float* dst, size_t n) {
  static const bool ok = (__builtin_cpu_init(), __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
  if (!ok) return false;
  switch (op) {
    case Avx2Op::Exp: run<Avx2Op::Exp>(src, dst, n); break;
    case Avx2Op::Sin: run<Avx2Op::Sin>(src, dst, n); break;
    case Avx2Op::Cos: run<Avx2Op::Cos>(src, dst, n); break;
    case Avx2Op::Sigmoid: run<Avx2Op::Sigmoid>(src, dst, n); break;
    case Avx2Op::Erf: run<Avx2Op::Erf>(src, dst, n); break;
  }
  return true;
}

#else

bool avx2_unary_f32(Avx2Op, const float*, float*, size_t) { return false; }

#endif

}  // namespace kiln::ew
