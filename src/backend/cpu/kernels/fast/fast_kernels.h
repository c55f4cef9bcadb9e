// Shared by the fused kernels (fast_*.cpp here) and the quantized matmul kernels: BLAS glue and helpers
// for walking the rows of strided arrays.
#pragma once

#include <cblas.h>

#include <cstdint>

#include "core/dispatch.h"
#include "core/kernels.h"
#include "kiln/array.h"

namespace kiln::fastk {

// Row-major C = alpha · op(A) · op(B) + beta · C in float or double.
inline void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                 int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
              B, ldb, beta, C, ldc);
}
inline void gemm(bool ta, bool tb, int M, int N, int K, double alpha, const double* A, int lda, const double* B,
                 int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda,
              B, ldb, beta, C, ldc);
}

// Element offset of row `r` of `a`, where rows run over every axis but the last.
inline int64_t row_offset(const array& a, int64_t r) {
  const auto& sh = a.shape();
  const auto& st = a.strides();
  int64_t off = 0;
  for (int d = static_cast<int>(sh.size()) - 2; d >= 0 && r > 0; --d) {
    off += (r % sh[d]) * st[d];
    r /= sh[d];
  }
  return off;
}

// Vector kernels for the fused loops. Reductions keep 8 partial sums so they vectorize without
// -ffast-math; each has an AVX2 clone chosen at run time (fast.cpp).
float dot(const float* a, const float* b, int64_t n);
double dot(const double* a, const double* b, int64_t n);
float sum(const float* a, int64_t n);
double sum(const double* a, int64_t n);
// y += alpha · x
void axpy(float alpha, const float* x, float* y, int64_t n);
void axpy(double alpha, const double* x, double* y, int64_t n);

// Half-precision rows to float (F16C when the CPU has it), and a generic row load into Acc values.
void to_float(const float16_t* src, float* dst, int64_t n);
void to_float(const bfloat16_t* src, float* dst, int64_t n);
template <typename T, typename A>
inline void load_row(const T* src, A* dst, int64_t n) {
  if constexpr (detail::is_half_v<T> && std::is_same_v<A, float>) {
    to_float(src, dst, n);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = A(src[i]);
  }
}

// BLAS is never called inside a parallel_for (OpenBLAS threads itself; nesting oversubscribes the
// cores): kernels either run many small tasks in parallel with the loops above, or few large ones
// one after another through BLAS.
inline constexpr double kSmallTaskFlops = double(1 << 24);

// `a` with a unit stride along its last axis (a copy only when needed).
array unit_last_stride(const array& a);

// Stride of `a` along `axis` once broadcast to a shape of rank `ndim` (0 on broadcast axes).
inline int64_t bstride(const array& a, int axis, int ndim) {
  int k = axis - (ndim - static_cast<int>(a.ndim()));
  if (k < 0 || a.shape()[k] == 1) return 0;
  return a.strides()[k];
}

// The kernels of the sub-families (added by register_cpu_fast()).
void add_norm_kernels(detail::KernelTable& table);
void add_rope_kernels(detail::KernelTable& table);
void add_sdpa_kernels(detail::KernelTable& table);

}  // namespace kiln::fastk
