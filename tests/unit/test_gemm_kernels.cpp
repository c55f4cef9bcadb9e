// kiln's GEMM kernels (src/backend/cpu/gemm/): the skinny and packed kernels at every instruction-set level,
// for float32 / float16 / bfloat16 operands, against a double-precision reference over random shapes,
// transposes, padded leading dimensions, alpha / beta; then Matmul / AddMM on 16-bit operands through the
// direct path (transposed weights, batches, broadcasts, strided views); then the thread-count policy.
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <random>

#include "backend/cpu/blas.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/gemm/gemm.h"
#include "backend/cpu/threading.h"
#include "linalg_test_util.h"

namespace kiln::cpu {
// Test names print the level by name.
inline void PrintTo(Isa i, std::ostream* os) { *os << isa_name(i); }
}  // namespace kiln::cpu

namespace {

namespace mx = kiln;
namespace cpu = kiln::cpu;
using lt::values;

template <typename T>
float widen(T v) {
  return static_cast<float>(v);
}

// A rows × cols matrix stored with leading dimension ld ≥ cols (the padding holds NaN, which must never
// be read), values rounded to T, and the same values as double.
template <typename T>
struct Mat {
  int64_t rows, cols, ld;
  std::vector<T> data;
  std::vector<double> val;  // row-major rows × cols
  Mat(int64_t r, int64_t c, int64_t pad, std::mt19937& g) : rows(r), cols(c), ld(c + pad) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    data.assign(static_cast<size_t>(std::max<int64_t>(1, r * ld)), T(std::nanf("")));
    val.resize(static_cast<size_t>(r * c));
    for (int64_t i = 0; i < r; ++i) {
      for (int64_t j = 0; j < c; ++j) {
        T v = T(d(g));
        data[i * ld + j] = v;
        val[i * c + j] = widen(v);
      }
    }
  }
};

enum class Algo { skinny, packed, chosen };
const char* algo_name(Algo a) { return a == Algo::skinny ? "skinny" : a == Algo::packed ? "packed" : "gemm_f32"; }

// One product checked against the double reference: |got - want| ≤ (K + 2) · eps · Σ|alpha·a·b| + |beta·c|·eps.
template <typename T>
void check_one(Algo algo, cpu::Isa isa, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta,
               std::mt19937& g) {
  std::uniform_int_distribution<int> pad(0, 3);
  // op(A) is M×K: stored K×M when ta. op(B) is K×N: stored N×K when tb.
  Mat<T> A(ta ? K : M, ta ? M : K, pad(g), g);
  Mat<T> B(tb ? N : K, tb ? K : N, pad(g), g);
  const int64_t ldc = N + pad(g);
  std::vector<float> C(static_cast<size_t>(std::max<int64_t>(1, M * ldc)), std::nanf(""));
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> c0(C.size());
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      // beta == 0 leaves NaN in C: the kernels must not read it.
      C[i * ldc + j] = beta == 0.0f ? std::nanf("") : d(g);
      c0[i * ldc + j] = C[i * ldc + j];
    }
  }
  const T* ap = A.data.data();
  const T* bp = B.data.data();
  switch (algo) {
    case Algo::skinny: cpu::gemm_skinny<T, T>(ta, tb, M, N, K, alpha, ap, A.ld, bp, B.ld, beta, C.data(), ldc, isa); break;
    case Algo::packed: cpu::gemm_packed<T, T>(ta, tb, M, N, K, alpha, ap, A.ld, bp, B.ld, beta, C.data(), ldc, isa); break;
    case Algo::chosen: cpu::gemm_f32<T, T>(ta, tb, M, N, K, alpha, ap, A.ld, bp, B.ld, beta, C.data(), ldc, isa); break;
  }
  auto a_at = [&](int64_t m, int64_t k) { return ta ? A.val[k * A.cols + m] : A.val[m * A.cols + k]; };
  auto b_at = [&](int64_t k, int64_t n) { return tb ? B.val[n * B.cols + k] : B.val[k * B.cols + n]; };
  int bad = 0;
  for (int64_t i = 0; i < M && bad < 3; ++i) {
    for (int64_t j = 0; j < N && bad < 3; ++j) {
      double s = 0, sabs = 0;
      for (int64_t k = 0; k < K; ++k) {
        s += a_at(i, k) * b_at(k, j);
        sabs += std::abs(a_at(i, k) * b_at(k, j));
      }
      const double cin = beta == 0.0f ? 0.0 : static_cast<double>(c0[i * ldc + j]);
      const double want = alpha * s + beta * cin;
      const double tol = (K + 2) * FLT_EPSILON * std::abs(alpha) * sabs + 2 * FLT_EPSILON * std::abs(beta * cin) + 1e-30;
      const double got = C[i * ldc + j];
      if (!(std::abs(got - want) <= tol)) {
        ++bad;
        ADD_FAILURE() << algo_name(algo) << " isa=" << cpu::isa_name(isa) << " ta=" << ta << " tb=" << tb << " M=" << M
                      << " N=" << N << " K=" << K << " alpha=" << alpha << " beta=" << beta << " at (" << i << "," << j
                      << "): got " << got << " want " << want << " tol " << tol;
      }
    }
  }
  // Columns past N in each row of C (the ldc padding) are untouched.
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = N; j < ldc; ++j) EXPECT_TRUE(std::isnan(C[i * ldc + j])) << "padding written at " << i << "," << j;
  }
}

// Random shapes around the kernels' edges: M 1..9 and beyond the skinny limit, odd N and K, K = 0, K past
// one cache block (256), both transposes, several alpha / beta.
template <typename T>
void sweep(Algo algo, cpu::Isa isa, uint32_t seed, int cases) {
  std::mt19937 g(seed);
  const int64_t Ms[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 17, 33};
  const int64_t Ns[] = {1, 2, 3, 5, 15, 16, 17, 31, 32, 33, 47, 64, 65, 100};
  const int64_t Ks[] = {0, 1, 2, 7, 8, 15, 16, 17, 31, 33, 64, 100, 257, 300};
  const float alphas[] = {1.0f, -0.5f, 2.0f};
  const float betas[] = {0.0f, 1.0f, 0.25f};
  for (int c = 0; c < cases; ++c) {
    const int64_t M = Ms[g() % std::size(Ms)], N = Ns[g() % std::size(Ns)], K = Ks[g() % std::size(Ks)];
    const bool ta = g() & 1, tb = g() & 1;
    check_one<T>(algo, isa, ta, tb, M, N, K, alphas[g() % 3], betas[g() % 3], g);
  }
}

class GemmKernels : public ::testing::TestWithParam<cpu::Isa> {
 protected:
  void SetUp() override {
    if (static_cast<int>(GetParam()) > static_cast<int>(cpu::isa_detected())) {
      GTEST_SKIP() << "this CPU has no " << cpu::isa_name(GetParam());
    }
  }
};

TEST_P(GemmKernels, SkinnyFloat32) { sweep<float>(Algo::skinny, GetParam(), 11, 160); }
TEST_P(GemmKernels, SkinnyBFloat16) { sweep<mx::bfloat16_t>(Algo::skinny, GetParam(), 12, 160); }
TEST_P(GemmKernels, SkinnyFloat16) { sweep<mx::float16_t>(Algo::skinny, GetParam(), 13, 160); }
TEST_P(GemmKernels, PackedFloat32) { sweep<float>(Algo::packed, GetParam(), 21, 120); }
TEST_P(GemmKernels, PackedBFloat16) { sweep<mx::bfloat16_t>(Algo::packed, GetParam(), 22, 120); }
TEST_P(GemmKernels, PackedFloat16) { sweep<mx::float16_t>(Algo::packed, GetParam(), 23, 120); }
TEST_P(GemmKernels, ChosenFloat32) { sweep<float>(Algo::chosen, GetParam(), 31, 80); }

// Shapes of the llama decode / prefill (M = 1 and 128 against 1024 × 2816 weights), both layouts.
TEST_P(GemmKernels, ModelShapes) {
  std::mt19937 g(41);
  for (bool tb : {true, false}) {
    check_one<float>(Algo::chosen, GetParam(), false, tb, 1, 2816, 1024, 1.0f, 0.0f, g);
    check_one<mx::bfloat16_t>(Algo::chosen, GetParam(), false, tb, 1, 1024, 2816, 1.0f, 0.0f, g);
    check_one<float>(Algo::chosen, GetParam(), false, tb, 128, 1024, 1024, 1.0f, 0.0f, g);
    check_one<mx::bfloat16_t>(Algo::chosen, GetParam(), false, tb, 128, 300, 2816, 1.0f, 1.0f, g);
  }
}

// x · Wᵀ tiles of 4 and 8 rows of W reduce their accumulators four at a time (hsum512x4 at AVX-512): each
// output is bit-identical to the one-row tile's (one accumulator reduced alone), for K = 64 (attention
// scores) and a K with a masked tail, with alpha.
TEST_P(GemmKernels, SkinnyTilesReduceLikeOneRow) {
  std::mt19937 g(43);
  for (int64_t K : {64, 1000}) {
    for (int64_t M : {1, 3, 4}) {
      const int64_t N = 13;  // tiles of 8 (M = 1) or 4, then single rows
      Mat<float> a(M, K, 0, g), b(N, K, 0, g);
      std::vector<float> c(static_cast<size_t>(M * N)), one(static_cast<size_t>(M));
      cpu::gemm_skinny<float, float>(false, true, M, N, K, -0.5f, a.data.data(), K, b.data.data(), K, 0.0f, c.data(), N,
                                     GetParam());
      for (int64_t j = 0; j < N; ++j) {
        cpu::gemm_skinny<float, float>(false, true, M, 1, K, -0.5f, a.data.data(), K, b.data.data() + j * K, K, 0.0f,
                                       one.data(), 1, GetParam());
        for (int64_t i = 0; i < M; ++i) {
          EXPECT_EQ(c[static_cast<size_t>(i * N + j)], one[static_cast<size_t>(i)]) << "K " << K << " M " << M << " at " << i << "," << j;
        }
      }
    }
  }
}

// Larger products split across threads in both directions (several row and column blocks).
TEST_P(GemmKernels, ManyBlocks) {
  std::mt19937 g(42);
  check_one<float>(Algo::packed, GetParam(), false, true, 300, 700, 520, 1.0f, 0.0f, g);
  check_one<mx::float16_t>(Algo::packed, GetParam(), true, false, 257, 65, 40, 0.5f, 1.0f, g);
  check_one<float>(Algo::skinny, GetParam(), true, true, 8, 5000, 70, 1.0f, 0.0f, g);
  // bfloat16 x · Wᵀ with K a multiple of 32 (the AMX tiles at Isa::amx): more than one 256-row pass of A,
  // a partial last block of 32 and of 64 rows of B, alpha and beta.
  check_one<mx::bfloat16_t>(Algo::packed, GetParam(), false, true, 300, 130, 96, -0.5f, 0.25f, g);
  check_one<mx::bfloat16_t>(Algo::packed, GetParam(), false, true, 40, 33, 320, 1.0f, 0.0f, g);
}

INSTANTIATE_TEST_SUITE_P(Isa, GemmKernels, ::testing::Values(cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512,
                                                          cpu::Isa::avx512bf16, cpu::Isa::amx),
                         [](const ::testing::TestParamInfo<cpu::Isa>& i) { return std::string(cpu::isa_name(i.param)); });

TEST(GemmIsa, ParseAndLevel) {
  EXPECT_EQ(cpu::parse_isa("scalar"), cpu::Isa::scalar);
  EXPECT_EQ(cpu::parse_isa("avx2"), cpu::Isa::avx2);
  EXPECT_EQ(cpu::parse_isa("avx512"), cpu::Isa::avx512);
  EXPECT_EQ(cpu::parse_isa("avx512bf16"), cpu::Isa::avx512bf16);
  EXPECT_EQ(cpu::parse_isa("amx"), cpu::Isa::amx);
  EXPECT_EQ(cpu::parse_isa(nullptr), cpu::Isa::amx);
  EXPECT_EQ(cpu::parse_isa(""), cpu::Isa::amx);
  EXPECT_THROW(cpu::parse_isa("bogus"), std::invalid_argument);
  // The level in use is the detected one lowered by KILN_CPU_ISA (the ctest runs gemm_isa_avx2 / _scalar
  // repeat this suite with it set).
  const char* env = std::getenv("KILN_CPU_ISA");
  const cpu::Isa forced = cpu::parse_isa(env);
  EXPECT_EQ(cpu::isa_override(), forced);
  const cpu::Isa want =
      static_cast<int>(forced) < static_cast<int>(cpu::isa_detected()) ? forced : cpu::isa_detected();
  EXPECT_EQ(cpu::isa_level(), want);
}

// ---- Matmul / AddMM with 16-bit operands (the direct path of matmul.cpp) ----

// Reference from the rounded operands, product rounded once to the output type.
void expect_matmul(const mx::array& a, const mx::array& b, const mx::array& c, double tol, const std::string& what) {
  const int M = a.shape(-2), K = a.shape(-1), N = b.shape(-1);
  const int batch = static_cast<int>(c.size() / (static_cast<size_t>(M) * N));
  auto want = lt::ref_matmul(values<double>(mx::broadcast_to(a, [&] {
                               auto s = c.shape();
                               s[s.size() - 1] = K;
                               return s;
                             }())),
                             values<double>(mx::broadcast_to(b, [&] {
                               auto s = c.shape();
                               s[s.size() - 2] = K;
                               return s;
                             }())),
                             batch, M, N, K);
  lt::expect_near(values<double>(c), want, tol, what);
}

TEST(GemmMatmul, HalfLinearLayouts) {
  for (auto t : {mx::bfloat16, mx::float16}) {
    const double tol = t == mx::bfloat16 ? 1e-2 : 2e-3;
    for (int M : {1, 2, 3, 5, 8, 9, 40}) {
      for (int K : {1, 17, 64, 300}) {
        const int N = 37;
        auto x = mx::astype(lt::random({M, K}, 100 + M), t);
        auto w = mx::astype(lt::random({N, K}, 200 + K), t);
        // x @ w.T (nn.Linear's layout: the transposed view is read in place) and x @ w.T.T.T as a copy.
        auto y = mx::matmul(x, mx::transpose(w));
        EXPECT_EQ(y.dtype(), t);
        expect_matmul(x, mx::transpose(w), y, tol, "x@w.T M=" + std::to_string(M) + " K=" + std::to_string(K));
        auto w2 = mx::astype(lt::random({K, N}, 300 + K), t);
        expect_matmul(x, w2, mx::matmul(x, w2), tol, "x@w M=" + std::to_string(M) + " K=" + std::to_string(K));
        // A transposed: (K, M) stored, used as (M, K).
        auto xt = mx::astype(lt::random({K, M}, 400 + M), t);
        expect_matmul(mx::transpose(xt), w2, mx::matmul(mx::transpose(xt), w2), tol, "xT@w");
      }
    }
  }
}

// float32 batches of mid-sized matrices (a prefill's attention scores and values, grouped-query heads
// with the key/value heads broadcast, keys read transposed): a whole matrix per thread through kiln's own
// kernels (linalg_internal.h batched_gemm). Against float64, at every instruction-set level the CPU has.
TEST(GemmMatmul, Float32BatchOfMidSizedMatrices) {
  const double tol = 1e-5;
  auto q = lt::random({1, 4, 4, 128, 64}, 11);
  auto k = lt::random({1, 4, 1, 130, 64}, 12);  // 130 keys: a partial tile
  auto scores = mx::matmul(q, mx::swapaxes(k, -1, -2));
  ASSERT_EQ(scores.shape(), (mx::Shape{1, 4, 4, 128, 130}));
  expect_matmul(q, mx::swapaxes(k, -1, -2), scores, tol, "q @ k.T");
  auto v = lt::random({1, 4, 1, 130, 64}, 13);
  auto probs = mx::softmax(scores, std::vector<int>{-1});
  expect_matmul(probs, v, mx::matmul(probs, v), tol, "probs @ v");
  // More matrices than threads, each one a few of the micro-kernel's row blocks: (6, 200, 96) @ (96, 150).
  auto a = lt::random({6, 200, 96}, 14);
  auto b = lt::random({6, 96, 150}, 15);
  expect_matmul(a, b, mx::matmul(a, b), tol, "batch of 6");
}

// A decode step's grouped-query attention: the key/value matrix of each kv head broadcast to the query
// heads that share it. Those entries run as one product of (heads per kv head) x M rows, B read once
// (matmul.cpp folded_entries); also where they can't (too many rows, a transposed A, B not broadcast).
TEST(GemmMatmul, Float32GroupedQueryDecodeProducts) {
  const double tol = 1e-5;
  for (int M : {1, 2, 3}) {
    for (int n : {1, 33, 257}) {
      const std::string what = "M " + std::to_string(M) + " keys " + std::to_string(n);
      auto q = lt::random({1, 4, 4, M, 64}, 21);
      auto k = lt::random({1, 4, 1, n, 64}, 22);
      auto kt = mx::broadcast_to(mx::swapaxes(k, -1, -2), {1, 4, 4, 64, n});
      auto scores = mx::matmul(q, kt);
      ASSERT_EQ(scores.shape(), (mx::Shape{1, 4, 4, M, n}));
      expect_matmul(q, kt, scores, tol, "q @ k.T, " + what);
      auto v = mx::broadcast_to(lt::random({1, 4, 1, n, 64}, 23), {1, 4, 4, n, 64});
      auto p = lt::random({1, 4, 4, M, n}, 24);
      expect_matmul(p, v, mx::matmul(p, v), tol, "p @ v, " + what);
      // The query rows as a transposed view (not stacked rows): the per-entry products.
      auto qt = mx::swapaxes(lt::random({1, 4, 4, 64, M}, 25), -1, -2);
      expect_matmul(qt, kt, mx::matmul(qt, kt), tol, "transposed q, " + what);
    }
  }
  // Broadcast in the middle batch dim only (B varies along the inner one): nothing folds.
  auto a = lt::random({3, 2, 1, 40}, 26);
  auto b = mx::broadcast_to(lt::random({1, 2, 40, 9}, 27), {3, 2, 40, 9});
  expect_matmul(a, b, mx::matmul(a, b), tol, "outer broadcast");
}

TEST(GemmMatmul, HalfBatchedBroadcastStrided) {
  for (auto t : {mx::bfloat16, mx::float16}) {
    const double tol = t == mx::bfloat16 ? 1e-2 : 2e-3;
    // (2,3,1,K) @ (K,N): batch rows stack into one product.
    auto a = mx::astype(lt::random({2, 3, 1, 70}, 1), t);
    auto w = mx::astype(lt::random({90, 70}, 2), t);
    expect_matmul(a, mx::transpose(w), mx::matmul(a, mx::transpose(w)), tol, "stacked");
    // (2,1,4,K) @ (3,K,N): broadcast batch, large enough per product for the per-entry loop.
    auto p = mx::astype(lt::random({2, 1, 4, 300}, 3), t);
    auto q = mx::astype(lt::random({3, 300, 120}, 4), t);
    expect_matmul(p, q, mx::matmul(p, q), tol, "broadcast");
    // Strided views: every other column of A, a column block of B.
    auto big = mx::astype(lt::random({5, 200}, 5), t);
    auto as = mx::slice(big, {0, 0}, {5, 200}, {1, 2});  // (5, 100) with column stride 2: copied
    auto bb = mx::astype(lt::random({100, 160}, 6), t);
    auto bs = mx::slice(bb, {0, 10}, {100, 150});  // (100, 140) with row stride 160: in place
    expect_matmul(as, bs, mx::matmul(as, bs), tol, "strided");
    // AddMM: alpha · a @ b + beta · c with c broadcast.
    auto c = mx::astype(lt::random({140}, 7), t);
    auto r = mx::addmm(c, as, bs, 0.5f, 2.0f);
    auto prod = lt::ref_matmul(values<double>(as), values<double>(bs), 1, 5, 140, 100);
    auto cv = values<double>(c);
    std::vector<double> want(prod.size());
    for (size_t i = 0; i < prod.size(); ++i) want[i] = 0.5 * prod[i] + 2.0 * cv[i % 140];
    lt::expect_near(values<double>(r), want, tol, "addmm");
    // K = 0: zeros, or beta · c.
    auto z = mx::matmul(mx::zeros({3, 0}, t), mx::zeros({0, 4}, t));
    for (double v : values<double>(z)) EXPECT_EQ(v, 0.0);
  }
}

// ---- Threads ----

TEST(GemmThreads, BlasFollowsKilnThreadCount) {
  // OpenBLAS uses kiln's thread count (KILN_NUM_THREADS when set; the gemm_threads_1 ctest sets it to 1).
  EXPECT_EQ(cpu::blas_num_threads(), cpu::num_threads());
  if (const char* e = std::getenv("KILN_NUM_THREADS")) {
    EXPECT_EQ(cpu::num_threads(), std::atoi(e));
    EXPECT_EQ(cpu::blas_num_threads(), std::atoi(e));
  }
}

}  // namespace
