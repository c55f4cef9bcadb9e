// The AVX2+FMA level of the vector math (vmath.h): 8 float lanes, SLEEF's avx2 functions. Compiled
// with -mavx2 -mfma (CMakeLists.txt) and run only when cpu::isa_level() says so; see vmath_isa.h for
// why this file includes so little.
#include "backend/cpu/vmath.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#include <sleef.h>

#include <cstdint>

namespace kiln::cpu::vmath_detail {
namespace {

#define KILN_V static inline __attribute__((always_inline))

struct D {
  using V = __m256;
  using I = __m256i;
  using M = __m256;  // all-ones lanes
  static constexpr size_t N = 8;
  KILN_V V set(float v) { return _mm256_set1_ps(v); }
  KILN_V I seti(int v) { return _mm256_set1_epi32(v); }
  KILN_V V add(V a, V b) { return _mm256_add_ps(a, b); }
  KILN_V V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  KILN_V V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  KILN_V V div(V a, V b) { return _mm256_div_ps(a, b); }
  KILN_V V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  KILN_V V vmin(V a, V b) { return _mm256_min_ps(a, b); }
  KILN_V V vmax(V a, V b) { return _mm256_max_ps(a, b); }
  KILN_V V vsqrt(V a) { return _mm256_sqrt_ps(a); }
  KILN_V V vabs(V a) { return _mm256_andnot_ps(set(-0.0f), a); }
  KILN_V V vneg(V a) { return _mm256_xor_ps(a, set(-0.0f)); }
  KILN_V V vfloor(V a) { return _mm256_floor_ps(a); }
  // p · 2^n with 2^n built from its exponent bits (2^-127 comes out as 0, as in MLX's exp).
  KILN_V V pow2_times(V p, V n) {
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(_mm256_castsi256_ps(e), p);
  }
  KILN_V I cvtt(V a) { return _mm256_cvttps_epi32(a); }
  KILN_V V cvt(I a) { return _mm256_cvtepi32_ps(a); }
  KILN_V V as_f(I a) { return _mm256_castsi256_ps(a); }
  KILN_V I addi(I a, I b) { return _mm256_add_epi32(a, b); }
  KILN_V I subi(I a, I b) { return _mm256_sub_epi32(a, b); }
  KILN_V I andi(I a, I b) { return _mm256_and_si256(a, b); }
  template <int K>
  KILN_V I slli(I a) { return _mm256_slli_epi32(a, K); }
  template <int K>
  KILN_V I srli(I a) { return _mm256_srli_epi32(a, K); }
  KILN_V M lt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  KILN_V M gt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  KILN_V M ge(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
  KILN_V M eq(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
  KILN_V M ne(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_NEQ_UQ); }
  KILN_V M le(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
  KILN_V M unord(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_UNORD_Q); }
  KILN_V M eqi(I a, I b) { return _mm256_castsi256_ps(_mm256_cmpeq_epi32(a, b)); }
  KILN_V M mxor(M a, M b) { return _mm256_xor_ps(a, b); }
  KILN_V M mor(M a, M b) { return _mm256_or_ps(a, b); }
  KILN_V V sel(M m, V yes, V no) { return _mm256_blendv_ps(no, yes, m); }
  KILN_V I seli(M m, I yes, I no) {
    return _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(no), _mm256_castsi256_ps(yes), m));
  }
  KILN_V unsigned bitsof(M m) { return static_cast<unsigned>(_mm256_movemask_ps(m)); }
  KILN_V V loadu(const float* p) { return _mm256_loadu_ps(p); }
  KILN_V void storeu(float* p, V v) { _mm256_storeu_ps(p, v); }
  // The first n < 8 lanes; the rest 0.
  KILN_V I first(size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  KILN_V V load_n(const float* p, size_t n) { return _mm256_maskload_ps(p, first(n)); }
  KILN_V void store_n(float* p, V v, size_t n) { _mm256_maskstore_ps(p, first(n), v); }
  // bool bytes (0 or 1; any nonzero byte reads as true) <-> lane masks
  KILN_V M load_bool(const bool* p, size_t n) {
    long long b = 0;
    __builtin_memcpy(&b, p, n);
    const __m256i w = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(b));
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(w, _mm256_setzero_si256()));
  }
  KILN_V void store_bool(bool* p, M m, size_t n) {
    const unsigned bits = bitsof(m);
    for (size_t k = 0; k < n; ++k) p[k] = (bits >> k) & 1u;
  }
  static V tan(V x) { return Sleef_tanf8_u10avx2(x); }
  static V tanh35(V x) { return Sleef_tanhf8_u35avx2(x); }
  static V sinh(V x) { return Sleef_sinhf8_u10avx2(x); }
  static V cosh(V x) { return Sleef_coshf8_u10avx2(x); }
  static V asin(V x) { return Sleef_asinf8_u10avx2(x); }
  static V acos(V x) { return Sleef_acosf8_u10avx2(x); }
  static V atan(V x) { return Sleef_atanf8_u10avx2(x); }
  static V asinh(V x) { return Sleef_asinhf8_u10avx2(x); }
  static V acosh(V x) { return Sleef_acoshf8_u10avx2(x); }
  static V atanh(V x) { return Sleef_atanhf8_u10avx2(x); }
  static V log(V x) { return Sleef_logf8_u10avx2(x); }
  static V log2(V x) { return Sleef_log2f8_u10avx2(x); }
  static V log10(V x) { return Sleef_log10f8_u10avx2(x); }
  static V log1p(V x) { return Sleef_log1pf8_u10avx2(x); }
  static V expm1(V x) { return Sleef_expm1f8_u10avx2(x); }
  static V pow(V x, V y) { return Sleef_powf8_u10avx2(x, y); }
  static V atan2(V x, V y) { return Sleef_atan2f8_u10avx2(x, y); }
};

#undef KILN_V

}  // namespace
}  // namespace kiln::cpu::vmath_detail

#include "backend/cpu/vmath_isa.h"

namespace kiln::cpu::vmath_detail {
const Table* table_avx2() {
  static constexpr Table t = make_table();
  return &t;
}
}  // namespace kiln::cpu::vmath_detail

#else

namespace kiln::cpu::vmath_detail {
const Table* table_avx2() { return nullptr; }
}  // namespace kiln::cpu::vmath_detail

#endif
