// kiln's own float GEMM kernels (the float32 path of cpu::gemm in blas.h, and the 16-bit float products of
// Matmul / AddMM, which read bfloat16 / float16 operands directly instead of converting whole matrices):
//
//  - skinny products (few rows of A against a large B, the decode step of a language model): B is
//    streamed once at memory bandwidth, split over output columns so each thread reads disjoint weights;
//    16-bit B elements are widened to float in registers.
//  - packed products (the rest, e.g. prefill): cache blocks of A and B are packed into float panels (16-bit
//    elements converted while packing) and a register-tile micro-kernel (8x32 with AVX-512, 6x16 with AVX2,
//    4x8 portable) accumulates each tile of C; threads take (column block, row block) tasks of C from a
//    shared counter. bfloat16 x bfloat16 on CPUs with AVX512_BF16 packs pairs of bfloat16 along k instead
//    and multiplies them with vdpbf16ps (exact products, float32 sums, denormals flushed), twice the
//    multiply rate of the float32 kernel.
//
// cpu::gemm (blas.h) sends float32 here where these kernels were measured faster than OpenBLAS; Matmul /
// AddMM send every 16-bit product with BLAS-style strides here.
//
// All products accumulate in float32 and round once when stored, which is what MLX's CPU backend gets by
// converting 16-bit operands to float32 and calling sgemm: each product of (widened) elements is exact in
// float32 for 16-bit inputs and is added with one rounding (fused multiply-add), as in sgemm. The summation
// order differs from a BLAS (per k-block partial sums, vector lanes reduced at the end), so results agree
// with OpenBLAS / MLX to float32 rounding, not bit for bit.
#pragma once

#include <cstdint>
#include <functional>

#include "backend/cpu/cpu_features.h"
#include "kiln/dtype.h"

namespace kiln::cpu {

// Row-major C (M×N, leading dimension ldc) = alpha · op(A) · op(B) + beta · C, computed in float32. A is
// M×K (or K×M stored, when ta), B is K×N (or N×K stored, when tb); element types TA / TB are float,
// float16_t or bfloat16_t (instantiated for TA == TB). With beta == 0, C is not read. `isa` picks the
// kernels (lowered to what the CPU has).
template <typename TA, typename TB>
void gemm_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const TA* A, int64_t lda, const TB* B,
              int64_t ldb, float beta, float* C, int64_t ldc, Isa isa = isa_level());

// The two algorithms behind gemm_f32, callable directly (tests force each one and each ISA level).
template <typename TA, typename TB>
void gemm_skinny(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const TA* A, int64_t lda,
                 const TB* B, int64_t ldb, float beta, float* C, int64_t ldc, Isa isa);
template <typename TA, typename TB>
void gemm_packed(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const TA* A, int64_t lda,
                 const TB* B, int64_t ldb, float beta, float* C, int64_t ldc, Isa isa);

// The packed product C (M×N, row-major, ldc) = A · Bᵀ for a float32 A (M×K, row-major, lda) and a B (N×K)
// that exists only as a producer: rows_b(n0, nr, k0, kc, dst, ldd) writes B[n0 .. n0+nr, k0 .. k0+kc) as
// floats at dst, row r at dst + r·ldd (nr <= 32, k0 and kc multiples of k_align except at K's end). The
// quantized matmul passes a dequantizer, so a prefill-sized product unpacks its weights straight into the
// packed panels, a block at a time, instead of into a whole float matrix first. C is not read.
using RowsB = std::function<void(int64_t n0, int64_t nr, int64_t k0, int64_t kc, float* dst, int64_t ldd)>;
void gemm_packed_rows_b(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, int64_t k_align,
                        const RowsB& rows_b, float* C, int64_t ldc, Isa isa = isa_level());

// ---- AMX (gemm_amx.cpp)
// Whether Linux granted this process the AMX tile data state (asked once; false off Linux and x86-64).
bool amx_permitted();
// Whether AMX tile products may run: the level (cpu::isa_level(), KILN_CPU_ISA can lower it) is amx and
// the tile state is permitted.
bool amx_usable();

// Writes the codes of a grouped-scale matrix B (N×K) as bfloat16 bit patterns (values bfloat16 holds
// exactly): rows n0 .. n0+nr (nr <= 64), columns k0 .. k0+kc, row r at dst + r·ldd.
using CodesB = std::function<void(int64_t n0, int64_t nr, int64_t k0, int64_t kc, uint16_t* dst, int64_t ldd)>;

// C (M×N, row-major, ldc) = A · Bᵀ for a float32 A (M×K, row-major, lda) and B[n][k] = S[n·ld_sb + g] ·
// code[n][k] + Bias[n·ld_sb + g] (g = k / gs; Bias may be null), on AMX with A split into three bfloat16
// planes (float32-accurate: gemm_amx.cpp says how). Returns false, with C not written, when it cannot run:
// AMX not usable, gs not a multiple of 32, K not a multiple of gs, or a non-finite value in A.
bool qgemm_amx(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, int64_t gs, const CodesB& codes,
               const float* S, const float* Bias, int64_t ld_sb, float* C, int64_t ldc);

// C (M×N, row-major, ldc) = alpha · A · Bᵀ + beta · C for bfloat16 A (M×K, row-major, lda) and B (N×K,
// row-major, ldb) on AMX tiles: exact products, float32 sums (denormals flushed, as vdpbf16ps). Returns
// false, with C not written, when AMX is not usable or K is not a multiple of 32. With beta == 0, C is
// not read.
bool gemm_amx_bf16(int64_t M, int64_t N, int64_t K, float alpha, const uint16_t* A, int64_t lda, const uint16_t* B,
                   int64_t ldb, float beta, float* C, int64_t ldc);

// Up to this many rows of C, gemm_f32 uses the skinny kernels.
inline constexpr int64_t kSkinnyMaxM = 8;

}  // namespace kiln::cpu
