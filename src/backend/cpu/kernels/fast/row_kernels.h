// Vectorized loops over one contiguous row, shared by the row kernels (Softmax, LogSumExp, RMSNorm,
// LayerNorm, the attention kernel's softmax). Each loop exists three times, compiled from one body
// (row_body.h): AVX-512 (row_avx512.cpp), AVX2 with FMA and F16C (row_avx2.cpp) and portable code
// (row_scalar.cpp). row_fns() picks the best one the CPU has, capped by cpu::isa_level() (KILN_CPU_ISA)
// and by set_row_isa_for_testing().
//
// Values: every loop computes in float. exp is MLX's exp polynomial (the same bits as the element-wise
// Exp kernels), so Softmax and LogSumExp agree with an exp followed by a sum. Half-precision inputs
// round their intermediates where MLX's kernels do (see each entry). Sums keep several vector partial
// sums, so their order (and last bit) differs between the three builds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kiln/dtype.h"

namespace kiln::fastk::rows {

template <typename T>
struct RowFnsOf {
  // y = softmax(x) over n values. Without `precise`, 16-bit rows round each intermediate (x - max,
  // each exponential, the running sum, its reciprocal) to T as MLX does; float rows ignore the flag.
  // `scratch` holds n floats (float rows may pass null: y is then the scratch). `stream`: write y with
  // non-temporal stores where possible (outputs much larger than the caches). `next` (in these four, may
  // be null): the row of n values the caller passes next; its lines are prefetched while this row's
  // passes run from cache, so rows that come from memory do not wait for it between passes. It only
  // moves data into the cache: the results do not depend on it.
  void (*softmax)(const T* x, T* y, int64_t n, bool precise, float* scratch, bool stream, const T* next);
  // log(sum(exp(x))) computed in float: max + log(sum(exp(x - max))); NaN if any x is NaN; the maximum
  // itself when it is infinite (so a row of -inf gives -inf); -inf for n == 0.
  float (*logsumexp)(const T* x, int64_t n, const T* next);
  // y = w · T(x · inv) with inv = 1 / sqrt(mean(x²) + eps); w holds n floats.
  void (*rms_norm)(const T* x, const float* w, T* y, int64_t n, float eps, bool stream, const T* next);
  // y = T(T(T((x - mean) · inv) · w) + b) with inv = 1 / sqrt(mean((x - mean)²) + eps).
  void (*layer_norm)(const T* x, const float* w, const float* b, T* y, int64_t n, float eps, bool stream,
                     const T* next);
  // Rotary embedding of the first 2·half values of a row with angles cos c[i], sin s[i]: pairs
  // (x[i], x[i + half]), or (x[2i], x[2i + 1]) when `traditional`; rotated back when !forward. Each
  // output is T(x1 · c ∓ x2 · s) etc. in float, without fused multiply-adds (the scalar kernel's bits).
  void (*rope)(const T* x, const float* c, const float* s, T* y, int64_t half, bool traditional, bool forward);
};

struct RowFns {
  RowFnsOf<float> f32;
  RowFnsOf<float16_t> f16;
  RowFnsOf<bfloat16_t> bf16;
  // Softmax pieces for kernels that own their rows (attention): the maximum of x[0..n) (-inf for n ==
  // 0, NaN lanes ignored), and y = exp(x - shift) returning the sum of y (in place allowed).
  float (*max)(const float* x, int64_t n);
  float (*exp_sum)(const float* x, float shift, float* y, int64_t n);
  // The same where every x - shift is <= 0 and no x is NaN (the softmax rows' case): the same bits,
  // fewer steps.
  float (*exp_sum_nonpos)(const float* x, float shift, float* y, int64_t n);
  // y = y · a (in place), and y += a · x.
  void (*scale)(float* y, float a, int64_t n);
  void (*axpy)(float a, const float* x, float* y, int64_t n);
  int level;  // 0 portable, 1 AVX2, 2 AVX-512
};

template <typename T>
inline const RowFnsOf<T>& of(const RowFns& f) {
  if constexpr (std::is_same_v<T, float>) return f.f32;
  else if constexpr (std::is_same_v<T, float16_t>) return f.f16;
  else return f.bf16;
}

// Outputs at least this large are written with streaming stores (about the size of the last-level cache).
inline constexpr size_t kStreamBytes = size_t(32) << 20;

// The loops to use now.
const RowFns& row_fns();
// Tests: cap the level at `level` (0, 1, 2); -1 restores the automatic choice.
void set_row_isa_for_testing(int level);

// The three builds (null where the compiler or target cannot build one).
const RowFns* row_fns_scalar();
const RowFns* row_fns_avx2();
const RowFns* row_fns_avx512();

}  // namespace kiln::fastk::rows
