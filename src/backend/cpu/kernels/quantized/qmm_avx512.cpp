// The AVX-512 (F, BW, VL, DQ) quantized matmul kernels: 16 float lanes. Chosen at run time by
// quantized_matmul.cpp only where the CPU has these extensions.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "backend/cpu/kernels/quantized/qmm_simd.h"
#include "backend/cpu/kernels/quantized/quantized_kernels.h"

// GCC 12's AVX-512 intrinsics start some results from _mm*_undefined_*(), which -Wmaybe-uninitialized
// and -Wuninitialized report once they are inlined here; nothing is read uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#define KQ_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
#define KQ_INLINE __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"), always_inline)) inline

namespace kiln::quant::simd {

namespace {

struct Vec512 {
  using V = __m512;
  static constexpr int W = 16;
  KQ_INLINE static V zero() { return _mm512_setzero_ps(); }
  KQ_INLINE static V load(const float* p) { return _mm512_loadu_ps(p); }
  KQ_INLINE static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  KQ_INLINE static V set1(float f) { return _mm512_set1_ps(f); }
  KQ_INLINE static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  KQ_INLINE static V add(V a, V b) { return _mm512_add_ps(a, b); }
  KQ_INLINE static float hsum(V v) { return _mm512_reduce_add_ps(v); }
  // Weight rows per register tile for `mr` rows of x (32 registers).
  static constexpr int nr_for(int mr) { return mr == 1 ? 4 : mr == 2 ? 2 : 1; }
};

// Affine, any width (used for 2, 3, 5 and 6 bits): 16 codes (2·B bytes) per block in natural order. Each
// lane picks the two bytes holding its code (pshufb on a broadcast copy), shifts and masks.
template <int Bits>
struct AffineAny : Vec512 {
  static constexpr int B = Bits, BLK = 16;
  static constexpr bool kAffine = true;
  struct Ctx {
    V s, b;
  };
  static constexpr int ctrl(int j) {
    const unsigned o = static_cast<unsigned>(j * B / 8);
    return static_cast<int>(o | ((o + 1) << 8) | (0x80u << 16) | (0x80u << 24));
  }
  static constexpr int shift(int j) { return j * B % 8; }
  KQ_INLINE static Ctx prep(float s, float b) { return {set1(s), set1(b)}; }
  KQ_INLINE static void unpack(const uint8_t* p, const Ctx& c, V* w) {
    const __m128i raw = _mm_maskz_loadu_epi8(static_cast<__mmask16>((1u << (2 * B)) - 1u), p);
    const __m512i ctl = _mm512_setr_epi32(ctrl(0), ctrl(1), ctrl(2), ctrl(3), ctrl(4), ctrl(5), ctrl(6), ctrl(7),
                                          ctrl(8), ctrl(9), ctrl(10), ctrl(11), ctrl(12), ctrl(13), ctrl(14), ctrl(15));
    const __m512i sh = _mm512_setr_epi32(shift(0), shift(1), shift(2), shift(3), shift(4), shift(5), shift(6),
                                         shift(7), shift(8), shift(9), shift(10), shift(11), shift(12), shift(13),
                                         shift(14), shift(15));
    const __m512i two = _mm512_shuffle_epi8(_mm512_broadcast_i32x4(raw), ctl);
    const __m512i q = _mm512_and_si512(_mm512_srlv_epi32(two, sh), _mm512_set1_epi32((1 << B) - 1));
    w[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(q), c.s, c.b);
  }
  KQ_INLINE static void store_natural(const V* w, float* d) { store(d, w[0]); }
  static void perm(uint8_t* p) { perm_natural(p, BLK); }
};

// Affine 8 bits: 16 bytes, zero-extended.
struct Affine8 : Vec512 {
  static constexpr int B = 8, BLK = 16;
  static constexpr bool kAffine = true;
  struct Ctx {
    V s, b;
  };
  KQ_INLINE static Ctx prep(float s, float b) { return {set1(s), set1(b)}; }
  KQ_INLINE static void unpack(const uint8_t* p, const Ctx& c, V* w) {
    const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    w[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(q), c.s, c.b);
  }
  KQ_INLINE static void store_natural(const V* w, float* d) { store(d, w[0]); }
  static void perm(uint8_t* p) { perm_natural(p, BLK); }
};

// E4M3 codes: the bits moved into a float's exponent and mantissa, times 2^120 (exact; the subnormal
// codes land on float subnormals), NaN for the codes 0x7f and 0xff.
struct Fp8 : Vec512 {
  static constexpr int B = 8, BLK = 16;
  static constexpr bool kAffine = false;
  struct Ctx {
    V s;
  };
  KQ_INLINE static Ctx prep(float s, float) { return {set1(s)}; }
  KQ_INLINE static void unpack(const uint8_t* p, const Ctx& c, V* w) {
    const __m512i z = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m512i mag = _mm512_and_si512(z, _mm512_set1_epi32(0x7f));
    const __m512i bits = _mm512_or_si512(_mm512_slli_epi32(mag, 20),
                                         _mm512_slli_epi32(_mm512_and_si512(z, _mm512_set1_epi32(0x80)), 24));
    V f = _mm512_mul_ps(_mm512_castsi512_ps(bits), _mm512_set1_ps(0x1p120f));
    f = _mm512_mask_mov_ps(f, _mm512_cmpeq_epi32_mask(mag, _mm512_set1_epi32(0x7f)), _mm512_set1_ps(NAN));
    w[0] = _mm512_mul_ps(f, c.s);
  }
  KQ_INLINE static void store_natural(const V* w, float* d) { store(d, w[0]); }
  static void perm(uint8_t* p) { perm_natural(p, BLK); }
};

// 4 bits, 32 codes (16 bytes) per block: the bytes zero-extended to lanes; the low nibbles, then the
// high ones, index a 16-entry table of the group's values (vpermps reads only an index's low 4 bits).
// Affine: table[q] = scale·q + bias; fp4: the E2M1 values times the scale. Used for mxfp4 and affine
// groups of 32 (larger affine groups take Nibbles64).
template <bool Aff>
struct Nibbles32 : Vec512 {
  static constexpr int B = 4, BLK = 32;
  static constexpr bool kAffine = Aff;
  struct Ctx {
    V t;
  };
  KQ_INLINE static Ctx prep(float s, float b) {
    if constexpr (Aff) {
      const V iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
      return {_mm512_fmadd_ps(iota, set1(s), set1(b))};
    } else {
      return {_mm512_mul_ps(_mm512_loadu_ps(kFp4), set1(s))};
    }
  }
  KQ_INLINE static void unpack(const uint8_t* p, const Ctx& c, V* w) {
    const __m512i z = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    w[0] = _mm512_permutexvar_ps(z, c.t);
    w[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(z, 4), c.t);
  }
  KQ_INLINE static void store_natural(const V* w, float* d) {
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    store(d, _mm512_permutex2var_ps(w[0], lo, w[1]));
    store(d + 16, _mm512_permutex2var_ps(w[0], hi, w[1]));
  }
  static void perm(uint8_t* p) { perm_nibbles(p, BLK); }
};

// fp4 with 16-value groups (nvfp4): 8 bytes per block; lanes 0-7 the low nibbles, 8-15 the high ones.
struct Nibbles16 : Vec512 {
  static constexpr int B = 4, BLK = 16;
  static constexpr bool kAffine = false;
  struct Ctx {
    V t;
  };
  KQ_INLINE static Ctx prep(float s, float) { return {_mm512_mul_ps(_mm512_loadu_ps(kFp4), set1(s))}; }
  KQ_INLINE static void unpack(const uint8_t* p, const Ctx& c, V* w) {
    const __m256i d = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(d), _mm256_srli_epi32(d, 4), 1);
    w[0] = _mm512_permutexvar_ps(z, c.t);
  }
  KQ_INLINE static void store_natural(const V* w, float* d) {
    const __m512i idx = _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
    store(d, _mm512_permutexvar_ps(idx, w[0]));
  }
  static void perm(uint8_t* p) { perm_nibbles(p, BLK); }
};

// Affine 4 bits with groups of 64 or more (the common case): 64 codes (32 bytes) per block; the 16-bit
// words zero-extended to lanes, each lane then holding 4 codes, read by shifts of 0, 4, 8 and 12 into the
// same table lookup as Nibbles32 (one widening per 64 codes instead of two; a few percent faster).
struct Nibbles64 : Vec512 {
  static constexpr int B = 4, BLK = 64;
  static constexpr bool kAffine = true;
  struct Ctx {
    V t;
  };
  KQ_INLINE static Ctx prep(float s, float b) {
    const V iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return {_mm512_fmadd_ps(iota, set1(s), set1(b))};
  }
  KQ_INLINE static void unpack(const uint8_t* p, const Ctx& c, V* w) {
    const __m512i z = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    w[0] = _mm512_permutexvar_ps(z, c.t);
    w[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(z, 4), c.t);
    w[2] = _mm512_permutexvar_ps(_mm512_srli_epi32(z, 8), c.t);
    w[3] = _mm512_permutexvar_ps(_mm512_srli_epi32(z, 12), c.t);
  }
  KQ_INLINE static void store_natural(const V* w, float* d) {
    // Element i of vector v is code 4i + v: a 4 x 16 transpose.
    const __m512i a = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i b = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    const V e0 = _mm512_permutex2var_ps(w[0], a, w[2]), e1 = _mm512_permutex2var_ps(w[0], b, w[2]);
    const V o0 = _mm512_permutex2var_ps(w[1], a, w[3]), o1 = _mm512_permutex2var_ps(w[1], b, w[3]);
    // e0 lane 2k = code 4k, lane 2k+1 = code 4k+2 (k < 8); o0 likewise with 4k+1, 4k+3.
    store(d, _mm512_permutex2var_ps(e0, a, o0));
    store(d + 16, _mm512_permutex2var_ps(e0, b, o0));
    store(d + 32, _mm512_permutex2var_ps(e1, a, o1));
    store(d + 48, _mm512_permutex2var_ps(e1, b, o1));
  }
  static void perm(uint8_t* p) {
    for (int v = 0; v < 4; ++v) {
      for (int i = 0; i < 16; ++i) p[v * 16 + i] = static_cast<uint8_t>(4 * i + v);
    }
  }
};

template <class F>
void with_unpacker(Kind kind, int bits, int gs, F&& f) {
  switch (kind) {
    case Kind::Affine:
      switch (bits) {
        case 2: return f(AffineAny<2>{});
        case 3: return f(AffineAny<3>{});
        case 4:
          if (gs >= 64) return f(Nibbles64{});
          return f(Nibbles32<true>{});
        case 5: return f(AffineAny<5>{});
        case 6: return f(AffineAny<6>{});
        case 8: return f(Affine8{});
        default: break;
      }
      break;
    case Kind::Fp4:
      if (gs == 16) return f(Nibbles16{});
      return f(Nibbles32<false>{});
    case Kind::Fp8: return f(Fp8{});
  }
  throw std::logic_error("[quantized_matmul] no AVX-512 kernel for " + std::to_string(bits) + " bits");
}

#include "backend/cpu/kernels/quantized/qmm_simd_body.h"

// ---- The integer decode kernel (qmm_simd.h says what it computes) ----

#define KQ_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma")))
#define KQ_VNNI_INLINE __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma"), always_inline)) inline

// Σ over a lane's 8 codes of code · x_int, the codes given as two 64-byte vectors (lo: the low nibbles,
// meeting the even elements; hi: the high ones), the planes of one pair of blocks at xq (384 bytes).
KQ_VNNI_INLINE __m512i dot_planes(__m512i lo, __m512i hi, const int8_t* xq) {
  __m512i a = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_loadu_si512(xq));
  a = _mm512_dpbusd_epi32(a, hi, _mm512_loadu_si512(xq + 64));
  a = _mm512_slli_epi32(a, 8);
  a = _mm512_dpbusd_epi32(a, lo, _mm512_loadu_si512(xq + 128));
  a = _mm512_dpbusd_epi32(a, hi, _mm512_loadu_si512(xq + 192));
  a = _mm512_slli_epi32(a, 8);
  a = _mm512_dpbusd_epi32(a, lo, _mm512_loadu_si512(xq + 256));
  return _mm512_dpbusd_epi32(a, hi, _mm512_loadu_si512(xq + 320));
}

// The three balanced byte digits of 16 integers (|v| ≤ 127·(2^16 + 2^8 + 1)), stored as bytes at d2, d2 + 128
// and d2 + 256 (the planes' places).
KQ_VNNI_INLINE void store_digits(__m512i v, int8_t* d2) {
  const __m512i d0 = _mm512_srai_epi32(_mm512_slli_epi32(v, 24), 24);
  const __m512i t = _mm512_srai_epi32(_mm512_sub_epi32(v, d0), 8);
  const __m512i d1 = _mm512_srai_epi32(_mm512_slli_epi32(t, 24), 24);
  const __m512i top = _mm512_srai_epi32(_mm512_sub_epi32(t, d1), 8);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(d2), _mm512_cvtepi32_epi8(top));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(d2 + 128), _mm512_cvtepi32_epi8(d1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(d2 + 256), _mm512_cvtepi32_epi8(d0));
}

// The largest magnitude's bits of each run of 8 lanes, in every lane of the run (non-negative floats order
// as integers, and inf / NaN lie above every finite value).
KQ_VNNI_INLINE __m512i max8_bits(__m512 v) {
  __m512i m = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff));
  m = _mm512_max_epi32(m, _mm512_shuffle_i32x4(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
  m = _mm512_max_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_BADC));
  return _mm512_max_epi32(m, _mm512_shuffle_epi32(m, _MM_PERM_CDAB));
}

// 16 elements of x as integers at the scale of their run of 8: x · 2^(23−e), rounded, where the run's
// largest magnitude lies in [2^(e−1), 2^e) (e one more where it would scale above 127·(2^16 + 2^8 + 1) =
// 8355711, the most three balanced digits hold). `down` gets 2^(e−23) per lane. False where a run is
// neither zero nor within [2^−100, 2^101) (inf and NaN included).
KQ_VNNI_INLINE bool scale_runs(__m512 v, __m512i& xi, __m512& down) {
  const __m512i m = max8_bits(v);
  const __m512i biased = _mm512_srli_epi32(m, 23);
  const __mmask16 nonzero = _mm512_test_epi32_mask(m, m);
  const __mmask16 bad = _mm512_mask_cmplt_epi32_mask(nonzero, biased, _mm512_set1_epi32(27)) |
                        _mm512_mask_cmpgt_epi32_mask(nonzero, biased, _mm512_set1_epi32(227));
  if (bad != 0) return false;
  // e = biased − 126 (0 for runs of zeros); up = 2^(23−e), exponent field 150 − e.
  __m512i e = _mm512_maskz_sub_epi32(nonzero, biased, _mm512_set1_epi32(126));
  __m512 up = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_sub_epi32(_mm512_set1_epi32(150), e), 23));
  const __mmask16 over = _mm512_cmp_ps_mask(_mm512_mul_ps(_mm512_castsi512_ps(m), up), _mm512_set1_ps(8355711.0f),
                                            _CMP_GT_OQ);
  e = _mm512_mask_add_epi32(e, over, e, _mm512_set1_epi32(1));
  up = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_sub_epi32(_mm512_set1_epi32(150), e), 23));
  down = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_set1_epi32(104), e), 23));
  xi = _mm512_cvt_roundps_epi32(_mm512_mul_ps(v, up), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return true;
}

KQ_VNNI bool prepare_x_i8_impl(const float* x, int64_t K, int gs, const XInt8& out) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  // Lanes 0 and 8 of two vectors: the scales of four runs.
  const __m512i firsts = _mm512_setr_epi32(0, 8, 16, 24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  const int64_t nb = K / 64;
  const int bpg = gs / 64;
  float gacc = 0.0f;
  for (int64_t blk = 0; blk < nb; ++blk) {
    const float* xb = x + blk * 64;
    __m512 v[4], d[4];
    __m512i xi[4];
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm512_loadu_ps(xb + 16 * i);
      if (!scale_runs(v[i], xi[i], d[i])) return false;
    }
    int8_t* q = out.q + (blk / 2) * 384 + (blk % 2) * 32;
    store_digits(_mm512_permutex2var_epi32(xi[0], even, xi[1]), q);           // elements 0, 2, …, 30
    store_digits(_mm512_permutex2var_epi32(xi[2], even, xi[3]), q + 16);      // 32, …, 62
    store_digits(_mm512_permutex2var_epi32(xi[0], odd, xi[1]), q + 64);       // 1, …, 31
    store_digits(_mm512_permutex2var_epi32(xi[2], odd, xi[3]), q + 64 + 16);  // 33, …, 63
    // Kernel lane l of the block covers elements 8l .. 8l + 7: one run each.
    const __m512 f01 = _mm512_permutex2var_ps(d[0], firsts, d[1]), f23 = _mm512_permutex2var_ps(d[2], firsts, d[3]);
    float* f = out.f + (blk / 2) * 16 + (blk % 2) * 8;
    _mm_storeu_ps(f, _mm512_castps512_ps128(f01));
    _mm_storeu_ps(f + 4, _mm512_castps512_ps128(f23));
    gacc += _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(v[0], v[1]), _mm512_add_ps(v[2], v[3])));
    if ((blk + 1) % bpg == 0) {
      out.gsum[blk / bpg] = gacc;
      gacc = 0.0f;
    }
  }
  // −8·Σ x_int per lane: the kernel's own dot product with every code 8.
  const __m512i eights = _mm512_set1_epi8(8);
  for (int64_t j = 0; j < nb / 2; ++j) {
    _mm512_storeu_si512(out.c + j * 16, _mm512_sub_epi32(_mm512_setzero_si512(), dot_planes(eights, eights, out.q + j * 384)));
  }
  return true;
}

// MR rows of x against NR weight rows. G64: groups of 64 (a pair of blocks spans two groups); otherwise
// each pair lies in one group.
template <int MR, int NR, bool G64>
KQ_VNNI void tile_i8(const Gemv& a, int64_t r0, int m0) {
  const int64_t np = a.K / 128, ng = a.K / a.gs, lanes = a.K / 8;
  const int ppg = a.gs / 128;  // pairs per group where !G64
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i two = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const uint8_t* wr[NR];
  const float* sr[NR];
  KQ_UNROLL
  for (int r = 0; r < NR; ++r) {
    wr[r] = a.w + (r0 + r) * a.row_bytes;
    sr[r] = a.s + (r0 + r) * a.s_stride;
  }
  const int8_t* xq = a.xq + m0 * 3 * a.K;
  const int32_t* xc = a.xc + m0 * lanes;
  const float* xf = a.xf + m0 * lanes;
  constexpr int64_t kAhead = 4;
  __m512 acc[MR][NR];
  KQ_UNROLL
  for (int m = 0; m < MR; ++m)
    KQ_UNROLL
    for (int r = 0; r < NR; ++r) acc[m][r] = _mm512_setzero_ps();
  for (int64_t j = 0; j < np; ++j) {
    KQ_UNROLL
    for (int r = 0; r < NR; ++r) {
      // As tile_t: the codes, and a line of 16 scales when the pair reaches a new one.
      const int64_t g = G64 ? 2 * j : j / ppg;  // the pair's (first) group
      prefetch_codes(wr[r], NR * a.row_bytes, kAhead, j * 64);
      if (g % 16 == 0 && (G64 || j % ppg == 0)) prefetch(sr[r], (kAhead * NR * a.s_stride + g) * 4);
      const __m512i v = _mm512_loadu_si512(wr[r] + j * 64);
      const __m512i lo = _mm512_and_si512(v, low4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
      __m512 sv;
      if constexpr (G64) {
        sv = _mm512_permutexvar_ps(two, _mm512_castpd_ps(_mm512_castpd128_pd512(
                                            _mm_load_sd(reinterpret_cast<const double*>(sr[r] + g)))));
      } else {
        sv = _mm512_set1_ps(sr[r][g]);
      }
      KQ_UNROLL
      for (int m = 0; m < MR; ++m) {
        const __m512i d = _mm512_add_epi32(dot_planes(lo, hi, xq + m * 3 * a.K + j * 384),
                                           _mm512_loadu_si512(xc + m * lanes + j * 16));
        acc[m][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(sv, _mm512_loadu_ps(xf + m * lanes + j * 16)),
                                    acc[m][r]);
      }
    }
  }
  // The bias term, Σ_g (b_g + 8·s_g)·xsum_g, 16 groups at a time.
  KQ_UNROLL
  for (int r = 0; r < NR; ++r) {
    const float* br = a.b + (r0 + r) * a.s_stride;
    KQ_UNROLL
    for (int m = 0; m < MR; ++m) {
      const float* xs = a.xsum + (m0 + m) * ng;
      __m512 t = _mm512_setzero_ps();
      for (int64_t g = 0; g < ng; g += 16) {
        const __mmask16 k = ng - g >= 16 ? __mmask16(0xffff) : __mmask16((1u << (ng - g)) - 1u);
        const __m512 bs = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, sr[r] + g), _mm512_set1_ps(8.0f),
                                          _mm512_maskz_loadu_ps(k, br + g));
        t = _mm512_fmadd_ps(bs, _mm512_maskz_loadu_ps(k, xs + g), t);
      }
      a.y[(m0 + m) * a.ldy + r0 + r] = _mm512_reduce_add_ps(acc[m][r]) + _mm512_reduce_add_ps(t);
    }
  }
}

template <int MR, bool G64>
KQ_VNNI void rows_i8(const Gemv& a, int m0) {
  constexpr int NR = MR == 1 ? 4 : 2;
  int64_t r = 0;
  for (; r + NR <= a.n; r += NR) tile_i8<MR, NR, G64>(a, r, m0);
  for (; r < a.n; ++r) tile_i8<MR, 1, G64>(a, r, m0);
}

template <bool G64>
KQ_VNNI void gemv_t_i8_rows(const Gemv& a) {
  int m0 = 0;
  for (; m0 + 2 <= a.M; m0 += 2) rows_i8<2, G64>(a, m0);
  if (m0 < a.M) rows_i8<1, G64>(a, m0);
}

KQ_VNNI void gemv_t_i8_impl(const Gemv& a) {
  if (a.gs == 64) {
    gemv_t_i8_rows<true>(a);
  } else {
    gemv_t_i8_rows<false>(a);
  }
}

}  // namespace

const Ops& avx512_ops() {
  static const Ops ops{false, layout_impl, gemv_t_entry, gemv_n_entry, dequant_entry, prepare_x_i8_impl, gemv_t_i8_impl};
  return ops;
}

KQ_TARGET bool codes_bf16_avx512(const uint8_t* p, int64_t n, int bits, int center, uint16_t* dst) {
  if (bits == 4 && n % 32 == 0) {
    // Byte i holds codes 2i (low nibble) and 2i + 1: one 32-bit pair of bfloat16 per byte, looked up in a
    // table of the bfloat16 patterns of 0 − center .. 15 − center.
    const __m512i lut = _mm512_srli_epi32(
        _mm512_castps_si512(_mm512_cvtepi32_ps(_mm512_sub_epi32(
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(center)))),
        16);
    const __m512i words = _mm512_permutexvar_epi16(
        _mm512_set_epi16(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0, 30, 28, 26, 24, 22, 20, 18, 16, 14,
                         12, 10, 8, 6, 4, 2, 0),
        lut);  // words 0 .. 15: the patterns
    const __m512i low4 = _mm512_set1_epi32(0xF);
    for (int64_t i = 0; i < n; i += 32, p += 16, dst += 32) {
      const __m512i d = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
      const __m512i lo = _mm512_permutexvar_epi16(_mm512_and_si512(d, low4), words);
      const __m512i hi = _mm512_permutexvar_epi16(_mm512_srli_epi32(d, 4), words);
      _mm512_storeu_si512(dst, _mm512_or_si512(_mm512_and_si512(lo, _mm512_set1_epi32(0xFFFF)),
                                               _mm512_slli_epi32(hi, 16)));
    }
    return true;
  }
  if (bits == 8 && n % 16 == 0) {
    for (int64_t i = 0; i < n; i += 16, p += 16, dst += 16) {
      const __m512 f = _mm512_cvtepi32_ps(_mm512_sub_epi32(
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), _mm512_set1_epi32(center)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst),
                          _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(f), 16)));
    }
    return true;
  }
  return false;
}

}  // namespace kiln::quant::simd
