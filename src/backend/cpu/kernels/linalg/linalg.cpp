// LAPACK-backed decompositions on the CPU: the kernels of QRF, SVD, Inverse, Cholesky, Eig, Eigh and LUF,
// batched over the leading dims. A row-major matrix is the column-major storage of its transpose; the
// kernels use that identity (Aᵀ's factors are A's factors transposed) to avoid transposing copies, and
// MLX's output conventions follow from it (U, S, Vᵀ for SVD; ascending eigenvalues; eigenvectors in
// columns). register_cpu_linalg also adds the kernels of matmul.cpp and linalg_mm.cpp.
#include "backend/cpu/kernels/families.h"
#include "backend/cpu/kernels/linalg/linalg_internal.h"

namespace kiln {

namespace linalg_detail {
void register_matmul_kernels(detail::KernelTable& table);     // matmul.cpp: Matmul, AddMM
void register_linalg_mm_kernels(detail::KernelTable& table);  // linalg_mm.cpp: Hadamard, BlockMaskedMM, GatherMM
}  // namespace linalg_detail

namespace {

using namespace linalg_detail;
using cpu::geev;
using cpu::geqrf;
using cpu::gesdd;
using cpu::getrf;
using cpu::getri;
using cpu::orgqr;
using cpu::potrf;
using cpu::syevd;
using cpu::trtri;

// ---- kernel helpers ----

// A contiguous copy of the matrices of `a` (type T): row-major, or column-major when `col_major`.
template <typename T>
std::vector<T> matrices_copy(const array& a, bool col_major) {
  std::vector<T> buf(a.size());
  if (a.size() == 0) return buf;
  Strides dst = row_major_strides(a.shape());
  const size_t nd = a.ndim();
  if (col_major) {
    dst[nd - 2] = 1;
    dst[nd - 1] = a.shape()[nd - 2];
  }
  strided_cast_copy<T, T>(base_ptr<T>(a), a.shape(), a.strides(), buf.data(), dst);
  return buf;
}

template <typename F>
void dispatch_lapack(Dtype t, const char* api, bool allow_complex, F&& f) {
  switch (t.val) {
    case Dtype::Val::float32: return f(float{});
    case Dtype::Val::float64: return f(double{});
    case Dtype::Val::complex64:
      if (allow_complex) return f(complex64_t{});
      [[fallthrough]];
    default:
      throw std::invalid_argument(std::string("[") + api + "] Unsupported dtype " + dtype_name(t) + ".");
  }
}

[[noreturn]] void lapack_failed(const char* what, int info) {
  throw std::runtime_error(std::string(what) + " failed with error code " + std::to_string(info));
}

// ---- QRF ----

template <typename T>
void qrf_impl(const array& a, array& q, array& r) {
  q.alloc();
  r.alloc();
  const int M = a.shape(-2), N = a.shape(-1), K = std::min(M, N);
  if (M == 0 || N == 0) return;  // Q or R is empty and the other has no rows or columns
  const size_t nmat = a.size() / (static_cast<size_t>(M) * N);
  std::vector<T> w = matrices_copy<T>(a, /*col_major=*/true);
  std::vector<T> tau(K);
  T* qo = q.data<T>();
  T* ro = r.data<T>();
  for (size_t b = 0; b < nmat; ++b) {
    T* m = w.data() + b * M * N;
    if (int info = geqrf(M, N, m, M, tau.data()); info != 0) lapack_failed("[QRF::eval_cpu] QR factorization", info);
    T* rb = ro + b * K * N;
    for (int i = 0; i < K; ++i)
      for (int j = 0; j < N; ++j) rb[i * N + j] = j >= i ? m[i + static_cast<size_t>(j) * M] : T(0);
    if (int info = orgqr(M, K, K, m, M, tau.data()); info != 0) lapack_failed("[QRF::eval_cpu] Forming Q", info);
    T* qb = qo + b * M * K;
    for (int i = 0; i < M; ++i)
      for (int k = 0; k < K; ++k) qb[i * K + k] = m[i + static_cast<size_t>(k) * M];
  }
}

void qrf_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  dispatch_lapack(in[0].dtype(), "linalg::qr", false, [&](auto tag) {
    if constexpr (!detail::is_complex_v<decltype(tag)>) qrf_impl<decltype(tag)>(in[0], out[0], out[1]);
  });
}

// ---- SVD ----

template <typename T>
void svd_impl(const array& a, std::vector<array>& out, bool uv) {
  using R = cpu::real_t<T>;
  for (auto& o : out) o.alloc();
  const int M = a.shape(-2), N = a.shape(-1), K = std::min(M, N);
  if (M == 0 || N == 0) {
    // No singular values; the factors are identities, as LAPACK would leave them.
    if (uv) {
      for (int idx : {0, 2}) {
        array& o = out[idx];
        const int n = o.shape(-1);
        T* p = o.data<T>();
        std::fill(p, p + o.size(), T(0));
        for (size_t base = 0; base < o.size(); base += static_cast<size_t>(n) * n)
          for (int i = 0; i < n; ++i) p[base + i * (n + 1)] = T(1);
      }
    }
    return;
  }
  const size_t nmat = a.size() / (static_cast<size_t>(M) * N);
  // Row-major A is column-major Aᵀ (N × M). LAPACK factors Aᵀ = U' S V'ᴴ; its U' read row-major is
  // A's Vᵀ and its V'ᴴ read row-major is A's U (for complex too, since Aᵀ is not conjugated).
  std::vector<T> w = matrices_copy<T>(a, /*col_major=*/false);
  R* s = out[uv ? 1 : 0].data<R>();
  T* u = uv ? out[0].data<T>() : nullptr;
  T* vt = uv ? out[2].data<T>() : nullptr;
  T dummy[1];
  for (size_t b = 0; b < nmat; ++b) {
    int info = gesdd(uv ? 'A' : 'N', N, M, w.data() + b * M * N, N, s + b * K, uv ? vt + b * N * N : dummy, uv ? N : 1,
                     uv ? u + b * M * M : dummy, uv ? M : 1);
    if (info != 0) lapack_failed("[SVD::eval_cpu] SVD", info);
  }
}

void svd_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  dispatch_lapack(in[0].dtype(), "linalg::svd", true,
                  [&](auto tag) { svd_impl<decltype(tag)>(in[0], out, node.state.b(0)); });
}

// ---- Inverse ----

template <typename T>
void inverse_impl(const array& a, array& out, bool tri, bool upper) {
  out.alloc();
  const int N = a.shape(-1);
  if (N == 0) return;
  const size_t nmat = a.size() / (static_cast<size_t>(N) * N);
  // (Aᵀ)⁻¹ = (A⁻¹)ᵀ: inverting the row-major data as column-major yields A⁻¹ row-major.
  T* p = out.data<T>();
  strided_cast_copy<T, T>(base_ptr<T>(a), a.shape(), a.strides(), p, row_major_strides(a.shape()));
  std::vector<int> ipiv(N);
  for (size_t b = 0; b < nmat; ++b) {
    T* m = p + b * N * N;
    if (tri) {
      // The row-major upper triangle is the column-major lower one.
      if (int info = trtri(upper ? 'L' : 'U', N, m, N); info != 0) {
        lapack_failed("[Inverse::eval_cpu] triangular inversion", info);
      }
      for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j)
          if (upper ? j < i : j > i) m[i * N + j] = T(0);
    } else {
      if (int info = getrf(N, N, m, N, ipiv.data()); info != 0) {
        lapack_failed("[Inverse::eval_cpu] LU factorization", info);
      }
      if (int info = getri(N, m, N, ipiv.data()); info != 0) lapack_failed("[Inverse::eval_cpu] inversion", info);
    }
  }
}

void inverse_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  dispatch_lapack(in[0].dtype(), "linalg::inv", false, [&](auto tag) {
    if constexpr (!detail::is_complex_v<decltype(tag)>) {
      inverse_impl<decltype(tag)>(in[0], out[0], node.state.b(0), node.state.b(1));
    }
  });
}

// ---- Cholesky ----

template <typename T>
void cholesky_impl(const array& a, array& out, bool upper) {
  out.alloc();
  const int N = a.shape(-1);
  if (N == 0) return;
  const size_t nmat = a.size() / (static_cast<size_t>(N) * N);
  T* p = out.data<T>();
  strided_cast_copy<T, T>(base_ptr<T>(a), a.shape(), a.strides(), p, row_major_strides(a.shape()));
  for (size_t b = 0; b < nmat; ++b) {
    T* m = p + b * N * N;
    // Column-major 'L' is the row-major upper triangle. As in MLX, a matrix that is not positive
    // definite (info > 0) is not an error: the partial factor is returned.
    int info = potrf(upper ? 'L' : 'U', N, m, N);
    if (info < 0) lapack_failed("[Cholesky::eval_cpu] Cholesky decomposition", info);
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < N; ++j)
        if (upper ? j < i : j > i) m[i * N + j] = T(0);
  }
}

void cholesky_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  dispatch_lapack(in[0].dtype(), "linalg::cholesky", false, [&](auto tag) {
    if constexpr (!detail::is_complex_v<decltype(tag)>) cholesky_impl<decltype(tag)>(in[0], out[0], node.state.b(0));
  });
}

// ---- Eig ----

template <typename T>
void eig_impl(const array& a, std::vector<array>& out, bool vectors) {
  for (auto& o : out) o.alloc();
  const int N = a.shape(-1);
  if (N == 0) return;
  const size_t nmat = a.size() / (static_cast<size_t>(N) * N);
  // The row-major data is column-major Aᵀ. A left eigenvector u of Aᵀ (uᴴAᵀ = λuᴴ) gives A·conj(u) =
  // λ·conj(u), so A's right eigenvectors come from the left ones of the stored matrix. This keeps
  // LAPACK's eigenvalue order identical to MLX's.
  std::vector<T> w = matrices_copy<T>(a, /*col_major=*/false);
  std::vector<T> vl(vectors ? static_cast<size_t>(N) * N : 1);
  complex64_t* vals = out[0].data<complex64_t>();
  complex64_t* vecs = vectors ? out[1].data<complex64_t>() : nullptr;
  const char jobvl = vectors ? 'V' : 'N';
  T dummy[1];
  for (size_t b = 0; b < nmat; ++b) {
    T* m = w.data() + b * N * N;
    complex64_t* val = vals + b * N;
    complex64_t* vec = vectors ? vecs + b * N * N : nullptr;
    if constexpr (detail::is_complex_v<T>) {
      int info = geev(jobvl, 'N', N, m, N, val, vectors ? vl.data() : dummy, vectors ? N : 1, dummy, 1);
      if (info != 0) lapack_failed("[Eig::eval_cpu] Eigenvalue decomposition", info);
      if (vectors) {
        for (int r = 0; r < N; ++r)
          for (int j = 0; j < N; ++j) vec[r * N + j] = std::conj(vl[r + static_cast<size_t>(j) * N]);
      }
    } else {
      std::vector<T> wr(N), wi(N);
      int info = geev(jobvl, 'N', N, m, N, wr.data(), wi.data(), vectors ? vl.data() : dummy, vectors ? N : 1, dummy, 1);
      if (info != 0) lapack_failed("[Eig::eval_cpu] Eigenvalue decomposition", info);
      for (int j = 0; j < N; ++j) val[j] = complex64_t(static_cast<float>(wr[j]), static_cast<float>(wi[j]));
      if (!vectors) continue;
      for (int j = 0; j < N; ++j) {
        const T* re = vl.data() + static_cast<size_t>(j) * N;
        if (wi[j] != T(0) && j + 1 < N) {
          // A conjugate pair is stored as (re, im) columns; conj(u) belongs to λ_j, u to λ_{j+1}.
          const T* im = re + N;
          for (int r = 0; r < N; ++r) {
            vec[r * N + j] = complex64_t(static_cast<float>(re[r]), static_cast<float>(-im[r]));
            vec[r * N + j + 1] = complex64_t(static_cast<float>(re[r]), static_cast<float>(im[r]));
          }
          ++j;
        } else {
          for (int r = 0; r < N; ++r) vec[r * N + j] = complex64_t(static_cast<float>(re[r]), 0.0f);
        }
      }
    }
  }
}

void eig_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  dispatch_lapack(in[0].dtype(), "linalg::eig", true,
                  [&](auto tag) { eig_impl<decltype(tag)>(in[0], out, node.state.b(0)); });
}

// ---- Eigh ----

template <typename T>
void eigh_impl(const array& a, std::vector<array>& out, char uplo, bool vectors) {
  using R = cpu::real_t<T>;
  for (auto& o : out) o.alloc();
  const int N = a.shape(-1);
  if (N == 0) return;
  const size_t nmat = a.size() / (static_cast<size_t>(N) * N);
  // The stored matrix is Aᵀ = conj(A): its lower triangle is A's upper one, and its eigenvectors are
  // the conjugates of A's (the same vectors for real A).
  std::vector<T> w = matrices_copy<T>(a, /*col_major=*/false);
  const char lap_uplo = uplo == 'L' ? 'U' : 'L';
  R* vals = out[0].data<R>();
  T* vecs = vectors ? out[1].data<T>() : nullptr;
  for (size_t b = 0; b < nmat; ++b) {
    T* m = w.data() + b * N * N;
    int info = syevd(vectors ? 'V' : 'N', lap_uplo, N, m, N, vals + b * N);
    if (info != 0) lapack_failed("[Eigh::eval_cpu] Eigenvalue decomposition", info);
    if (!vectors) continue;
    T* v = vecs + b * N * N;
    for (int r = 0; r < N; ++r)
      for (int j = 0; j < N; ++j) {
        T x = m[r + static_cast<size_t>(j) * N];
        if constexpr (detail::is_complex_v<T>) x = std::conj(x);
        v[r * N + j] = x;
      }
  }
}

void eigh_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const char uplo = node.state.get<std::string>(0) == "U" ? 'U' : 'L';
  dispatch_lapack(in[0].dtype(), "linalg::eigh", true,
                  [&](auto tag) { eigh_impl<decltype(tag)>(in[0], out, uplo, node.state.b(1)); });
}

// ---- LUF ----

template <typename T>
void luf_impl(const array& a, std::vector<array>& out) {
  for (auto& o : out) o.alloc();
  const int M = a.shape(-2), N = a.shape(-1), K = std::min(M, N);
  if (a.size() == 0) {
    uint32_t* rows = out[2].data<uint32_t>();
    for (size_t i = 0; i < out[2].size(); ++i) rows[i] = static_cast<uint32_t>(i % std::max(M, 1));
    return;
  }
  const size_t nmat = a.size() / (static_cast<size_t>(M) * N);
  std::vector<T> w = matrices_copy<T>(a, /*col_major=*/true);
  std::vector<int> ipiv(K);
  T* lu = out[0].data<T>();
  uint32_t* piv = out[1].data<uint32_t>();
  uint32_t* rows = out[2].data<uint32_t>();
  for (size_t b = 0; b < nmat; ++b) {
    T* m = w.data() + b * M * N;
    // info > 0 (an exactly zero pivot) still gives a complete factorization.
    if (int info = getrf(M, N, m, M, ipiv.data()); info < 0) lapack_failed("[LUF::eval_cpu] LU factorization", info);
    T* o = lu + b * M * N;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) o[i * N + j] = m[i + static_cast<size_t>(j) * M];
    uint32_t* p = piv + b * K;
    uint32_t* r = rows + b * M;
    for (int i = 0; i < M; ++i) r[i] = static_cast<uint32_t>(i);
    for (int i = 0; i < K; ++i) p[i] = static_cast<uint32_t>(ipiv[i] - 1);
    // Apply the interchanges last first: then A = (L·U)[r], the convention of MLX's lu (A = L[P] @ U).
    for (int i = K - 1; i >= 0; --i) std::swap(r[i], r[p[i]]);
  }
}

void luf_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  dispatch_lapack(in[0].dtype(), "linalg::lu", false, [&](auto tag) {
    if constexpr (!detail::is_complex_v<decltype(tag)>) luf_impl<decltype(tag)>(in[0], out);
  });
}

}  // namespace

void cpu::register_cpu_linalg(detail::KernelTable& table) {
  table.add({{"QRF", qrf_cpu}, {"SVD", svd_cpu}, {"Inverse", inverse_cpu}, {"Cholesky", cholesky_cpu},
             {"Eig", eig_cpu}, {"Eigh", eigh_cpu}, {"LUF", luf_cpu}});
  linalg_detail::register_matmul_kernels(table);
  linalg_detail::register_linalg_mm_kernels(table);
}

}  // namespace kiln
