// Grouped-scale products on AMX (gemm.h, qgemm_amx): C = A · Bᵀ, B[n][k] = S[n][g] · code[n][k] (+ Bias[n][g]),
// g = k / gs, with codes that bfloat16 holds exactly (the integers of affine quantization, fp4 / fp8 values).
//
// AMX multiplies bfloat16 tiles with float32 sums, 16 times the float32 FMA rate of AVX-512 on one core.
// bfloat16 keeps 8 of float32's 24 significant bits, so A is split into three planes, hi = bf16(a),
// mid = bf16(a - hi), lo = bf16(a - hi - mid) (each rounded to nearest even): hi + mid + lo equals a to
// 2^-27 relative. Each plane times the exact codes is exact in float32, and the tiles add them in float32
// (round to nearest even), so a group's Σ a·code carries float32 rounding like a float32 dot product; the
// group sum is then scaled and the bias term added as Bias · Σ_group a, the way the decode kernels do
// (quantized_matmul.cpp passes affine codes centered, q − 2^(bits−1), with the bias moved to match, so
// neither term outgrows the result). AMX treats denormal inputs as zero: a plane's tail below 2^-126
// (|a| < ~2^-100) is lost, far below float32 rounding of any sum it enters.
//
// Plain bfloat16 × bfloat16 products (gemm_amx_bf16) use the same tiles with one plane each: exact
// products, float32 sums, B's rows loaded in place.
//
// Layout (tile registers: 16 rows of 64 bytes):
//  - the codes of a block of 32 rows of B are the A operand of the tile product (rows n, 32 k's per row,
//    natural order): the code producer writes them straight into a [32][KC] bfloat16 panel;
//  - A's planes are the B operand, pairs of k per 32-bit element: tile (plane, k step, 16 rows of A) holds
//    [16 pairs][16 rows of A][2], built once per call with 16 × 16 transposes;
//  - the tiles accumulate Cᵀ blocks (16 rows of B × 16 rows of A), 2 × 2 of them at a time; each group's
//    sums are stored and folded into a float32 Cᵀ panel (scale, bias) while the next group's tile products
//    run; the panel is transposed into C at the end of the task.
// Tasks are 64 rows of B: a thread writes their codes (64 × K bfloat16, kept in L2) and multiplies them
// with every row of A, k-chunk by k-chunk.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/gemm/gemm_util.h"
#include "backend/cpu/threading.h"
#include "kiln/array.h"

#define KILN_TAMX \
  __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx2,fma,f16c")))

namespace kiln::cpu {

namespace {

using namespace gemm_detail;

// The tile configuration: palette 1, all eight tiles 16 rows × 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// This thread's tiles configured as TileConfig says (done at the start of every task; the tasks release
// the tiles at their end).
KILN_TAMX void load_tile_config() {
  static const TileConfig cfg = [] {
    TileConfig c;
    for (int i = 0; i < 8; ++i) {
      c.colsb[i] = 64;
      c.rows[i] = 16;
    }
    return c;
  }();
  _tile_loadconfig(&cfg);
}

constexpr int64_t kNP = 64;  // rows of B per task
constexpr int64_t kMaxM = 256;  // rows of A per pass (the Cᵀ panel: kNP × 256 floats)

// The rows (r[i], r[i + b]) for i without bit b exchanging their columns with bit b: one level of a
// 16 × 16 transpose.
template <int b>
KILN_TAMX __attribute__((always_inline)) inline void transpose_level(__m512i* r) {
  static constexpr auto idx = [] {
    std::array<std::array<int32_t, 16>, 2> t{};
    for (int j = 0; j < 16; ++j) {
      t[0][j] = (j & b) ? 16 + (j - b) : j;
      t[1][j] = (j & b) ? 16 + j : j + b;
    }
    return t;
  }();
  const __m512i il = _mm512_loadu_si512(idx[0].data()), ih = _mm512_loadu_si512(idx[1].data());
  for (int i = 0; i < 16; ++i) {
    if (i & b) continue;
    const __m512i a = r[i], c = r[i + b];
    r[i] = _mm512_permutex2var_epi32(a, il, c);
    r[i + b] = _mm512_permutex2var_epi32(a, ih, c);
  }
}

// r (16 rows of 16 32-bit elements) transposed in place.
KILN_TAMX __attribute__((always_inline)) inline void transpose16(__m512i* r) {
  transpose_level<8>(r);
  transpose_level<4>(r);
  transpose_level<2>(r);
  transpose_level<1>(r);
}

// Both products work on a 2 × 2 block of Cᵀ tiles: tiles 0..3 accumulate (B rows 0-15 | 16-31) × (A rows
// 0-15 | 16-31), tiles 4 and 5 hold 32 rows of B (the A operand, 32 k's per row), 6 and 7 the two tiles of
// A's rows (the B operand, k pairs).
KILN_TAMX __attribute__((always_inline)) inline void zero_c_tiles() {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
}

// Tiles 4 and 5: rows w and w + 16·ldw (32 bfloat16 each, rows ldw elements apart).
KILN_TAMX __attribute__((always_inline)) inline void load_b_rows(const uint16_t* w, int64_t ldw) {
  _tile_loadd(4, w, ldw * 2);
  _tile_loadd(5, w + 16 * ldw, ldw * 2);
}

// The C tiles += tiles 4, 5 × A's two tiles at xp and xp + 512.
KILN_TAMX __attribute__((always_inline)) inline void tile_products_2x2(const uint16_t* xp) {
  _tile_loadd(6, xp, 64);
  _tile_loadd(7, xp + 512, 64);
  _tile_dpbf16ps(0, 4, 6);
  _tile_dpbf16ps(1, 4, 7);
  _tile_dpbf16ps(2, 5, 6);
  _tile_dpbf16ps(3, 5, 7);
}

// The Cᵀ panel (nrows rows of B × Mp columns, rows of A) into C (C points at row 0 of A, column 0 of the
// panel's rows of B), 16 × 16 blocks transposed at a time: C = alpha · panel (+ beta · C unless beta is 0).
KILN_TAMX void store_panel(const float* acc, int64_t Mp, int64_t M, int64_t nrows, float alpha, float beta, float* C,
                           int64_t ldc) {
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (int64_t mt = 0; mt * 16 < M; ++mt) {
    const int64_t mrows = std::min<int64_t>(16, M - mt * 16);
    for (int64_t nt = 0; nt * 16 < nrows; ++nt) {
      const int64_t ncols = std::min<int64_t>(16, nrows - nt * 16);
      __m512i r[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_load_si512(acc + (nt * 16 + i) * Mp + mt * 16);
      transpose16(r);
      const __mmask16 mask = static_cast<__mmask16>((1u << ncols) - 1);
      for (int64_t i = 0; i < mrows; ++i) {
        float* c = C + (mt * 16 + i) * ldc + nt * 16;
        __m512 v = _mm512_mul_ps(va, _mm512_castsi512_ps(r[i]));
        if (beta != 0.0f) v = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask, c), v);
        _mm512_mask_storeu_ps(c, mask, v);
      }
    }
  }
}

// 32 floats to bfloat16 (round to nearest even) and back: the bfloat16 bits (as one vector of 32) and the
// two float halves they stand for.
KILN_TAMX inline __m512i to_bf16(__m512 x0, __m512 x1, __m512* f0, __m512* f1) {
  const __m512i h = (__m512i)_mm512_cvtne2ps_pbh(x1, x0);
  *f0 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(h)), 16));
  *f1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(h, 1)), 16));
  return h;
}

// Rows [m0, m0 + 16) of A (rows past M read as zeros) as the three planes' tiles of every k step, at
// planes + ((p · nks + ks) · nmt + mt) · 512, and their group sums at xsum[g · Mp + m]. Returns false when
// a value is not finite (the split would turn ±inf into NaN).
KILN_TAMX bool split_rows(const float* A, int64_t lda, int64_t M, int64_t m0, int64_t K, int64_t gs, int64_t nmt,
                          int64_t mt, int64_t Mp, uint16_t* planes, float* xsum) {
  const int64_t nks = K / 32;
  const __m512i exp_mask = _mm512_set1_epi32(0x7f800000);
  __mmask16 bad = 0;
  float gsum[16] = {};
  for (int64_t ks = 0; ks < nks; ++ks) {
    __m512i h[16], md[16], lo[16];
    for (int i = 0; i < 16; ++i) {
      const int64_t m = m0 + i;
      __m512 x0 = _mm512_setzero_ps(), x1 = _mm512_setzero_ps();
      if (m < M) {
        x0 = _mm512_loadu_ps(A + m * lda + ks * 32);
        x1 = _mm512_loadu_ps(A + m * lda + ks * 32 + 16);
      }
      bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(x0), exp_mask), exp_mask);
      bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(x1), exp_mask), exp_mask);
      gsum[i] += _mm512_reduce_add_ps(_mm512_add_ps(x0, x1));
      __m512 h0, h1, m0f, m1f, l0, l1;
      h[i] = to_bf16(x0, x1, &h0, &h1);
      const __m512 r0 = _mm512_sub_ps(x0, h0), r1 = _mm512_sub_ps(x1, h1);
      md[i] = to_bf16(r0, r1, &m0f, &m1f);
      lo[i] = to_bf16(_mm512_sub_ps(r0, m0f), _mm512_sub_ps(r1, m1f), &l0, &l1);
    }
    // Row i's element j is the pair (k = 2j, 2j + 1) of row m0 + i; the tile wants row j, column i.
    __m512i* pl[3] = {h, md, lo};
    for (int p = 0; p < 3; ++p) {
      transpose16(pl[p]);
      uint16_t* dst = planes + ((p * nks + ks) * nmt + mt) * 512;
      for (int j = 0; j < 16; ++j) _mm512_store_si512(dst + j * 32, pl[p][j]);
    }
    if (((ks + 1) * 32) % gs == 0) {
      const int64_t g = (ks + 1) * 32 / gs - 1;
      for (int i = 0; i < 16; ++i) {
        xsum[g * Mp + mt * 16 + i] = gsum[i];
        gsum[i] = 0.0f;
      }
    }
  }
  return bad == 0;
}

struct Pass {
  int64_t M, N, K, gs, Mp, nmt, nks, kc_max;
  const uint16_t* planes;
  const float* xsum;  // [G][Mp]
  const float *S, *Bias;
  int64_t ld_sb;
  const CodesB* codes;
  float* C;
  int64_t ldc;
};

// Folds one group's stored tile sums (buf: 4 tiles, Cᵀ blocks (nt, mt) = (t / 2, mb + t % 2)) into the
// Cᵀ panel: acc = (first ? 0 : acc) + Σ · S + Σ_group a · Bias.
KILN_TAMX void fold_group(const Pass& p, const float* buf, int64_t n0, int64_t nb, int64_t mb, int64_t g, float* acc) {
  for (int t = 0; t < 4; ++t) {
    const int64_t nt = t / 2, mt = mb + t % 2;
    const __m512 xs = _mm512_loadu_ps(p.xsum + g * p.Mp + mt * 16);
    for (int i = 0; i < 16; ++i) {
      const int64_t nl = nb * 32 + nt * 16 + i, n = n0 + nl;
      float* a = acc + nl * p.Mp + mt * 16;
      const float s = n < p.N ? p.S[n * p.ld_sb + g] : 0.0f;
      const __m512 v = _mm512_load_ps(buf + (t * 16 + i) * 16);
      __m512 o = g == 0 ? _mm512_setzero_ps() : _mm512_load_ps(a);
      if (p.Bias != nullptr && n < p.N) o = _mm512_fmadd_ps(xs, _mm512_set1_ps(p.Bias[n * p.ld_sb + g]), o);
      _mm512_store_ps(a, _mm512_fmadd_ps(v, _mm512_set1_ps(s), o));
    }
  }
}

KILN_TAMX void run_task(const Pass& p, int64_t n0, int64_t m_out0) {
  load_tile_config();
  static thread_local AlignedBuf<uint16_t> wbuf;
  static thread_local AlignedBuf<float> abuf;
  static thread_local AlignedBuf<float> tbuf;  // two groups' stored tiles
  const int64_t nrows = std::min(kNP, p.N - n0), nblk = (nrows + 31) / 32;
  const int64_t ldw = (p.K + 31) / 32 * 32;
  uint16_t* wt = wbuf.get(static_cast<size_t>(kNP * ldw));
  float* acc = abuf.get(static_cast<size_t>(kNP * p.Mp));
  float* bufs = tbuf.get(2 * 4 * 256);
  // The codes of rows n0 .. n0 + nrows (L2-resident: 64 × K bfloat16), the rows past N zero.
  (*p.codes)(n0, nrows, 0, p.K, wt, ldw);
  for (int64_t r = nrows; r < nblk * 32; ++r) std::memset(wt + r * ldw, 0, static_cast<size_t>(p.K) * 2);
  // The previous group's stored sums, folded in while the current group's products run.
  int pending = -1, cur = 0;
  int64_t pend_nb = 0, pend_mb = 0, pend_g = 0;
  // k chunks of about 64, so the planes' tiles of one chunk stay in L1 across the column blocks.
  for (int64_t k0 = 0; k0 < p.K; k0 += p.kc_max) {
    const int64_t kc = std::min(p.kc_max, p.K - k0);
    const int64_t g0 = k0 / p.gs, g1 = (k0 + kc) / p.gs;
    for (int64_t mb = 0; mb < p.nmt; mb += 2) {
      for (int64_t nb = 0; nb < nblk; ++nb) {
        const uint16_t* wn = wt + nb * 32 * ldw;
        for (int64_t g = g0; g < g1; ++g) {
          zero_c_tiles();
          for (int64_t ks = g * p.gs / 32; ks < (g + 1) * p.gs / 32; ++ks) {
            load_b_rows(wn + ks * 32, ldw);
            for (int pl = 0; pl < 3; ++pl) tile_products_2x2(p.planes + ((pl * p.nks + ks) * p.nmt + mb) * 512);
          }
          if (pending >= 0) fold_group(p, bufs + pending * 1024, n0, pend_nb, pend_mb, pend_g, acc);
          float* b = bufs + cur * 1024;
          _tile_stored(0, b, 64);
          _tile_stored(1, b + 256, 64);
          _tile_stored(2, b + 512, 64);
          _tile_stored(3, b + 768, 64);
          pending = cur;
          pend_nb = nb;
          pend_mb = mb;
          pend_g = g;
          cur ^= 1;
        }
      }
    }
  }
  if (pending >= 0) fold_group(p, bufs + pending * 1024, n0, pend_nb, pend_mb, pend_g, acc);
  _tile_release();
  store_panel(acc, p.Mp, p.M, nrows, 1.0f, 0.0f, p.C + m_out0 * p.ldc + n0, p.ldc);
}

// ---- bfloat16 × bfloat16 (gemm_amx_bf16): one plane each, products exact, no groups.

// Rows [m0, m0 + 16) of a bfloat16 A (rows past M zero) as the B-operand tiles of every k step, at
// xt + (ks · nmt + mt) · 512.
KILN_TAMX void pack_rows_bf16(const uint16_t* A, int64_t lda, int64_t M, int64_t m0, int64_t K, int64_t nmt,
                              int64_t mt, uint16_t* xt) {
  const int64_t nks = K / 32;
  for (int64_t ks = 0; ks < nks; ++ks) {
    __m512i r[16];
    for (int i = 0; i < 16; ++i) {
      const int64_t m = m0 + i;
      r[i] = m < M ? _mm512_loadu_si512(A + m * lda + ks * 32) : _mm512_setzero_si512();
    }
    transpose16(r);
    uint16_t* dst = xt + (ks * nmt + mt) * 512;
    for (int j = 0; j < 16; ++j) _mm512_store_si512(dst + j * 32, r[j]);
  }
}

// Rows n0 .. n0 + 64 of C (as Cᵀ) for every row of A: B's rows are the A operand of the tile product,
// loaded straight from B (row stride ldb); the tiles of a (32 rows of A, 32 rows of B) block accumulate
// over k chunks of 256, kept in the Cᵀ panel between chunks.
KILN_TAMX void run_task_bf16(int64_t M, int64_t N, int64_t K, int64_t Mp, const uint16_t* xt, const uint16_t* B,
                             int64_t ldb, float alpha, float beta, float* C, int64_t ldc, int64_t n0) {
  load_tile_config();
  static thread_local AlignedBuf<float> abuf;
  static thread_local AlignedBuf<uint16_t> wbuf;
  const int64_t nrows = std::min(kNP, N - n0), nblk = (nrows + 31) / 32;
  const int64_t nmt = Mp / 16, nks = K / 32;
  float* acc = abuf.get(static_cast<size_t>(kNP * Mp));
  // A partial last block of B's rows is copied with zero rows after it (tile loads read 16 rows).
  const uint16_t* wsrc = B + n0 * ldb;
  int64_t ldw = ldb;
  if (nrows < nblk * 32) {
    uint16_t* w = wbuf.get(static_cast<size_t>(nblk * 32 * K));
    for (int64_t r = 0; r < nblk * 32; ++r) {
      if (r < nrows) std::memcpy(w + r * K, wsrc + r * ldb, static_cast<size_t>(K) * 2);
      else std::memset(w + r * K, 0, static_cast<size_t>(K) * 2);
    }
    wsrc = w;
    ldw = K;
  }
  constexpr int64_t kChunk = 8;  // k steps of 32 per chunk
  for (int64_t c0 = 0; c0 < nks; c0 += kChunk) {
    const int64_t c1 = std::min(nks, c0 + kChunk);
    for (int64_t mb = 0; mb < nmt; mb += 2) {
      for (int64_t nb = 0; nb < nblk; ++nb) {
        float* a = acc + nb * 32 * Mp + mb * 16;  // Cᵀ block (32 rows of B, 32 rows of A)
        if (c0 == 0) {
          zero_c_tiles();
        } else {
          _tile_loadd(0, a, Mp * 4);
          _tile_loadd(1, a + 16, Mp * 4);
          _tile_loadd(2, a + 16 * Mp, Mp * 4);
          _tile_loadd(3, a + 16 * Mp + 16, Mp * 4);
        }
        const uint16_t* wn = wsrc + nb * 32 * ldw;
        for (int64_t ks = c0; ks < c1; ++ks) {
          load_b_rows(wn + ks * 32, ldw);
          tile_products_2x2(xt + (ks * nmt + mb) * 512);
        }
        _tile_stored(0, a, Mp * 4);
        _tile_stored(1, a + 16, Mp * 4);
        _tile_stored(2, a + 16 * Mp, Mp * 4);
        _tile_stored(3, a + 16 * Mp + 16, Mp * 4);
      }
    }
  }
  _tile_release();
  store_panel(acc, Mp, M, nrows, alpha, beta, C + n0, ldc);
}

}  // namespace

bool amx_permitted() {
#if defined(__linux__) && defined(__x86_64__)
  static const bool ok = [] {
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return ok;
#else
  return false;
#endif
}

bool amx_usable() { return isa_level() >= Isa::amx && amx_permitted(); }

bool qgemm_amx(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, int64_t gs, const CodesB& codes,
               const float* S, const float* Bias, int64_t ld_sb, float* C, int64_t ldc) {
  if (!amx_usable() || gs <= 0 || gs % 32 != 0 || K <= 0 || K % gs != 0 || M <= 0 || N <= 0) return false;
  const int64_t nks = K / 32, G = K / gs;
  const int64_t kc_max = gs * std::max<int64_t>(1, 64 / gs);
  // Every pass's planes first (so a non-finite A is found before anything is written).
  const int64_t passes = (M + kMaxM - 1) / kMaxM;
  const int64_t mp_max = std::min<int64_t>(kMaxM, (M + 31) / 32 * 32);
  const auto planes_buf = detail::allocate(static_cast<size_t>(passes * 3 * nks * mp_max * 32) * sizeof(uint16_t) + 64);
  const auto xsum_buf = detail::allocate(static_cast<size_t>(passes * G * mp_max) * sizeof(float));
  auto* planes_all = reinterpret_cast<uint16_t*>((reinterpret_cast<uintptr_t>(planes_buf->ptr) + 63) & ~uintptr_t(63));
  auto* xsum_all = static_cast<float*>(xsum_buf->ptr);
  std::vector<Pass> ps(static_cast<size_t>(passes));
  std::atomic<bool> finite{true};
  for (int64_t q = 0; q < passes; ++q) {
    Pass& p = ps[static_cast<size_t>(q)];
    const int64_t m0 = q * kMaxM, mq = std::min(kMaxM, M - m0);
    p.M = mq;
    p.N = N;
    p.K = K;
    p.gs = gs;
    p.Mp = (mq + 31) / 32 * 32;
    p.nmt = p.Mp / 16;
    p.nks = nks;
    p.kc_max = kc_max;
    uint16_t* planes = planes_all + q * 3 * nks * mp_max * 32;
    float* xsum = xsum_all + q * G * mp_max;
    p.planes = planes;
    p.xsum = xsum;
    p.S = S;
    p.Bias = Bias;
    p.ld_sb = ld_sb;
    p.codes = &codes;
    p.C = C;
    p.ldc = ldc;
    const int64_t nmt = p.nmt, Mp = p.Mp;
    parallel_for(static_cast<size_t>(nmt), 1, [&](size_t b, size_t e) {
      for (size_t mt = b; mt < e; ++mt) {
        if (!split_rows(A + m0 * lda, lda, mq, static_cast<int64_t>(mt) * 16, K, gs, nmt, static_cast<int64_t>(mt), Mp,
                        planes, xsum))
          finite.store(false, std::memory_order_relaxed);
      }
    });
  }
  if (!finite.load()) return false;
  const int64_t ntasks = (N + kNP - 1) / kNP;
  for (int64_t q = 0; q < passes; ++q) {
    run_tasks(ntasks, [&](int64_t t) { run_task(ps[static_cast<size_t>(q)], t * kNP, q * kMaxM); });
  }
  return true;
}

bool gemm_amx_bf16(int64_t M, int64_t N, int64_t K, float alpha, const uint16_t* A, int64_t lda, const uint16_t* B,
                   int64_t ldb, float beta, float* C, int64_t ldc) {
  if (!amx_usable() || M <= 0 || N <= 0 || K <= 0 || K % 32 != 0) return false;
  const int64_t nks = K / 32;
  for (int64_t m0 = 0; m0 < M; m0 += kMaxM) {
    const int64_t mq = std::min(kMaxM, M - m0), Mp = (mq + 31) / 32 * 32, nmt = Mp / 16;
    const auto xbuf = detail::allocate(static_cast<size_t>(nks * Mp * 32) * sizeof(uint16_t) + 64);
    auto* xt = reinterpret_cast<uint16_t*>((reinterpret_cast<uintptr_t>(xbuf->ptr) + 63) & ~uintptr_t(63));
    parallel_for(static_cast<size_t>(nmt), 1, [&](size_t b, size_t e) {
      for (size_t mt = b; mt < e; ++mt) {
        pack_rows_bf16(A + m0 * lda, lda, mq, static_cast<int64_t>(mt) * 16, K, nmt, static_cast<int64_t>(mt), xt);
      }
    });
    run_tasks((N + kNP - 1) / kNP, [&](int64_t t) {
      run_task_bf16(mq, N, K, Mp, xt, B, ldb, alpha, beta, C + m0 * ldc, ldc, t * kNP);
    });
  }
  return true;
}

}  // namespace kiln::cpu
