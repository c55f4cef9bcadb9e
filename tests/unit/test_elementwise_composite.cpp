// Element-wise composites (where, clip, isclose, allclose, array_equal, isnan and friends, degrees,
// radians, reciprocal, nan_to_num) against values from MLX 0.30.1, and the graphs they build.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include "unit/elementwise_test_util.h"

namespace {

using namespace ew_test;
using ::testing::HasSubstr;

TEST(ElementwiseComposite, WherePromotesAndBroadcastsAllThree) {
  mx::array w = mx::where(mx::array({1, 0, 2}), make({1, 2, 3}, mx::int8), mx::array(0.5f));
  EXPECT_EQ(w.dtype(), mx::float32);
  expect_values(w, {1.0, 0.5, 3.0}, "where int cond");
  mx::array w2 = mx::where(mx::array({true, false}, {2, 1}), mx::array({1, 2, 3}), mx::array({10, 20}, {2, 1}));
  EXPECT_EQ(w2.shape(), mx::Shape({2, 3}));
  EXPECT_EQ(w2.dtype(), mx::int32);
  expect_values(w2, {1, 2, 3, 20, 20, 20}, "where broadcast");
  // Every dtype goes through (Select copies bits by element width).
  for (int code = 0; code < 14; ++code) {
    mx::Dtype t = mx::dtype_from_code(code);
    mx::array x = make({1, 0, 1}, t), y = make({0, 1, 0}, t);
    mx::array r = mx::where(mx::array({true, true, false}), x, y);
    EXPECT_EQ(r.dtype(), t) << mx::dtype_name(t);
    expect_values(r, {1, 0, 0}, "where " + mx::dtype_name(t));
  }
  auto c = values_c(mx::where(mx::array({false, true}), make_c({{1, 2}, {3, 4}}), make_c({{5, 6}, {7, 8}})));
  EXPECT_EQ(c[0], std::complex<float>(5, 6));
  EXPECT_EQ(c[1], std::complex<float>(3, 4));
  // Non-contiguous operands and the graph: Select of (bool condition, x, y).
  mx::array m = mx::reshape(mx::arange(6, mx::float32), {2, 3});
  mx::array t = mx::transpose(m);
  mx::array sel = mx::where(t > 2.0f, t, mx::negative(t));
  ASSERT_TRUE(sel.has_primitive());
  EXPECT_EQ(sel.node()->def->name, "Select");
  EXPECT_EQ(sel.inputs().size(), 3u);
  EXPECT_EQ(sel.inputs()[0].dtype(), mx::bool_);
  expect_values(sel, {0, 3, -1, 4, -2, 5}, "where transposed");
  EXPECT_EQ(mx::where(mx::zeros({0, 2}, mx::bool_), mx::array(1.0f), mx::array(2.0f)).shape(), mx::Shape({0, 2}));
  EXPECT_THROW(mx::where(mx::zeros({2}, mx::bool_), mx::zeros({3}), mx::zeros({2})), std::invalid_argument);
}

TEST(ElementwiseComposite, Clip) {
  expect_values(mx::clip(mx::array({1, 5, 10}), mx::array(2), mx::array(8)), {2, 5, 8}, "clip both");
  expect_values(mx::clip(mx::array({1.0f, 5.0f, 10.0f}), mx::array({0.0f, 6.0f, 20.0f}), std::nullopt), {1, 6, 20},
                "clip min array");
  mx::array up = mx::clip(mx::array({1, 5, 10}), std::nullopt, mx::array(4.5f));
  EXPECT_EQ(up.dtype(), mx::float32);
  expect_values(up, {1, 4.5, 4.5}, "clip max promotes");
  expect_values(mx::clip(make({N, 3}, mx::float32), mx::array(0.0f), mx::array(1.0f)), {N, 1}, "clip NaN");
  try {
    mx::clip(mx::array({1}), std::nullopt, std::nullopt);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("At most one of a_min and a_max may be None"));
  }
}

TEST(ElementwiseComposite, IsCloseAndAllClose) {
  mx::array a = make({1.0, 1.0, I, I, -I, N, 1e-9, 100.0, 0.0, 1.00001}, mx::float32);
  mx::array b = make({1.0, 1.1, I, -I, -I, N, 0.0, 100.001, 1e-9, 1.0}, mx::float32);
  // Values from MLX 0.30.1.
  expect_values(mx::isclose(a, b), {1, 0, 1, 0, 1, 0, 1, 1, 1, 0}, "isclose");
  expect_values(mx::isclose(a, b, 1e-5, 1e-8, true), {1, 0, 1, 0, 1, 1, 1, 1, 1, 0}, "isclose equal_nan");
  expect_values(mx::isclose(a, b, 1e-3, 1e-3), {1, 0, 1, 0, 1, 0, 1, 1, 1, 1}, "isclose loose");
  expect_values(mx::isclose(mx::array({1, 2, 3}), mx::array({1, 2, 4})), {1, 1, 0}, "isclose int");
  EXPECT_FALSE(mx::allclose(a, a).item<bool>());
  EXPECT_TRUE(mx::allclose(a, a, 1e-5, 1e-8, true).item<bool>());
  EXPECT_TRUE(mx::allclose(mx::array({1.0f, 2.0f}), mx::array({1.0f, 2.0000001f})).item<bool>());
  EXPECT_TRUE(mx::allclose(mx::ones({2, 3}), mx::array(1.0f)).item<bool>());  // broadcasts
  EXPECT_EQ(mx::allclose(a, b).ndim(), 0u);
  mx::array h = make({1.0, 2.0}, mx::float16);
  EXPECT_TRUE(mx::allclose(h, make({1.0, 2.0}, mx::bfloat16)).item<bool>());
}

TEST(ElementwiseComposite, ArrayEqual) {
  EXPECT_TRUE(mx::array_equal(mx::array({1, 2}), mx::array({1.0f, 2.0f})).item<bool>());  // dtype is irrelevant
  mx::array diff_shape = mx::array_equal(mx::array({1, 2}), mx::array({1, 2}, {1, 2}));
  EXPECT_FALSE(diff_shape.item<bool>());
  EXPECT_FALSE(diff_shape.has_primitive());  // a constant, as in MLX
  mx::array n = make({1, N}, mx::float32);
  EXPECT_FALSE(mx::array_equal(n, n).item<bool>());
  EXPECT_TRUE(mx::array_equal(n, n, true).item<bool>());
  EXPECT_TRUE(mx::array_equal(mx::array({3, 4}), mx::array({3, 4}), true).item<bool>());  // equal_nan on ints
  EXPECT_FALSE(mx::array_equal(mx::array({3, 4}), mx::array({3, 5})).item<bool>());
  EXPECT_TRUE(mx::array_equal(mx::zeros({0}), mx::zeros({0}, mx::int32)).item<bool>());
  EXPECT_TRUE(mx::array_equal(mx::transpose(mx::reshape(mx::arange(6), {2, 3})),
                              mx::array({0, 3, 1, 4, 2, 5}, {3, 2}))
                  .item<bool>());
}

TEST(ElementwiseComposite, NanInfPredicates) {
  mx::array f = make({1.0, I, N, -I}, mx::float32);
  expect_values(mx::isnan(f), {0, 0, 1, 0}, "isnan");
  expect_values(mx::isinf(f), {0, 1, 0, 1}, "isinf");
  expect_values(mx::isfinite(f), {1, 0, 0, 0}, "isfinite");
  expect_values(mx::isposinf(f), {0, 1, 0, 0}, "isposinf");
  expect_values(mx::isneginf(f), {0, 0, 0, 1}, "isneginf");
  for (mx::Dtype t : {mx::float16, mx::bfloat16, mx::float64}) {
    mx::array x = make({1.0, I, N, -I}, t);
    expect_values(mx::isnan(x), {0, 0, 1, 0}, "isnan " + mx::dtype_name(t));
    expect_values(mx::isposinf(x), {0, 1, 0, 0}, "isposinf " + mx::dtype_name(t));
    expect_values(mx::isneginf(x), {0, 0, 0, 1}, "isneginf " + mx::dtype_name(t));
    expect_values(mx::isfinite(x), {1, 0, 0, 0}, "isfinite " + mx::dtype_name(t));
  }
  // Integers and bool: constants, no comparison in the graph (as in MLX).
  mx::array i = mx::array({1, 2});
  mx::array ni = mx::isnan(i);
  ASSERT_TRUE(ni.has_primitive());
  EXPECT_NE(ni.node()->def->name, "NotEqual");
  expect_values(ni, {0, 0}, "isnan int");
  expect_values(mx::isinf(make({1, 2}, mx::uint8)), {0, 0}, "isinf uint8");
  expect_values(mx::isfinite(mx::array({true})), {1}, "isfinite bool");
  EXPECT_EQ(mx::isfinite(i).dtype(), mx::bool_);
  // Complex: only (inf, 0) counts as +inf; a NaN real or imaginary part is NaN (MLX's values).
  mx::array c = make_c({{1, INFINITY}, {INFINITY, 0}, {NAN, 1}});
  expect_values(mx::isinf(c), {0, 1, 0}, "isinf complex");
  expect_values(mx::isnan(c), {0, 0, 1}, "isnan complex");
  expect_values(mx::isfinite(c), {1, 0, 0}, "isfinite complex");
  expect_values(mx::isposinf(c), {0, 1, 0}, "isposinf complex");
  // Layouts: transposed and empty.
  mx::array m = mx::transpose(make({1.0, N, I, 2.0, -I, N}, mx::float32, {2, 3}));
  expect_values(mx::isnan(m), {0, 0, 1, 0, 0, 1}, "isnan transposed");
  EXPECT_EQ(mx::isinf(mx::zeros({0, 3})).shape(), mx::Shape({0, 3}));
}

TEST(ElementwiseComposite, DegreesRadiansReciprocal) {
  expect_values(mx::degrees(mx::array({1.0f, 3.141592653589793f})), {57.295780181884766, 180.0}, "degrees");
  mx::array r = mx::radians(mx::array({180, 90}));
  EXPECT_EQ(r.dtype(), mx::float32);
  expect_values(r, {3.1415927410125732, 1.5707963705062866}, "radians int");
  mx::array dh = mx::degrees(make({1}, mx::float16));
  EXPECT_EQ(dh.dtype(), mx::float16);
  expect_values(dh, {57.28125}, "degrees float16");
  mx::array rc = mx::reciprocal(mx::array({2, 4}));
  EXPECT_EQ(rc.dtype(), mx::float32);
  expect_values(rc, {0.5, 0.25}, "reciprocal int");
  EXPECT_EQ(mx::reciprocal(make({0.5}, mx::float16)).dtype(), mx::float16);
  expect_values(mx::reciprocal(mx::array({0.0f, -0.0f})), {I, -I}, "reciprocal zero");
}

TEST(ElementwiseComposite, NanToNum) {
  mx::array f = make({N, I, -I, 1.0}, mx::float32);
  expect_values(mx::nan_to_num(f), {0.0, 3.4028234663852886e+38, -3.4028234663852886e+38, 1.0}, "nan_to_num");
  expect_values(mx::nan_to_num(f, 5.0f, 6.0f, -7.0f), {5, 6, -7, 1}, "nan_to_num given");
  // kiln uses the real float16/bfloat16 limits here (MLX 0.30.1 substitutes 0, a bug).
  expect_values(mx::nan_to_num(make({N, I, -I}, mx::float16)), {0, 65504, -65504}, "nan_to_num float16");
  expect_values(mx::nan_to_num(make({I}, mx::bfloat16)), {3.3895313892515355e+38}, "nan_to_num bfloat16");
  mx::array i = mx::array({1, 2});
  EXPECT_TRUE(mx::nan_to_num(i).is_same(i));
  try {
    mx::nan_to_num(make({1}, mx::float64));
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("[nan_to_num] Does not yet support given type: float64."));
  }
}

TEST(ElementwiseComposite, FloorDivideAndRemainderOfFloats) {
  // floor_divide of floats is floor(a / b); remainder follows Python (the divisor's sign).
  mx::array a = make({7.5, -7.5, 7.5, -7.5, 1.0}, mx::float32);
  mx::array b = make({2.0, 2.0, -2.0, -2.0, 0.0}, mx::float32);
  expect_values(mx::floor_divide(a, b), {3, -4, -4, 3, I}, "floor_divide float");
  expect_values(mx::remainder(a, b), {1.5, 0.5, -0.5, -1.5, N}, "remainder float");
  mx::array fd = mx::floor_divide(a, b);
  ASSERT_TRUE(fd.has_primitive());
  EXPECT_EQ(fd.node()->def->name, "Floor");
  expect_values(mx::floor_divide(mx::array({7, -7}), mx::array(2.0f)), {3, -4}, "int // float");
}

TEST(ElementwiseComposite, FusedLookingChainsEvaluateLazily) {
  // A longer chain mixing families, to check the ops compose without materializing by hand.
  mx::array x = mx::reshape(mx::arange(12, mx::float32), {3, 4});
  mx::array y = mx::sigmoid(x - 5.0f) * mx::exp(-mx::abs(x) / 4.0f) + mx::where(x > 6.0f, mx::sqrt(x), mx::square(x));
  auto v = values(y);
  for (int i = 0; i < 12; ++i) {
    double xi = i;
    double want = 1.0 / (1.0 + std::exp(-(xi - 5.0))) * std::exp(-xi / 4.0) + (xi > 6 ? std::sqrt(xi) : xi * xi);
    EXPECT_NEAR(v[i], want, 2e-6 * std::max(1.0, want)) << i;
  }
}

}  // namespace
