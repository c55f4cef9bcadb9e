// Shape family, creation: arange, linspace, full/zeros/ones and *_like, eye, identity, tri, tril, triu,
// meshgrid. Expected values marked "MLX" were printed by MLX 0.30.1 (CPU) for the same call.
#include <gmock/gmock.h>

#include "test_shape_util.h"
#include "core/mode.h"

using namespace shape_test;
using ::testing::HasSubstr;

TEST(ShapeCreation, ArangeAccumulatesLikeMlx) {
  auto a = mx::arange(0.0, 3.0, 0.1);
  EXPECT_EQ(a.node()->def->name, "Arange");
  EXPECT_EQ(a.dtype(), mx::float32);
  auto v = values<double>(a);
  ASSERT_EQ(v.size(), 30u);
  // MLX: each value is the previous plus the float32 step, so the error accumulates.
  EXPECT_EQ(v[10], 1.0000001192092896);
  EXPECT_EQ(v[20], 2.000000238418579);
  EXPECT_EQ(v[29], 2.8999993801116943);
  float acc = 0.0f;
  for (size_t i = 0; i < v.size(); ++i, acc += 0.1f) EXPECT_EQ(v[i], acc);
  // MLX, float16 and bfloat16 (rounded at every step).
  auto h = values<double>(mx::arange(0.0, 10.0, 0.3, mx::float16));
  ASSERT_EQ(h.size(), 34u);
  EXPECT_EQ(h[1], 0.300048828125);
  EXPECT_EQ(h[3], 0.900390625);
  EXPECT_EQ(h[14], 4.203125);
  EXPECT_EQ(h[33], 9.890625);
  EXPECT_EQ(values<double>(mx::arange(-1.0, 5.0, 0.7, mx::bfloat16)),
            std::vector<double>({-1.0, -0.30078125, 0.3984375, 1.09375, 1.796875, 2.5, 3.203125, 3.90625, 4.59375}));
  // MLX, integers: start and step converted first, wrap-around on overflow.
  EXPECT_EQ(values<int>(mx::arange(0.5, 5.0, 1.5, mx::int32)), std::vector<int>({0, 2, 4}));
  EXPECT_EQ(values<int>(mx::arange(-3.0, 3.0, 0.7, mx::uint8)), std::vector<int>({253, 254, 255, 0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(values<int>(mx::arange(120.0, 140.0, 3.0, mx::int8)),
            std::vector<int>({120, 123, 126, -127, -124, -121, -118}));
  EXPECT_EQ(values<double>(mx::arange(0.0, 1.0, 0.1, mx::float64)),
            std::vector<double>({0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6, 0.7, 0.7999999999999999,
                                 0.8999999999999999}));
  EXPECT_EQ(values<float>(mx::arange(5.0, -2.0, -1.5)), std::vector<float>({5.0, 3.5, 2.0, 0.5, -1.0}));
  for (auto t : {mx::uint16, mx::uint32, mx::uint64, mx::int16, mx::int64, mx::complex64}) {
    auto x = mx::arange(1.0, 9.0, 2.0, t);
    EXPECT_EQ(x.dtype(), t);
    EXPECT_EQ(values<double>(mx::astype(x, mx::float64)), std::vector<double>({1, 3, 5, 7})) << mx::dtype_name(t);
  }
  // Overloads.
  EXPECT_EQ(mx::arange(5).dtype(), mx::int32);
  EXPECT_EQ(values<int>(mx::arange(2, 7, 2)), std::vector<int>({2, 4, 6}));
  EXPECT_EQ(values<int>(mx::arange(-2, 1)), std::vector<int>({-2, -1, 0}));
  EXPECT_EQ(mx::arange(4.0).dtype(), mx::float32);
  EXPECT_EQ(mx::arange(4.0, mx::int16).dtype(), mx::int16);
  EXPECT_EQ(values<float>(mx::arange(1.0, 3.0)), std::vector<float>({1, 2}));
  EXPECT_EQ(values<float>(mx::arange(1.0, 3.0, mx::float16)), std::vector<float>({1, 2}));
  // Empty and infinite steps (MLX: [0] and []).
  EXPECT_EQ(mx::arange(5, 0).shape(), mx::Shape({0}));
  auto inf = mx::arange(0.0, 5.0, INFINITY);
  EXPECT_FALSE(inf.has_primitive());
  EXPECT_EQ(values<float>(inf), std::vector<float>({0}));
  EXPECT_EQ(mx::arange(0.0, 5.0, -INFINITY).shape(), mx::Shape({0}));
  EXPECT_EQ(error_of([&] { mx::arange(0.0, 1.0, 0.0); }), "[arange] Maximum size exceeded.");
  EXPECT_EQ(error_of([&] { mx::arange(0.0, INFINITY, 1.0); }), "[arange] Cannot compute length.");
  EXPECT_EQ(error_of([&] { mx::arange(0.0, 5.0, NAN); }), "[arange] Cannot compute length.");
  EXPECT_EQ(error_of([&] { mx::arange(0.0, 1e12, 1.0); }), "[arange] Maximum size exceeded.");
  EXPECT_EQ(error_of([&] { mx::arange(0.0, 5.0, 1.0, mx::bool_); }), "[arange] bool not supported for arange.");
  // The shape rule (used for files) computes the length from the state.
  auto& d = mx::registry::get("Arange");
  EXPECT_EQ(d.infer(mx::State{2.0, 7.5, 2.0}, {})[0].shape, mx::Shape({3}));
  EXPECT_THAT(error_of([&] { d.infer(mx::State{0.0, 1.0, 0.0}, {}); }), HasSubstr("Maximum size exceeded"));
}

TEST(ShapeCreation, Linspace) {
  auto l = mx::linspace(0.0, 1.0, 7);
  EXPECT_EQ(values<double>(l), std::vector<double>({0.0, 0.1666666716337204, 0.3333333432674408, 0.5,
                                                     0.6666666865348816, 0.8333333134651184, 1.0}));  // MLX
  EXPECT_EQ(values<float>(mx::linspace(-2.0, 3.0, 5, mx::float16)), std::vector<float>({-2, -0.75, 0.5, 1.75, 3}));
  EXPECT_EQ(values<int>(mx::linspace(0.0, 10.0, 4, mx::int32)), std::vector<int>({0, 3, 6, 10}));
  EXPECT_EQ(values<float>(mx::linspace(3.0, 10.0, 1)), std::vector<float>({3}));
  EXPECT_EQ(mx::linspace(3.0, 10.0, 0).shape(), mx::Shape({0}));
  EXPECT_EQ(error_of([&] { mx::linspace(0.0, 1.0, -1); }), "[linspace] number of samples, -1, must be non-negative.");
}

TEST(ShapeCreation, FullZerosOnes) {
  auto f = mx::full({2, 3}, mx::array({1, 2, 3}));
  EXPECT_EQ(primitives(f), std::vector<std::string>({"Broadcast", "Full"}));
  EXPECT_EQ(f.dtype(), mx::int32);
  EXPECT_EQ(values<int>(f), std::vector<int>({1, 2, 3, 1, 2, 3}));
  f.eval();
  EXPECT_TRUE(f.row_contiguous());
  auto g = mx::full({2, 2}, 2.5f, mx::float16);
  EXPECT_EQ(g.dtype(), mx::float16);
  EXPECT_EQ(values<float>(g), std::vector<float>(4, 2.5f));
  EXPECT_EQ(mx::full({3}, 1.5).dtype(), mx::float32);
  // The fill values are cast: full(shape, int array, float dtype) adds an AsType.
  auto h = mx::full({2}, mx::array(3), mx::float64);
  EXPECT_EQ(primitives(h), std::vector<std::string>({"Broadcast", "AsType", "Full"}));
  EXPECT_EQ(values<double>(h), std::vector<double>({3, 3}));
  // Non-contiguous fill values are materialised in order.
  auto t = mx::full({2, 2}, mx::transpose(mx::array({1.f, 2.f, 3.f, 4.f}, {2, 2})));
  EXPECT_EQ(values<float>(t), std::vector<float>({1, 3, 2, 4}));
  for (auto dt : all_dtypes()) {
    auto z = mx::zeros({2, 3}, dt), o = mx::ones({3}, dt);
    EXPECT_EQ(z.dtype(), dt);
    EXPECT_EQ(values<double>(mx::astype(z, mx::float64)), std::vector<double>(6, 0.0)) << mx::dtype_name(dt);
    EXPECT_EQ(values<double>(mx::astype(o, mx::float64)), std::vector<double>(3, 1.0)) << mx::dtype_name(dt);
  }
  EXPECT_EQ(mx::zeros({0, 4}).shape(), mx::Shape({0, 4}));
  EXPECT_EQ(values<float>(mx::zeros({0, 4})).size(), 0u);
  EXPECT_EQ(mx::ones({}).shape(), mx::Shape{});
  EXPECT_EQ(error_of([&] { mx::full({-1, 2}, 1); }), "[full] Negative dimensions not allowed.");
  EXPECT_EQ(error_of([&] { mx::zeros({-1, 2}); }), "[full] Negative dimensions not allowed.");
  EXPECT_EQ(error_of([&] { mx::full({2, 2}, mx::array({1, 2, 3})); }),
            "[broadcast_shapes] Shapes (3) and (2,2) cannot be broadcast.");
}

TEST(ShapeCreation, Likes) {
  auto x = mx::astype(iota({2, 3}), mx::int16);
  auto z = mx::zeros_like(x);
  EXPECT_EQ(z.dtype(), mx::int16);
  // MLX: a constant 0 of x's dtype, broadcast, then Full (no AsType).
  EXPECT_EQ(primitives(z), std::vector<std::string>({"Broadcast", "Full"}));
  EXPECT_EQ(z.inputs()[0].inputs()[0].dtype(), mx::int16);
  EXPECT_EQ(values<int>(z), std::vector<int>(6, 0));
  EXPECT_EQ(values<int>(mx::ones_like(x)), std::vector<int>(6, 1));
  auto f = mx::full_like(x, 2.7);
  EXPECT_EQ(f.dtype(), mx::int16);
  EXPECT_EQ(values<int>(f), std::vector<int>(6, 2));
  auto g = mx::full_like(x, mx::array({1.5f, 2.5f, 3.5f}), mx::float32);
  EXPECT_EQ(values<float>(g), std::vector<float>({1.5, 2.5, 3.5, 1.5, 2.5, 3.5}));
  EXPECT_EQ(mx::full_like(x, 1, mx::bool_).dtype(), mx::bool_);
  // Under a shapeless trace the broadcast carries x as a second input.
  mx::detail::TraceGuard guard(true);
  auto s = mx::zeros_like(mx::array({1.f, 2.f}));
  EXPECT_EQ(s.inputs()[0].node()->def->name, "Broadcast");
  EXPECT_EQ(s.inputs()[0].inputs().size(), 2u);
}

TEST(ShapeCreation, EyeIdentityTri) {
  // MLX values.
  EXPECT_EQ(values<float>(mx::eye(3, 4, 1)), std::vector<float>({0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  EXPECT_EQ(values<float>(mx::eye(4, 3, -2)), std::vector<float>({0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(values<float>(mx::eye(2, 3, 5)), std::vector<float>(6, 0));
  auto e = mx::eye(3);
  if (mx::registry::find("Scatter")) {
    // MLX builds it as zeros, two aranges, ones (d,1,1) and a Scatter of type None.
    EXPECT_EQ(e.node()->def->name, "Scatter");
    EXPECT_EQ(state(e).i(0), 4);
    EXPECT_EQ(e.inputs()[3].shape(), mx::Shape({3, 1, 1}));
  }
  EXPECT_EQ(values<float>(e), std::vector<float>({1, 0, 0, 0, 1, 0, 0, 0, 1}));
  auto id = mx::identity(2, mx::int8);
  EXPECT_EQ(id.dtype(), mx::int8);
  EXPECT_EQ(values<int>(id), std::vector<int>({1, 0, 0, 1}));
  EXPECT_EQ(values<bool>(mx::eye(2, mx::bool_)), std::vector<bool>({true, false, false, true}));
  EXPECT_EQ(error_of([&] { mx::eye(0); }), "[eye] N and M must be positive integers.");

  auto t = mx::tri(3, 4, 1, mx::float32);
  EXPECT_EQ(values<float>(t), std::vector<float>({1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1}));  // MLX
  EXPECT_EQ(values<float>(mx::tri(4, 3, -1, mx::float32)),
            std::vector<float>({0, 0, 0, 1, 0, 0, 1, 1, 0, 1, 1, 1}));  // MLX
  EXPECT_EQ(primitives(mx::tri(2, mx::float32)),
            std::vector<std::string>({"Arange", "ExpandDims", "Broadcast", "Arange", "ExpandDims", "Broadcast",
                                      "GreaterEqual", "AsType"}));
}

TEST(ShapeCreation, TrilTriu) {
  auto x = iota({2, 3, 4});
  auto l = mx::tril(x);
  // MLX: the tri mask, then Select with a broadcast scalar 0.
  auto names = primitives(l);
  EXPECT_EQ(names.back(), "Select");
  EXPECT_EQ(std::count(names.begin(), names.end(), "Arange"), 2);
  auto lv = values<float>(l), uv = values<float>(mx::triu(x, 1)), xv = values<float>(x);
  auto l2 = values<float>(mx::tril(x, -1));
  for (size_t i = 0; i < 24; ++i) {
    int r = (i / 4) % 3, c = i % 4;
    EXPECT_EQ(lv[i], c <= r ? xv[i] : 0);
    EXPECT_EQ(uv[i], c >= r + 1 ? xv[i] : 0);
    EXPECT_EQ(l2[i], c <= r - 1 ? xv[i] : 0);
  }
  auto ti = mx::tril(mx::astype(mx::transpose(iota({3, 3})), mx::int64));
  EXPECT_EQ(ti.dtype(), mx::int64);
  EXPECT_EQ(values<int>(ti), std::vector<int>({0, 0, 0, 1, 4, 0, 2, 5, 8}));
  EXPECT_EQ(error_of([&] { mx::tril(mx::zeros({3})); }), "[tril] array must be at least 2-D");
  EXPECT_EQ(error_of([&] { mx::triu(mx::zeros({3})); }), "[triu] array must be at least 2-D");
}

TEST(ShapeCreation, Meshgrid) {
  auto x = mx::array({1, 2, 3}), y = mx::array({4, 5});
  auto xy = mx::meshgrid({x, y});
  EXPECT_EQ(xy[0].shape(), mx::Shape({2, 3}));
  EXPECT_EQ(values<int>(xy[0]), std::vector<int>({1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(values<int>(xy[1]), std::vector<int>({4, 4, 4, 5, 5, 5}));
  auto ij = mx::meshgrid({x, y}, false, "ij");
  EXPECT_EQ(ij[0].shape(), mx::Shape({3, 2}));
  EXPECT_EQ(values<int>(ij[1]), std::vector<int>({4, 5, 4, 5, 4, 5}));
  auto sp = mx::meshgrid({x, y}, true);
  EXPECT_EQ(sp[0].shape(), mx::Shape({1, 3}));
  EXPECT_EQ(sp[1].shape(), mx::Shape({2, 1}));
  EXPECT_EQ(error_of([&] { mx::meshgrid({x}, false, "xx"); }),
            "[meshgrid] Invalid indexing value. Valid values are 'xy' and 'ij'.");
}
