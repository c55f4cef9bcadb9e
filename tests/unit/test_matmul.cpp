// Matmul, AddMM and the product ops, against a scalar-loop reference in double.
#include <chrono>

#include "linalg_test_util.h"

namespace {

namespace mx = kiln;
using ::testing::HasSubstr;
using lt::values;

// Reference for a (…, M, K) @ (…, K, N) pair whose batch dims are equal (given as value lists).
std::vector<double> ref(const mx::array& a, const mx::array& b, int batch) {
  int M = a.shape(-2), K = a.shape(-1), N = b.shape(-1);
  return lt::ref_matmul(values<double>(a), values<double>(b), batch, M, N, K);
}

TEST(Matmul, Float32Basic) {
  auto a = lt::random({5, 7}, 1), b = lt::random({7, 3}, 2);
  auto c = mx::matmul(a, b);
  EXPECT_EQ(c.shape(), (mx::Shape{5, 3}));
  EXPECT_EQ(c.dtype(), mx::float32);
  lt::expect_near(values<double>(c), ref(a, b, 1), 1e-5);
}

TEST(Matmul, EveryInexactDtype) {
  auto a32 = lt::random({4, 6}, 3), b32 = lt::random({6, 5}, 4);
  for (auto t : {mx::float16, mx::bfloat16, mx::float64, mx::complex64}) {
    auto a = mx::astype(a32, t), b = mx::astype(b32, t);
    auto c = mx::matmul(a, b);
    EXPECT_EQ(c.dtype(), t);
    // Reference from the rounded inputs; the product is rounded once at the end.
    double tol = t == mx::float16 ? 2e-3 : t == mx::bfloat16 ? 1e-2 : 1e-6;
    lt::expect_near(values<double>(c), ref(a, b, 1), tol, mx::dtype_name(t));
  }
}

TEST(Matmul, Complex64) {
  std::vector<mx::complex64_t> av{{1, 2}, {3, -1}, {0, 1}, {2, 2}};
  std::vector<mx::complex64_t> bv{{1, 0}, {0, 1}, {2, -1}, {1, 1}};
  auto c = mx::matmul(mx::array(av, {2, 2}), mx::array(bv, {2, 2}));
  auto got = values<mx::complex64_t>(c);
  std::vector<mx::complex64_t> want{av[0] * bv[0] + av[1] * bv[2], av[0] * bv[1] + av[1] * bv[3],
                                    av[2] * bv[0] + av[3] * bv[2], av[2] * bv[1] + av[3] * bv[3]};
  ASSERT_EQ(got.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_LT(std::abs(got[i] - want[i]), 1e-5f) << i;
}

TEST(Matmul, TypePromotion) {
  auto a = mx::astype(lt::random({2, 3}, 5), mx::float16);
  auto b = mx::astype(lt::random({3, 2}, 6), mx::bfloat16);
  EXPECT_EQ(mx::matmul(a, b).dtype(), mx::float32);
  auto i = mx::array({1, 2, 3, 4, 5, 6}, {3, 2});  // int32 with float32 promotes to float32
  auto c = mx::matmul(lt::random({2, 3}, 7), i);
  EXPECT_EQ(c.dtype(), mx::float32);
  EXPECT_EQ(mx::matmul(mx::astype(a, mx::float64), mx::astype(b, mx::float32)).dtype(), mx::float64);
}

TEST(Matmul, BatchedAndBroadcast) {
  // (2,3,4) @ (4,5): the batch folds into one tall product.
  auto a = lt::random({2, 3, 4}, 8), b = lt::random({4, 5}, 9);
  auto c = mx::matmul(a, b);
  EXPECT_EQ(c.shape(), (mx::Shape{2, 3, 5}));
  lt::expect_near(values<double>(c), ref(a, mx::broadcast_to(b, {2, 4, 5}), 2), 1e-5);
  // (2,1,3,4) @ (5,4,2): batch dims broadcast to (2,5).
  auto x = lt::random({2, 1, 3, 4}, 10), y = lt::random({5, 4, 2}, 11);
  auto z = mx::matmul(x, y);
  EXPECT_EQ(z.shape(), (mx::Shape{2, 5, 3, 2}));
  lt::expect_near(values<double>(z), ref(mx::broadcast_to(x, {2, 5, 3, 4}), mx::broadcast_to(y, {2, 5, 4, 2}), 10),
                  1e-5);
  // (3,4) @ (2,4,5): a broadcasts over b's batch.
  auto p = lt::random({3, 4}, 12), q = lt::random({2, 4, 5}, 13);
  auto r = mx::matmul(p, q);
  EXPECT_EQ(r.shape(), (mx::Shape{2, 3, 5}));
  lt::expect_near(values<double>(r), ref(mx::broadcast_to(p, {2, 3, 4}), q, 2), 1e-5);
  // Mismatched batch dims.
  EXPECT_THAT(lt::error_of([] { mx::matmul(mx::ones({2, 2, 3}), mx::ones({3, 3, 5})); }),
              HasSubstr("[broadcast_shapes] Shapes (2) and (3) cannot be broadcast."));
}

TEST(Matmul, SmallMatricesLargeBatch) {
  // Many tiny products take the looped path; check a few against the reference.
  auto a = lt::random({300, 3, 5}, 14), b = lt::random({300, 5, 4}, 15);
  auto c = mx::matmul(a, b);
  lt::expect_near(values<double>(c), ref(a, b, 300), 1e-5);
  auto h = mx::matmul(mx::astype(a, mx::float16), mx::astype(b, mx::float16));
  lt::expect_near(values<double>(h), ref(mx::astype(a, mx::float16), mx::astype(b, mx::float16), 300), 3e-3);
}

TEST(Matmul, OneDimensional) {
  auto m = lt::random({3, 4}, 16), v = lt::random({4}, 17), w = lt::random({3}, 18);
  auto mv = mx::matmul(m, v);
  EXPECT_EQ(mv.shape(), (mx::Shape{3}));
  lt::expect_near(values<double>(mv), ref(m, mx::reshape(v, {4, 1}), 1), 1e-5);
  auto vm = mx::matmul(w, m);
  EXPECT_EQ(vm.shape(), (mx::Shape{4}));
  lt::expect_near(values<double>(vm), ref(mx::reshape(w, {1, 3}), m, 1), 1e-5);
  auto vv = mx::matmul(v, v);
  EXPECT_EQ(vv.shape(), (mx::Shape{}));
  double s = 0;
  for (double x : values<double>(v)) s += x * x;
  EXPECT_NEAR(vv.item<float>(), s, 1e-5);
  // Batched matrix times vector.
  auto bm = lt::random({2, 3, 4}, 19);
  auto bmv = mx::matmul(bm, v);
  EXPECT_EQ(bmv.shape(), (mx::Shape{2, 3}));
  lt::expect_near(values<double>(bmv), ref(bm, mx::broadcast_to(mx::reshape(v, {4, 1}), {2, 4, 1}), 2), 1e-5);
}

TEST(Matmul, TransposedAndStridedViews) {
  auto base_a = lt::random({6, 8}, 20), base_b = lt::random({8, 6}, 21);
  // Transposed views go to BLAS as transposes.
  auto at = mx::transpose(base_a), bt = mx::transpose(base_b);
  auto c = mx::matmul(at, bt);  // (8,6) @ (6,8)
  lt::expect_near(values<double>(c), ref(at, bt, 1), 1e-5);
  // Column slices keep a leading dimension larger than the row length.
  auto as = mx::slice(base_a, {0, 1}, {6, 5});  // (6,4), row stride 8
  auto bs = mx::slice(base_b, {2, 0}, {6, 3});  // (4,3), row stride 6
  lt::expect_near(values<double>(mx::matmul(as, bs)), ref(as, bs, 1), 1e-5);
  // Step slices cannot be expressed with a leading dimension and are copied.
  auto astep = mx::slice(base_a, {0, 0}, {6, 8}, {2, 2});  // (3,4)
  auto bstep = mx::slice(base_b, {0, 0}, {8, 6}, {2, 3});  // (4,2)
  lt::expect_near(values<double>(mx::matmul(astep, bstep)), ref(astep, bstep, 1), 1e-5);
  // Batched transposes (swapaxes of the last two dims) and a transposed batch order.
  auto x = lt::random({3, 5, 4}, 22), y = lt::random({3, 5, 2}, 23);
  auto xt = mx::swapaxes(x, -1, -2);  // (3,4,5)
  lt::expect_near(values<double>(mx::matmul(xt, y)), ref(xt, y, 3), 1e-5);
  auto xp = mx::transpose(lt::random({4, 3, 5}, 24), {1, 0, 2});  // (3,4,5), batch stride 5
  lt::expect_near(values<double>(mx::matmul(xp, y)), ref(xp, y, 3), 1e-5);
}

TEST(Matmul, EmptyDims) {
  auto z = mx::matmul(mx::ones({0, 3}), mx::ones({3, 4}));
  EXPECT_EQ(z.shape(), (mx::Shape{0, 4}));
  EXPECT_EQ(values<double>(z).size(), 0u);
  // K = 0 gives zeros.
  auto k0 = mx::matmul(mx::ones({2, 0}), mx::ones({0, 4}));
  EXPECT_EQ(k0.shape(), (mx::Shape{2, 4}));
  for (double v : values<double>(k0)) EXPECT_EQ(v, 0.0);
  auto k0h = mx::matmul(mx::ones({2, 2, 0}, mx::float16), mx::ones({2, 0, 3}, mx::float16));
  for (double v : values<double>(k0h)) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(mx::matmul(mx::ones({2, 3}), mx::ones({3, 0})).shape(), (mx::Shape{2, 0}));
}

TEST(Matmul, Errors) {
  EXPECT_THROW(mx::matmul(mx::array({1}), mx::array({1})), std::invalid_argument);
  EXPECT_EQ(lt::error_of([] { mx::matmul(mx::array({1}), mx::array({1})); }),
            "[matmul] Only inexact types are supported but int32 and int32 were provided which results in int32, "
            "which is not a floating point type.");
  EXPECT_EQ(lt::error_of([] { mx::matmul(mx::array({true}), mx::array({true})); }),
            "[matmul] Only inexact types are supported but bool and bool were provided which results in bool, "
            "which is not a floating point type.");
  EXPECT_EQ(lt::error_of([] { mx::matmul(mx::array(1.0f), mx::array({1.0f})); }),
            "[matmul] Got 0 dimension input. Inputs must have at least one dimension.");
  EXPECT_EQ(lt::error_of([] { mx::matmul(mx::ones({2, 3}), mx::ones({4, 5})); }),
            "[matmul] Last dimension of first input with shape (2,3) must match second to last dimension of second "
            "input with shape (4,5).");
  // The primitive's shape rule validates graphs built directly (as the file reader does).
  const auto& d = kiln::registry::get("Matmul");
  EXPECT_THAT(lt::error_of([&] { d.infer({}, {{{2, 3}, mx::float32}, {{4, 5}, mx::float32}}); }),
              HasSubstr("[matmul] Last dimension"));
  EXPECT_THAT(lt::error_of([&] { d.infer({}, {{{2, 3}, mx::int32}, {{3, 5}, mx::int32}}); }),
              HasSubstr("Only inexact types"));
  EXPECT_THAT(lt::error_of([&] { d.infer({}, {{{3}, mx::float32}, {{3, 5}, mx::float32}}); }),
              HasSubstr("at least 2 dimensions"));
}

TEST(Matmul, PrimitiveBuiltDirectly) {
  // Graphs from files may hold Matmul / AddMM nodes whose batch dims and c were not broadcast by the op.
  const auto& mm = kiln::registry::get("Matmul");
  auto a = lt::random({2, 3, 4}, 50), b = lt::random({4, 5}, 51);
  auto c = kiln::make_array(mm, {}, {a, b});
  EXPECT_EQ(c.shape(), (mx::Shape{2, 3, 5}));
  lt::expect_near(values<double>(c), ref(a, mx::broadcast_to(b, {2, 4, 5}), 2), 1e-5);
  auto x = lt::random({3, 4}, 52), y = lt::random({2, 1, 4, 2}, 53);
  auto z = kiln::make_array(mm, {}, {x, y});
  EXPECT_EQ(z.shape(), (mx::Shape{2, 1, 3, 2}));
  lt::expect_near(values<double>(z), ref(mx::broadcast_to(x, {2, 1, 3, 4}), y, 2), 1e-5);
  const auto& am = kiln::registry::get("AddMM");
  auto cv = lt::random({5}, 54);
  auto o = kiln::make_array(am, kiln::State{1.0f, 3.0f}, {a, b, cv});
  auto want = ref(a, mx::broadcast_to(b, {2, 4, 5}), 2);
  auto cvv = values<double>(cv);
  for (size_t i = 0; i < want.size(); ++i) want[i] += 3.0 * cvv[i % 5];
  lt::expect_near(values<double>(o), want, 1e-5);
  EXPECT_THAT(lt::error_of([&] { kiln::make_array(am, kiln::State{1.0f, 1.0f}, {a, b, lt::random({4}, 55)}); }),
              HasSubstr("[addmm] input c must broadcast to the output shape"));
  EXPECT_THAT(lt::error_of([&] { kiln::make_array(mm, {}, {a, mx::astype(b, mx::float16)}); }),
              HasSubstr("[matmul] Expected inputs of one dtype but found float32 and float16."));
}

TEST(Matmul, LargeGemmAtBlasSpeed) {
  const int n = 512;
  auto a = lt::random({n, n}, 25), b = lt::random({n, n}, 26);
  mx::eval(a, b);
  auto t0 = std::chrono::steady_clock::now();
  auto c = mx::matmul(a, b);
  c.eval();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // 2·512³ flops: a naive loop takes ~0.1-0.3 s; BLAS well under that even on a loaded machine.
  EXPECT_LT(secs, 0.5);
  // Spot-check some entries.
  auto av = values<float>(a), bv = values<float>(b), cv = values<float>(c);
  for (int i : {0, 17, 300, 511}) {
    for (int j : {0, 99, 511}) {
      double s = 0;
      for (int k = 0; k < n; ++k) s += double(av[i * n + k]) * bv[k * n + j];
      EXPECT_NEAR(cv[i * n + j], s, 1e-3);
    }
  }
}

// MLX's golden outputs (the inputs and outputs of exported functions).
void expect_golden(const mx::array& got, const std::string& file) {
  auto want = mx::load(lt::golden(file));
  ASSERT_EQ(got.shape(), want.shape()) << file;
  lt::expect_near(values<double>(got), values<double>(want), 1e-5, file);
}

TEST(Matmul, Golden) {
  auto ld = [](const std::string& f) { return mx::load(lt::golden(f)); };
  expect_golden(mx::matmul(ld("matmul/call0_arg0.npy"), ld("matmul/call0_arg1.npy")), "matmul/call0_out0.npy");
  expect_golden(mx::matmul(ld("matmul_batched/call0_arg0.npy"), ld("matmul_batched/call0_arg1.npy")),
                "matmul_batched/call0_out0.npy");
  // matvec: (a @ v, inner(v, v)).
  auto m = ld("matvec/call0_arg0.npy"), v = ld("matvec/call0_arg1.npy");
  expect_golden(mx::matmul(m, v), "matvec/call0_out0.npy");
  expect_golden(mx::inner(v, v), "matvec/call0_out1.npy");
  // einsum("ij,jk->ik") is a plain product.
  expect_golden(mx::matmul(ld("einsum/call0_arg0.npy"), ld("einsum/call0_arg1.npy")), "einsum/call0_out0.npy");
  // addmm(c, a, b, alpha=0.5, beta=2).
  expect_golden(mx::addmm(ld("addmm/call0_arg0.npy"), ld("addmm/call0_arg1.npy"), ld("addmm/call0_arg2.npy"), 0.5f, 2.0f),
                "addmm/call0_out0.npy");
}

TEST(AddMM, Basic) {
  auto a = lt::random({3, 4}, 27), b = lt::random({4, 5}, 28), c = lt::random({3, 5}, 29);
  auto out = mx::addmm(c, a, b, 2.0f, 0.5f);
  auto p = ref(a, b, 1);
  auto cv = values<double>(c);
  std::vector<double> want(p.size());
  for (size_t i = 0; i < p.size(); ++i) want[i] = 2.0 * p[i] + 0.5 * cv[i];
  lt::expect_near(values<double>(out), want, 1e-5);
  EXPECT_EQ(out.dtype(), mx::float32);
}

TEST(AddMM, BroadcastAndVectors) {
  auto a = lt::random({2, 3, 4}, 30), b = lt::random({4, 5}, 31), c = lt::random({5}, 32);
  auto out = mx::addmm(c, a, b);  // the tall-product path
  EXPECT_EQ(out.shape(), (mx::Shape{2, 3, 5}));
  auto p = ref(a, mx::broadcast_to(b, {2, 4, 5}), 2);
  auto cv = values<double>(c);
  for (size_t i = 0; i < p.size(); ++i) p[i] += cv[i % 5];
  lt::expect_near(values<double>(out), p, 1e-5);
  // Vector operand: (3,4) @ (4,) + (3,)
  auto m = lt::random({3, 4}, 33), v = lt::random({4}, 34), cc = lt::random({3}, 35);
  auto mv = mx::addmm(cc, m, v, 1.0f, 2.0f);
  EXPECT_EQ(mv.shape(), (mx::Shape{3}));
  auto r = ref(m, mx::reshape(v, {4, 1}), 1);
  auto ccv = values<double>(cc);
  for (int i = 0; i < 3; ++i) r[i] += 2.0 * ccv[i];
  lt::expect_near(values<double>(mv), r, 1e-5);
  // Vector times matrix with a scalar c, int c promotes.
  auto vm = mx::addmm(mx::array(1), v, lt::random({4, 2}, 36));
  EXPECT_EQ(vm.shape(), (mx::Shape{2}));
  EXPECT_EQ(vm.dtype(), mx::float32);
  // Batched with broadcast batch dims and a matrix c.
  auto x = lt::random({2, 1, 3, 4}, 37), y = lt::random({3, 4, 2}, 38), z = lt::random({3, 2}, 39);
  auto o = mx::addmm(z, x, y, 1.0f, -1.0f);
  EXPECT_EQ(o.shape(), (mx::Shape{2, 3, 3, 2}));
  auto rr = ref(mx::broadcast_to(x, {2, 3, 3, 4}), mx::broadcast_to(y, {2, 3, 4, 2}), 6);
  auto zv = values<double>(z);
  for (size_t i = 0; i < rr.size(); ++i) rr[i] -= zv[i % 6];
  lt::expect_near(values<double>(o), rr, 1e-5);
}

TEST(AddMM, DtypesAndEmpty) {
  auto a = lt::random({3, 4}, 40), b = lt::random({4, 2}, 41), c = lt::random({3, 2}, 42);
  for (auto t : {mx::float16, mx::bfloat16, mx::float64}) {
    auto out = mx::addmm(mx::astype(c, t), mx::astype(a, t), mx::astype(b, t), 1.5f, 1.0f);
    EXPECT_EQ(out.dtype(), t);
    auto p = ref(mx::astype(a, t), mx::astype(b, t), 1);
    auto cv = values<double>(mx::astype(c, t));
    for (size_t i = 0; i < p.size(); ++i) p[i] = 1.5 * p[i] + cv[i];
    lt::expect_near(values<double>(out), p, t == mx::float64 ? 1e-6 : 2e-2, mx::dtype_name(t));
  }
  // K = 0: beta · c.
  auto k0 = mx::addmm(mx::full({2, 3}, 4.0f), mx::ones({2, 0}), mx::ones({0, 3}), 1.0f, 0.5f);
  for (double v : values<double>(k0)) EXPECT_EQ(v, 2.0);
  // Complex falls back to element-wise arithmetic.
  auto cz = mx::addmm(mx::astype(c, mx::complex64), a, b);
  EXPECT_EQ(cz.dtype(), mx::complex64);
  auto p = ref(a, b, 1);
  auto cv = values<double>(c);
  auto got = lt::cvalues(cz);
  for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(got[i].real(), p[i] + cv[i], 1e-5);
}

TEST(AddMM, Errors) {
  EXPECT_EQ(lt::error_of([] { mx::addmm(mx::ones({5, 1, 1}), mx::ones({2, 3}), mx::ones({3, 4})); }),
            "[addmm] input c must broadcast to the output shape");
  EXPECT_EQ(lt::error_of([] { mx::addmm(mx::ones({3}), mx::ones({2, 3}), mx::ones({3, 4})); }),
            "[broadcast_shapes] Shapes (3) and (2,4) cannot be broadcast.");
  EXPECT_EQ(lt::error_of([] { mx::addmm(mx::array({1}), mx::array({1}, {1, 1}), mx::array({1}, {1, 1})); }),
            "[addmm] Only real floating point types are supported but int32, int32 and int32 were provided which "
            "results in int32, which is not a real floating point type.");
  EXPECT_EQ(lt::error_of([] { mx::addmm(mx::ones({2}), mx::ones({2, 3}), mx::ones({4, 2})); }),
            "[addmm] Last dimension of first input with shape (2,3) must match second to last dimension of second "
            "input with shape (4,2).");
  EXPECT_EQ(lt::error_of([] { mx::addmm(mx::ones({2}), mx::array(1.0f), mx::ones({4, 2})); }),
            "[addmm] Got 0 dimension input. Inputs must have at least one dimension.");
}

TEST(MatmulOps, InnerOuterTensordotKron) {
  auto a = mx::array({1.0f, 2.0f, 3.0f}), b = mx::array({4.0f, 5.0f, 6.0f});
  EXPECT_FLOAT_EQ(mx::inner(a, b).item<float>(), 32.0f);
  auto o = mx::outer(a, b);
  EXPECT_EQ(o.shape(), (mx::Shape{3, 3}));
  EXPECT_EQ(values<float>(o), (std::vector<float>{4, 5, 6, 8, 10, 12, 12, 15, 18}));
  EXPECT_FLOAT_EQ(mx::inner(mx::array(2.0f), mx::array(3.0f)).item<float>(), 6.0f);
  EXPECT_EQ(lt::error_of([] { mx::inner(mx::ones({2}), mx::ones({3})); }),
            "[inner] a and b must have the same last dimension.");
  // tensordot over two axes: (2,3,4) x (3,4,5) -> (2,5)
  auto x = lt::random({2, 3, 4}, 43), y = lt::random({3, 4, 5}, 44);
  auto t = mx::tensordot(x, y, 2);
  EXPECT_EQ(t.shape(), (mx::Shape{2, 5}));
  lt::expect_near(values<double>(t), lt::ref_matmul(values<double>(x), values<double>(y), 1, 2, 5, 12), 1e-5);
  // Explicit axes with a permutation: contract x axis 0 with z axis 1.
  auto z = lt::random({4, 2}, 45);
  auto tz = mx::tensordot(x, z, std::vector<int>{0}, std::vector<int>{1});  // (3,4,4)
  EXPECT_EQ(tz.shape(), (mx::Shape{3, 4, 4}));
  auto xv = values<double>(x), zv = values<double>(z), tv = values<double>(tz);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 4; ++k) {
        double s = xv[0 * 12 + i * 4 + j] * zv[k * 2 + 0] + xv[1 * 12 + i * 4 + j] * zv[k * 2 + 1];
        EXPECT_NEAR(tv[(i * 4 + j) * 4 + k], s, 1e-5);
      }
  EXPECT_EQ(lt::error_of([&] { mx::tensordot(x, y, -1); }), "[tensordot] axis must be greater or equal to 0.");
  EXPECT_EQ(lt::error_of([&] { mx::tensordot(x, y, std::vector<int>{0}, std::vector<int>{0}); }),
            "[tensordot] a and b must have the same shape on the contracted axes.");
  // kron
  auto k = mx::kron(mx::array({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2}), mx::array({0.0f, 1.0f, 1.0f, 0.0f}, {2, 2}));
  EXPECT_EQ(k.shape(), (mx::Shape{4, 4}));
  EXPECT_EQ(values<float>(k), (std::vector<float>{0, 1, 0, 2, 1, 0, 2, 0, 0, 3, 0, 4, 3, 0, 4, 0}));
  EXPECT_EQ(lt::error_of([] { mx::kron(mx::ones({0}), mx::ones({2})); }), "[kron] Input arrays cannot be empty.");
}

}  // namespace
