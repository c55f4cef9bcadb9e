// The machine's limits for bench/compare.py, measured in the same run as the cases:
//   read bandwidth: every core (one thread each) streams its slice of one buffer (>= 1 GiB, touched
//     before timing so that no page faults are counted) with 256-bit loads into independent
//     accumulators; the best of several passes, in GB/s (10^9 bytes per second);
//   float32 GEMM rate: cblas_sgemm of the OpenBLAS that kiln links (Debian's libopenblas), n x n x n,
//     the best of several calls, in GFLOP/s (2 n^3 flops per call).
// Prints one JSON object. Built by compare.py: cc -O3 -march=native -pthread machine_limits.c -lopenblas.
// Usage: machine_limits [--mib N] [--passes P] [--gemm N] [--threads T]
#define _GNU_SOURCE
#include <cblas.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__AVX2__) || defined(__AVX__)
#include <immintrin.h>
#endif

// OpenBLAS's own functions (declared in its cblas.h on Debian; repeated here for other headers).
extern char* openblas_get_config(void);
extern int openblas_get_num_threads(void);
extern char* openblas_get_corename(void);

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
  const unsigned char* begin;
  size_t bytes;
  int passes;
  pthread_barrier_t* barrier;
  double* pass_start;  // written by thread 0 after each barrier
  double* pass_end;
  int index;
  uint64_t sink;
} reader_t;

static uint64_t read_slice(const unsigned char* p, size_t bytes) {
#if defined(__AVX2__)
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  size_t n = bytes / 128;
  const __m256i* v = (const __m256i*)p;
  for (size_t i = 0; i < n; ++i) {
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(v + 4 * i + 0));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256(v + 4 * i + 1));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256(v + 4 * i + 2));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256(v + 4 * i + 3));
  }
  __m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  uint64_t out[4];
  _mm256_storeu_si256((__m256i*)out, s);
  return out[0] ^ out[1] ^ out[2] ^ out[3];
#else
  // Portable: eight independent 64-bit accumulators (the compiler vectorizes this loop).
  const uint64_t* q = (const uint64_t*)p;
  size_t n = bytes / 64;
  uint64_t a[8] = {0};
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < 8; ++k) a[k] += q[8 * i + k];
  return a[0] ^ a[1] ^ a[2] ^ a[3] ^ a[4] ^ a[5] ^ a[6] ^ a[7];
#endif
}

static void* reader_main(void* arg) {
  reader_t* r = (reader_t*)arg;
  for (int pass = 0; pass < r->passes; ++pass) {
    pthread_barrier_wait(r->barrier);
    if (r->index == 0) r->pass_start[pass] = now_s();
    r->sink += read_slice(r->begin, r->bytes);
    pthread_barrier_wait(r->barrier);
    if (r->index == 0) r->pass_end[pass] = now_s();
  }
  return NULL;
}

int main(int argc, char** argv) {
  size_t mib = 1024;
  int passes = 8, gemm_n = 2048, threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--mib")) mib = (size_t)atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--passes")) passes = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--gemm")) gemm_n = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "machine_limits: unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (threads < 1) threads = 1;
  if (passes < 1) passes = 1;

  // ---- read bandwidth ----
  size_t bytes = mib << 20;
  size_t chunk = ((bytes / (size_t)threads) / 4096) * 4096;  // per-thread slice, page aligned
  bytes = chunk * (size_t)threads;
  unsigned char* buf = NULL;
  if (posix_memalign((void**)&buf, 4096, bytes) != 0) {
    fprintf(stderr, "machine_limits: cannot allocate %zu bytes\n", bytes);
    return 1;
  }
  for (size_t i = 0; i < bytes; i += 64) buf[i] = (unsigned char)(i >> 6);  // fault every page in
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, (unsigned)threads);
  double* t0 = calloc((size_t)passes, sizeof(double));
  double* t1 = calloc((size_t)passes, sizeof(double));
  reader_t* rs = calloc((size_t)threads, sizeof(reader_t));
  pthread_t* ts = calloc((size_t)threads, sizeof(pthread_t));
  for (int t = 0; t < threads; ++t) {
    rs[t] = (reader_t){buf + chunk * (size_t)t, chunk, passes, &barrier, t0, t1, t, 0};
    if (t > 0) pthread_create(&ts[t], NULL, reader_main, &rs[t]);
  }
  reader_main(&rs[0]);
  uint64_t sink = rs[0].sink;
  for (int t = 1; t < threads; ++t) {
    pthread_join(ts[t], NULL);
    sink ^= rs[t].sink;
  }
  double best = 1e30, total = 0;
  for (int p = 0; p < passes; ++p) {
    double d = t1[p] - t0[p];
    total += d;
    if (d < best) best = d;
  }
  double bw_best = (double)bytes / best / 1e9, bw_mean = (double)bytes * passes / total / 1e9;
  // One thread alone, for reference (the figure NumPy's single-threaded sum approaches).
  double single = 1e30;
  for (int p = 0; p < 3; ++p) {
    double s = now_s();
    sink ^= read_slice(buf, bytes);
    double d = now_s() - s;
    if (d < single) single = d;
  }
  free(buf);

  // ---- float32 GEMM through OpenBLAS ----
  int n = gemm_n;
  float* a = malloc(sizeof(float) * (size_t)n * n);
  float* b = malloc(sizeof(float) * (size_t)n * n);
  float* c = malloc(sizeof(float) * (size_t)n * n);
  for (size_t i = 0; i < (size_t)n * n; ++i) {
    a[i] = (float)((i * 7) % 13) * 0.1f - 0.6f;
    b[i] = (float)((i * 5) % 11) * 0.1f - 0.5f;
    c[i] = 0.0f;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);  // warm-up
  double gbest = 1e30;
  for (int r = 0; r < 5; ++r) {
    double s = now_s();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    double d = now_s() - s;
    if (d < gbest) gbest = d;
  }
  double gflops = 2.0 * n * (double)n * n / gbest / 1e9;
  float check = c[(size_t)n * n / 2];
  free(a);
  free(b);
  free(c);

  char* cfg = openblas_get_config();
  printf("{\"read_bytes\": %zu, \"threads\": %d, \"passes\": %d, \"read_gbs\": %.3f, \"read_gbs_mean\": %.3f, "
         "\"read_gbs_1thread\": %.3f, \"gemm_n\": %d, \"gemm_gflops\": %.3f, \"openblas_config\": \"%s\", "
         "\"openblas_core\": \"%s\", \"openblas_threads\": %d, \"sink\": %llu, \"check\": %g}\n",
         bytes, threads, passes, bw_best, bw_mean, (double)bytes / single / 1e9, n, gflops, cfg ? cfg : "",
         openblas_get_corename(), openblas_get_num_threads(),
         (unsigned long long)(sink & 0xff), (double)check);
  return 0;
}
