// Linear algebra: QRF, SVD, Inverse, Cholesky, Eig, Eigh, LUF, Hadamard, BlockMaskedMM, GatherMM and
// the kiln::linalg ops. Checked by identities (A = QR, U S Vᵀ = A, A A⁻¹ = I, ...), scalar-loop
// references, constants from numpy / MLX 0.30.1, and MLX's golden outputs.
#include "linalg_test_util.h"

namespace {

namespace mx = kiln;
namespace la = kiln::linalg;
using ::testing::HasSubstr;
using lt::values;

using Mat = std::vector<std::vector<double>>;

// The matrices of an (…, r, c) array, batch-major.
std::vector<Mat> mats(const mx::array& a) {
  auto v = values<double>(a);
  const int r = a.shape(-2), c = a.shape(-1);
  std::vector<Mat> out(r * c ? v.size() / (r * c) : 0, Mat(r, std::vector<double>(c)));
  for (size_t b = 0; b < out.size(); ++b)
    for (int i = 0; i < r; ++i)
      for (int j = 0; j < c; ++j) out[b][i][j] = v[(b * r + i) * c + j];
  return out;
}

Mat mul(const Mat& a, const Mat& b) {
  Mat c(a.size(), std::vector<double>(b.empty() ? 0 : b[0].size(), 0.0));
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t k = 0; k < b.size(); ++k)
      for (size_t j = 0; j < c[i].size(); ++j) c[i][j] += a[i][k] * b[k][j];
  return c;
}

Mat tr(const Mat& a) {
  Mat t(a.empty() ? 0 : a[0].size(), std::vector<double>(a.size()));
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[i].size(); ++j) t[j][i] = a[i][j];
  return t;
}

Mat eye(size_t n) {
  Mat e(n, std::vector<double>(n, 0.0));
  for (size_t i = 0; i < n; ++i) e[i][i] = 1.0;
  return e;
}

void expect_mat_near(const Mat& got, const Mat& want, double tol, const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), want[i].size()) << what;
    for (size_t j = 0; j < got[i].size(); ++j) EXPECT_NEAR(got[i][j], want[i][j], tol) << what << " (" << i << "," << j << ")";
  }
}

// A well-conditioned symmetric positive definite batch: X Xᵀ + n I.
mx::array spd(int batch, int n, uint32_t seed, mx::Dtype t = mx::float32) {
  auto x = lt::random({batch, n, n}, seed);
  auto a = mx::add(mx::matmul(x, mx::swapaxes(x, -1, -2)), mx::multiply(mx::eye(n), mx::array(static_cast<float>(n))));
  return mx::astype(a, t);
}

void expect_golden(const mx::array& got, const std::string& file, double tol, bool absolute = false) {
  auto want = mx::load(lt::golden(file));
  ASSERT_EQ(got.shape(), want.shape()) << file;
  auto g = values<double>(got), w = values<double>(want);
  for (size_t i = 0; i < g.size(); ++i) {
    double a = absolute ? std::abs(g[i]) : g[i], b = absolute ? std::abs(w[i]) : w[i];
    EXPECT_NEAR(a, b, tol * (1 + std::abs(b))) << file << " at " << i;
  }
}

// ---------------- QR ----------------

TEST(Linalg, QrIdentities) {
  for (auto shape : {mx::Shape{4, 3}, mx::Shape{3, 5}, mx::Shape{2, 3, 3}, mx::Shape{6, 6}}) {
    for (auto t : {mx::float32, mx::float64}) {
      auto a = mx::astype(lt::random(shape, 1), t);
      auto [q, r] = la::qr(a);
      const int M = shape[shape.size() - 2], N = shape.back(), K = std::min(M, N);
      EXPECT_EQ(q.shape(-1), K);
      EXPECT_EQ(r.shape(-2), K);
      EXPECT_EQ(q.dtype(), t);
      auto A = mats(a), Q = mats(q), R = mats(r);
      double tol = t == mx::float32 ? 1e-5 : 1e-12;
      for (size_t b = 0; b < A.size(); ++b) {
        expect_mat_near(mul(Q[b], R[b]), A[b], tol, "QR = A");
        expect_mat_near(mul(tr(Q[b]), Q[b]), eye(K), tol, "QᵀQ = I");
        for (int i = 0; i < K; ++i)
          for (int j = 0; j < std::min(i, N); ++j) EXPECT_EQ(R[b][i][j], 0.0);
      }
    }
  }
}

TEST(Linalg, QrGoldenAndStrided) {
  // Golden: (Q @ R, |R|).
  auto a = mx::load(lt::golden("qr/call0_arg0.npy"));
  auto [q, r] = la::qr(a);
  expect_golden(mx::matmul(q, r), "qr/call0_out0.npy", 1e-4);
  expect_golden(mx::abs(r), "qr/call0_out1.npy", 1e-4);
  // A transposed input gives the factors of the transposed matrix.
  auto base = lt::random({3, 4}, 2);
  auto [q2, r2] = la::qr(mx::transpose(base));
  expect_mat_near(mul(mats(q2)[0], mats(r2)[0]), tr(mats(base)[0]), 1e-5);
  // Empty matrices.
  auto [qe, re] = la::qr(mx::zeros({2, 0}));
  EXPECT_EQ(qe.shape(), (mx::Shape{2, 0}));
  EXPECT_EQ(re.shape(), (mx::Shape{0, 0}));
}

TEST(Linalg, QrErrors) {
  EXPECT_EQ(lt::error_of([] { la::qr(mx::ones({3})); }),
            "[linalg::qr] Arrays must have >= 2 dimensions. Received array with 1 dimensions.");
  EXPECT_EQ(lt::error_of([] { la::qr(mx::ones({3, 3}, mx::int32)); }),
            "[linalg::qr] Arrays must have type float32 or float64. Received array with type int32.");
  EXPECT_EQ(lt::error_of([] { la::qr(mx::ones({3, 3}, mx::float16)); }),
            "[linalg::qr] Arrays must have type float32 or float64. Received array with type float16.");
  EXPECT_THAT(lt::error_of([] { la::qr(mx::ones({3, 3}), mx::Stream(0, mx::Device::gpu)); }),
              HasSubstr("[linalg::qr] This op is not yet supported on the GPU."));
}

// ---------------- SVD ----------------

TEST(Linalg, SvdIdentities) {
  for (auto shape : {mx::Shape{4, 3}, mx::Shape{3, 5}, mx::Shape{2, 4, 4}}) {
    for (auto t : {mx::float32, mx::float64}) {
      auto a = mx::astype(lt::random(shape, 3), t);
      auto usv = la::svd(a);
      ASSERT_EQ(usv.size(), 3u);
      const int M = shape[shape.size() - 2], N = shape.back(), K = std::min(M, N);
      EXPECT_EQ(usv[0].shape(-1), M);
      EXPECT_EQ(usv[1].shape(-1), K);
      EXPECT_EQ(usv[2].shape(-1), N);
      auto A = mats(a), U = mats(usv[0]), Vt = mats(usv[2]);
      auto S = values<double>(usv[1]);
      double tol = t == mx::float32 ? 1e-5 : 1e-12;
      for (size_t b = 0; b < A.size(); ++b) {
        Mat Sm(M, std::vector<double>(N, 0.0));
        for (int i = 0; i < K; ++i) Sm[i][i] = S[b * K + i];
        for (int i = 1; i < K; ++i) EXPECT_GE(S[b * K + i - 1], S[b * K + i]);
        expect_mat_near(mul(mul(U[b], Sm), Vt[b]), A[b], tol, "U S Vt = A");
        expect_mat_near(mul(tr(U[b]), U[b]), eye(M), tol, "UᵀU = I");
        expect_mat_near(mul(Vt[b], tr(Vt[b])), eye(N), tol, "Vt Vtᵀ = I");
      }
      // Values only.
      auto s = la::svd(a, false);
      ASSERT_EQ(s.size(), 1u);
      lt::expect_near(values<double>(s[0]), S, tol);
    }
  }
}

TEST(Linalg, SvdGoldenComplexEmpty) {
  auto a = mx::load(lt::golden("svd_full/call0_arg0.npy"));
  auto usv = la::svd(a);
  expect_golden(usv[0], "svd_full/call0_out0.npy", 1e-4, true);
  expect_golden(usv[1], "svd_full/call0_out1.npy", 1e-4);
  expect_golden(usv[2], "svd_full/call0_out2.npy", 1e-4, true);
  expect_golden(la::svd(mx::load(lt::golden("svd_values/call0_arg0.npy")), false)[0], "svd_values/call0_out0.npy", 1e-4);
  // complex64: S is float32 and U S Vᵀ reconstructs A.
  std::vector<mx::complex64_t> cv{{1, 1}, {2, 0}, {0, -1}, {3, 2}, {1, -2}, {0.5f, 0.5f}};
  auto c = mx::array(cv, {3, 2});
  auto cu = la::svd(c);
  EXPECT_EQ(cu[1].dtype(), mx::float32);
  auto U = values<mx::complex64_t>(cu[0]), Vt = values<mx::complex64_t>(cu[2]);
  auto S = values<float>(cu[1]);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      mx::complex64_t sum(0);
      for (int k = 0; k < 2; ++k) sum += U[i * 3 + k] * S[k] * Vt[k * 2 + j];
      EXPECT_LT(std::abs(sum - cv[i * 2 + j]), 1e-5f) << i << "," << j;
    }
  // An empty matrix: no singular values, identity factors.
  auto e = la::svd(mx::zeros({2, 0}));
  EXPECT_EQ(e[1].shape(), (mx::Shape{0}));
  EXPECT_EQ(values<double>(e[0]), (std::vector<double>{1, 0, 0, 1}));
  EXPECT_EQ(e[2].shape(), (mx::Shape{0, 0}));
  EXPECT_EQ(lt::error_of([] { la::svd(mx::ones({3})); }),
            "[linalg::svd] Input array must have >= 2 dimensions. Received array with 1 dimensions.");
  EXPECT_EQ(lt::error_of([] { la::svd(mx::ones({3, 3}, mx::int32)); }),
            "[linalg::svd] Arrays must have type float32, float64 or complex64. Received array with type int32.");
}

// ---------------- Inverse ----------------

TEST(Linalg, Inverse) {
  for (auto t : {mx::float32, mx::float64}) {
    auto a = mx::astype(mx::add(lt::random({3, 4, 4}, 4), mx::multiply(mx::eye(4), mx::array(4.0f))), t);
    auto ai = la::inv(a);
    auto A = mats(a), Ai = mats(ai);
    for (size_t b = 0; b < A.size(); ++b) expect_mat_near(mul(A[b], Ai[b]), eye(4), t == mx::float32 ? 1e-5 : 1e-12);
  }
  // Golden: inv(a + 4 I).
  auto g = mx::load(lt::golden("inverse/call0_arg0.npy"));
  expect_golden(la::inv(mx::add(g, mx::multiply(mx::eye(4), mx::array(4.0f)))), "inverse/call0_out0.npy", 1e-4);
  // A transposed view.
  auto b = mx::add(lt::random({3, 3}, 5), mx::multiply(mx::eye(3), mx::array(3.0f)));
  expect_mat_near(mul(tr(mats(b)[0]), mats(la::inv(mx::transpose(b)))[0]), eye(3), 1e-5);
  // Singular matrices fail at evaluation.
  auto sing = la::inv(mx::zeros({2, 2}));
  EXPECT_THROW(sing.eval(), std::runtime_error);
  EXPECT_EQ(lt::error_of([] { la::inv(mx::zeros({2, 2})).eval(); }),
            "[Inverse::eval_cpu] LU factorization failed with error code 1");
  EXPECT_EQ(lt::error_of([] { la::inv(mx::ones({2, 3})); }),
            "[linalg::inv] Inverses are only defined for square matrices.");
  EXPECT_EQ(la::inv(mx::zeros({0, 0})).shape(), (mx::Shape{0, 0}));
}

TEST(Linalg, TriangularInverse) {
  auto a = mx::array({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});
  // The other triangle is ignored and zeroed (values from MLX).
  EXPECT_EQ(values<float>(la::tri_inv(a, true)), (std::vector<float>{1, -0.5f, 0, 0.25f}));
  EXPECT_EQ(values<float>(la::tri_inv(a, false)), (std::vector<float>{1, 0, -0.75f, 0.25f}));
  auto l = mx::tril(mx::add(lt::random({2, 5, 5}, 6), mx::multiply(mx::eye(5), mx::array(5.0f))));
  auto li = la::tri_inv(l, false);
  auto L = mats(l), Li = mats(li);
  for (size_t b = 0; b < L.size(); ++b) {
    expect_mat_near(mul(L[b], Li[b]), eye(5), 1e-5);
    for (int i = 0; i < 5; ++i)
      for (int j = i + 1; j < 5; ++j) EXPECT_EQ(Li[b][i][j], 0.0);
  }
  EXPECT_EQ(lt::error_of([] { la::tri_inv(mx::array({1.0f, 2.0f, 0.0f, 0.0f}, {2, 2}), true).eval(); }),
            "[Inverse::eval_cpu] triangular inversion failed with error code 2");
}

// ---------------- Cholesky ----------------

TEST(Linalg, Cholesky) {
  for (auto t : {mx::float32, mx::float64}) {
    auto a = spd(2, 5, 7, t);
    auto l = la::cholesky(a);
    auto u = la::cholesky(a, true);
    auto A = mats(a), L = mats(l), U = mats(u);
    double tol = t == mx::float32 ? 1e-4 : 1e-10;
    for (size_t b = 0; b < A.size(); ++b) {
      expect_mat_near(mul(L[b], tr(L[b])), A[b], tol, "L Lᵀ");
      expect_mat_near(mul(tr(U[b]), U[b]), A[b], tol, "Uᵀ U");
      for (int i = 0; i < 5; ++i)
        for (int j = i + 1; j < 5; ++j) {
          EXPECT_EQ(L[b][i][j], 0.0);
          EXPECT_EQ(U[b][j][i], 0.0);
        }
    }
  }
  // Golden: cholesky(a aᵀ + I).
  auto g = mx::load(lt::golden("cholesky/call0_arg0.npy"));
  expect_golden(la::cholesky(mx::add(mx::matmul(g, mx::transpose(g)), mx::eye(4))), "cholesky/call0_out0.npy", 1e-4);
  // As in MLX, a matrix that is not positive definite returns the partial factor (values from MLX).
  EXPECT_EQ(values<float>(la::cholesky(mx::array({1.0f, 2.0f, 2.0f, 1.0f}, {2, 2}))),
            (std::vector<float>{1, 0, 2, -3}));
  EXPECT_EQ(values<float>(la::cholesky(mx::array({4.0f, 2.0f, 2.0f, 5.0f}, {2, 2}), true)),
            (std::vector<float>{2, 1, 0, 2}));
  EXPECT_EQ(lt::error_of([] { la::cholesky(mx::ones({2, 3})); }),
            "[linalg::cholesky] Cholesky decomposition is only defined for square matrices.");
  // cholesky_inv inverts A from its factor.
  auto a = spd(1, 4, 8);
  auto ai = la::cholesky_inv(la::cholesky(mx::squeeze(a, 0)));
  expect_mat_near(mul(mats(a)[0], mats(ai)[0]), eye(4), 1e-4);
  auto aiu = la::cholesky_inv(la::cholesky(mx::squeeze(a, 0), true), true);
  expect_mat_near(mul(mats(a)[0], mats(aiu)[0]), eye(4), 1e-4);
}

// ---------------- Eig / Eigh ----------------

// ‖A v − λ v‖ for every eigenpair (vectors in columns).
void expect_eigenpairs(const mx::array& a, const mx::array& w, const mx::array& v, double tol) {
  auto A = lt::cvalues(a), W = lt::cvalues(w), V = lt::cvalues(v);
  const int n = a.shape(-1);
  const size_t nb = A.size() / (n * n);
  for (size_t b = 0; b < nb; ++b)
    for (int j = 0; j < n; ++j) {
      double norm = 0;
      for (int i = 0; i < n; ++i) norm += std::norm(V[b * n * n + i * n + j]);
      EXPECT_NEAR(norm, 1.0, tol);
      for (int i = 0; i < n; ++i) {
        std::complex<double> av = 0;
        for (int k = 0; k < n; ++k) av += A[b * n * n + i * n + k] * V[b * n * n + k * n + j];
        EXPECT_LT(std::abs(av - W[b * n + j] * V[b * n * n + i * n + j]), tol) << "pair " << j << " row " << i;
      }
    }
}

TEST(Linalg, EigReal) {
  for (auto t : {mx::float32, mx::float64}) {
    auto a = mx::astype(lt::random({2, 5, 5}, 9), t);
    auto [w, v] = la::eig(a);
    EXPECT_EQ(w.dtype(), mx::complex64);
    EXPECT_EQ(v.dtype(), mx::complex64);
    EXPECT_EQ(w.shape(), (mx::Shape{2, 5}));
    expect_eigenpairs(a, w, v, 1e-4);
    auto wv = lt::cvalues(la::eigvals(a)), ww = lt::cvalues(w);
    for (size_t i = 0; i < wv.size(); ++i) EXPECT_LT(std::abs(wv[i] - ww[i]), 1e-5);
  }
  // A rotation has eigenvalues ±i.
  auto r = mx::array({0.0f, -1.0f, 1.0f, 0.0f}, {2, 2});
  auto [w, v] = la::eig(r);
  auto wv = lt::cvalues(w);
  EXPECT_NEAR(std::abs(wv[0].imag()), 1.0, 1e-6);
  EXPECT_NEAR(wv[0].imag(), -wv[1].imag(), 1e-6);
  expect_eigenpairs(r, w, v, 1e-5);
  // Golden: sort(real(eigvals(a + aᵀ))).
  auto g = mx::load(lt::golden("eig/call0_arg0.npy"));
  auto vals = lt::cvalues(la::eigvals(mx::add(g, mx::transpose(g))));
  std::vector<double> re;
  for (auto x : vals) re.push_back(x.real());
  std::sort(re.begin(), re.end());
  lt::expect_near(re, values<double>(mx::load(lt::golden("eig/call0_out0.npy"))), 1e-4);
}

TEST(Linalg, EigComplex) {
  // Eigenvalues from numpy: 1.2928932+0.70710677j, 2.7071068-0.70710677j.
  std::vector<mx::complex64_t> cv{{1, 1}, {2, 0}, {0, 0.5f}, {3, -1}};
  auto c = mx::array(cv, {2, 2});
  auto [w, v] = la::eig(c);
  auto wv = lt::cvalues(w);
  std::sort(wv.begin(), wv.end(), [](auto x, auto y) { return x.real() < y.real(); });
  EXPECT_NEAR(wv[0].real(), 1.2928932, 1e-5);
  EXPECT_NEAR(wv[0].imag(), 0.70710677, 1e-5);
  EXPECT_NEAR(wv[1].real(), 2.7071068, 1e-5);
  EXPECT_NEAR(wv[1].imag(), -0.70710677, 1e-5);
  // kiln returns A's eigenvectors (MLX 0.30.1 returns those of conj(A) for complex input).
  expect_eigenpairs(c, w, v, 1e-5);
  EXPECT_EQ(lt::error_of([] { la::eig(mx::ones({2, 3})); }), "[linalg::eig] Only defined for square matrices.");
  EXPECT_EQ(la::eigvals(mx::zeros({0, 0})).shape(), (mx::Shape{0}));
}

TEST(Linalg, Eigh) {
  for (auto t : {mx::float32, mx::float64}) {
    auto a = spd(3, 4, 10, t);
    auto [w, v] = la::eigh(a);
    EXPECT_EQ(w.dtype(), t);
    expect_eigenpairs(a, w, v, 1e-3);
    auto wv = values<double>(w);
    for (int b = 0; b < 3; ++b)
      for (int i = 1; i < 4; ++i) EXPECT_LE(wv[b * 4 + i - 1], wv[b * 4 + i]);
    lt::expect_near(values<double>(la::eigvalsh(a)), wv, 1e-5);
  }
  // Golden: of a + aᵀ.
  auto sym = [](const mx::array& x) { return mx::add(x, mx::transpose(x)); };
  expect_golden(la::eigvalsh(sym(mx::load(lt::golden("eigvalsh/call0_arg0.npy")))), "eigvalsh/call0_out0.npy", 1e-4);
  auto [w, v] = la::eigh(sym(mx::load(lt::golden("eigh_full/call0_arg0.npy"))));
  expect_golden(w, "eigh_full/call0_out0.npy", 1e-4);
  expect_golden(v, "eigh_full/call0_out1.npy", 1e-4, true);
  // UPLO selects the triangle that is read (values from numpy's eigvalsh).
  auto ns = mx::array({1.0f, 5.0f, 0.0f, 2.0f, 3.0f, 0.0f, 7.0f, 0.0f, 1.0f}, {3, 3});
  lt::expect_near(values<double>(la::eigvalsh(ns, "L")), {-6.2202735, 2.8387711, 8.3815022}, 1e-5);
  lt::expect_near(values<double>(la::eigvalsh(ns, "U")), {-3.0990195, 1.0, 7.0990195}, 1e-5);
  // Hermitian complex64: real eigenvalues, A v = λ v.
  std::vector<mx::complex64_t> h{{2, 0}, {1, -1}, {0, 2}, {1, 1}, {3, 0}, {1, 0}, {0, -2}, {1, 0}, {4, 0}};
  auto hc = mx::array(h, {3, 3});
  auto [hw, hv] = la::eigh(hc);
  EXPECT_EQ(hw.dtype(), mx::float32);
  EXPECT_EQ(hv.dtype(), mx::complex64);
  expect_eigenpairs(hc, hw, hv, 1e-5);
  auto [hw2, hv2] = la::eigh(hc, "U");
  lt::expect_near(values<double>(hw2), values<double>(hw), 1e-5);
  EXPECT_EQ(lt::error_of([] { la::eigvalsh(mx::eye(2), "X"); }),
            "[linalg::eigvalsh] UPLO must be 'L' or 'U' but found 'X'.");
  EXPECT_EQ(lt::error_of([] { la::eigh(mx::ones({2})); }),
            "[linalg::eigh] Arrays must have >= 2 dimensions. Received array with 1 dimensions.");
}

// ---------------- LU, solve, pinv, norm, cross ----------------

TEST(Linalg, LuAndSolve) {
  for (auto shape : {mx::Shape{4, 4}, mx::Shape{3, 5}, mx::Shape{5, 3}, mx::Shape{2, 4, 4}}) {
    auto a = lt::random(shape, 11);
    auto plu = la::lu(a);
    EXPECT_EQ(plu[0].dtype(), mx::uint32);
    auto A = mats(a), L = mats(plu[1]), U = mats(plu[2]);
    auto P = values<int64_t>(plu[0]);
    const int M = shape[shape.size() - 2];
    for (size_t b = 0; b < A.size(); ++b) {
      Mat lu = mul(L[b], U[b]);
      Mat pa(M);
      for (int i = 0; i < M; ++i) pa[i] = lu[P[b * M + i]];  // A = (L U)[P]
      expect_mat_near(pa, A[b], 1e-5, "A = L[P] U");
    }
  }
  auto [lu, piv] = la::lu_factor(lt::random({4, 4}, 12));
  EXPECT_EQ(piv.shape(), (mx::Shape{4}));
  auto a = mx::add(lt::random({4, 4}, 13), mx::multiply(mx::eye(4), mx::array(2.0f)));
  auto b = lt::random({4, 2}, 14);
  auto x = la::solve(a, b);
  expect_mat_near(mul(mats(a)[0], mats(x)[0]), mats(b)[0], 1e-4);
  auto bv = lt::random({4}, 15);
  auto xv = la::solve(a, bv);
  auto xvv = values<double>(xv), bvv = values<double>(bv);
  auto A = mats(a)[0];
  for (int i = 0; i < 4; ++i) {
    double s = 0;
    for (int j = 0; j < 4; ++j) s += A[i][j] * xvv[j];
    EXPECT_NEAR(s, bvv[i], 1e-4);
  }
  auto t = mx::triu(a);
  expect_mat_near(mul(mats(t)[0], mats(la::solve_triangular(t, b, true))[0]), mats(b)[0], 1e-4);
  EXPECT_EQ(lt::error_of([&] { la::solve(mx::ones({2, 3}), b); }),
            "[linalg::solve] First input must be a square matrix. Received array with shape (2,3).");
  EXPECT_EQ(lt::error_of([&] { la::solve(a, mx::ones({4}, mx::int32)); }), "");
  EXPECT_THAT(lt::error_of([&] { la::solve(mx::ones({2, 2}, mx::int32), mx::ones({2}, mx::int32)); }),
              HasSubstr("Input arrays must promote to float32 or float64."));
}

TEST(Linalg, PinvNormCross) {
  auto a = mx::array({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3});
  lt::expect_near(values<double>(la::pinv(a)), {-0.94444436, 0.44444448, -0.11111124, 0.11111118, 0.72222227, -0.2222223},
                  1e-4);
  // Norms (values from numpy).
  auto v = mx::array({1.0f, 2.0f, 3.0f});
  EXPECT_NEAR(la::norm(v).item<float>(), 3.7416575, 1e-5);
  EXPECT_NEAR(la::norm(v, 0.0).item<float>(), 3.0, 1e-6);
  EXPECT_NEAR(la::norm(v, 1.0).item<float>(), 6.0, 1e-6);
  EXPECT_NEAR(la::norm(v, 3.0).item<float>(), 3.3019273, 1e-5);
  EXPECT_NEAR(la::norm(v, -1.0).item<float>(), 0.54545456, 1e-5);
  EXPECT_NEAR(la::norm(v, INFINITY).item<float>(), 3.0, 1e-6);
  EXPECT_NEAR(la::norm(v, -INFINITY).item<float>(), 1.0, 1e-6);
  EXPECT_NEAR(la::norm(a, 1.0).item<float>(), 9.0, 1e-5);
  EXPECT_NEAR(la::norm(a, -1.0).item<float>(), 5.0, 1e-5);
  EXPECT_NEAR(la::norm(a, 2.0).item<float>(), 9.508032, 1e-4);
  EXPECT_NEAR(la::norm(a, -2.0).item<float>(), 0.77286965, 1e-4);
  EXPECT_NEAR(la::norm(a, INFINITY).item<float>(), 15.0, 1e-5);
  EXPECT_NEAR(la::norm(a, -INFINITY).item<float>(), 6.0, 1e-5);
  EXPECT_NEAR(la::norm(a, "fro").item<float>(), 9.539392, 1e-5);
  EXPECT_NEAR(la::norm(a, "nuc").item<float>(), 10.280902, 1e-4);
  EXPECT_NEAR(la::norm(a).item<float>(), 9.539392, 1e-5);
  lt::expect_near(values<double>(la::norm(a, 1)), {3.7416575, 8.774964}, 1e-5);
  EXPECT_EQ(la::norm(a, 2.0, std::vector<int>{0, 1}, true).shape(), (mx::Shape{1, 1}));
  EXPECT_EQ(la::norm(mx::array({3, 4})).dtype(), mx::float32);
  EXPECT_EQ(lt::error_of([&] { la::norm(a, "nuc", 0); }),
            "[linalg::norm] Norm 'nuc' only supported for matrices, but received 1 axis/axes.");
  EXPECT_EQ(lt::error_of([&] { la::norm(a, 3.0, std::vector<int>{0, 1}); }),
            "[linalg::norm] Invalid ord 3 for matrix norm.");
  // Cross products (numpy).
  EXPECT_EQ(values<float>(la::cross(mx::array({1.0f, 2.0f, 3.0f}), mx::array({4.0f, 5.0f, 6.0f}))),
            (std::vector<float>{-3, 6, -3}));
  EXPECT_EQ(values<float>(la::cross(mx::array({1.0f, 2.0f}), mx::array({4.0f, 5.0f, 6.0f}))),
            (std::vector<float>{12, -6, -3}));
  EXPECT_EQ(values<float>(la::cross(mx::array({1.0f, 2.0f}), mx::array({3.0f, 4.0f}))), (std::vector<float>{0, 0, -2}));
  EXPECT_EQ(lt::error_of([] { la::cross(mx::ones({4}), mx::ones({3})); }),
            "[linalg::cross] The specified axis must have size 2 or 3.");
}

// ---------------- Hadamard ----------------

TEST(Hadamard, PowersOfTwoAndGolden) {
  expect_golden(mx::hadamard_transform(mx::load(lt::golden("hadamard/call0_arg0.npy"))), "hadamard/call0_out0.npy", 1e-5);
  // Scale 1 against the Sylvester matrix: H[i][j] = (-1)^popcount(i & j).
  const int n = 16;
  auto x = lt::random({3, n}, 16);
  auto y = mx::hadamard_transform(x, 1.0f);
  auto xv = values<double>(x), yv = values<double>(y);
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < n; ++i) {
      double s = 0;
      for (int j = 0; j < n; ++j) s += (__builtin_popcount(i & j) % 2 ? -1.0 : 1.0) * xv[r * n + j];
      EXPECT_NEAR(yv[r * n + i], s, 1e-4);
    }
  // The default scale makes it orthonormal and self-inverse.
  auto z = mx::hadamard_transform(mx::hadamard_transform(x));
  lt::expect_near(values<double>(z), xv, 1e-5);
  // Strided input, float16 and bfloat16.
  auto t = mx::transpose(lt::random({n, 2}, 17));
  lt::expect_near(values<double>(mx::hadamard_transform(t, 1.0f)), values<double>(mx::hadamard_transform(mx::contiguous(t), 1.0f)), 1e-6);
  for (auto dt : {mx::float16, mx::bfloat16, mx::float64}) {
    auto h = mx::hadamard_transform(mx::astype(x, dt));
    EXPECT_EQ(h.dtype(), dt);
    lt::expect_near(values<double>(h), values<double>(mx::hadamard_transform(mx::astype(mx::astype(x, dt), mx::float32))),
                    dt == mx::float64 ? 1e-6 : 1e-2);
  }
  // Integers compute in float32; size 1 is a plain scale.
  EXPECT_EQ(mx::hadamard_transform(mx::array({1, 1, 1, 1})).dtype(), mx::float32);
  EXPECT_EQ(values<float>(mx::hadamard_transform(mx::array({1.0f, 2.0f}, {2, 1}), 3.0f)), (std::vector<float>{3, 6}));
}

TEST(Hadamard, NonPowerOfTwoSizesMatchMlx) {
  // Outputs of mx.hadamard_transform(arange(n)/7 - 1) in MLX 0.30.1.
  const std::map<int, std::vector<double>> want = {
      {12, {-0.24743581, 0.32991448, -0.57735026, 0.32991442, -1.4021362, 0.16495715, -0.57735026, 1.7206379e-08,
            0.24743581, -0.1649572, -0.57735038, -0.32991442}},
      {20, {0.5749889, 0.76665181, 0.95831478, 1.1499777, 1.3416409, -0.31943834, -0.6388765, -0.31943822,
            -5.3312014e-08, -0.31943846, 0.63887656, 0.95831478, 0.6388765, 0.31943822, 0.6388765, -1.4055284,
            -1.3416407, -1.2777531, -1.2138654, -1.1499777}},
      {28, {-0.75592893, -0.59394431, -0.43195945, -0.26997468, -0.10798975, 0.053994942, 0.21597986, -0.75592887,
            -0.48595417, -0.97190863, -0.7019341, -0.43195945, -0.91791362, -0.64793915, -1.1338934, -0.86391884,
            -0.59394413, -1.0798984, -1.565853, -1.2958782, -1.0259036, -2.6457512, -3.1317055, -2.8617308,
            -2.5917561, -2.3217819, -2.0518072, -2.5377612}},
      {24, {3.6742349, -0.29160583, 0.058321256, 0.058321245, -0.75817525, -0.058321245, 0.058321062, 0.058321245,
            -3.0910227, -0.058321171, -0.40824839, 0.058321122, -0.75817555, -0.058321122, -0.87481755, 0.058321122,
            1.5746721, -0.058321219, -1.3413873, 0.058321219, -0.75817537, -0.058321171, -1.8079569, 0.058321219}},
  };
  for (auto& [n, w] : want) {
    auto x = mx::subtract(mx::divide(mx::arange(0.0, static_cast<double>(n), 1.0), mx::array(7.0f)), mx::array(1.0f));
    auto y = mx::hadamard_transform(mx::reshape(x, {1, n}));
    auto yv = values<double>(y);
    ASSERT_EQ(yv.size(), w.size());
    for (int i = 0; i < n; ++i) EXPECT_NEAR(yv[i], w[i], 2e-6) << "n=" << n << " i=" << i;
    // Orthonormal (but not symmetric for these orders): the norm is preserved.
    double nx = 0, ny = 0;
    for (double v : values<double>(x)) nx += v * v;
    for (double v : yv) ny += v * v;
    EXPECT_NEAR(nx, ny, 1e-4 * nx);
  }
}

TEST(Hadamard, Errors) {
  EXPECT_EQ(lt::error_of([] { mx::hadamard_transform(mx::ones({3})); }),
            "[hadamard] Only supports n = m*2^k where m in (1, 12, 20, 28).");
  EXPECT_EQ(lt::error_of([] { mx::hadamard_transform(mx::ones({36})); }),
            "[hadamard] Only supports n = m*2^k where m in (1, 12, 20, 28).");
  EXPECT_EQ(lt::error_of([] { mx::hadamard_transform(mx::ones({0})); }),
            "[hadamard_transform] Does not support empty arrays.");
  const auto& d = kiln::registry::get("Hadamard");
  EXPECT_THAT(lt::error_of([&] { d.infer(mx::State{1.0f}, {{{4}, mx::int32}}); }),
              HasSubstr("[hadamard] Expected a floating point input"));
}

// ---------------- BlockMaskedMM ----------------

// Reference: zero/scale the operands' tiles, multiply, zero/scale the output's tiles.
std::vector<double> ref_masked(const Mat& a, const Mat& b, int bs, const Mat* om, const Mat* lm, const Mat* rm) {
  auto apply = [bs](Mat m, const Mat* mask) {
    if (!mask) return m;
    for (size_t i = 0; i < m.size(); ++i)
      for (size_t j = 0; j < m[i].size(); ++j) m[i][j] *= (*mask)[i / bs][j / bs];
    return m;
  };
  Mat c = apply(mul(apply(a, lm), apply(b, rm)), om);
  std::vector<double> out;
  for (auto& r : c) out.insert(out.end(), r.begin(), r.end());
  return out;
}

Mat mask_values(const mx::array& m) { return mats(mx::astype(m, mx::float64))[0]; }

TEST(BlockMaskedMM, MasksAgainstReference) {
  const int M = 70, K = 40, N = 50, bs = 32;
  auto a = lt::random({M, K}, 18), b = lt::random({K, N}, 19);
  auto om = mx::array({true, false, true, true, false, true}, {3, 2});
  auto lm = mx::array({true, false, false, true, true, true}, {3, 2});
  auto rm = mx::array({true, true, false, true}, {2, 2});
  auto A = mats(a)[0], B = mats(b)[0];
  auto OM = mask_values(om), LM = mask_values(lm), RM = mask_values(rm);
  lt::expect_near(values<double>(mx::block_masked_mm(a, b, bs, om)), ref_masked(A, B, bs, &OM, nullptr, nullptr), 1e-5);
  lt::expect_near(values<double>(mx::block_masked_mm(a, b, bs, std::nullopt, lm, rm)),
                  ref_masked(A, B, bs, nullptr, &LM, &RM), 1e-5);
  lt::expect_near(values<double>(mx::block_masked_mm(a, b, bs, om, lm, rm)), ref_masked(A, B, bs, &OM, &LM, &RM), 1e-5);
  // Float masks scale the tiles.
  auto fm = mx::array({0.5f, 2.0f, 1.0f, 0.0f, -1.0f, 3.0f}, {3, 2});
  auto FM = mask_values(fm);
  lt::expect_near(values<double>(mx::block_masked_mm(a, b, bs, fm)), ref_masked(A, B, bs, &FM, nullptr, nullptr), 1e-5);
  // No masks is a plain matmul; golden (a 64x64 product with one output tile masked).
  lt::expect_near(values<double>(mx::block_masked_mm(a, b, bs)), ref_masked(A, B, bs, nullptr, nullptr, nullptr), 1e-5);
  // Batched with broadcast masks and a transposed operand.
  auto x = lt::random({2, 40, 64}, 20), y = mx::transpose(lt::random({2, 33, 64}, 21), {0, 2, 1});
  auto m2 = mx::array({true, false, false, true}, {2, 2});
  auto out = mx::block_masked_mm(x, y, 32, m2);
  EXPECT_EQ(out.shape(), (mx::Shape{2, 40, 33}));
  auto X = mats(x), Y = mats(y);
  auto M2 = mask_values(m2);
  std::vector<double> want;
  for (int t = 0; t < 2; ++t) {
    auto r = ref_masked(X[t], Y[t], 32, &M2, nullptr, nullptr);
    want.insert(want.end(), r.begin(), r.end());
  }
  lt::expect_near(values<double>(out), want, 1e-5);
  EXPECT_EQ(lt::error_of([&] { mx::block_masked_mm(a, b, 16, om); }),
            "[block_masked_mm] Only block_sizes 32, 64 are supported.Got block size 16.");
  EXPECT_THAT(lt::error_of([&] { mx::block_masked_mm(a, b, 32, mx::ones({5, 5}, mx::bool_)); }),
              HasSubstr("[broadcast_shapes] Shapes (5,5) and (3,2) cannot be broadcast."));
}

// ---------------- GatherMM ----------------

TEST(GatherMM, IndicesPickMatrices) {
  // Golden: gather_mm(a, b, rhs_indices=idx).
  auto a = mx::load(lt::golden("gather_mm/call0_arg0.npy"));
  auto b = mx::load(lt::golden("gather_mm/call0_arg1.npy"));
  auto idx = mx::load(lt::golden("gather_mm/call0_arg2.npy"));
  auto g = mx::gather_mm(a, b, std::nullopt, idx);
  expect_golden(g, "gather_mm/call0_out0.npy", 1e-5);
  // Both indices, against a loop.
  auto x = lt::random({4, 3, 5}, 22), y = lt::random({2, 5, 2}, 23);
  auto li = mx::array({3u, 0u, 1u, 3u, 2u, 2u}, {2, 3});
  auto ri = mx::array({1u, 0u, 0u}, {3});
  auto out = mx::gather_mm(x, y, li, ri);
  EXPECT_EQ(out.shape(), (mx::Shape{2, 3, 3, 2}));
  auto X = mats(x), Y = mats(y);
  auto L = values<int>(li), R = values<int>(ri);
  std::vector<double> want;
  for (int i = 0; i < 6; ++i) {
    Mat p = mul(X[L[i]], Y[R[i % 3]]);
    for (auto& r : p) want.insert(want.end(), r.begin(), r.end());
  }
  lt::expect_near(values<double>(out), want, 1e-5);
  // 1-D operands, float16.
  auto h = mx::gather_mm(mx::astype(lt::random({5}, 24), mx::float16), mx::astype(y, mx::float16), std::nullopt,
                         mx::array({1, 0}));
  EXPECT_EQ(h.shape(), (mx::Shape{2, 2}));
  EXPECT_EQ(h.dtype(), mx::float16);
  EXPECT_EQ(lt::error_of([&] { mx::gather_mm(x, y, mx::array({0.5f})); }),
            "[gather_mm] Got lhs_indices with invalid dtype. Indices must be integral.");
  EXPECT_EQ(lt::error_of([&] { mx::gather_mm(mx::ones({2, 2}, mx::int32), mx::ones({2, 2}, mx::int32), mx::array({0})); }),
            "[gather_mm] Only real floating point types are supported but int32 and int32 were provided which results "
            "in int32, which is not a real floating point type.");
  // Out-of-range indices are clamped rather than read out of bounds.
  auto c = mx::gather_mm(x, y, mx::array({7u}), mx::array({0u}));
  expect_mat_near(mats(c)[0], mul(X[3], Y[0]), 1e-5);
}

}  // namespace
