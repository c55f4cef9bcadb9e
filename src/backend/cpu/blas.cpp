#include "backend/cpu/blas.h"

#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/threading.h"

#include <cblas.h>

#include <algorithm>
#include <complex>
#include <vector>

// LAPACKE's complex types as std::complex, so complex64_t pointers pass straight through.
#define lapack_complex_float std::complex<float>
#define lapack_complex_double std::complex<double>
#include <lapacke.h>

namespace kiln::cpu {

namespace {

// OpenBLAS's thread count follows kiln's, set once as the library loads (before any kernel runs).
const int kBlasThreads = [] {
  openblas_set_num_threads(num_threads());
  return num_threads();
}();

// float32 products with at most this many rows of C and at least this depth use kiln's packed kernels.
constexpr int kOwnSgemmMaxRows = 128;
constexpr int kOwnSgemmMinK = 1024;

inline CBLAS_TRANSPOSE tr(bool t) { return t ? CblasTrans : CblasNoTrans; }

// LAPACK returns workspace sizes as floating values; round up so a size just below an integer is safe.
template <typename T>
int work_size(T w) {
  if constexpr (std::is_same_v<T, complex64_t>) {
    return std::max(1, static_cast<int>(w.real() + 0.5f));
  } else {
    return std::max(1, static_cast<int>(w + 0.5));
  }
}

}  // namespace

int blas_num_threads() {
  (void)kBlasThreads;
  return openblas_get_num_threads();
}

void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
          float beta, float* C, int ldc) {
  // kiln's kernels where they win or match (measured single-threaded, CPU time, on the AMD EPYC this was
  // written on; bench_ops BM_Gemv* / BM_Sgemm*): skinny products (M <= 8) at memory bandwidth, 4-10x
  // OpenBLAS; packed products of 9..128 rows with K >= 1024, the prefill shapes (16 x 1024 x 2816: 2.6-2.8 ms
  // against 3.2-3.4; 128 x 1024 x 2816: 9.0-9.3 against 9.0-10.0). Smaller-K and taller products stay with
  // OpenBLAS, whose Cooperlake kernels are faster there (128 x 512 x 512: 0.81 ms against 0.89; 256 x 512 x
  // 512: 1.4-1.6 against 2.0-2.5; 2048^3: 168 ms against 231).
  if (isa_level() != Isa::scalar && (M <= kSkinnyMaxM || (M <= kOwnSgemmMaxRows && K >= kOwnSgemmMinK))) {
    return gemm_f32<float, float>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  cblas_sgemm(CblasRowMajor, tr(ta), tr(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
void gemm(bool ta, bool tb, int M, int N, int K, double alpha, const double* A, int lda, const double* B, int ldb,
          double beta, double* C, int ldc) {
  cblas_dgemm(CblasRowMajor, tr(ta), tr(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
void gemm(bool ta, bool tb, int M, int N, int K, complex64_t alpha, const complex64_t* A, int lda,
          const complex64_t* B, int ldb, complex64_t beta, complex64_t* C, int ldc) {
  cblas_cgemm(CblasRowMajor, tr(ta), tr(tb), M, N, K, &alpha, A, lda, B, ldb, &beta, C, ldc);
}

// ---- QR ----
#define KILN_GEQRF(T, P)                                                                   \
  int geqrf(int m, int n, T* a, int lda, T* tau) {                                         \
    T q{};                                                                                 \
    int info = LAPACKE_##P##geqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, &q, -1);       \
    if (info != 0) return info;                                                            \
    std::vector<T> work(work_size(q));                                                     \
    return LAPACKE_##P##geqrf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work.data(),       \
                                   static_cast<int>(work.size()));                         \
  }                                                                                        \
  int orgqr(int m, int n, int k, T* a, int lda, const T* tau) {                            \
    T q{};                                                                                 \
    int info = LAPACKE_##P##orgqr_work(LAPACK_COL_MAJOR, m, n, k, a, lda, tau, &q, -1);    \
    if (info != 0) return info;                                                            \
    std::vector<T> work(work_size(q));                                                     \
    return LAPACKE_##P##orgqr_work(LAPACK_COL_MAJOR, m, n, k, a, lda, tau, work.data(),    \
                                   static_cast<int>(work.size()));                         \
  }
KILN_GEQRF(float, s)
KILN_GEQRF(double, d)
#undef KILN_GEQRF

// ---- SVD ----
#define KILN_GESDD_REAL(T, P)                                                                              \
  int gesdd(char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt, int ldvt) {                \
    std::vector<int> iwork(8 * static_cast<size_t>(std::max(1, std::min(m, n))));                          \
    T q{};                                                                                                 \
    int info = LAPACKE_##P##gesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt, &q, -1,  \
                                       iwork.data());                                                      \
    if (info != 0) return info;                                                                            \
    std::vector<T> work(work_size(q));                                                                     \
    return LAPACKE_##P##gesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work.data(), \
                                   static_cast<int>(work.size()), iwork.data());                           \
  }
KILN_GESDD_REAL(float, s)
KILN_GESDD_REAL(double, d)
#undef KILN_GESDD_REAL

int gesdd(char jobz, int m, int n, complex64_t* a, int lda, float* s, complex64_t* u, int ldu, complex64_t* vt,
          int ldvt) {
  const size_t mn = static_cast<size_t>(std::max(1, std::min(m, n)));
  const size_t mx = static_cast<size_t>(std::max(1, std::max(m, n)));
  // rwork size from LAPACK's documentation of cgesdd (the larger of the two bounds it gives).
  size_t lrwork = jobz == 'N' ? 7 * mn : std::max(5 * mn * mn + 5 * mn, 2 * mx * mn + 2 * mn * mn + mn);
  std::vector<float> rwork(lrwork);
  std::vector<int> iwork(8 * mn);
  complex64_t q{};
  int info = LAPACKE_cgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt, &q, -1, rwork.data(),
                                 iwork.data());
  if (info != 0) return info;
  std::vector<complex64_t> work(work_size(q));
  return LAPACKE_cgesdd_work(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work.data(),
                             static_cast<int>(work.size()), rwork.data(), iwork.data());
}

// ---- LU, inverse, triangular inverse, Cholesky ----
#define KILN_LU(T, P)                                                                             \
  int getrf(int m, int n, T* a, int lda, int* ipiv) {                                             \
    return LAPACKE_##P##getrf_work(LAPACK_COL_MAJOR, m, n, a, lda, ipiv);                         \
  }                                                                                               \
  int getri(int n, T* a, int lda, const int* ipiv) {                                              \
    T q{};                                                                                        \
    int info = LAPACKE_##P##getri_work(LAPACK_COL_MAJOR, n, a, lda, ipiv, &q, -1);                \
    if (info != 0) return info;                                                                   \
    std::vector<T> work(work_size(q));                                                            \
    return LAPACKE_##P##getri_work(LAPACK_COL_MAJOR, n, a, lda, ipiv, work.data(),                \
                                   static_cast<int>(work.size()));                                \
  }                                                                                               \
  int trtri(char uplo, int n, T* a, int lda) {                                                    \
    return LAPACKE_##P##trtri_work(LAPACK_COL_MAJOR, uplo, 'N', n, a, lda);                       \
  }                                                                                               \
  int potrf(char uplo, int n, T* a, int lda) { return LAPACKE_##P##potrf_work(LAPACK_COL_MAJOR, uplo, n, a, lda); }
KILN_LU(float, s)
KILN_LU(double, d)
#undef KILN_LU

// ---- eigenproblems ----
#define KILN_GEEV_REAL(T, P)                                                                                 \
  int geev(char jobvl, char jobvr, int n, T* a, int lda, T* wr, T* wi, T* vl, int ldvl, T* vr, int ldvr) {   \
    T q{};                                                                                                   \
    int info = LAPACKE_##P##geev_work(LAPACK_COL_MAJOR, jobvl, jobvr, n, a, lda, wr, wi, vl, ldvl, vr, ldvr, \
                                      &q, -1);                                                               \
    if (info != 0) return info;                                                                              \
    std::vector<T> work(work_size(q));                                                                       \
    return LAPACKE_##P##geev_work(LAPACK_COL_MAJOR, jobvl, jobvr, n, a, lda, wr, wi, vl, ldvl, vr, ldvr,     \
                                  work.data(), static_cast<int>(work.size()));                               \
  }
KILN_GEEV_REAL(float, s)
KILN_GEEV_REAL(double, d)
#undef KILN_GEEV_REAL

int geev(char jobvl, char jobvr, int n, complex64_t* a, int lda, complex64_t* w, complex64_t* vl, int ldvl,
         complex64_t* vr, int ldvr) {
  std::vector<float> rwork(2 * static_cast<size_t>(std::max(1, n)));
  complex64_t q{};
  int info = LAPACKE_cgeev_work(LAPACK_COL_MAJOR, jobvl, jobvr, n, a, lda, w, vl, ldvl, vr, ldvr, &q, -1,
                                rwork.data());
  if (info != 0) return info;
  std::vector<complex64_t> work(work_size(q));
  return LAPACKE_cgeev_work(LAPACK_COL_MAJOR, jobvl, jobvr, n, a, lda, w, vl, ldvl, vr, ldvr, work.data(),
                            static_cast<int>(work.size()), rwork.data());
}

#define KILN_SYEVD(T, P)                                                                                     \
  int syevd(char jobz, char uplo, int n, T* a, int lda, T* w) {                                              \
    T q{};                                                                                                   \
    int iq = 0;                                                                                              \
    int info = LAPACKE_##P##syevd_work(LAPACK_COL_MAJOR, jobz, uplo, n, a, lda, w, &q, -1, &iq, -1);         \
    if (info != 0) return info;                                                                              \
    std::vector<T> work(work_size(q));                                                                       \
    std::vector<int> iwork(std::max(1, iq));                                                                 \
    return LAPACKE_##P##syevd_work(LAPACK_COL_MAJOR, jobz, uplo, n, a, lda, w, work.data(),                  \
                                   static_cast<int>(work.size()), iwork.data(), static_cast<int>(iwork.size())); \
  }
KILN_SYEVD(float, s)
KILN_SYEVD(double, d)
#undef KILN_SYEVD

int syevd(char jobz, char uplo, int n, complex64_t* a, int lda, float* w) {
  complex64_t q{};
  float rq = 0;
  int iq = 0;
  int info = LAPACKE_cheevd_work(LAPACK_COL_MAJOR, jobz, uplo, n, a, lda, w, &q, -1, &rq, -1, &iq, -1);
  if (info != 0) return info;
  std::vector<complex64_t> work(work_size(q));
  std::vector<float> rwork(work_size(rq));
  std::vector<int> iwork(std::max(1, iq));
  return LAPACKE_cheevd_work(LAPACK_COL_MAJOR, jobz, uplo, n, a, lda, w, work.data(), static_cast<int>(work.size()),
                             rwork.data(), static_cast<int>(rwork.size()), iwork.data(),
                             static_cast<int>(iwork.size()));
}

}  // namespace kiln::cpu
