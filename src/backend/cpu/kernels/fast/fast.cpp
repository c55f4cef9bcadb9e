// The fused family's vector kernels (dot, sum, axpy, half-precision rows to float), and
// register_cpu_fast(), which adds the kernels of every fused primitive.
#include "backend/cpu/cpu_features.h"

#include <immintrin.h>

#include <cstring>

#include "backend/cpu/kernels/fast/fast_kernels.h"
#include "backend/cpu/loops.h"

namespace kiln {

namespace fastk {

#define KILN_SIMD __attribute__((target_clones("avx2", "default")))

namespace {
template <typename A>
inline A dot_impl(const A* a, const A* b, int64_t n) {
  A acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  }
  A s = 0;
  for (int l = 0; l < 8; ++l) s += acc[l];
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}
template <typename A>
inline A sum_impl(const A* a, int64_t n) {
  A acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += a[i + l];
  }
  A s = 0;
  for (int l = 0; l < 8; ++l) s += acc[l];
  for (; i < n; ++i) s += a[i];
  return s;
}
}  // namespace

KILN_SIMD float dot(const float* a, const float* b, int64_t n) { return dot_impl(a, b, n); }
KILN_SIMD double dot(const double* a, const double* b, int64_t n) { return dot_impl(a, b, n); }
KILN_SIMD float sum(const float* a, int64_t n) { return sum_impl(a, n); }
KILN_SIMD double sum(const double* a, int64_t n) { return sum_impl(a, n); }
KILN_SIMD void axpy(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}
KILN_SIMD void axpy(double alpha, const double* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

namespace {
__attribute__((target("avx2,f16c"))) void f16_to_f32_f16c(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  }
  for (; i < n; ++i) d[i] = float16_t::to_float(s[i]);
}
}  // namespace

void to_float(const float16_t* src, float* dst, int64_t n) {
  static const bool f16c = kiln::cpu::has_f16c() && __builtin_cpu_supports("avx2");
  if (f16c) {
    f16_to_f32_f16c(reinterpret_cast<const uint16_t*>(src), dst, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = float(src[i]);
}

KILN_SIMD void to_float(const bfloat16_t* src, float* dst, int64_t n) {
  const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t b = static_cast<uint32_t>(s[i]) << 16;
    std::memcpy(dst + i, &b, 4);
  }
}

array unit_last_stride(const array& a) {
  if (a.ndim() == 0 || a.strides().back() == 1 || a.shape().back() <= 1) return a;
  return cpu::contiguous_copy(a);
}

}  // namespace fastk

namespace cpu {
void register_cpu_fast(detail::KernelTable& table) {
  fastk::add_norm_kernels(table);
  fastk::add_rope_kernels(table);
  fastk::add_sdpa_kernels(table);
}
}  // namespace cpu

}  // namespace kiln
