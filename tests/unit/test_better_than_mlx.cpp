// What MLX 0.30.1 could not do while the golden corpus was made (tests/golden/mlx-0.30.1/README.md) and
// kiln does: export logcumsumexp (MLX's alias table misspells its name) and contiguous (not in MLX's
// table at all); import an SVD exported with U and V (MLX throws unordered_map::at); export eigh and a
// shapeless function mixing matmul with softmax and sum (MLX's exporter crashed). Each file is written,
// imported in this process and checked against values computed directly, and its tape is inspected.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/linalg.h"
#include "test_export_util.h"

namespace mx = kiln;
using namespace kiln_test;

namespace {

bool has_primitive(const mx::FunctionInfo& f, const std::string& name) {
  for (auto& t : f.tape) {
    if (t.kind == mx::TapeEntryInfo::Kind::Primitive && t.name == name) return true;
  }
  return false;
}

void expect_close(const mx::array& got, const mx::array& want, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_TRUE(mx::allclose(got, want, tol, tol).item<bool>())
      << "max abs diff " << mx::max(mx::abs(mx::subtract(got, want))).item<float>();
}

}  // namespace

TEST(BetterThanMlx, LogcumsumexpExportsAsScanLogAddExp) {
  auto path = temp_file("logcumsumexp");
  auto fn = [](const mx::Args& a) {
    return std::vector<mx::array>{mx::logcumsumexp(a[0], -1), mx::logcumsumexp(a[0], 0, /*reverse=*/true, false)};
  };
  mx::array x = mx::reshape(mx::arange(-3.0, 3.0, 0.5, mx::float32), {3, 4});
  mx::export_function(path, fn, {x});
  auto f = mx::import_function(path);
  auto& info = f.info().functions.at(0);
  ASSERT_TRUE(has_primitive(info, "Scan"));
  for (auto& t : info.tape) {
    if (t.name == "Scan") EXPECT_EQ(std::get<int32_t>(t.state[0]), 4) << "Scan reduce type LogAddExp";
  }
  mx::array y = mx::multiply(mx::reshape(mx::arange(12, mx::float32), {3, 4}), mx::array(0.7f));
  auto got = f({y});
  auto want = fn({y});
  expect_close(got[0], want[0]);
  expect_close(got[1], want[1]);
  // Independent check of the first row: log of the running sum of exp.
  double run = 0;
  for (int j = 0; j < 4; ++j) {
    run += std::exp(0.7 * j);
    EXPECT_NEAR(mx::slice(got[0], {0, j}, {1, j + 1}).item<float>(), std::log(run), 1e-5);
  }
  std::remove(path.c_str());
}

TEST(BetterThanMlx, ContiguousExportsAsTheValuesItKeeps) {
  // contiguous() changes the layout, never the values: the file keeps what MLX can read (no Contiguous
  // node), and the imported function gives the same values for strided inputs.
  auto path = temp_file("contiguous");
  auto fn = [](const mx::Args& a) { return std::vector<mx::array>{mx::multiply(mx::contiguous(mx::transpose(a[0])), a[1])}; };
  mx::array x = mx::reshape(mx::arange(6, mx::float32), {2, 3});
  mx::array w = mx::full({3, 2}, 2.0f);
  mx::export_function(path, fn, {x, w});
  auto f = mx::import_function(path);
  EXPECT_FALSE(has_primitive(f.info().functions.at(0), "Contiguous"));
  EXPECT_TRUE(has_primitive(f.info().functions.at(0), "Transpose"));
  mx::array x2 = mx::slice(mx::reshape(mx::arange(12, mx::float32), {2, 6}), {0, 0}, {2, 6}, {1, 2});
  auto got = f({x2, w})[0];
  mx::eval(got);
  EXPECT_EQ(got.shape(), (mx::Shape{3, 2}));
  const std::vector<float> want = {0, 12, 4, 16, 8, 20};  // 2 * transpose([[0,2,4],[6,8,10]])
  auto g = mx::contiguous(got);
  mx::eval(g);
  EXPECT_EQ(std::vector<float>(g.data<float>(), g.data<float>() + 6), want);
  std::remove(path.c_str());
}

TEST(BetterThanMlx, SvdWithUAndVRoundTrips) {
  auto path = temp_file("svd_uv");
  auto fn = [](const mx::Args& a) { return mx::linalg::svd(a[0], /*compute_uv=*/true, mx::Device::cpu); };
  mx::array a({4.0f, 1.0f, -2.0f, 3.0f, 0.5f, 2.0f, 1.0f, -1.0f, 5.0f, 2.0f, 0.0f, 1.0f}, {4, 3});
  mx::export_function(path, fn, {a});
  auto f = mx::import_function(path);
  ASSERT_TRUE(has_primitive(f.info().functions.at(0), "SVD"));
  ASSERT_EQ(f.info().functions.at(0).outputs.size(), 3u);
  mx::array b({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 10.0f, -1.0f, 0.0f, 2.0f}, {4, 3});
  auto out = f({b});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].shape(), (mx::Shape{4, 4}));
  EXPECT_EQ(out[1].shape(), (mx::Shape{3}));
  EXPECT_EQ(out[2].shape(), (mx::Shape{3, 3}));
  // U[:, :3] · diag(S) · Vt reconstructs b; U and Vt are orthogonal.
  auto u3 = mx::slice(out[0], {0, 0}, {4, 3});
  auto rec = mx::matmul(mx::multiply(u3, mx::reshape(out[1], {1, 3})), out[2]);
  expect_close(rec, b, 1e-4);
  expect_close(mx::matmul(mx::transpose(out[0]), out[0]), mx::eye(4), 1e-5);
  expect_close(mx::matmul(out[2], mx::transpose(out[2])), mx::eye(3), 1e-5);
  // Singular values descend.
  auto s = mx::contiguous(out[1]);
  mx::eval(s);
  EXPECT_GE(s.data<float>()[0], s.data<float>()[1]);
  EXPECT_GE(s.data<float>()[1], s.data<float>()[2]);
  std::remove(path.c_str());
}

TEST(BetterThanMlx, EighExportsAndRuns) {
  auto path = temp_file("eigh");
  auto fn = [](const mx::Args& a) {
    auto [w, v] = mx::linalg::eigh(a[0], "L", mx::Device::cpu);
    return std::vector<mx::array>{w, v};
  };
  mx::array a({2.0f, 1.0f, 0.0f, 1.0f, 3.0f, 1.0f, 0.0f, 1.0f, 4.0f}, {3, 3});
  mx::export_function(path, fn, {a});
  auto f = mx::import_function(path);
  ASSERT_TRUE(has_primitive(f.info().functions.at(0), "Eigh"));
  mx::array b({6.0f, 2.0f, 1.0f, 2.0f, 5.0f, -2.0f, 1.0f, -2.0f, 3.0f}, {3, 3});
  auto out = f({b});
  ASSERT_EQ(out.size(), 2u);
  // b · v = v · diag(w), v orthogonal, w ascending.
  expect_close(mx::matmul(b, out[1]), mx::multiply(out[1], mx::reshape(out[0], {1, 3})), 1e-4);
  expect_close(mx::matmul(mx::transpose(out[1]), out[1]), mx::eye(3), 1e-5);
  auto w = mx::contiguous(out[0]);
  mx::eval(w);
  EXPECT_LE(w.data<float>()[0], w.data<float>()[1]);
  EXPECT_LE(w.data<float>()[1], w.data<float>()[2]);
  // The trace is invariant: sum of eigenvalues = 6 + 5 + 3.
  EXPECT_NEAR(mx::sum(out[0]).item<float>(), 14.0f, 1e-4);
  std::remove(path.c_str());
}

TEST(BetterThanMlx, ShapelessMatmulSoftmaxSumReplaysOnNewShapes) {
  auto path = temp_file("shapeless_mm_softmax");
  auto fn = [](const mx::Args& a) {
    auto h = mx::matmul(a[0], a[1]);
    auto p = mx::softmax(h, std::vector<int>{-1});
    return std::vector<mx::array>{mx::sum(mx::multiply(p, h), -1), mx::sum(p)};
  };
  mx::array x = mx::reshape(mx::arange(6, mx::float32), {2, 3});
  mx::array w = mx::multiply(mx::reshape(mx::arange(12, mx::float32), {3, 4}), mx::array(0.1f));
  mx::export_function(path, fn, {x, w}, /*shapeless=*/true);
  auto f = mx::import_function(path);
  EXPECT_TRUE(f.info().shapeless);
  for (auto [m, k, n] : {std::tuple{2, 3, 4}, std::tuple{5, 3, 7}, std::tuple{1, 8, 2}, std::tuple{3, 1, 1}}) {
    mx::array x2 = mx::multiply(mx::reshape(mx::arange(m * k, mx::float32), {m, k}), mx::array(0.05f));
    mx::array w2 = mx::cos(mx::reshape(mx::arange(k * n, mx::float32), {k, n}));
    auto got = f({x2, w2});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].shape(), (mx::Shape{m}));
    auto want = fn({x2, w2});
    expect_close(got[0], want[0]);
    expect_close(got[1], want[1]);
    EXPECT_NEAR(got[1].item<float>(), static_cast<float>(m), 1e-4);  // each softmax row sums to 1
  }
  std::remove(path.c_str());
}
