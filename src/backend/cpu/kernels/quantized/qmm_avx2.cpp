// The AVX2 + FMA quantized matmul kernels: 8 float lanes. Chosen at run time by quantized_matmul.cpp
// where the CPU has AVX2 and FMA but not AVX-512 (or when KILN_CPU_ISA=avx2 asks for them).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "backend/cpu/kernels/quantized/qmm_simd.h"
#include "backend/cpu/kernels/quantized/quantized_kernels.h"

#define KQ_TARGET __attribute__((target("avx2,fma")))
#define KQ_INLINE __attribute__((target("avx2,fma"), always_inline)) inline

namespace kiln::quant::simd {

namespace {

struct Vec256 {
  using V = __m256;
  static constexpr int W = 8;
  KQ_INLINE static V zero() { return _mm256_setzero_ps(); }
  KQ_INLINE static V load(const float* p) { return _mm256_loadu_ps(p); }
  KQ_INLINE static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  KQ_INLINE static V set1(float f) { return _mm256_set1_ps(f); }
  KQ_INLINE static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  KQ_INLINE static V add(V a, V b) { return _mm256_add_ps(a, b); }
  KQ_INLINE static float hsum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // Weight rows per register tile for `mr` rows of x (16 registers).
  static constexpr int nr_for(int mr) { return mr == 1 ? 2 : 1; }
};

// Affine, any width (used for 2, 3, 5 and 6 bits): 8 codes (B bytes) per block in natural order; each
// lane picks the two bytes holding its code (pshufb), shifts and masks.
template <int Bits>
struct AffineAny : Vec256 {
  static constexpr int B = Bits, BLK = 8;
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
  KQ_INLINE static __m256i codes(const uint8_t* p) {
    uint64_t v = 0;
    std::memcpy(&v, p, B);
    const __m256i ctl = _mm256_setr_epi32(ctrl(0), ctrl(1), ctrl(2), ctrl(3), ctrl(4), ctrl(5), ctrl(6), ctrl(7));
    const __m256i sh = _mm256_setr_epi32(shift(0), shift(1), shift(2), shift(3), shift(4), shift(5), shift(6),
                                         shift(7));
    const __m256i two =
        _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_cvtsi64_si128(static_cast<long long>(v))), ctl);
    return _mm256_and_si256(_mm256_srlv_epi32(two, sh), _mm256_set1_epi32((1 << B) - 1));
  }
  KQ_INLINE static void raw(const uint8_t* p, V* w) {
    w[0] = _mm256_cvtepi32_ps(_mm256_sub_epi32(codes(p), _mm256_set1_epi32(1 << (B - 1))));
  }
  KQ_INLINE static void unpack(const uint8_t* p, const Ctx& c, V* w) {
    w[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(codes(p)), c.s, c.b);
  }
  KQ_INLINE static void store_natural(const V* w, float* d) { store(d, w[0]); }
  static void perm(uint8_t* p) { perm_natural(p, BLK); }
};

struct Affine8 : Vec256 {
  static constexpr int B = 8, BLK = 8;
  static constexpr bool kAffine = true;
  struct Ctx {
    V s, b;
  };
  KQ_INLINE static Ctx prep(float s, float b) { return {set1(s), set1(b)}; }
  // q − 128 as floats.
  KQ_INLINE static void raw(const uint8_t* p, V* w) {
    const __m256i q = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    w[0] = _mm256_cvtepi32_ps(_mm256_sub_epi32(q, _mm256_set1_epi32(128)));
  }
  KQ_INLINE static void unpack(const uint8_t* p, const Ctx& c, V* w) {
    const __m256i q = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    w[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), c.s, c.b);
  }
  KQ_INLINE static void store_natural(const V* w, float* d) { store(d, w[0]); }
  static void perm(uint8_t* p) { perm_natural(p, BLK); }
};

// E4M3 codes as in the AVX-512 file: bits into a float, times 2^120, NaN for 0x7f / 0xff.
struct Fp8 : Vec256 {
  static constexpr int B = 8, BLK = 8;
  static constexpr bool kAffine = false;
  struct Ctx {
    V s;
  };
  KQ_INLINE static Ctx prep(float s, float) { return {set1(s)}; }
  KQ_INLINE static void unpack(const uint8_t* p, const Ctx& c, V* w) {
    const __m256i z = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    const __m256i mag = _mm256_and_si256(z, _mm256_set1_epi32(0x7f));
    const __m256i bits = _mm256_or_si256(_mm256_slli_epi32(mag, 20),
                                         _mm256_slli_epi32(_mm256_and_si256(z, _mm256_set1_epi32(0x80)), 24));
    V f = _mm256_mul_ps(_mm256_castsi256_ps(bits), _mm256_set1_ps(0x1p120f));
    const V nan = _mm256_castsi256_ps(_mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7f)));
    f = _mm256_blendv_ps(f, _mm256_set1_ps(NAN), nan);
    w[0] = _mm256_mul_ps(f, c.s);
  }
  KQ_INLINE static void store_natural(const V* w, float* d) { store(d, w[0]); }
  static void perm(uint8_t* p) { perm_natural(p, BLK); }
};

// 4 bits, 16 codes (8 bytes) per block: the bytes zero-extended to lanes, low nibbles then high ones.
// Affine: scale·q + bias; fp4: |E2M1| times the scale from an 8-entry table (vpermps reads an index's
// low 3 bits), the code's sign bit flipped in.
template <bool Aff>
struct Nibbles : Vec256 {
  static constexpr int B = 4, BLK = 16;
  static constexpr bool kAffine = Aff;
  struct Ctx {
    V s, b;  // affine: scale, bias; fp4: s holds the scaled magnitude table
  };
  KQ_INLINE static Ctx prep(float s, float b) {
    if constexpr (Aff) {
      return {set1(s), set1(b)};
    } else {
      return {_mm256_mul_ps(_mm256_loadu_ps(kFp4), set1(s)), _mm256_setzero_ps()};
    }
  }
  KQ_INLINE static V value(__m256i q, const Ctx& c) {
    if constexpr (Aff) {
      return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_and_si256(q, _mm256_set1_epi32(15))), c.s, c.b);
    } else {
      const __m256i sign = _mm256_and_si256(_mm256_slli_epi32(q, 28), _mm256_set1_epi32(INT32_MIN));
      return _mm256_xor_ps(_mm256_permutevar8x32_ps(c.s, q), _mm256_castsi256_ps(sign));
    }
  }
  KQ_INLINE static void unpack(const uint8_t* p, const Ctx& c, V* w) {
    const __m256i d = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    w[0] = value(d, c);
    w[1] = value(_mm256_srli_epi32(d, 4), c);
  }
  // q − 8 as floats (affine only). Masks and subtractions, one shift: vector shifts have fewer ports.
  KQ_INLINE static void raw(const uint8_t* p, V* w)
    requires Aff
  {
    const __m256i d = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    const __m256i eight = _mm256_set1_epi32(8);
    w[0] = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(d, _mm256_set1_epi32(15)), eight));
    w[1] = _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(d, 4), eight));
  }
  KQ_INLINE static void store_natural(const V* w, float* d) {
    const V lo = _mm256_unpacklo_ps(w[0], w[1]), hi = _mm256_unpackhi_ps(w[0], w[1]);
    store(d, _mm256_permute2f128_ps(lo, hi, 0x20));
    store(d + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
  }
  static void perm(uint8_t* p) { perm_nibbles(p, BLK); }
};

template <class F>
void with_unpacker(Kind kind, int bits, int gs, F&& f) {
  switch (kind) {
    case Kind::Affine:
      switch (bits) {
        case 2: return f(AffineAny<2>{});
        case 3: return f(AffineAny<3>{});
        case 4: return f(Nibbles<true>{});
        case 5: return f(AffineAny<5>{});
        case 6: return f(AffineAny<6>{});
        case 8: return f(Affine8{});
        default: break;
      }
      break;
    case Kind::Fp4: return f(Nibbles<false>{});
    case Kind::Fp8: return f(Fp8{});
  }
  throw std::logic_error("[quantized_matmul] no AVX2 kernel for " + std::to_string(bits) + " bits");
}

#include "backend/cpu/kernels/quantized/qmm_simd_body.h"

}  // namespace

const Ops& avx2_ops() {
  static const Ops ops{true, layout_impl, gemv_t_entry, gemv_n_entry, dequant_entry, nullptr, nullptr};
  return ops;
}

}  // namespace kiln::quant::simd
