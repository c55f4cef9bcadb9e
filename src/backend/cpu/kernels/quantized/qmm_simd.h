// The vectorized quantized matmul kernels (qmm_avx512.cpp, qmm_avx2.cpp; the shared bodies in
// qmm_simd_body.h). They read the packed codes of a weight matrix directly and expand them to floats in
// registers: per group, a block of codes is loaded, widened to 32-bit lanes and turned into the
// dequantized values (scale·q + bias for affine, the E2M1/E4M3 value times the scale for the fp modes),
// which feed FMAs with x. Accumulation is float32, as in the dequantize-then-multiply path.
//
// Lane order: a block of `blk` codes comes out of registers in the order `perm` (element i of the
// block's vectors is code perm[i]). For x · Wᵀ the caller permutes x the same way once per call, so the
// dot products need no shuffles; the other kernels undo the order when they store.
#pragma once

#include <cstdint>

namespace kiln::quant::simd {

enum class Kind : int { Affine = 0, Fp4 = 1, Fp8 = 2 };

// One call of a register kernel, for both products:
//  - gemv_t, the transposed product (W is N × K, packed along K): y[m·ldy + r] = Σ_k x[m·ldx + k] ·
//    W[n0 + r, k] for the `n` weight rows r and m in [0, M). `w` is row n0's first byte, rows `row_bytes`
//    apart; `s`/`b` the float scales/biases of row n0 (b null for the fp modes), rows `s_stride` apart.
//    x is permuted as layout() says.
//  - gemv_n, the plain product (W is K × N, packed along N): y[m·ldy + c] = Σ_k x[m·ldx + k] · W[k, c0 + c]
//    for the `n` columns c. `w` points at column c0 of row 0 (c0 a multiple of the block size), rows
//    `row_bytes` apart; `s`/`b` at the scales of (row 0, group c0 / gs), rows `s_stride` apart. x in
//    natural order; n a multiple of the block size.
struct Gemv {
  const uint8_t* w;
  int64_t row_bytes;
  const float* s;
  const float* b;
  int64_t s_stride;
  int64_t n, K;
  int gs, bits;
  Kind kind;
  const float* x;
  int64_t ldx;
  int M;
  float* y;
  int64_t ldy;
  // Affine gemv_t only, where Ops::group_sums, and gemv_t_i8: per row m of x and group g, the sum of x
  // over the group, at xsum[m · K / gs + g] (the row of x a.x points at is row 0).
  const float* xsum;
  // gemv_t_i8 only: x as prepare_x_i8 wrote it, row 0 at these pointers; rows 3·K bytes (xq) and K / 8
  // lanes (xc, xf) apart. x itself (a.x) is not read.
  const int8_t* xq;
  const int32_t* xc;
  const float* xf;
};

// The integer decode kernel (AVX-512 VNNI; affine 4-bit codes, groups a multiple of 64, K a multiple of
// 128), float32-accurate:
//  - Each run of 8 elements of x becomes 24-bit integers at the run's own power-of-two scale 2^(e−23) (e:
//    the exponent of the run's largest magnitude, plus one if that one would not fit), split into three
//    signed byte planes (x_int = d2·2^16 + d1·2^8 + d0, each digit in [−128, 127]). Each element is off by
//    at most half a unit of 2^(e−23), 2^−23 of its run's largest magnitude. (A scale per 64 elements was
//    less accurate than dequantizing first on heavy-tailed x; per 8 costs the kernel nothing, as each of
//    its 32-bit lanes sums one run.)
//  - vpdpbusd multiplies the raw codes (0..15) with the planes exactly in 32-bit lanes, the planes
//    combined by shifts (Horner). With the precomputed −8·Σ x_int per lane (xc) added, a lane holds
//    Σ (q − 8)·x_int over its 8 codes exactly; it is converted once and scaled by s·2^(e−23) (xf holds the
//    2^(e−23) per lane) into a float32 accumulator.
//  - The bias term is Σ_g (b_g + 8·s_g)·(Σ_{k∈g} x_k), the group sums of x in float (xsum).
// Against float64, on decoder-like activations (Gaussian, heavy-tailed, one-signed, gated, with outliers)
// its error is at most that of dequantizing first, rms and max (test_qmm_kernels'
// Int8PlanesAsAccurateAsDequantizing), and below pip MLX's own (bench/qmm_accuracy.py).
// Per pair j of 64-element blocks of a row of x: xq + 384·j holds the planes d2, d1, d0, each as the 64
// bytes that meet the codes' low nibbles (elements 0, 2, …, 62 of block 2j, then of block 2j + 1) and the 64
// that meet the high nibbles (the odd elements); xc + 16·j and xf + 16·j hold one lane per 8 elements
// (lanes 0-7 block 2j, 8-15 block 2j + 1; lane l of a block sums its elements 8l .. 8l + 7).
// Returns false, having written part of the buffers, where x has inf or NaN or a run's largest magnitude
// is neither 0 nor within [2^−100, 2^101) (the float kernels serve those calls). gsum gets the K / gs group sums.
struct XInt8 {
  int8_t* q;
  int32_t* c;
  float* f;
  float* gsum;
};

// The kernels of one instruction set.
struct Ops {
  // Whether the affine transposed kernels want Gemv::xsum (they then form s · Σ q·x + b · Σ x per group
  // instead of dequantizing each weight; see qmm_simd_body.h).
  bool group_sums;
  // Block size and lane order (perm: up to 64 entries) of (kind, bits, gs).
  int (*layout)(Kind kind, int bits, int gs, uint8_t* perm);
  void (*gemv_t)(const Gemv& a);
  void (*gemv_n)(const Gemv& a);
  // Dequantize `ngroups` whole groups starting at packed byte `p` (scales s, biases b) into dst, in
  // natural order.
  void (*dequant)(const uint8_t* p, const float* s, const float* b, int64_t ngroups, int gs, int bits, Kind kind,
                  float* dst);
  // The integer decode kernel and its preparation of one row of x (above); null where the instruction set
  // has none. The caller checks cpu::has_avx512_vnni() and the shape (int8_fits).
  bool (*prepare_x_i8)(const float* x, int64_t K, int gs, const XInt8& out);
  void (*gemv_t_i8)(const Gemv& a);
};

// Whether the integer decode kernel serves (kind, bits, gs, K).
inline bool int8_fits(Kind kind, int bits, int gs, int64_t K) {
  return kind == Kind::Affine && bits == 4 && (gs == 64 || gs % 128 == 0) && K % 128 == 0 && K % gs == 0;
}

// Lane orders shared by the unpackers.
inline void perm_natural(uint8_t* p, int n) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i);
}
// Two halves: first the low nibbles (even codes), then the high nibbles (odd codes).
inline void perm_nibbles(uint8_t* p, int n) {
  for (int i = 0; i < n / 2; ++i) {
    p[i] = static_cast<uint8_t>(2 * i);
    p[n / 2 + i] = static_cast<uint8_t>(2 * i + 1);
  }
}

const Ops& avx512_ops();

// The affine codes of n values packed at p (bits 4 or 8, n a multiple of 32), less `center`, as bfloat16
// bit patterns in natural order, for the AMX product (quantized_matmul.cpp). Returns false (nothing
// written) for other bits.
bool codes_bf16_avx512(const uint8_t* p, int64_t n, int bits, int center, uint16_t* dst);
const Ops& avx2_ops();

}  // namespace kiln::quant::simd
