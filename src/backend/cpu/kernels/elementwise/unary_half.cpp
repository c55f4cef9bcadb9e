// Block conversions between float16/bfloat16 and float, used by the element-wise kernels to run
// 16-bit arrays through their float loops (compute in float, round once). float16 uses the F16C
// instructions when the CPU has them; both give the same bits as float16_t / bfloat16_t.
#include "backend/cpu/kernels/elementwise/elementwise_common.h"  // first: it sets the kernels' float options

#include "backend/cpu/cpu_features.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define KILN_EW_F16C 1
#endif

namespace kiln::ew {

namespace {

#ifdef KILN_EW_F16C
bool has_f16c() {
  static const bool ok = (__builtin_cpu_init(), __builtin_cpu_supports("avx") && kiln::cpu::has_f16c());
  return ok;
}

__attribute__((target("avx,f16c"))) void f16_to_f32_f16c(const float16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

__attribute__((target("avx,f16c"))) void f32_to_f16_f16c(const float* src, float16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = float16_t(src[i]);
}
#endif

}  // namespace

void to_float(const float16_t* src, float* dst, size_t n) {
#ifdef KILN_EW_F16C
  if (has_f16c()) return f16_to_f32_f16c(src, dst, n);
#endif
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

void from_float(const float* src, float16_t* dst, size_t n) {
#ifdef KILN_EW_F16C
  if (has_f16c()) return f32_to_f16_f16c(src, dst, n);
#endif
  for (size_t i = 0; i < n; ++i) dst[i] = float16_t(src[i]);
}

// bfloat16 is the top half of a float: plain integer code, which the compiler vectorizes.
void to_float(const bfloat16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(static_cast<uint32_t>(src[i].bits) << 16);
}

void from_float(const float* src, bfloat16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t x = std::bit_cast<uint32_t>(src[i]);
    uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;  // nearest even
    uint32_t quiet = (x >> 16) | 0x40u;                          // NaN stays NaN
    dst[i].bits = static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
  }
}

}  // namespace kiln::ew
