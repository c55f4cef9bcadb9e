// Element-wise composites (where, clip, isclose, allclose, array_equal, isnan and friends, degrees,
// radians, reciprocal, nan_to_num) against values from MLX 0.30.1, and the graphs they build.
#include <gtest/gtest.h>
#include <gmock/gmock.h>

#include <charconv>
#include <sstream>

#include <kiln/export.h>

#include "unit/elementwise_test_util.h"
#include "unit/test_util.h"

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

// ---- exported graphs: the same events as MLX 0.30.1 ----
//
// The expected text was printed by MLX 0.30.1 through mx.export_function(callback, f, *args) for the
// same functions written in Python (all operands arrays, so Python's scalar rules play no part), in
// the format of the shape family's export tests: primitive names, states (dtype arguments dropped,
// as MLX's callback drops them), wiring and names after MLX's simplification. (array_equal of
// different shapes gives a constant; the outputs avoid two such constants, which MLX's callback names
// apart although it merges them.)

using test_util::events;

struct EventCase {
  const char* name;
  bool shapeless;
  const char* expected;
};

const EventCase kEventCases[] = {
  {"math", false, R"(in [A:3x4:float32 B:3x4:int32]
out [C:3x4:float32 D:3x4:float32 E:3x4:float32 F:3x4:float32 G:3x4:float32 H:3x4:float32 I:3x4:float32 J:3x4:float32 K:3x4:float32 L:3x4:float32 M:3x4:float32 N:3x4:float32 O:3x4:float32 P:3x4:int32 Q:3x4:int32 R:3x4:float32 S:3x4:float32 T:3x4:int32 U:3x4:bool V:3x4:float32]
const []
AsType [] [B:3x4:int32] -> [W:3x4:float32]
Exp [] [W:3x4:float32] -> [C:3x4:float32]
Log [0] [A:3x4:float32] -> [D:3x4:float32]
Log [1] [A:3x4:float32] -> [E:3x4:float32]
Log [2] [W:3x4:float32] -> [F:3x4:float32]
Sqrt [T] [A:3x4:float32] -> [G:3x4:float32]
Sqrt [F] [W:3x4:float32] -> [H:3x4:float32]
Sigmoid [] [A:3x4:float32] -> [I:3x4:float32]
Abs [] [A:3x4:float32] -> [J:3x4:float32]
ErfInv [] [A:3x4:float32] -> [K:3x4:float32]
Log1p [] [A:3x4:float32] -> [L:3x4:float32]
Expm1 [] [W:3x4:float32] -> [M:3x4:float32]
Sin [] [A:3x4:float32] -> [N:3x4:float32]
ArcTanh [] [A:3x4:float32] -> [O:3x4:float32]
Square [] [B:3x4:int32] -> [P:3x4:int32]
Negative [] [B:3x4:int32] -> [Q:3x4:int32]
Sign [] [A:3x4:float32] -> [R:3x4:float32]
Floor [] [A:3x4:float32] -> [S:3x4:float32]
Ceil [] [B:3x4:int32] -> [T:3x4:int32]
AsType [] [A:3x4:float32] -> [X:3x4:bool]
LogicalNot [] [X:3x4:bool] -> [U:3x4:bool]
Round [] [A:3x4:float32] -> [V:3x4:float32])"},
  {"binary", false, R"(in [A:3x4:float32 B:4:float32 C:3x4:int32 D:1x4:bool]
out [E:3x4:float32 F:3x4:float32 G:3x4:float32 H:3x4:int32 I:3x4:float32 J:3x4:int32 K:3x4:float32 L:1x4:float32 M:3x4:float32 N:3x4:float32 O:3x4:bool P:3x4:bool Q:3x4:bool R:3x4:bool S:3x4:bool T:1x4:bool U:3x4:int32 V:1x4:uint8 W:3x4:int32 X:1x4:bool Y:3x4:int32 Z:3x4:float32]
const []
Broadcast [[3,4]] [B:4:float32] -> [AA:3x4:float32]
Add [] [A:3x4:float32 AA:3x4:float32] -> [E:3x4:float32]
AsType [] [C:3x4:int32] -> [AB:3x4:float32]
Divide [] [AB:3x4:float32 AB:3x4:float32] -> [F:3x4:float32]
Divide [] [AB:3x4:float32 A:3x4:float32] -> [AC:3x4:float32]
Floor [] [AC:3x4:float32] -> [G:3x4:float32]
Divide [] [C:3x4:int32 C:3x4:int32] -> [H:3x4:int32]
Remainder [] [A:3x4:float32 AA:3x4:float32] -> [I:3x4:float32]
Power [] [C:3x4:int32 C:3x4:int32] -> [J:3x4:int32]
Maximum [] [A:3x4:float32 AB:3x4:float32] -> [K:3x4:float32]
Broadcast [[1,4]] [B:4:float32] -> [AD:1x4:float32]
AsType [] [D:1x4:bool] -> [AE:1x4:float32]
Minimum [] [AD:1x4:float32 AE:1x4:float32] -> [L:1x4:float32]
LogAddExp [] [AB:3x4:float32 A:3x4:float32] -> [M:3x4:float32]
ArcTan2 [] [AA:3x4:float32 A:3x4:float32] -> [N:3x4:float32]
Equal [F] [A:3x4:float32 AB:3x4:float32] -> [O:3x4:bool]
AsType [] [D:1x4:bool] -> [AF:1x4:int32]
Broadcast [[3,4]] [AF:1x4:int32] -> [AG:3x4:int32]
NotEqual [] [AG:3x4:int32 C:3x4:int32] -> [P:3x4:bool]
Greater [] [A:3x4:float32 AA:3x4:float32] -> [Q:3x4:bool]
LessEqual [] [AB:3x4:float32 AA:3x4:float32] -> [R:3x4:bool]
AsType [] [A:3x4:float32] -> [AH:3x4:bool]
AsType [] [C:3x4:int32] -> [AI:3x4:bool]
LogicalAnd [] [AH:3x4:bool AI:3x4:bool] -> [S:3x4:bool]
AsType [] [B:4:float32] -> [AJ:4:bool]
Broadcast [[1,4]] [AJ:4:bool] -> [AK:1x4:bool]
LogicalOr [] [D:1x4:bool AK:1x4:bool] -> [T:1x4:bool]
BitwiseBinary [3] [C:3x4:int32 AG:3x4:int32] -> [U:3x4:int32]
AsType [] [D:1x4:bool] -> [AL:1x4:uint8]
BitwiseBinary [4] [AL:1x4:uint8 AL:1x4:uint8] -> [V:1x4:uint8]
BitwiseBinary [0] [C:3x4:int32 AG:3x4:int32] -> [W:3x4:int32]
BitwiseBinary [2] [D:1x4:bool D:1x4:bool] -> [X:1x4:bool]
Subtract [] [AG:3x4:int32 C:3x4:int32] -> [Y:3x4:int32]
Broadcast [[3,4]] [AE:1x4:float32] -> [AM:3x4:float32]
Multiply [] [AM:3x4:float32 A:3x4:float32] -> [Z:3x4:float32])"},
  {"composites", false, R"(in [A:3x4:float32 B:4:float32 C:3x4:int32 D:1x4:bool]
out [E:3x4:bool F::bool G::bool H::bool I:3x4:bool J:3x4:bool K:3x4:bool L:3x4:bool M:3x4:bool N:3x4:float32 O:3x4:float32 P:3x4:float32 Q:3x4:float32 R:3x4:float32 S:3x4:float32 T:3x4:int32 U:3x4:float32]
const [V::float32 W::float32 X::float32 Y::float32 G::bool Z::float32 AA::float32 AB::float32 AC::float32 AD::float32 AE::float32 AF::float32 AG::float32 AH::float32 AI::float32]
Broadcast [[3,4]] [B:4:float32] -> [AJ:3x4:float32]
Subtract [] [A:3x4:float32 AJ:3x4:float32] -> [AK:3x4:float32]
Abs [] [AK:3x4:float32] -> [AL:3x4:float32]
Broadcast [[4]] [V::float32] -> [AM:4:float32]
Broadcast [[4]] [W::float32] -> [AN:4:float32]
Abs [] [B:4:float32] -> [AO:4:float32]
Multiply [] [AN:4:float32 AO:4:float32] -> [AP:4:float32]
Add [] [AM:4:float32 AP:4:float32] -> [AQ:4:float32]
Broadcast [[3,4]] [AQ:4:float32] -> [AR:3x4:float32]
LessEqual [] [AL:3x4:float32 AR:3x4:float32] -> [AS:3x4:bool]
Broadcast [[3,4]] [X::float32] -> [AT:3x4:float32]
Equal [F] [A:3x4:float32 AT:3x4:float32] -> [AU:3x4:bool]
Broadcast [[3,4]] [Y::float32] -> [AV:3x4:float32]
Equal [F] [A:3x4:float32 AV:3x4:float32] -> [AW:3x4:bool]
LogicalOr [] [AU:3x4:bool AW:3x4:bool] -> [AX:3x4:bool]
Broadcast [[4]] [X::float32] -> [AY:4:float32]
Equal [F] [B:4:float32 AY:4:float32] -> [AZ:4:bool]
Broadcast [[4]] [Y::float32] -> [BA:4:float32]
Equal [F] [B:4:float32 BA:4:float32] -> [BB:4:bool]
LogicalOr [] [AZ:4:bool BB:4:bool] -> [BC:4:bool]
Broadcast [[3,4]] [BC:4:bool] -> [BD:3x4:bool]
LogicalOr [] [AX:3x4:bool BD:3x4:bool] -> [BE:3x4:bool]
LogicalNot [] [BE:3x4:bool] -> [BF:3x4:bool]
LogicalAnd [] [AS:3x4:bool BF:3x4:bool] -> [BG:3x4:bool]
Broadcast [[3,4]] [AZ:4:bool] -> [BH:3x4:bool]
LogicalAnd [] [AU:3x4:bool BH:3x4:bool] -> [BI:3x4:bool]
Broadcast [[3,4]] [BB:4:bool] -> [BJ:3x4:bool]
LogicalAnd [] [AW:3x4:bool BJ:3x4:bool] -> [BK:3x4:bool]
LogicalOr [] [BI:3x4:bool BK:3x4:bool] -> [BL:3x4:bool]
LogicalOr [] [BG:3x4:bool BL:3x4:bool] -> [E:3x4:bool]
Reduce [0,[0,1]] [E:3x4:bool] -> [BM:1x1:bool]
Squeeze [[0,1]] [BM:1x1:bool] -> [F::bool]
AsType [] [C:3x4:int32] -> [BN:3x4:float32]
Equal [F] [BN:3x4:float32 A:3x4:float32] -> [BO:3x4:bool]
Reduce [0,[0,1]] [BO:3x4:bool] -> [BP:1x1:bool]
Squeeze [[0,1]] [BP:1x1:bool] -> [H::bool]
NotEqual [] [A:3x4:float32 A:3x4:float32] -> [I:3x4:bool]
Broadcast [[3,4]] [G::bool] -> [BQ:3x4:bool]
Full [] [BQ:3x4:bool] -> [J:3x4:bool]
LogicalOr [] [AU:3x4:bool AW:3x4:bool] -> [K:3x4:bool]
LogicalOr [] [AX:3x4:bool I:3x4:bool] -> [BR:3x4:bool]
LogicalNot [] [BR:3x4:bool] -> [L:3x4:bool]
Full [] [BQ:3x4:bool] -> [M:3x4:bool]
Broadcast [[3,4]] [Z::float32] -> [BS:3x4:float32]
Multiply [] [BN:3x4:float32 BS:3x4:float32] -> [N:3x4:float32]
Broadcast [[3,4]] [AA::float32] -> [BT:3x4:float32]
Multiply [] [A:3x4:float32 BT:3x4:float32] -> [O:3x4:float32]
Broadcast [[3,4]] [AB::float32] -> [BU:3x4:float32]
Divide [] [BU:3x4:float32 BN:3x4:float32] -> [P:3x4:float32]
Maximum [] [A:3x4:float32 AJ:3x4:float32] -> [BV:3x4:float32]
Minimum [] [BV:3x4:float32 BN:3x4:float32] -> [Q:3x4:float32]
Broadcast [[3,4]] [D:1x4:bool] -> [BW:3x4:bool]
Select [] [BW:3x4:bool A:3x4:float32 BN:3x4:float32] -> [R:3x4:float32]
Broadcast [[3,4]] [AC::float32] -> [BX:3x4:float32]
Multiply [] [A:3x4:float32 BX:3x4:float32] -> [BY:3x4:float32]
Round [] [BY:3x4:float32] -> [BZ:3x4:float32]
Broadcast [[3,4]] [AD::float32] -> [CA:3x4:float32]
Multiply [] [BZ:3x4:float32 CA:3x4:float32] -> [S:3x4:float32]
Broadcast [[3,4]] [AE::float32] -> [CB:3x4:float32]
Multiply [] [BN:3x4:float32 CB:3x4:float32] -> [CC:3x4:float32]
Round [] [CC:3x4:float32] -> [CD:3x4:float32]
Broadcast [[3,4]] [AF::float32] -> [CE:3x4:float32]
Multiply [] [CD:3x4:float32 CE:3x4:float32] -> [CF:3x4:float32]
AsType [] [CF:3x4:float32] -> [T:3x4:int32]
Broadcast [[3,4]] [AG::float32] -> [CG:3x4:float32]
Broadcast [[3,4]] [AH::float32] -> [CH:3x4:float32]
Broadcast [[3,4]] [AI::float32] -> [CI:3x4:float32]
Select [] [I:3x4:bool CI:3x4:float32 A:3x4:float32] -> [CJ:3x4:float32]
Select [] [AU:3x4:bool CH:3x4:float32 CJ:3x4:float32] -> [CK:3x4:float32]
Select [] [AW:3x4:bool CG:3x4:float32 CK:3x4:float32] -> [U:3x4:float32])"},
  {"complex", false, R"(in [A:2x3:complex64 B:2x3:float32]
out [C:2x3:float32 D:2x3:float32 E:2x3:float32 F:2x3:complex64 B:2x3:float32 G:2x3:float32 B:2x3:float32 H:2x3:complex64 I:2x3:complex64]
const [J::float32]
Abs [] [A:2x3:complex64] -> [K:2x3:complex64]
AsType [] [K:2x3:complex64] -> [C:2x3:float32]
Real [] [A:2x3:complex64] -> [D:2x3:float32]
Imag [] [A:2x3:complex64] -> [E:2x3:float32]
Conjugate [] [A:2x3:complex64] -> [F:2x3:complex64]
Broadcast [[2,3]] [J::float32] -> [L:2x3:float32]
Full [] [L:2x3:float32] -> [G:2x3:float32]
Sign [] [A:2x3:complex64] -> [H:2x3:complex64]
Exp [] [A:2x3:complex64] -> [I:2x3:complex64])"},
  {"misc", false, R"(in [A:3x4:float32 B:3x4:int32]
out [C:3x4:float32 D:3x4:float32 E:3x16:uint8 F:3x4:int32 G:3x4:float32 H:3x4:int32]
const []
AsType [] [B:3x4:int32] -> [I:3x4:float32]
DivMod [] [I:3x4:float32 A:3x4:float32] -> [C:3x4:float32 D:3x4:float32]
View [] [A:3x4:float32] -> [E:3x16:uint8]
View [] [A:3x4:float32] -> [F:3x4:int32]
Add [] [A:3x4:float32 A:3x4:float32] -> [G:3x4:float32]
AsType [] [A:3x4:float32] -> [J:3x4:bool]
Select [] [J:3x4:bool B:3x4:int32 B:3x4:int32] -> [H:3x4:int32])"},
  {"shapeless", true, R"(in [A:3x4:float32 B:4:float32]
out [C:3x4:float32 D:3x4:float32 E:3x4:float32]
const []
Broadcast [[3,4]] [B:4:float32 A:3x4:float32] -> [F:3x4:float32]
Add [] [A:3x4:float32 F:3x4:float32] -> [C:3x4:float32]
Greater [] [A:3x4:float32 F:3x4:float32] -> [G:3x4:bool]
Broadcast [[3,4]] [B:4:float32 G:3x4:bool A:3x4:float32] -> [H:3x4:float32]
Select [] [G:3x4:bool A:3x4:float32 H:3x4:float32] -> [D:3x4:float32]
Exp [] [A:3x4:float32] -> [E:3x4:float32])"},
};

std::string expected_events(const std::string& name) {
  for (auto& c : kEventCases)
    if (name == c.name) return c.expected;
  return "";
}

TEST(ElementwiseExport, MathOpsGraphsMatchMLX) {
  auto f = [](const mx::Args& a) -> std::vector<mx::array> {
    auto &x = a[0], &i = a[1];
    return {mx::exp(i),    mx::log2(x),    mx::log10(x),    mx::log(i),     mx::rsqrt(x),      mx::sqrt(i),
            mx::sigmoid(x), mx::abs(x),    mx::erfinv(x),   mx::log1p(x),   mx::expm1(i),      mx::sin(x),
            mx::arctanh(x), mx::square(i), mx::negative(i), mx::sign(x),    mx::floor(x),      mx::ceil(i),
            mx::logical_not(x), mx::round(x)};
  };
  EXPECT_EQ(events(f, {mx::zeros({3, 4}), mx::zeros({3, 4}, mx::int32)}, false), expected_events("math"));
}

TEST(ElementwiseExport, BinaryOpsGraphsMatchMLX) {
  auto f = [](const mx::Args& a) -> std::vector<mx::array> {
    auto &x = a[0], &y = a[1], &i = a[2], &b = a[3];
    return {mx::add(x, y),          mx::divide(i, i),        mx::floor_divide(i, x), mx::floor_divide(i, i),
            mx::remainder(x, y),    mx::power(i, i),         mx::maximum(x, i),      mx::minimum(y, b),
            mx::logaddexp(i, x),    mx::arctan2(y, x),       mx::equal(x, i),        mx::not_equal(b, i),
            mx::greater(x, y),      mx::less_equal(i, y),    mx::logical_and(x, i),  mx::logical_or(b, y),
            mx::left_shift(i, b),   mx::right_shift(b, b),   mx::bitwise_and(i, b),  mx::bitwise_xor(b, b),
            mx::subtract(b, i),     mx::multiply(b, x)};
  };
  mx::Args args = {mx::zeros({3, 4}), mx::zeros({4}), mx::zeros({3, 4}, mx::int32), mx::zeros({1, 4}, mx::bool_)};
  EXPECT_EQ(events(f, args, false), expected_events("binary"));
}

TEST(ElementwiseExport, CompositeGraphsMatchMLX) {
  auto f = [](const mx::Args& a) -> std::vector<mx::array> {
    auto &x = a[0], &y = a[1], &i = a[2], &b = a[3];
    return {mx::isclose(x, y),      mx::allclose(x, y),   mx::array_equal(x, y, true), mx::array_equal(i, x),
            mx::isnan(x),           mx::isnan(i),         mx::isinf(x),                mx::isfinite(x),
            mx::isposinf(i),        mx::degrees(i),       mx::radians(x),              mx::reciprocal(i),
            mx::clip(x, y, i),      mx::where(b, x, i),   mx::round(x, 2),             mx::round(i, -1),
            mx::nan_to_num(x)};
  };
  mx::Args args = {mx::zeros({3, 4}), mx::zeros({4}), mx::zeros({3, 4}, mx::int32), mx::zeros({1, 4}, mx::bool_)};
  EXPECT_EQ(events(f, args, false), expected_events("composites"));
}

TEST(ElementwiseExport, ComplexAndMiscGraphsMatchMLX) {
  auto fc = [](const mx::Args& a) -> std::vector<mx::array> {
    auto &c = a[0], &x = a[1];
    return {mx::abs(c),  mx::real(c),      mx::imag(c), mx::conjugate(c), mx::real(x),
            mx::imag(x), mx::conjugate(x), mx::sign(c), mx::exp(c)};
  };
  EXPECT_EQ(events(fc, {mx::zeros({2, 3}, mx::complex64), mx::zeros({2, 3})}, false), expected_events("complex"));
  auto fm = [](const mx::Args& a) -> std::vector<mx::array> {
    auto &x = a[0], &i = a[1];
    auto qr = mx::divmod(i, x);
    return {qr[0], qr[1], mx::view(x, mx::uint8), mx::view(x, mx::int32), mx::stop_gradient(x) + x, mx::where(x, i, i)};
  };
  EXPECT_EQ(events(fm, {mx::zeros({3, 4}), mx::zeros({3, 4}, mx::int32)}, false), expected_events("misc"));
  auto fs = [](const mx::Args& a) -> std::vector<mx::array> {
    auto &x = a[0], &y = a[1];
    return {mx::add(x, y), mx::where(mx::greater(x, y), x, y), mx::exp(x)};
  };
  EXPECT_EQ(events(fs, {mx::zeros({3, 4}), mx::zeros({4})}, true), expected_events("shapeless"));
}

}  // namespace
