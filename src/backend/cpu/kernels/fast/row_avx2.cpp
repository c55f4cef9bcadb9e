// The row loops (row_body.h) built for AVX2 with FMA and F16C: 8 float lanes.
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backend/cpu/kernels/fast/row_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KILN_ROW_AVX2 1
#endif

namespace kiln::fastk::rows {

#ifdef KILN_ROW_AVX2

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
// No fused multiply-adds but the explicit ones: GCC would otherwise fuse the intrinsics' products and
// sums, and the results would differ from the portable build's.
#pragma GCC optimize("fp-contract=off")
#endif

namespace {

struct V {
  using R = __m256;
  static constexpr int W = 8;
  static R set1(float v) { return _mm256_set1_ps(v); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static R loadh(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static __m128i to_h(R v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static void storeh(uint16_t* p, R v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), to_h(v)); }
  static R roundh(R v) { return _mm256_cvtph_ps(to_h(v)); }
  static R loadb(const uint16_t* p) {
    const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
  }
  // bfloat16 bits (in the low half of each 32-bit lane): round to nearest even, NaN made quiet.
  static __m256i to_b(R v) {
    const __m256i x = _mm256_castps_si256(v);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), odd), 16);
    const __m256i q = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    return _mm256_blendv_epi8(r, q, nan);
  }
  static void storeb(uint16_t* p, R v) {
    const __m256i b = to_b(v);
    const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), packed);
  }
  static R roundb(R v) { return _mm256_castsi256_ps(_mm256_slli_epi32(to_b(v), 16)); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R max(R a, R b) { return _mm256_max_ps(a, b); }  // a NaN: b
  static float hsum(R v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float hmax(R v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static R nan_acc(R acc, R x) { return _mm256_or_ps(acc, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)); }
  static bool any_nan(R acc) { return _mm256_movemask_ps(acc) != 0; }
  // Streaming (non-temporal) store of a 32-byte aligned vector, and the fence that orders them.
  static constexpr int kStreamAlign = 32;
  static void stream(float* p, R v) { _mm256_stream_ps(p, v); }
  static void fence() { _mm_sfence(); }
  // MLX's exp polynomial of the fraction f = t - n, t = x·log2(e), n = floor(t + 0.5).
  static R poly(R f) {
    R p = set1(1.535336188319500e-4f);
    p = _mm256_fmadd_ps(p, f, set1(1.339887440266574e-3f));
    p = _mm256_fmadd_ps(p, f, set1(9.618437357674640e-3f));
    p = _mm256_fmadd_ps(p, f, set1(5.550332471162809e-2f));
    p = _mm256_fmadd_ps(p, f, set1(2.402264791363012e-1f));
    p = _mm256_fmadd_ps(p, f, set1(6.931472028550421e-1f));
    return _mm256_fmadd_ps(p, f, set1(1.0f));
  }
  // n = floor(t + 0.5): t + 0.5 rounds in float, but never across an integer (for |t| < 2^22), so the
  // floor is the exact one. The result is p times 2^n built from its exponent bits (0 for n = -127).
  static R exp_clamped(R t) {
    const R n = _mm256_floor_ps(_mm256_add_ps(t, set1(0.5f)));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(_mm256_castsi256_ps(e), poly(_mm256_sub_ps(t, n)));
  }
  // exp for x <= 0 (or -inf), never NaN: the same bits as exp() with the steps that cannot apply dropped.
  static R exp_neg(R x0) {
    const R r = exp_clamped(_mm256_mul_ps(_mm256_max_ps(x0, set1(-88.0f)), set1(1.442695f)));
    return _mm256_and_ps(r, _mm256_cmp_ps(x0, set1(-88.0f), _CMP_NLT_UQ));
  }
  // MLX's exp, step for step as the element-wise Exp kernels (same bits, every float checked).
  static R exp(R x0) {
    const R xc = _mm256_min_ps(_mm256_max_ps(x0, set1(-88.0f)), set1(88.0f));  // NaN -> -88
    R r = exp_clamped(_mm256_mul_ps(xc, set1(1.442695f)));
    r = _mm256_blendv_ps(r, set1(std::numeric_limits<float>::infinity()), _mm256_cmp_ps(x0, set1(88.0f), _CMP_GT_OQ));
    r = _mm256_blendv_ps(r, _mm256_setzero_ps(), _mm256_cmp_ps(x0, set1(-88.0f), _CMP_LT_OQ));
    return _mm256_blendv_ps(r, x0, _mm256_cmp_ps(x0, x0, _CMP_UNORD_Q));
  }
};

#if defined(__clang__)
#pragma clang fp contract(off)
#endif
#include "backend/cpu/kernels/fast/row_body.h"

}  // namespace

const RowFns* row_fns_avx2() {
  static const RowFns f = make_fns(1);
  return &f;
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else

const RowFns* row_fns_avx2() { return nullptr; }

#endif

}  // namespace kiln::fastk::rows
