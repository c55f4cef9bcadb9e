// Skinny products (gemm.h): C (M×N) = alpha · A · op(B) + beta · C for small M, streaming B once.
//
// Two layouts of B, the two that language-model decoding produces:
//  - "dot" (tb: B stored N×K row-major, e.g. x @ W.T of nn.Linear): output column n is the dot product of
//    B's row n with each row of A. A tile of up to 4 rows of A × 4 rows of B (1 × 8 for a single row of A,
//    with AVX-512) keeps one vector accumulator per pair, reduced across lanes once at the end.
//  - "axpy" (B stored K×N row-major, x @ W): a block of output columns accumulates A[m, k] · B[k, cols]
//    over k, one vector accumulator per (row of A, vector of columns).
// Threads split the output columns, so each reads a disjoint part of B. 16-bit B elements are widened to
// float32 in registers (bfloat16: a 16-bit shift; float16: F16C's vcvtph2ps); A is read as float32 (16-bit A
// is widened once into a small buffer). Sums are float32 (one fused multiply-add per element, lanes
// summed at the end), rounded once on store: the precision of MLX's convert-to-float32-then-sgemm.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/gemm/gemm_util.h"
#include "backend/cpu/threading.h"

namespace kiln::cpu {

namespace {

using namespace gemm_detail;

// ---------------------------------------------------------------- portable
template <int MB, int NB, typename TB>
void dot_tile_scalar(int64_t K, const float* X, int64_t ldx, const TB* W, int64_t ldw, float* C, int64_t ldc,
                     float alpha, float beta) {
  float acc[MB][NB][8] = {};
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    for (int j = 0; j < NB; ++j) {
      float w[8];
      for (int l = 0; l < 8; ++l) w[l] = to_f32(W[j * ldw + k + l]);
      for (int i = 0; i < MB; ++i) {
        for (int l = 0; l < 8; ++l) acc[i][j][l] += X[i * ldx + k + l] * w[l];
      }
    }
  }
  for (int i = 0; i < MB; ++i) {
    for (int j = 0; j < NB; ++j) {
      float s = 0;
      for (int l = 0; l < 8; ++l) s += acc[i][j][l];
      for (int64_t t = k; t < K; ++t) s += X[i * ldx + t] * to_f32(W[j * ldw + t]);
      store1(C + i * ldc + j, s, alpha, beta);
    }
  }
}

template <int MB, typename TB>
void axpy_cols_scalar(int64_t K, const float* X, int64_t ldx, const TB* B, int64_t ldb, int64_t n0, int64_t n1,
                      float* C, int64_t ldc, float alpha, float beta) {
  constexpr int W = 16;
  for (int64_t c0 = n0; c0 < n1; c0 += W) {
    const int w = static_cast<int>(std::min<int64_t>(W, n1 - c0));
    float acc[MB][W] = {};
    for (int64_t k = 0; k < K; ++k) {
      const TB* b = B + k * ldb + c0;
      float bv[W];
      for (int l = 0; l < w; ++l) bv[l] = to_f32(b[l]);
      for (int l = w; l < W; ++l) bv[l] = 0;
      for (int i = 0; i < MB; ++i) {
        const float a = X[i * ldx + k];
        for (int l = 0; l < W; ++l) acc[i][l] += a * bv[l];
      }
    }
    for (int i = 0; i < MB; ++i) {
      for (int l = 0; l < w; ++l) store1(C + i * ldc + c0 + l, acc[i][l], alpha, beta);
    }
  }
}

// ---------------------------------------------------------------- AVX2 + FMA + F16C
KILN_T256 inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <int MB, int NB, typename TB>
KILN_T256 void dot_tile_avx2(int64_t K, const float* X, int64_t ldx, const TB* W, int64_t ldw, float* C, int64_t ldc,
                             float alpha, float beta) {
  __m256 acc[MB][NB];
#pragma GCC unroll 8
  for (int i = 0; i < MB; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NB; ++j) acc[i][j] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    __m256 w[NB];
#pragma GCC unroll 8
    for (int j = 0; j < NB; ++j) w[j] = ld8(W + j * ldw + k);
#pragma GCC unroll 8
    for (int i = 0; i < MB; ++i) {
      const __m256 x = _mm256_loadu_ps(X + i * ldx + k);
#pragma GCC unroll 8
      for (int j = 0; j < NB; ++j) acc[i][j] = _mm256_fmadd_ps(x, w[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MB; ++i) {
    for (int j = 0; j < NB; ++j) {
      float s = hsum256(acc[i][j]);
      for (int64_t t = k; t < K; ++t) s += X[i * ldx + t] * to_f32(W[j * ldw + t]);
      store1(C + i * ldc + j, s, alpha, beta);
    }
  }
}

KILN_T256 inline void store8(float* c, __m256 v, __m256 va, __m256 vb, bool use_beta) {
  v = _mm256_mul_ps(v, va);
  if (use_beta) v = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c), v);
  _mm256_storeu_ps(c, v);
}

// 16 columns (two vectors) × MB rows of A per pass over k; a scalar loop for the last < 8 columns.
template <int MB, typename TB>
KILN_T256 void axpy_cols_avx2(int64_t K, const float* X, int64_t ldx, const TB* B, int64_t ldb, int64_t n0,
                              int64_t n1, float* C, int64_t ldc, float alpha, float beta) {
  int64_t c0 = n0;
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  const bool use_beta = beta != 0.0f;
  for (; c0 + 16 <= n1; c0 += 16) {
    __m256 acc[MB][2];
#pragma GCC unroll 8
    for (int i = 0; i < MB; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; ++k) {
      const TB* b = B + k * ldb + c0;
      const __m256 b0 = ld8(b), b1 = ld8(b + 8);
#pragma GCC unroll 8
      for (int i = 0; i < MB; ++i) {
        const __m256 a = _mm256_broadcast_ss(X + i * ldx + k);
        acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);
      }
    }
    for (int i = 0; i < MB; ++i) {
      store8(C + i * ldc + c0, acc[i][0], va, vb, use_beta);
      store8(C + i * ldc + c0 + 8, acc[i][1], va, vb, use_beta);
    }
  }
  for (; c0 + 8 <= n1; c0 += 8) {
    __m256 acc[MB];
#pragma GCC unroll 8
    for (int i = 0; i < MB; ++i) acc[i] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K; ++k) {
      const __m256 b0 = ld8(B + k * ldb + c0);
#pragma GCC unroll 8
      for (int i = 0; i < MB; ++i) acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(X + i * ldx + k), b0, acc[i]);
    }
    for (int i = 0; i < MB; ++i) store8(C + i * ldc + c0, acc[i], va, vb, use_beta);
  }
  if (c0 < n1) axpy_cols_scalar<MB>(K, X, ldx, B, ldb, c0, n1, C, ldc, alpha, beta);
}

// ---------------------------------------------------------------- AVX-512 (F, BW, DQ, VL)
// (GCC 12's _mm512_reduce_add_ps trips -Wuninitialized in its own header.)
KILN_T512 inline float hsum512(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// hsum512 of four vectors at once: the same additions in the same order (so each sum is bit-identical to
// hsum512's), done on the four side by side, 14 instructions instead of 28. With K = 64 (attention
// scores over a head of 64) a tile's reductions cost more than its multiply-adds.
KILN_T512 inline __m128 hsum512x4(__m512 a, __m512 b, __m512 c, __m512 d) {
  // v[i] + v[i + 8]: each vector's 256-bit halves added, two vectors per register.
  const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
  // h[i] + h[i + 4]: one 128-bit block per vector (a, b, c, d).
  const __m512 s = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
  // (s0 + s2, s1 + s3) in lanes 0 and 1 of each block, then their sum in lane 0.
  const __m512 t = _mm512_add_ps(s, _mm512_permute_ps(s, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m512 r = _mm512_add_ps(t, _mm512_permute_ps(t, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), r));
}

// Four sums to c[0..3] as store1 writes each (with beta, by store1 itself).
KILN_T512 inline void store4(float* c, __m128 v, float alpha, float beta) {
  if (beta == 0.0f) return _mm_storeu_ps(c, _mm_mul_ps(_mm_set1_ps(alpha), v));
  alignas(16) float s[4];
  _mm_store_ps(s, v);
  for (int l = 0; l < 4; ++l) store1(c + l, s[l], alpha, beta);
}

template <int MB, int NB, typename TB>
KILN_T512 void dot_tile_avx512(int64_t K, const float* X, int64_t ldx, const TB* W, int64_t ldw, float* C,
                               int64_t ldc, float alpha, float beta) {
  __m512 acc[MB][NB];
#pragma GCC unroll 8
  for (int i = 0; i < MB; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NB; ++j) acc[i][j] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    __m512 w[NB];
#pragma GCC unroll 8
    for (int j = 0; j < NB; ++j) {
      // 16-bit rows: prefetch the same place four tiles on into L2 and in the next tile's rows (NB rows
      // on) into L1. A step reads half a line per row, so the out-of-order window alone keeps half as many
      // lines in flight as for float32. The L1 prefetch alone measured ~10% faster on the 32000 × 1024
      // bfloat16 head, and no gain (slower) for float32; with the L2 one as well (as the quantized decode
      // kernels do: the L1 holds too few outstanding misses to stream from DRAM) that head took 2.5-2.9
      // instead of 3.0-3.7 ms in alternating runs (BM_GemvBF16/1/1024/32000, 2-core AMD EPYC); float32
      // stayed faster without either.
      if constexpr (sizeof(TB) == 2) {
        _mm_prefetch(reinterpret_cast<const char*>(W + (j + 4 * NB) * ldw + k), _MM_HINT_T1);
        _mm_prefetch(reinterpret_cast<const char*>(W + (j + NB) * ldw + k), _MM_HINT_T0);
      }
      w[j] = ld16(W + j * ldw + k);
    }
#pragma GCC unroll 8
    for (int i = 0; i < MB; ++i) {
      const __m512 x = _mm512_loadu_ps(X + i * ldx + k);
#pragma GCC unroll 8
      for (int j = 0; j < NB; ++j) acc[i][j] = _mm512_fmadd_ps(x, w[j], acc[i][j]);
    }
  }
  if (k < K) {
    const __mmask16 m = static_cast<__mmask16>((1u << (K - k)) - 1u);
    __m512 w[NB];
#pragma GCC unroll 8
    for (int j = 0; j < NB; ++j) w[j] = ld16_mask(W + j * ldw + k, m);
#pragma GCC unroll 8
    for (int i = 0; i < MB; ++i) {
      const __m512 x = _mm512_maskz_loadu_ps(m, X + i * ldx + k);
#pragma GCC unroll 8
      for (int j = 0; j < NB; ++j) acc[i][j] = _mm512_fmadd_ps(x, w[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MB; ++i) {
    if constexpr (NB % 4 == 0) {
#pragma GCC unroll 2
      for (int j = 0; j < NB; j += 4) {
        store4(C + i * ldc + j, hsum512x4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]), alpha, beta);
      }
    } else {
      for (int j = 0; j < NB; ++j) store1(C + i * ldc + j, hsum512(acc[i][j]), alpha, beta);
    }
  }
}

// 32 columns (two vectors) × MB rows of A per pass over k, then 16, then a masked remainder.
template <int MB, int CV, typename TB>
KILN_T512 void axpy_block_avx512(int64_t K, const float* X, int64_t ldx, const TB* B, int64_t ldb, int64_t c0,
                                 __mmask16 last, float* C, int64_t ldc, float alpha, float beta) {
  __m512 acc[MB][CV];
#pragma GCC unroll 8
  for (int i = 0; i < MB; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < CV; ++v) acc[i][v] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    const TB* b = B + k * ldb + c0;
    __m512 bv[CV];
#pragma GCC unroll 4
    for (int v = 0; v < CV; ++v) bv[v] = v == CV - 1 ? ld16_mask(b + 16 * v, last) : ld16(b + 16 * v);
#pragma GCC unroll 8
    for (int i = 0; i < MB; ++i) {
      const __m512 a = _mm512_set1_ps(X[i * ldx + k]);
#pragma GCC unroll 4
      for (int v = 0; v < CV; ++v) acc[i][v] = _mm512_fmadd_ps(a, bv[v], acc[i][v]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  // Unrolled with constant indices, like every loop over acc: indexed by a run-time counter here, GCC
  // kept acc in memory and stored all of it every k step.
#pragma GCC unroll 8
  for (int i = 0; i < MB; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < CV; ++v) {
      float* c = C + i * ldc + c0 + 16 * v;
      const __mmask16 m = v == CV - 1 ? last : static_cast<__mmask16>(0xffff);
      __m512 r = _mm512_mul_ps(acc[i][v], va);
      if (beta != 0.0f) r = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m, c), r);
      _mm512_mask_storeu_ps(c, m, r);
    }
  }
}

template <int MB, typename TB>
KILN_T512 void axpy_cols_avx512(int64_t K, const float* X, int64_t ldx, const TB* B, int64_t ldb, int64_t n0,
                                int64_t n1, float* C, int64_t ldc, float alpha, float beta) {
  int64_t c0 = n0;
  // Up to 4 rows of A: 64 columns (a whole row of a 64-wide head's values) per pass, so B's rows are read
  // once, front to back, instead of half of each row in each of two passes.
  if constexpr (MB <= 4) {
    for (; c0 + 64 <= n1; c0 += 64) axpy_block_avx512<MB, 4>(K, X, ldx, B, ldb, c0, 0xffff, C, ldc, alpha, beta);
  }
  for (; c0 + 32 <= n1; c0 += 32) axpy_block_avx512<MB, 2>(K, X, ldx, B, ldb, c0, 0xffff, C, ldc, alpha, beta);
  for (; c0 < n1; c0 += 16) {
    const int64_t w = std::min<int64_t>(16, n1 - c0);
    const __mmask16 m = static_cast<__mmask16>(w == 16 ? 0xffffu : (1u << w) - 1u);
    axpy_block_avx512<MB, 1>(K, X, ldx, B, ldb, c0, m, C, ldc, alpha, beta);
  }
}

// ---------------------------------------------------------------- dispatch over tiles
template <typename TB>
using DotTile = void (*)(int64_t, const float*, int64_t, const TB*, int64_t, float*, int64_t, float, float);
template <typename TB>
using AxpyCols = void (*)(int64_t, const float*, int64_t, const TB*, int64_t, int64_t, int64_t, float*, int64_t, float,
                          float);

// Tile tables: [rows of A - 1][0 for 1 row of B, 1 for 4].
template <typename TB>
struct SkinnyKernels {
  int max_mb;
  DotTile<TB> dot[4][2];
  int axpy_mb;
  AxpyCols<TB> axpy[8];
  DotTile<TB> dot1x8;  // one row of A against 8 rows of B (decode), where the level has one
};

template <typename TB>
SkinnyKernels<TB> kernels_for(Isa isa) {
  if (isa >= Isa::avx512) {
    return {4,
            {{dot_tile_avx512<1, 1, TB>, dot_tile_avx512<1, 4, TB>},
             {dot_tile_avx512<2, 1, TB>, dot_tile_avx512<2, 4, TB>},
             {dot_tile_avx512<3, 1, TB>, dot_tile_avx512<3, 4, TB>},
             {dot_tile_avx512<4, 1, TB>, dot_tile_avx512<4, 4, TB>}},
            8,
            {axpy_cols_avx512<1, TB>, axpy_cols_avx512<2, TB>, axpy_cols_avx512<3, TB>, axpy_cols_avx512<4, TB>,
             axpy_cols_avx512<5, TB>, axpy_cols_avx512<6, TB>, axpy_cols_avx512<7, TB>, axpy_cols_avx512<8, TB>},
            dot_tile_avx512<1, 8, TB>};
  }
  if (isa == Isa::avx2) {
    // 16 ymm registers: at most 2 rows of A × 4 rows of B (8 accumulators) in the dot tiles.
    return {2,
            {{dot_tile_avx2<1, 1, TB>, dot_tile_avx2<1, 4, TB>},
             {dot_tile_avx2<2, 1, TB>, dot_tile_avx2<2, 4, TB>},
             {nullptr, nullptr},
             {nullptr, nullptr}},
            4,
            {axpy_cols_avx2<1, TB>, axpy_cols_avx2<2, TB>, axpy_cols_avx2<3, TB>, axpy_cols_avx2<4, TB>, nullptr,
             nullptr, nullptr, nullptr},
            nullptr};
  }
  return {4,
          {{dot_tile_scalar<1, 1, TB>, dot_tile_scalar<1, 4, TB>},
           {dot_tile_scalar<2, 1, TB>, dot_tile_scalar<2, 4, TB>},
           {dot_tile_scalar<3, 1, TB>, dot_tile_scalar<3, 4, TB>},
           {dot_tile_scalar<4, 1, TB>, dot_tile_scalar<4, 4, TB>}},
          4,
          {axpy_cols_scalar<1, TB>, axpy_cols_scalar<2, TB>, axpy_cols_scalar<3, TB>, axpy_cols_scalar<4, TB>,
           nullptr, nullptr, nullptr, nullptr},
          nullptr};
}

}  // namespace

template <typename TA, typename TB>
void gemm_skinny(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const TA* A, int64_t lda,
                 const TB* B, int64_t ldb, float beta, float* C, int64_t ldc, Isa isa) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) return scale_c(M, N, beta, C, ldc);
  isa = clamp_isa(isa);
  // A as float rows with unit stride (in place when it already is).
  std::vector<float> xbuf;
  const float* X = nullptr;
  int64_t ldx = K;
  if constexpr (std::is_same_v<TA, float>) {
    if (!ta) {
      X = A;
      ldx = lda;
    }
  }
  if (!X) {
    xbuf.resize(static_cast<size_t>(M * K));
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t k = 0; k < K; ++k) xbuf[m * K + k] = to_f32(ta ? A[k * lda + m] : A[m * lda + k]);
    }
    X = xbuf.data();
  }
  const SkinnyKernels<TB> kr = kernels_for<TB>(isa);
  // Tasks handed out dynamically. x · Bᵀ (rows of B): about 512K elements of B each (2 MB of float32),
  // but at least two per thread: each task is one sequential stream of B, and every new stream starts
  // cold. In llama decode steps (in-process, alternating), tasks of 32K elements against 512K took
  // 13.8 against 10.4-10.5 ms in bfloat16 and 15.1 against 14.6 ms in float32 (2-core AMD EPYC).
  // x · B (columns of B): about 32K elements (128 KB of float32) each, at least one vector group of
  // columns.
  constexpr int64_t kRowTaskElems = int64_t(1) << 19, kTaskElems = 32768;
  if (tb) {
    const int64_t rows =
        std::max<int64_t>(4, (std::min<int64_t>(kRowTaskElems / K, N / (2 * num_threads())) + 3) / 4 * 4);
    run_tasks((N + rows - 1) / rows, [&](int64_t t) {
      const int64_t n1 = std::min(N, (t + 1) * rows);
      for (int64_t m = 0; m < M; m += kr.max_mb) {
        const int mb = static_cast<int>(std::min<int64_t>(kr.max_mb, M - m));
        int64_t n = t * rows;
        // One row of A: 8 rows of B per tile (more loads in flight per instruction; measured 5-13% less
        // CPU time than 4 on the 32000 × 1024 head, float32 and bfloat16).
        if (mb == 1 && kr.dot1x8) {
          for (; n + 8 <= n1; n += 8) kr.dot1x8(K, X + m * ldx, ldx, B + n * ldb, ldb, C + m * ldc + n, ldc, alpha, beta);
        }
        for (; n + 4 <= n1; n += 4) kr.dot[mb - 1][1](K, X + m * ldx, ldx, B + n * ldb, ldb, C + m * ldc + n, ldc, alpha, beta);
        for (; n < n1; ++n) kr.dot[mb - 1][0](K, X + m * ldx, ldx, B + n * ldb, ldb, C + m * ldc + n, ldc, alpha, beta);
      }
    });
  } else {
    constexpr int64_t G = 32;  // columns per unit (a multiple of every vector width)
    const int64_t cols = std::max<int64_t>(1, kTaskElems / (K * G)) * G;
    run_tasks((N + cols - 1) / cols, [&](int64_t t) {
      const int64_t n0 = t * cols, n1 = std::min(N, n0 + cols);
      for (int64_t m = 0; m < M; m += kr.axpy_mb) {
        const int mb = static_cast<int>(std::min<int64_t>(kr.axpy_mb, M - m));
        kr.axpy[mb - 1](K, X + m * ldx, ldx, B, ldb, n0, n1, C + m * ldc, ldc, alpha, beta);
      }
    });
  }
}

#define KILN_SKINNY(TA, TB)                                                                                    \
  template void gemm_skinny<TA, TB>(bool, bool, int64_t, int64_t, int64_t, float, const TA*, int64_t, const TB*, \
                                    int64_t, float, float*, int64_t, Isa);
KILN_SKINNY(float, float)
KILN_SKINNY(bfloat16_t, bfloat16_t)
KILN_SKINNY(float16_t, float16_t)
#undef KILN_SKINNY

}  // namespace kiln::cpu
