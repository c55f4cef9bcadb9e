// Helpers shared by the GEMM kernels (gemm_skinny.cpp, gemm_packed.cpp): target attributes, loads that
// widen float / bfloat16 / float16 elements to float32 vectors, and the alpha/beta store.
#pragma once

#include <immintrin.h>

// GCC 12's AVX-512 headers build results from _mm512_undefined_*() (x = x), which -Wuninitialized reports
// once the intrinsics are inlined here; the warning is about the header, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <new>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/threading.h"
#include "kiln/dtype.h"

// Functions compiled for one instruction-set level, called only after the run-time check (cpu_features.h).
#define KILN_T256 __attribute__((target("avx2,fma,f16c")))
#define KILN_T512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")))
#define KILN_T512BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx2,fma,f16c")))

namespace kiln::cpu::gemm_detail {

// A buffer of T aligned to a cache line, grown on demand (kept per thread by the GEMM drivers).
template <typename T>
struct AlignedBuf {
  std::unique_ptr<T[], void (*)(T*)> p{nullptr, [](T* q) { ::operator delete[](q, std::align_val_t(64)); }};
  size_t cap = 0;
  T* get(size_t n) {
    if (n > cap) {
      p.reset(static_cast<T*>(::operator new[](n * sizeof(T), std::align_val_t(64))));
      cap = n;
    }
    return p.get();
  }
};

inline float to_f32(float x) { return x; }
inline float to_f32(bfloat16_t x) {
  const uint32_t u = static_cast<uint32_t>(x.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float to_f32(float16_t x) { return static_cast<float>(x); }

// c = alpha · v + beta · c, not reading c when beta is 0 (BLAS's convention: NaN in c does not leak).
inline void store1(float* c, float v, float alpha, float beta) { *c = beta == 0.0f ? alpha * v : alpha * v + beta * *c; }

// C (M×N, ldc) = beta · C: the product when K is 0.
inline void scale_c(int64_t M, int64_t N, float beta, float* C, int64_t ldc) {
  for (int64_t m = 0; m < M; ++m) {
    float* c = C + m * ldc;
    for (int64_t n = 0; n < N; ++n) c[n] = beta == 0.0f ? 0.0f : beta * c[n];
  }
}

// fn(t) for every task t in [0, ntasks), handed out one at a time from a shared counter to as many threads
// as there are (cpu::parallel_for with one chunk per thread): a thread that is descheduled or slow leaves its
// share to the others, where fixed chunks would make everyone wait for it. Runs serially inside a
// parallel region or with one task.
inline void run_tasks(int64_t ntasks, const std::function<void(int64_t)>& fn) {
  if (ntasks <= 0) return;
  const int64_t nt = std::min<int64_t>(num_threads(), ntasks);
  std::atomic<int64_t> next{0};
  parallel_for(static_cast<size_t>(nt), 1, [&](size_t, size_t) {
    for (int64_t t; (t = next.fetch_add(1, std::memory_order_relaxed)) < ntasks;) fn(t);
  });
}

// `isa` lowered to what the CPU has.
inline Isa clamp_isa(Isa isa) { return isa < isa_detected() ? isa : isa_detected(); }

// 8 elements widened to float32.
KILN_T256 __attribute__((always_inline)) inline __m256 ld8(const float* p) { return _mm256_loadu_ps(p); }
KILN_T256 __attribute__((always_inline)) inline __m256 ld8(const bfloat16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
KILN_T256 __attribute__((always_inline)) inline __m256 ld8(const float16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// 16 elements widened to float32; the _mask forms read only the lanes in m (others are 0).
KILN_T512 __attribute__((always_inline)) inline __m512 ld16(const float* p) { return _mm512_loadu_ps(p); }
KILN_T512 __attribute__((always_inline)) inline __m512 ld16(const bfloat16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
KILN_T512 __attribute__((always_inline)) inline __m512 ld16(const float16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
KILN_T512 __attribute__((always_inline)) inline __m512 ld16_mask(const float* p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}
KILN_T512 __attribute__((always_inline)) inline __m512 ld16_mask(const bfloat16_t* p, __mmask16 m) {
  const __m256i h = _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
KILN_T512 __attribute__((always_inline)) inline __m512 ld16_mask(const float16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

}  // namespace kiln::cpu::gemm_detail
