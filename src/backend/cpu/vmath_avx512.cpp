// The AVX-512 level of the vector math (vmath.h): 16 float lanes, lane masks, SLEEF's avx512f
// functions. Compiled with -mavx512f -mavx512dq -mavx512bw -mavx512vl -mfma (CMakeLists.txt) and run
// only when cpu::isa_level() says so; see vmath_isa.h for why this file includes so little.
#include "backend/cpu/vmath.h"

#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__FMA__)
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports the deliberately undefined vectors (_mm512_undefined_ps) inside its own
// avx512fintrin.h as "may be used uninitialized"; nothing here reads an uninitialized value.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#include <sleef.h>

#include <cstdint>

namespace kiln::cpu::vmath_detail {
namespace {

#define KILN_V static inline __attribute__((always_inline))

struct D {
  using V = __m512;
  using I = __m512i;
  using M = __mmask16;
  static constexpr size_t N = 16;
  KILN_V V set(float v) { return _mm512_set1_ps(v); }
  KILN_V I seti(int v) { return _mm512_set1_epi32(v); }
  KILN_V V add(V a, V b) { return _mm512_add_ps(a, b); }
  KILN_V V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  KILN_V V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  KILN_V V div(V a, V b) { return _mm512_div_ps(a, b); }
  KILN_V V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  KILN_V V vmin(V a, V b) { return _mm512_min_ps(a, b); }
  KILN_V V vmax(V a, V b) { return _mm512_max_ps(a, b); }
  KILN_V V vsqrt(V a) { return _mm512_sqrt_ps(a); }
  KILN_V V vabs(V a) { return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_set1_epi32(0x7fffffff))); }
  KILN_V V vneg(V a) { return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(INT32_MIN))); }
  KILN_V V vfloor(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  // p · 2^n by vscalefps, zero where n = -127 (MLX's bit-built 2^-127 is 0).
  KILN_V V pow2_times(V p, V n) {
    return _mm512_maskz_scalef_ps(_mm512_cmp_ps_mask(n, _mm512_set1_ps(-126.5f), _CMP_GT_OQ), p, n);
  }
  KILN_V I cvtt(V a) { return _mm512_cvttps_epi32(a); }
  KILN_V V cvt(I a) { return _mm512_cvtepi32_ps(a); }
  KILN_V V as_f(I a) { return _mm512_castsi512_ps(a); }
  KILN_V I addi(I a, I b) { return _mm512_add_epi32(a, b); }
  KILN_V I subi(I a, I b) { return _mm512_sub_epi32(a, b); }
  KILN_V I andi(I a, I b) { return _mm512_and_si512(a, b); }
  template <int K>
  KILN_V I slli(I a) { return _mm512_slli_epi32(a, K); }
  template <int K>
  KILN_V I srli(I a) { return _mm512_srli_epi32(a, K); }
  KILN_V M lt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  KILN_V M gt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  KILN_V M ge(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
  KILN_V M eq(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
  KILN_V M ne(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_NEQ_UQ); }
  KILN_V M le(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
  KILN_V M unord(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q); }
  KILN_V M eqi(I a, I b) { return _mm512_cmpeq_epi32_mask(a, b); }
  KILN_V M mxor(M a, M b) { return static_cast<M>(a ^ b); }
  KILN_V M mor(M a, M b) { return static_cast<M>(a | b); }
  KILN_V V sel(M m, V yes, V no) { return _mm512_mask_blend_ps(m, no, yes); }
  KILN_V I seli(M m, I yes, I no) { return _mm512_mask_blend_epi32(m, no, yes); }
  KILN_V unsigned bitsof(M m) { return static_cast<unsigned>(m); }
  KILN_V V loadu(const float* p) { return _mm512_loadu_ps(p); }
  KILN_V void storeu(float* p, V v) { _mm512_storeu_ps(p, v); }
  KILN_V M first(size_t n) { return static_cast<M>((1u << n) - 1u); }
  KILN_V V load_n(const float* p, size_t n) { return _mm512_maskz_loadu_ps(first(n), p); }
  KILN_V void store_n(float* p, V v, size_t n) { _mm512_mask_storeu_ps(p, first(n), v); }
  // bool bytes (0 or 1; any nonzero byte reads as true) <-> lane masks
  KILN_V M load_bool(const bool* p, size_t n) {
    const __m128i b = n == N ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(p))
                             : _mm_maskz_loadu_epi8(static_cast<__mmask16>(first(n)), p);
    return _mm_test_epi8_mask(b, b);
  }
  KILN_V void store_bool(bool* p, M m, size_t n) {
    const __m128i b = _mm_maskz_mov_epi8(m, _mm_set1_epi8(1));
    if (n == N) _mm_storeu_si128(reinterpret_cast<__m128i*>(p), b);
    else _mm_mask_storeu_epi8(p, static_cast<__mmask16>(first(n)), b);
  }
  static V tan(V x) { return Sleef_tanf16_u10avx512f(x); }
  static V tanh35(V x) { return Sleef_tanhf16_u35avx512f(x); }
  static V sinh(V x) { return Sleef_sinhf16_u10avx512f(x); }
  static V cosh(V x) { return Sleef_coshf16_u10avx512f(x); }
  static V asin(V x) { return Sleef_asinf16_u10avx512f(x); }
  static V acos(V x) { return Sleef_acosf16_u10avx512f(x); }
  static V atan(V x) { return Sleef_atanf16_u10avx512f(x); }
  static V asinh(V x) { return Sleef_asinhf16_u10avx512f(x); }
  static V acosh(V x) { return Sleef_acoshf16_u10avx512f(x); }
  static V atanh(V x) { return Sleef_atanhf16_u10avx512f(x); }
  static V log(V x) { return Sleef_logf16_u10avx512f(x); }
  static V log2(V x) { return Sleef_log2f16_u10avx512f(x); }
  static V log10(V x) { return Sleef_log10f16_u10avx512f(x); }
  static V log1p(V x) { return Sleef_log1pf16_u10avx512f(x); }
  static V expm1(V x) { return Sleef_expm1f16_u10avx512f(x); }
  static V pow(V x, V y) { return Sleef_powf16_u10avx512f(x, y); }
  static V atan2(V x, V y) { return Sleef_atan2f16_u10avx512f(x, y); }
};

#undef KILN_V

}  // namespace
}  // namespace kiln::cpu::vmath_detail

#include "backend/cpu/vmath_isa.h"

namespace kiln::cpu::vmath_detail {
const Table* table_avx512() {
  static constexpr Table t = make_table();
  return &t;
}
}  // namespace kiln::cpu::vmath_detail

#else

namespace kiln::cpu::vmath_detail {
const Table* table_avx512() { return nullptr; }
}  // namespace kiln::cpu::vmath_detail

#endif
