// The issue rate of AVX512-VNNI's vpdpbusd against float32 FMA on one core, alone and interleaved:
// whether an integer GEMM (4-bit codes times x in byte planes) could outrun the float one. Each loop keeps
// 12 independent accumulator chains (more than latency x throughput), so it measures throughput.
//   cc -O3 -mavx512f -mavx512bw -mavx512vnni -mfma bench/vnni_vs_fma.c -o vnni_vs_fma && ./vnni_vs_fma
// (-O3: the accumulator arrays must be unrolled into registers; at -O2 they stay in memory.)
// A result on the 2-core EPYC (family 25 model 17) of bench/RESULTS.md: 3.4-3.65 G/s each and 3.6 G/s
// interleaved, i.e. one 512-bit instruction a cycle from the same pipes, so a vpdpbusd (64 byte products)
// is worth 4 FMAs (16 products) only where x fits one byte plane; with x in three planes (float32
// accuracy) it is worth 4/3.
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

#define N_ITERS 50000000L

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// `x` goes through an empty asm each round, so the compiler can neither fold the products nor merge
// the chains (they start from different values).
static __attribute__((noinline)) __m512i dpbusd_loop(long n, __m512i w, __m512i x) {
  __m512i a[12];
  for (int i = 0; i < 12; ++i) a[i] = _mm512_set1_epi32(i);
  for (long k = 0; k < n; ++k) {
    for (int i = 0; i < 12; ++i) a[i] = _mm512_dpbusd_epi32(a[i], w, x);
    __asm__ volatile("" : "+v"(x));
  }
  __m512i s = a[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_epi32(s, a[i]);
  return s;
}

static __attribute__((noinline)) __m512 fma_loop(long n, __m512 w, __m512 x) {
  __m512 a[12];
  for (int i = 0; i < 12; ++i) a[i] = _mm512_set1_ps((float)i);
  for (long k = 0; k < n; ++k) {
    for (int i = 0; i < 12; ++i) a[i] = _mm512_fmadd_ps(w, x, a[i]);
    __asm__ volatile("" : "+v"(x));
  }
  __m512 s = a[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, a[i]);
  return s;
}

static __attribute__((noinline)) __m512 mixed_loop(long n, __m512i w, __m512i x, __m512 fw, __m512 fx) {
  __m512i a[6];
  __m512 b[6];
  for (int i = 0; i < 6; ++i) a[i] = _mm512_set1_epi32(i), b[i] = _mm512_set1_ps((float)i);
  for (long k = 0; k < n; ++k) {
    for (int i = 0; i < 6; ++i) {
      a[i] = _mm512_dpbusd_epi32(a[i], w, x);
      b[i] = _mm512_fmadd_ps(fw, fx, b[i]);
    }
    __asm__ volatile("" : "+v"(x), "+v"(fx));
  }
  __m512 s = _mm512_castsi512_ps(a[0]);
  for (int i = 1; i < 6; ++i) s = _mm512_add_ps(s, _mm512_add_ps(_mm512_castsi512_ps(a[i]), b[i]));
  return _mm512_add_ps(s, b[0]);
}

int main(void) {
  const __m512i w = _mm512_set1_epi8(3), x = _mm512_set1_epi8(1);
  const __m512 fw = _mm512_set1_ps(1.0001f), fx = _mm512_set1_ps(0.9999f);
  volatile float sink = 0.0f;
  for (int round = 0; round < 3; ++round) {
    double t0 = now();
    __m512i r1 = dpbusd_loop(N_ITERS, w, x);
    double t1 = now();
    __m512 r2 = fma_loop(N_ITERS, fw, fx);
    double t2 = now();
    __m512 r3 = mixed_loop(N_ITERS, w, x, fw, fx);
    double t3 = now();
    sink += _mm512_reduce_add_ps(_mm512_add_ps(_mm512_castsi512_ps(r1), _mm512_add_ps(r2, r3)));
    const double ops = 12.0 * (double)N_ITERS / 1e9;
    printf("vpdpbusd zmm %.2f G/s   vfmadd231ps zmm %.2f G/s   both interleaved %.2f G/s\n", ops / (t1 - t0),
           ops / (t2 - t1), ops / (t3 - t2));
  }
  return sink == 12345.0f;
}
