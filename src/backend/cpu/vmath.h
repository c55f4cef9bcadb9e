// Vector math over contiguous float32 arrays: out[i] = f(in[i]) (or f(a[i], b[i])) for n elements, at
// the CPU's widest instruction set (cpu::isa_level(): AVX-512, AVX2+FMA, or portable scalar code).
//
// Three kinds of functions, all the values that MLX's CPU backend computes:
//  - exp, sin, cos, sigmoid, erf: MLX's own single-precision polynomials (the scalar functions of
//    kernels/elementwise/elementwise_math.h). Every level gives the same bits as the scalar code.
//  - the others, which MLX takes from the C library: SLEEF's vector functions with a 1.0-ULP bound
//    (Debian's libsleef-dev) at the AVX2 and AVX-512 levels, the C library itself at the scalar level.
//    Their measured errors are in docs/vmath.md (tests/unit/test_vmath.cpp checks the bounds). tanh uses
//    SLEEF's 3.5-ULP function where it stays within 1.5 ULP and a polynomial below (1.49 ULP at most;
//    the C library's tanhf has 2.16).
//  - IEEE arithmetic (add, subtract, multiply, divide, sqrt, 1 / sqrt): one rounding, the same bits at
//    every level; here because the element-wise kernels are compiled for the baseline instruction set.
//  - exact operations, the same bits at every level as the element-wise kernels' scalar code: abs,
//    negative, square, maximum and minimum (MLX's NaN rule: a NaN first operand wins, else the comparison
//    picks), the six comparisons (float32 to bool) and select (bit copies of 32-bit values by a bool
//    condition). The fused groups' tile functions use them (backend/cpu/fusion.h).
// Any n (tails are handled); in and out may be the same pointer, otherwise they must not overlap.
// This header declares functions only, so the per-ISA sources (vmath_avx2.cpp, vmath_avx512.cpp,
// compiled with their own -m flags) may include it.
#pragma once

#include <cstddef>

namespace kiln::cpu {

// The instruction-set levels (backend/cpu/cpu_features.h), declared, not included: that header has inline
// functions, which must not be compiled with the per-ISA sources' flags.
enum class Isa : int;

enum class VUnary : int {
  // MLX's polynomials (bit-identical at every level)
  Exp, Sin, Cos, Sigmoid, Erf,
  // the C library's functions (SLEEF u10 at the vector levels)
  Tan, Tanh, Sinh, Cosh, ArcSin, ArcCos, ArcTan, ArcSinh, ArcCosh, ArcTanh,
  Log, Log2, Log10, Log1p, Expm1,
  // IEEE, correctly rounded (sqrt, then 1 / sqrt): the same bits at every level
  Sqrt, Rsqrt,
  // exact: |x|, -x (the sign bit), x * x
  Abs, Negative, Square,
  kCount
};

enum class VBinary : int {
  Power,      // pow(a, b) (SLEEF powf)
  ArcTan2,    // atan2(a, b) (SLEEF atan2f)
  LogAddExp,  // max + log1p(exp(min - max)) with MLX's exp and SLEEF's log1p; infinities give the max
  // IEEE arithmetic, one rounding: the same bits at every level. The element-wise kernels are built for
  // the baseline instruction set (SSE2); these loops run at the CPU's widest.
  Add, Subtract, Multiply, Divide,
  // a NaN a gives a, else a > b ? a : b (a < b ? a : b), as binary.cpp's ExtremumOp
  Maximum, Minimum,
  kCount
};

// out[i] = a[i] OP b[i] as C++ compares floats (NotEqual is true for NaN operands, the others false).
enum class VCompare : int { Equal, NotEqual, Greater, GreaterEqual, Less, LessEqual, kCount };

const char* vunary_name(VUnary f);
const char* vbinary_name(VBinary f);
const char* vcompare_name(VCompare f);

// At cpu::isa_level().
void vunary(VUnary f, const float* in, float* out, size_t n);
void vbinary(VBinary f, const float* a, const float* b, float* out, size_t n);
void vcompare(VCompare f, const float* a, const float* b, bool* out, size_t n);
// out[i] = c[i] ? a[i] : b[i], copying bits (any 32-bit type); out may be a or b.
void vselect(const bool* c, const float* a, const float* b, float* out, size_t n);

// At a given level (Isa::scalar / avx2 / avx512; avx512bf16 runs the AVX-512 code) for tests and
// benchmarks; a level above cpu::isa_detected() throws std::invalid_argument.
void vunary_at(Isa isa, VUnary f, const float* in, float* out, size_t n);
void vbinary_at(Isa isa, VBinary f, const float* a, const float* b, float* out, size_t n);
void vcompare_at(Isa isa, VCompare f, const float* a, const float* b, bool* out, size_t n);
void vselect_at(Isa isa, const bool* c, const float* a, const float* b, float* out, size_t n);

// Named entry points (at cpu::isa_level()).
void vexp(const float* in, float* out, size_t n);
void vsin(const float* in, float* out, size_t n);
void vcos(const float* in, float* out, size_t n);
void vsigmoid(const float* in, float* out, size_t n);
void verf(const float* in, float* out, size_t n);
void vtanh(const float* in, float* out, size_t n);
void vlog(const float* in, float* out, size_t n);
void vlog1p(const float* in, float* out, size_t n);
void vexpm1(const float* in, float* out, size_t n);
void vpow(const float* a, const float* b, float* out, size_t n);
void vatan2(const float* a, const float* b, float* out, size_t n);
void vlogaddexp(const float* a, const float* b, float* out, size_t n);

namespace vmath_detail {
using UnaryFn = void (*)(const float*, float*, size_t);
using BinaryFn = void (*)(const float*, const float*, float*, size_t);
using CompareFn = void (*)(const float*, const float*, bool*, size_t);
using SelectFn = void (*)(const bool*, const float*, const float*, float*, size_t);
struct Table {
  UnaryFn unary[static_cast<int>(VUnary::kCount)];
  BinaryFn binary[static_cast<int>(VBinary::kCount)];
  CompareFn compare[static_cast<int>(VCompare::kCount)];
  SelectFn select;
};
// One element by the C library: unary functions in double precision rounded once, binary ones as
// the scalar level computes them. The vector levels use them for the rare lanes that SLEEF does not
// cover to its bound (NaN inputs, the edges of some ranges).
float libm_unary(VUnary f, float x);
float libm_binary(VBinary f, float a, float b);
// Defined in vmath_avx2.cpp / vmath_avx512.cpp (null entries where the build has no such code).
const Table* table_avx2();
const Table* table_avx512();
}  // namespace vmath_detail

}  // namespace kiln::cpu
