// The row loops (row_body.h) built for AVX-512 (F, BW, DQ, VL): 16 float lanes.
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 headers start some reductions from an undefined register and warn about it.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backend/cpu/kernels/fast/row_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KILN_ROW_AVX512 1
#endif

namespace kiln::fastk::rows {

#ifdef KILN_ROW_AVX512

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")
// No fused multiply-adds but the explicit ones: GCC would otherwise fuse the intrinsics' products and
// sums, and the results would differ from the portable build's.
#pragma GCC optimize("fp-contract=off")
#endif

namespace {

struct V {
  using R = __m512;
  static constexpr int W = 16;
  static R set1(float v) { return _mm512_set1_ps(v); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static R loadh(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static __m256i to_h(R v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static void storeh(uint16_t* p, R v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), to_h(v)); }
  static R roundh(R v) { return _mm512_cvtph_ps(to_h(v)); }
  static R loadb(const uint16_t* p) {
    const __m512i u = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
  }
  // bfloat16 bits (in the low half of each 32-bit lane): round to nearest even, NaN made quiet.
  static __m512i to_b(R v) {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), odd), 16);
    const __m512i q = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
    return _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), q);
  }
  static void storeb(uint16_t* p, R v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(to_b(v)));
  }
  static R roundb(R v) { return _mm512_castsi512_ps(_mm512_slli_epi32(to_b(v), 16)); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R max(R a, R b) { return _mm512_max_ps(a, b); }  // a NaN: b
  static float hsum(R v) { return _mm512_reduce_add_ps(v); }
  static float hmax(R v) { return _mm512_reduce_max_ps(v); }
  static R nan_acc(R acc, R x) {
    return _mm512_castsi512_ps(_mm512_mask_mov_epi32(_mm512_castps_si512(acc), _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q),
                                                     _mm512_set1_epi32(-1)));
  }
  static bool any_nan(R acc) { return _mm512_test_epi32_mask(_mm512_castps_si512(acc), _mm512_castps_si512(acc)) != 0; }
  // Streaming (non-temporal) store of a 64-byte aligned vector, and the fence that orders them.
  static constexpr int kStreamAlign = 64;
  static void stream(float* p, R v) { _mm512_stream_ps(p, v); }
  static void fence() { _mm_sfence(); }
  // MLX's exp polynomial of the fraction f = t - n, t = x·log2(e), n = floor(t + 0.5).
  static R poly(R f) {
    R p = set1(1.535336188319500e-4f);
    p = _mm512_fmadd_ps(p, f, set1(1.339887440266574e-3f));
    p = _mm512_fmadd_ps(p, f, set1(9.618437357674640e-3f));
    p = _mm512_fmadd_ps(p, f, set1(5.550332471162809e-2f));
    p = _mm512_fmadd_ps(p, f, set1(2.402264791363012e-1f));
    p = _mm512_fmadd_ps(p, f, set1(6.931472028550421e-1f));
    return _mm512_fmadd_ps(p, f, set1(1.0f));
  }
  // n = floor(t + 0.5): t + 0.5 rounds in float, but never across an integer (for |t| < 2^22), so the
  // floor is the exact one. p · 2^n with vscalefps: exact for n >= -126; n = -127 (x in [-88, -87.68])
  // is 0, as the bit-built power 2^-127 of MLX's exp is.
  static R pow2_times(R p, R n) {
    return _mm512_maskz_scalef_ps(_mm512_cmp_ps_mask(n, set1(-126.5f), _CMP_GT_OQ), p, n);
  }
  static R floor_half(R t) {
    return _mm512_roundscale_ps(_mm512_add_ps(t, set1(0.5f)), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  }
  // exp for x <= 0 (or -inf), never NaN: the same bits as exp() without the clamps (any x below -88
  // gives n <= -127, so 0; -inf gives n = -inf, also 0).
  static R exp_neg(R x0) {
    const R t = _mm512_mul_ps(x0, set1(1.442695f));
    const R n = floor_half(t);
    return pow2_times(poly(_mm512_sub_ps(t, n)), n);
  }
  // MLX's exp, step for step as the element-wise Exp kernels (same bits, every float checked).
  static R exp(R x0) {
    const R xc = _mm512_min_ps(_mm512_max_ps(x0, set1(-88.0f)), set1(88.0f));  // NaN -> -88
    const R t = _mm512_mul_ps(xc, set1(1.442695f));
    const R n = floor_half(t);
    R r = pow2_times(poly(_mm512_sub_ps(t, n)), n);
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x0, set1(88.0f), _CMP_GT_OQ),
                           set1(std::numeric_limits<float>::infinity()));
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x0, set1(-88.0f), _CMP_LT_OQ), _mm512_setzero_ps());
    return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x0, x0, _CMP_UNORD_Q), x0);
  }
};

#if defined(__clang__)
#pragma clang fp contract(off)
#endif
#include "backend/cpu/kernels/fast/row_body.h"

}  // namespace

const RowFns* row_fns_avx512() {
  static const RowFns f = make_fns(2);
  return &f;
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#else

const RowFns* row_fns_avx512() { return nullptr; }

#endif

}  // namespace kiln::fastk::rows
