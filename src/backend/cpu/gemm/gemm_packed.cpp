// Packed products (gemm.h): C (M×N) = alpha · op(A) · op(B) + beta · C for the larger shapes.
//
// Blocking (the usual scheme of Goto's GEMM): A is packed in blocks of MC rows × KC columns into panels of
// MR rows stored k-major (MR values per k), B in blocks of KC rows × NC columns into panels of NR columns
// stored k-major; a micro-kernel multiplies one A panel by one B panel into an MR×NR tile of C held in
// registers. Packing converts 16-bit elements to float32 and pads the edges with zeros, so the
// micro-kernel always runs full tiles and masks only its stores. Threads take disjoint (column block,
// row block) tasks of C; each packs its own B block (KC×NC floats, kept in L2) and shares the packed A.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/gemm/gemm_util.h"
#include "backend/cpu/threading.h"
#include "kiln/array.h"

namespace kiln::cpu {

namespace {

using namespace gemm_detail;

// Micro-kernel: the MR×NR tile at c (rows mr ≤ MR, columns nr ≤ NR valid) = alpha · a·b + beta · c, with
// a the kc×MR packed panel and b the kc×NR packed panel; beta 0 does not read c.
using Ukr = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int mr, int nr, float alpha,
                     float beta);

struct Config {
  int mr, nr;
  int64_t kc, mc, nc;
  Ukr ukr;
};

// ---- portable 4×8
void ukr_scalar(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int mr, int nr, float alpha,
                float beta) {
  constexpr int MR = 4, NR = 8;
  float acc[MR][NR] = {};
  for (int64_t k = 0; k < kc; ++k, a += MR, b += NR) {
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NR; ++j) acc[i][j] += a[i] * b[j];
    }
  }
  for (int i = 0; i < mr; ++i) {
    for (int j = 0; j < nr; ++j) store1(c + i * ldc + j, acc[i][j], alpha, beta);
  }
}

// ---- AVX2: 6×16 (12 accumulators, 2 B vectors, 1 broadcast)
KILN_T256 void ukr_avx2(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int mr, int nr, float alpha,
                        float beta) {
  constexpr int MR = 6, NR = 16;
  __m256 acc[MR][2];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k, a += MR, b += NR) {
    const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m256 av = _mm256_broadcast_ss(a + i);
      acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
    }
  }
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  // Every loop over the accumulators' rows is unrolled with a constant index (rows past mr skipped):
  // indexing acc with the run-time mr made GCC keep acc in memory and store it every k step.
  if (nr == NR) {
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      if (i >= mr) break;
      float* ci = c + i * ldc;
      __m256 r0 = _mm256_mul_ps(acc[i][0], va), r1 = _mm256_mul_ps(acc[i][1], va);
      if (beta != 0.0f) {
        r0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(ci), r0);
        r1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(ci + 8), r1);
      }
      _mm256_storeu_ps(ci, r0);
      _mm256_storeu_ps(ci + 8, r1);
    }
    return;
  }
  alignas(32) float tile[MR][NR];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    _mm256_store_ps(tile[i], acc[i][0]);
    _mm256_store_ps(tile[i] + 8, acc[i][1]);
  }
  for (int i = 0; i < mr; ++i) {
    for (int j = 0; j < nr; ++j) store1(c + i * ldc + j, tile[i][j], alpha, beta);
  }
}

// C = alpha · acc + beta · C for the mr × nr corner of an 8×32 tile of accumulators (C not read when
// beta is 0): the AVX-512 micro-kernels' store.
KILN_T512 __attribute__((always_inline)) inline void store_8x32(const __m512 (&acc)[8][2], float* c, int64_t ldc,
                                                                int mr, int nr, float alpha, float beta) {
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  const __mmask16 m0 = static_cast<__mmask16>(nr >= 16 ? 0xffffu : (1u << nr) - 1u);
  const __mmask16 m1 = static_cast<__mmask16>(nr >= 32 ? 0xffffu : nr <= 16 ? 0u : (1u << (nr - 16)) - 1u);
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {  // constant indices into acc (see ukr_avx2)
    if (i >= mr) break;
    float* ci = c + i * ldc;
    __m512 r0 = _mm512_mul_ps(acc[i][0], va), r1 = _mm512_mul_ps(acc[i][1], va);
    if (beta != 0.0f) {
      r0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, ci), r0);
      r1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, ci + 16), r1);
    }
    _mm512_mask_storeu_ps(ci, m0, r0);
    _mm512_mask_storeu_ps(ci + 16, m1, r1);
  }
}

// ---- AVX-512: 8×32 (16 accumulators, 2 B vectors, broadcasts from memory)
KILN_T512 void ukr_avx512(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int mr, int nr,
                          float alpha, float beta) {
  constexpr int MR = 8, NR = 32;
  __m512 acc[MR][2];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k, a += MR, b += NR) {
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 av = _mm512_set1_ps(a[i]);
      acc[i][0] = _mm512_fmadd_ps(av, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(av, b1, acc[i][1]);
    }
  }
  store_8x32(acc, c, ldc, mr, nr, alpha, beta);
}

// ---- AVX-512 BF16: 8×32 tiles over pairs of bfloat16 along k. Each 32-bit lane of a packed panel holds
// (element k, element k+1); vdpbf16ps multiplies the pairs exactly and adds both products to the float32
// lane (rounding to nearest even, denormal inputs and results flushed to zero: the one difference from the
// float32 path), so a step covers two values of k and the multiply rate doubles.
KILN_T512BF16 void ukr_avx512bf16(int64_t kcp, const uint32_t* a, const uint32_t* b, float* c, int64_t ldc, int mr,
                                  int nr, float alpha, float beta) {
  constexpr int MR = 8, NR = 32;
  __m512 acc[MR][2];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t k = 0; k < kcp; ++k, a += MR, b += NR) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 16);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[i]));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], av, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], av, b1);
    }
  }
  store_8x32(acc, c, ldc, mr, nr, alpha, beta);
}

inline uint32_t pair(uint16_t lo, uint16_t hi) { return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16); }

// Rows [m0, m0+mc) × k in [k0, k0+kc) of op(A) (bfloat16 bits) as panels of ceil(kc/2) × MR pairs; an odd
// last k pairs with 0.
inline void pack_pairs_a(bool ta, const uint16_t* A, int64_t lda, int64_t m0, int64_t mc, int64_t k0, int64_t kc,
                         int MR, uint32_t* dst) {
  const int64_t kcp = (kc + 1) / 2;
  for (int64_t t = 0; t * MR < mc; ++t) {
    uint32_t* p = dst + t * kcp * MR;
    const int64_t r0 = m0 + t * MR;
    const int rows = static_cast<int>(std::min<int64_t>(MR, m0 + mc - r0));
    for (int r = 0; r < MR; ++r) {
      if (r >= rows) {
        for (int64_t q = 0; q < kcp; ++q) p[q * MR + r] = 0;
        continue;
      }
      const int64_t m = r0 + r;
      for (int64_t q = 0; q < kcp; ++q) {
        const int64_t k = k0 + 2 * q;
        const bool has2 = 2 * q + 1 < kc;
        const uint16_t lo = ta ? A[k * lda + m] : A[m * lda + k];
        const uint16_t hi = has2 ? (ta ? A[(k + 1) * lda + m] : A[m * lda + k + 1]) : 0;
        p[q * MR + r] = pair(lo, hi);
      }
    }
  }
}

// Rows k in [k0, k0+kc) × columns [n0, n0+nc) of op(B) (bfloat16 bits) as panels of ceil(kc/2) × NR pairs.
inline void pack_pairs_b(bool tb, const uint16_t* B, int64_t ldb, int64_t k0, int64_t kc, int64_t n0, int64_t nc,
                         int NR, uint32_t* dst) {
  const int64_t kcp = (kc + 1) / 2, kfull = kc / 2;
  for (int64_t t = 0; t * NR < nc; ++t) {
    uint32_t* p = dst + t * kcp * NR;
    const int64_t c0 = n0 + t * NR;
    const int cols = static_cast<int>(std::min<int64_t>(NR, n0 + nc - c0));
    if (tb) {  // element (k, n) at B[n·ldb + k]: a pair is one 32-bit read
      for (int j = 0; j < cols; ++j) {
        const uint16_t* s = B + (c0 + j) * ldb + k0;
        for (int64_t q = 0; q < kfull; ++q) {
          uint32_t v;
          std::memcpy(&v, s + 2 * q, 4);
          p[q * NR + j] = v;
        }
        if (kcp > kfull) p[kfull * NR + j] = pair(s[2 * kfull], 0);
      }
    } else {  // element (k, n) at B[k·ldb + n]: two rows interleaved
      for (int64_t q = 0; q < kcp; ++q) {
        const uint16_t* s0 = B + (k0 + 2 * q) * ldb + c0;
        const uint16_t* s1 = 2 * q + 1 < kc ? s0 + ldb : nullptr;
        uint32_t* d = p + q * NR;
        for (int j = 0; j < cols; ++j) d[j] = pair(s0[j], s1 ? s1[j] : 0);
      }
    }
    for (int j = cols; j < NR; ++j) {
      for (int64_t q = 0; q < kcp; ++q) p[q * NR + j] = 0;
    }
  }
}

Config config_for(Isa isa) {
  if (isa >= Isa::avx512) return {8, 32, 256, 128, 128, ukr_avx512};
  if (isa == Isa::avx2) return {6, 16, 256, 120, 128, ukr_avx2};
  return {4, 8, 256, 64, 128, ukr_scalar};
}

// Pack rows [m0, m0+mc) × columns [k0, k0+kc) of op(A) into ceil(mc/MR) panels of kc×MR floats.
template <typename TA>
void pack_a(bool ta, const TA* A, int64_t lda, int64_t m0, int64_t mc, int64_t k0, int64_t kc, int MR, float* dst) {
  for (int64_t t = 0; t * MR < mc; ++t) {
    float* p = dst + t * kc * MR;
    const int64_t r0 = m0 + t * MR;
    const int rows = static_cast<int>(std::min<int64_t>(MR, m0 + mc - r0));
    if (ta) {  // element (m, k) at A[k·lda + m]: MR contiguous values per k
      for (int64_t k = 0; k < kc; ++k) {
        const TA* s = A + (k0 + k) * lda + r0;
        for (int r = 0; r < rows; ++r) p[k * MR + r] = to_f32(s[r]);
        for (int r = rows; r < MR; ++r) p[k * MR + r] = 0.0f;
      }
    } else {
      for (int r = 0; r < rows; ++r) {
        const TA* s = A + (r0 + r) * lda + k0;
        for (int64_t k = 0; k < kc; ++k) p[k * MR + r] = to_f32(s[k]);
      }
      for (int r = rows; r < MR; ++r) {
        for (int64_t k = 0; k < kc; ++k) p[k * MR + r] = 0.0f;
      }
    }
  }
}

// d[k·ldd + r] = s[r·lds + k] for r, k < 16: a 16 × 16 block of floats transposed in registers (four
// rounds of 16 shuffles), read and written a whole line per row.
KILN_T512 void transpose16(const float* s, int64_t lds, float* d, int64_t ldd) {
  __m512 r[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(s + i * lds);
  // Rows i, i+1 interleaved: in each 128-bit lane L, (a[4L], b[4L], a[4L+1], b[4L+1]) and the next two.
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  // Rows 4g..4g+3: r[4g + j] holds, in lane L, column 4L + j of those four rows.
#pragma GCC unroll 4
  for (int i = 0; i < 16; i += 4) {
    const __m512d t0 = _mm512_castps_pd(t[i]), t1 = _mm512_castps_pd(t[i + 1]);
    const __m512d t2 = _mm512_castps_pd(t[i + 2]), t3 = _mm512_castps_pd(t[i + 3]);
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
  // Column 4L + j: lane L of r[j], r[4 + j], r[8 + j], r[12 + j].
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m512 u0 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88), u1 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xDD);
    const __m512 u2 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88), u3 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xDD);
    _mm512_storeu_ps(d + j * ldd, _mm512_shuffle_f32x4(u0, u2, 0x88));
    _mm512_storeu_ps(d + (8 + j) * ldd, _mm512_shuffle_f32x4(u0, u2, 0xDD));
    _mm512_storeu_ps(d + (4 + j) * ldd, _mm512_shuffle_f32x4(u1, u3, 0x88));
    _mm512_storeu_ps(d + (12 + j) * ldd, _mm512_shuffle_f32x4(u1, u3, 0xDD));
  }
}

// Pack rows [k0, k0+kc) × columns [n0, n0+nc) of op(B) into ceil(nc/NR) panels of kc×NR floats.
template <typename TB>
void pack_b(bool tb, const TB* B, int64_t ldb, int64_t k0, int64_t kc, int64_t n0, int64_t nc, int NR, float* dst) {
  const bool avx512 = isa_level() >= Isa::avx512;  // the dispatch level (KILN_CPU_ISA lowers it)
  const int64_t strips = (nc + NR - 1) / NR;
  if (!tb) {
    // Element (k, n) at B[k·ldb + n]: each row of the block is read once, front to back, and dealt out to
    // the panels (reading panel by panel would revisit every row once per panel, strided by ldb).
    for (int64_t k = 0; k < kc; ++k) {
      const TB* s = B + (k0 + k) * ldb + n0;
      for (int64_t t = 0; t < strips; ++t) {
        float* q = dst + t * kc * NR + k * NR;
        const int cols = static_cast<int>(std::min<int64_t>(NR, nc - t * NR));
        const TB* st = s + t * NR;
        for (int j = 0; j < cols; ++j) q[j] = to_f32(st[j]);
        for (int j = cols; j < NR; ++j) q[j] = 0.0f;
      }
    }
    return;
  }
  for (int64_t t = 0; t < strips; ++t) {
    float* p = dst + t * kc * NR;
    const int64_t c0 = n0 + t * NR;
    const int cols = static_cast<int>(std::min<int64_t>(NR, n0 + nc - c0));
    // Element (k, n) at B[n·ldb + k]: each column of the panel is a contiguous row of B. float32 with
    // AVX-512: 16 × 16 blocks transposed in registers (x · Wᵀ of a prefill, and the 4-bit weights
    // dequantized into rows: pack_b was 19% and 11% of a single-thread 128 × 1024 × 2816 product, a load
    // and a store per element). Then eight rows of B at a time, so each group of packed values is
    // written as a whole.
    int j = 0;
    if constexpr (std::is_same_v<TB, float>) {
      if (avx512) {
        for (; j + 16 <= cols; j += 16) {
          const TB* s = B + (c0 + j) * ldb + k0;
          int64_t k = 0;
          for (; k + 16 <= kc; k += 16) transpose16(s + k, ldb, p + k * NR + j, NR);
          for (; k < kc; ++k) {
            for (int l = 0; l < 16; ++l) p[k * NR + j + l] = s[l * ldb + k];
          }
        }
      }
    }
    for (; j + 8 <= cols; j += 8) {
      const TB* s = B + (c0 + j) * ldb + k0;
      for (int64_t k = 0; k < kc; ++k) {
        float* q = p + k * NR + j;
        for (int l = 0; l < 8; ++l) q[l] = to_f32(s[l * ldb + k]);
      }
    }
    for (; j < cols; ++j) {
      const TB* s = B + (c0 + j) * ldb + k0;
      for (int64_t k = 0; k < kc; ++k) p[k * NR + j] = to_f32(s[k]);
    }
    for (int jj = cols; jj < NR; ++jj) {
      for (int64_t k = 0; k < kc; ++k) p[k * NR + jj] = 0.0f;
    }
  }
}

// The blocked loops, over packed elements of type P (float, or uint32_t holding a pair of bfloat16 along
// k): KP values of k per packed element. pack_a(m0, mc, k0, kc, dst) / pack_b(k0, kc, n0, nc, dst) write
// panels of ceil(kc / KP) rows; ukr(kcp, a, b, c, ...) runs ceil(kc / KP) steps.
template <typename P, int KP, typename PackA, typename PackB, typename U>
void packed_driver(int64_t M, int64_t N, int64_t K, float alpha, float beta, float* C, int64_t ldc, int MR, int NR,
                   int64_t KC, int64_t MC, int64_t NC0, PackA pack_a, PackB pack_b, U ukr) {
  const int nt = num_threads();
  // Column blocks: NC wide, narrower (down to NR) when there would be too few tasks for the threads.
  int64_t NC = NC0;
  const int64_t mblocks_all = (M + MC - 1) / MC;
  while (NC > NR && ((N + NC - 1) / NC) * mblocks_all < 2 * nt) NC = std::max<int64_t>(NR, (NC / 2 + NR - 1) / NR * NR);
  const int64_t nblocks = (N + NC - 1) / NC;
  const int64_t nkb = (K + KC - 1) / KC;
  const int64_t kpad = nkb * ((KC + KP - 1) / KP);  // packed rows of all k-blocks (upper bound)

  // Rows of A are packed in super-blocks of whole MC blocks, bounded to ~32 MB of packed values.
  const int64_t mtile_rows = (MC + MR - 1) / MR * MR;  // padded rows of one MC block
  const int64_t sb_blocks = std::max<int64_t>(1, (int64_t(8) << 20) / (mtile_rows * kpad));
  // Packed A comes from the array allocator (its buffer cache); the per-thread B blocks stay in place.
  const int64_t sb_rows = std::min<int64_t>(sb_blocks * MC, (M + MC - 1) / MC * MC);
  const auto abuf = detail::allocate(static_cast<size_t>(sb_rows / MC * mtile_rows * kpad) * sizeof(P));
  P* apack = static_cast<P*>(abuf->ptr);
  for (int64_t s0 = 0; s0 < M; s0 += sb_blocks * MC) {
    const int64_t srows = std::min<int64_t>(sb_blocks * MC, M - s0);
    const int64_t mblocks = (srows + MC - 1) / MC;
    // Block (mb, kb) of A at apack + mb·mtile_rows·kpad + kb·(KC / KP)·(padded rows of block mb).
    auto a_block = [&](int64_t mb, int64_t kb) {
      const int64_t mc = std::min<int64_t>(MC, srows - mb * MC);
      const int64_t rows = (mc + MR - 1) / MR * MR;
      return apack + mb * mtile_rows * kpad + kb * ((KC + KP - 1) / KP) * rows;
    };
    parallel_for(static_cast<size_t>(mblocks * nkb), 1, [&](size_t b, size_t e) {
      for (size_t t = b; t < e; ++t) {
        const int64_t mb = static_cast<int64_t>(t) / nkb, kb = static_cast<int64_t>(t) % nkb;
        const int64_t k0 = kb * KC, kc = std::min(KC, K - k0);
        const int64_t m0 = s0 + mb * MC, mc = std::min<int64_t>(MC, srows - mb * MC);
        pack_a(m0, mc, k0, kc, a_block(mb, kb));
      }
    });
    run_tasks(nblocks * mblocks, [&](int64_t t) {
      static thread_local AlignedBuf<float> bbuf;
      P* bpack = reinterpret_cast<P*>(bbuf.get(static_cast<size_t>((KC + KP - 1) / KP * ((NC0 + NR - 1) / NR * NR))));
      {
        const int64_t nb = t / mblocks, mb = t % mblocks;
        const int64_t n0 = nb * NC, nc = std::min(NC, N - n0);
        const int64_t m0 = s0 + mb * MC, mc = std::min<int64_t>(MC, srows - mb * MC);
        for (int64_t kb = 0; kb < nkb; ++kb) {
          const int64_t k0 = kb * KC, kc = std::min(KC, K - k0), kcp = (kc + KP - 1) / KP;
          pack_b(k0, kc, n0, nc, bpack);
          const P* ablk = a_block(mb, kb);
          const float bk = kb == 0 ? beta : 1.0f;
          for (int64_t j = 0; j < nc; j += NR) {
            const int nr = static_cast<int>(std::min<int64_t>(NR, nc - j));
            const P* bp = bpack + (j / NR) * kcp * NR;
            for (int64_t i = 0; i < mc; i += MR) {
              const int mr = static_cast<int>(std::min<int64_t>(MR, mc - i));
              ukr(kcp, ablk + (i / MR) * kcp * MR, bp, C + (m0 + i) * ldc + n0 + j, ldc, mr, nr, alpha, bk);
            }
          }
        }
      }
    });
  }
}

}  // namespace

template <typename TA, typename TB>
void gemm_packed(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const TA* A, int64_t lda,
                 const TB* B, int64_t ldb, float beta, float* C, int64_t ldc, Isa isa) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) return scale_c(M, N, beta, C, ldc);
  isa = clamp_isa(isa);
  if constexpr (std::is_same_v<TA, bfloat16_t> && std::is_same_v<TB, bfloat16_t>) {
    // x · Wᵀ (A's rows and B's rows along k) on AMX tiles where the CPU has them and K allows.
    if (isa >= Isa::amx && !ta && tb &&
        gemm_amx_bf16(M, N, K, alpha, reinterpret_cast<const uint16_t*>(A), lda, reinterpret_cast<const uint16_t*>(B),
                      ldb, beta, C, ldc)) {
      return;
    }
    if (isa >= Isa::avx512bf16) {
      // Pairs of bfloat16 along k, multiplied exactly and summed in float32 by vdpbf16ps.
      constexpr int MR = 8, NR = 32;
      const auto* a16 = reinterpret_cast<const uint16_t*>(A);
      const auto* b16 = reinterpret_cast<const uint16_t*>(B);
      packed_driver<uint32_t, 2>(
          M, N, K, alpha, beta, C, ldc, MR, NR, 512, 128, 128,
          [&](int64_t m0, int64_t mc, int64_t k0, int64_t kc, uint32_t* d) { pack_pairs_a(ta, a16, lda, m0, mc, k0, kc, MR, d); },
          [&](int64_t k0, int64_t kc, int64_t n0, int64_t nc, uint32_t* d) { pack_pairs_b(tb, b16, ldb, k0, kc, n0, nc, NR, d); },
          ukr_avx512bf16);
      return;
    }
  }
  const Config cfg = config_for(isa);
  const int MR = cfg.mr, NR = cfg.nr;
  packed_driver<float, 1>(
      M, N, K, alpha, beta, C, ldc, MR, NR, cfg.kc, cfg.mc, cfg.nc,
      [&](int64_t m0, int64_t mc, int64_t k0, int64_t kc, float* d) { pack_a<TA>(ta, A, lda, m0, mc, k0, kc, MR, d); },
      [&](int64_t k0, int64_t kc, int64_t n0, int64_t nc, float* d) { pack_b<TB>(tb, B, ldb, k0, kc, n0, nc, NR, d); },
      cfg.ukr);
}

void gemm_packed_rows_b(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, int64_t k_align,
                        const RowsB& rows_b, float* C, int64_t ldc, Isa isa) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) return scale_c(M, N, 0.0f, C, ldc);
  isa = clamp_isa(isa);
  const Config cfg = config_for(isa);
  const int MR = cfg.mr, NR = cfg.nr;
  k_align = std::max<int64_t>(1, k_align);
  const int64_t KC = std::max<int64_t>(k_align, cfg.kc / k_align * k_align);
  packed_driver<float, 1>(
      M, N, K, 1.0f, 0.0f, C, ldc, MR, NR, KC, cfg.mc, cfg.nc,
      [&](int64_t m0, int64_t mc, int64_t k0, int64_t kc, float* d) { pack_a<float>(false, A, lda, m0, mc, k0, kc, MR, d); },
      [&](int64_t k0, int64_t kc, int64_t n0, int64_t nc, float* d) {
        // NR rows of B at a time into a small buffer (hot in L1/L2), then dealt out to their panel.
        static thread_local AlignedBuf<float> rows;
        float* t = rows.get(static_cast<size_t>(NR * kc));
        for (int64_t s = 0; s < nc; s += NR) {
          const int64_t nr = std::min<int64_t>(NR, nc - s);
          rows_b(n0 + s, nr, k0, kc, t, kc);
          pack_b<float>(true, t, kc, 0, kc, 0, nr, NR, d + (s / NR) * kc * NR);
        }
      },
      cfg.ukr);
}

#define KILN_PACKED(TA, TB)                                                                                    \
  template void gemm_packed<TA, TB>(bool, bool, int64_t, int64_t, int64_t, float, const TA*, int64_t, const TB*, \
                                    int64_t, float, float*, int64_t, Isa);
KILN_PACKED(float, float)
KILN_PACKED(bfloat16_t, bfloat16_t)
KILN_PACKED(float16_t, float16_t)
#undef KILN_PACKED

}  // namespace kiln::cpu
