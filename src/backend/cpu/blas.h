// BLAS and LAPACK glue for the CPU kernels: typed overloads over OpenBLAS (CBLAS) and LAPACKE, so kernels
// are written once as templates over float, double and complex64. Matrices are column-major where LAPACK
// is concerned and row-major for gemm. The LAPACK wrappers query and allocate their own workspace and
// return LAPACK's `info` (0 on success).
#pragma once

#include <cstdint>

#include "kiln/dtype.h"

namespace kiln::cpu {

// The real type underlying T (float for complex64).
template <typename T>
struct real_of {
  using type = T;
};
template <>
struct real_of<complex64_t> {
  using type = float;
};
template <typename T>
using real_t = typename real_of<T>::type;

// Row-major C = alpha · op(A) · op(B) + beta · C, where op transposes when `ta` / `tb` is set. On CPUs with
// AVX2 or AVX-512, float32 products with up to 8 rows of C (skinny, at memory bandwidth), or up to 128 rows
// with K >= 1024 (prefill), go to kiln's own kernels (backend/cpu/gemm/), where they were measured faster
// or equal; other float32 products, and double and complex64, go to OpenBLAS.
void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
          float beta, float* C, int ldc);
void gemm(bool ta, bool tb, int M, int N, int K, double alpha, const double* A, int lda, const double* B, int ldb,
          double beta, double* C, int ldc);
void gemm(bool ta, bool tb, int M, int N, int K, complex64_t alpha, const complex64_t* A, int lda,
          const complex64_t* B, int ldb, complex64_t beta, complex64_t* C, int ldc);

// Threads. kiln's pool (cpu::num_threads(): the hardware's, or KILN_NUM_THREADS) and OpenBLAS use the same
// count: OpenBLAS is set to cpu::num_threads() when the library loads (so KILN_NUM_THREADS governs both,
// whatever OPENBLAS_NUM_THREADS says). The pool's workers sleep while a BLAS call runs, and BLAS is not called
// from inside a parallel_for (kernels either run many small tasks on the pool or few large ones through
// BLAS, fast_kernels.h), so the two never run at once and the cores are not oversubscribed.
// The number of threads OpenBLAS uses.
int blas_num_threads();

// ---- LAPACK (column-major) ----
// QR: A = Q R. geqrf leaves R in the upper triangle and the reflectors below it; orgqr forms the first
// `k` columns of Q from them.
int geqrf(int m, int n, float* a, int lda, float* tau);
int geqrf(int m, int n, double* a, int lda, double* tau);
int orgqr(int m, int n, int k, float* a, int lda, const float* tau);
int orgqr(int m, int n, int k, double* a, int lda, const double* tau);

// SVD by divide and conquer. jobz 'A': all of U (m×m) and Vᵀ (n×n); 'N': singular values only.
int gesdd(char jobz, int m, int n, float* a, int lda, float* s, float* u, int ldu, float* vt, int ldvt);
int gesdd(char jobz, int m, int n, double* a, int lda, double* s, double* u, int ldu, double* vt, int ldvt);
int gesdd(char jobz, int m, int n, complex64_t* a, int lda, float* s, complex64_t* u, int ldu, complex64_t* vt,
          int ldvt);

// LU with partial pivoting (ipiv is 1-based, min(m, n) entries) and the inverse from it.
int getrf(int m, int n, float* a, int lda, int* ipiv);
int getrf(int m, int n, double* a, int lda, int* ipiv);
int getri(int n, float* a, int lda, const int* ipiv);
int getri(int n, double* a, int lda, const int* ipiv);

// Inverse of a triangular matrix (uplo 'U' or 'L', non-unit diagonal), in place.
int trtri(char uplo, int n, float* a, int lda);
int trtri(char uplo, int n, double* a, int lda);

// Cholesky factor of a symmetric positive definite matrix, in the `uplo` triangle.
int potrf(char uplo, int n, float* a, int lda);
int potrf(char uplo, int n, double* a, int lda);

// General eigenproblem. Real types: eigenvalues wr + i·wi; vectors in LAPACK's packed real form
// (a conjugate pair j, j+1 is stored as columns re, im). Pass null vl / vr to skip those vectors.
int geev(char jobvl, char jobvr, int n, float* a, int lda, float* wr, float* wi, float* vl, int ldvl, float* vr,
         int ldvr);
int geev(char jobvl, char jobvr, int n, double* a, int lda, double* wr, double* wi, double* vl, int ldvl,
         double* vr, int ldvr);
int geev(char jobvl, char jobvr, int n, complex64_t* a, int lda, complex64_t* w, complex64_t* vl, int ldvl,
         complex64_t* vr, int ldvr);

// Symmetric / Hermitian eigenproblem (ascending eigenvalues); with jobz 'V' the eigenvectors replace `a`.
int syevd(char jobz, char uplo, int n, float* a, int lda, float* w);
int syevd(char jobz, char uplo, int n, double* a, int lda, double* w);
int syevd(char jobz, char uplo, int n, complex64_t* a, int lda, float* w);

}  // namespace kiln::cpu
