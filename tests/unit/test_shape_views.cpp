// Shape family, views: reshape, transpose, broadcasts, expand/squeeze, flatten/unflatten, as_strided,
// contiguous, swapaxes/moveaxis, atleast_*d. Reference values come from scalar index arithmetic.
#include <gmock/gmock.h>

#include "test_shape_util.h"
#include "core/mode.h"

using namespace shape_test;
using ::testing::HasSubstr;

namespace {

// Row-major multi-index of flat position i.
std::vector<int> unravel(size_t i, const mx::Shape& s) {
  std::vector<int> idx(s.size());
  for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
    idx[d] = static_cast<int>(i % s[d]);
    i /= s[d];
  }
  return idx;
}
size_t ravel(const std::vector<int>& idx, const mx::Shape& s) {
  size_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + idx[d];
  return f;
}

}  // namespace

TEST(ShapeViews, ReshapeValuesStateAndSharing) {
  auto a = iota({2, 3, 4});
  auto b = mx::reshape(a, {4, -1});
  EXPECT_EQ(b.shape(), mx::Shape({4, 6}));
  ASSERT_TRUE(b.has_primitive());
  EXPECT_EQ(b.node()->def->name, "Reshape");
  EXPECT_EQ(state(b).ints(0), std::vector<int32_t>({4, -1}));  // recorded as requested
  auto v = values<float>(b);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(v[i], i);
  EXPECT_EQ(b.buffer(), a.buffer());
  // Same shape: no node.
  EXPECT_TRUE(mx::reshape(a, {2, 3, 4}).is_same(a));
  // Scalars and size-1 shapes.
  auto s = mx::reshape(mx::array(5.0f), {1, 1});
  EXPECT_EQ(values<float>(s), std::vector<float>({5}));
  EXPECT_EQ(mx::reshape(s, {}).shape(), mx::Shape{});
}

TEST(ShapeViews, ReshapeOfNonContiguousCopiesOrRestrides) {
  auto a = iota({4, 6});
  // A transpose cannot be re-strided to a flat vector: the kernel copies.
  auto t = mx::transpose(a);
  auto f = mx::reshape(t, {24});
  auto v = values<float>(f);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(v[i], (i % 4) * 6 + i / 4);
  EXPECT_NE(f.buffer(), a.buffer());
  EXPECT_TRUE(f.row_contiguous());
  // Splitting a strided axis needs no copy.
  auto c = mx::slice(a, {0, 0}, {4, 6}, {1, 2});  // (4,3) columns 0,2,4
  auto r = mx::reshape(c, {2, 2, 3});
  auto rv = values<float>(r);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(rv[i], (i / 3) * 6 + (i % 3) * 2);
  EXPECT_EQ(r.buffer(), a.buffer());
  // Merging rows of a column slice is not expressible: copy, values still right.
  auto m = mx::reshape(c, {12});
  auto mv = values<float>(m);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(mv[i], (i / 3) * 6 + (i % 3) * 2);
  // A broadcast view reshaped keeps stride 0 where possible.
  auto bc = mx::broadcast_to(mx::reshape(mx::arange(3.0), {3, 1}), {3, 4});
  auto br = mx::reshape(bc, {3, 2, 2});
  auto bv = values<float>(br);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(bv[i], i / 4);
  // View of a view of a view.
  auto vv = mx::reshape(mx::transpose(mx::reshape(mx::transpose(a), {2, 2, 6})), {24});
  auto vvv = values<float>(vv);
  auto ref_in = values<float>(mx::reshape(mx::transpose(a), {2, 2, 6}));
  // reference: transpose of (2,2,6) then flatten
  for (int i = 0; i < 24; ++i) {
    auto idx = unravel(i, {6, 2, 2});
    EXPECT_EQ(vvv[i], ref_in[ravel({idx[2], idx[1], idx[0]}, {2, 2, 6})]);
  }
}

TEST(ShapeViews, ReshapeEveryDtypeThroughCopy) {
  for (auto t : all_dtypes()) {
    auto a = iota({3, 5}, t);
    auto f = mx::reshape(mx::transpose(a), {15});
    auto in = bytes(a);
    auto out = bytes(f);
    const size_t isz = t.size;
    ASSERT_EQ(out.size(), 15 * isz);
    for (int i = 0; i < 15; ++i) {
      int src = (i % 3) * 5 + i / 3;
      EXPECT_EQ(0, std::memcmp(&out[i * isz], &in[src * isz], isz)) << mx::dtype_name(t) << " " << i;
    }
  }
}

TEST(ShapeViews, ReshapeEmptyAndErrors) {
  auto e = mx::zeros({0, 3});
  EXPECT_EQ(mx::reshape(e, {-1, 3}).shape(), mx::Shape({0, 3}));
  EXPECT_EQ(mx::reshape(e, {3, 0, 5}).shape(), mx::Shape({3, 0, 5}));
  mx::eval(mx::reshape(e, {3, 0}));
  auto x = mx::zeros({2, 3});
  EXPECT_EQ(error_of([&] { mx::reshape(x, {4}); }), "[reshape] Cannot reshape array of size 6 into shape (4).");
  EXPECT_EQ(error_of([&] { mx::reshape(x, {-1, -1}); }), "[reshape] Reshape can only infer one dimension.");
  EXPECT_EQ(error_of([&] { mx::reshape(x, {0, -1}); }), "[reshape] Cannot infer the shape of an empty array");
  EXPECT_EQ(error_of([&] { mx::reshape(x, {-1, 4}); }), "[reshape] Cannot reshape array of size 6 into shape (1,4).");
  EXPECT_EQ(error_of([&] { mx::reshape(x, {-2, -3}); }),
            "[reshape] Cannot reshape array of size 6 into shape (-2,-3).");
  // The shape rule used for files and replay resolves -1 from the input.
  auto& d = mx::registry::get("Reshape");
  auto sp = d.infer(mx::State{std::vector<int32_t>{-1, 2}}, {{mx::Shape{4, 5}, mx::float32}});
  EXPECT_EQ(sp[0].shape, mx::Shape({10, 2}));
  EXPECT_THAT(error_of([&] { d.infer(mx::State{std::vector<int32_t>{3, -1}}, {{mx::Shape{4, 5}, mx::float32}}); }),
              HasSubstr("Cannot reshape array of size 20 into shape (3,6)"));
}

TEST(ShapeViews, TransposeValuesNegativeAxesAndErrors) {
  auto a = iota({2, 3, 4});
  auto t = mx::transpose(a, {-1, 0, 1});
  EXPECT_EQ(t.shape(), mx::Shape({4, 2, 3}));
  EXPECT_EQ(state(t).ints(0), std::vector<int32_t>({2, 0, 1}));
  auto v = values<float>(t);
  for (size_t i = 0; i < 24; ++i) {
    auto idx = unravel(i, {4, 2, 3});
    EXPECT_EQ(v[i], ravel({idx[1], idx[2], idx[0]}, {2, 3, 4}));
  }
  EXPECT_EQ(t.buffer(), a.buffer());
  EXPECT_EQ(mx::transpose(a).shape(), mx::Shape({4, 3, 2}));
  // Identity permutations still record a node, as MLX does.
  EXPECT_TRUE(mx::transpose(a, {0, 1, 2}).has_primitive());
  EXPECT_EQ(error_of([&] { mx::transpose(a, {0, 1}); }), "[transpose] Recived 2 axes for array with 3 dimensions.");
  EXPECT_EQ(error_of([&] { mx::transpose(a, {0, 1, 3}); }), "[transpose] Invalid axis (3) for array with 3 dimensions.");
  EXPECT_EQ(error_of([&] { mx::transpose(a, {0, 0, 1}); }), "[transpose] Repeat axes not allowed.");
  EXPECT_EQ(error_of([&] { mx::transpose(a, {0, 1, -4}); }),
            "[transpose] Invalid axis (-1) for array with 3 dimensions.");
}

TEST(ShapeViews, SwapaxesMoveaxis) {
  auto a = iota({2, 3, 4});
  auto s = mx::swapaxes(a, 0, -1);
  EXPECT_EQ(state(s).ints(0), std::vector<int32_t>({2, 1, 0}));
  auto m = mx::moveaxis(a, 0, 2);
  EXPECT_EQ(state(m).ints(0), std::vector<int32_t>({1, 2, 0}));
  EXPECT_EQ(m.shape(), mx::Shape({3, 4, 2}));
  auto v = values<float>(m);
  for (size_t i = 0; i < 24; ++i) {
    auto idx = unravel(i, {3, 4, 2});
    EXPECT_EQ(v[i], ravel({idx[2], idx[0], idx[1]}, {2, 3, 4}));
  }
  EXPECT_TRUE(mx::moveaxis(a, 1, -2).is_same(a));
  EXPECT_EQ(range_error_of([&] { mx::swapaxes(a, 3, 0); }), "[swapaxes] Invalid axis 3 for array with 3 dimensions.");
  EXPECT_EQ(range_error_of([&] { mx::moveaxis(a, 0, -4); }), "[moveaxis] Invalid axis -4 for array with 3 dimensions.");
}

TEST(ShapeViews, BroadcastToValuesAndErrors) {
  auto a = mx::reshape(iota({3}), {3, 1});
  auto b = mx::broadcast_to(a, {2, 3, 4});
  EXPECT_EQ(b.node()->def->name, "Broadcast");
  EXPECT_EQ(b.inputs().size(), 1u);
  auto v = values<float>(b);
  for (size_t i = 0; i < 24; ++i) EXPECT_EQ(v[i], unravel(i, {2, 3, 4})[1]);
  EXPECT_EQ(b.buffer(), a.buffer());
  EXPECT_TRUE(mx::broadcast_to(a, {3, 1}).is_same(a));
  auto x = mx::zeros({2, 3});
  EXPECT_EQ(error_of([&] { mx::broadcast_to(x, {3, 3}); }),
            "[broadcast_shapes] Shapes (2,3) and (3,3) cannot be broadcast.");
  EXPECT_EQ(error_of([&] { mx::broadcast_to(x, {3}); }),
            "[broadcast_to] Cannot broadcast array of shape (2,3) into shape (3).");
  EXPECT_THAT(error_of([&] { mx::broadcast_to(mx::zeros({1, 3}), {-1, 3}); }), HasSubstr("non-negative"));
  // Empty target.
  auto e = mx::broadcast_to(mx::zeros({1, 3}), {0, 3});
  EXPECT_EQ(values<float>(e).size(), 0u);
}

TEST(ShapeViews, BroadcastArraysStaticAndShapeless) {
  auto x = mx::zeros({3, 4}), y = mx::zeros({2, 3, 1}), z = mx::array(1.0f);
  auto st = mx::broadcast_arrays({x, y, z});
  for (auto& o : st) {
    EXPECT_EQ(o.shape(), mx::Shape({2, 3, 4}));
    EXPECT_EQ(o.inputs().size(), 1u);
  }
  {
    mx::detail::TraceGuard g(true);
    auto sl = mx::broadcast_arrays({x, y, z});
    ASSERT_EQ(sl.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(sl[i].node()->def->name, "Broadcast");
      ASSERT_EQ(sl[i].inputs().size(), 3u);
      EXPECT_EQ(sl[i].shape(), mx::Shape({2, 3, 4}));
    }
    // Input 0 is the broadcast array, then the others in order.
    EXPECT_TRUE(sl[0].inputs()[0].is_same(x));
    EXPECT_EQ(sl[0].inputs()[1].shape(), y.shape());
    EXPECT_EQ(sl[0].inputs()[2].shape(), z.shape());
    EXPECT_EQ(sl[1].inputs()[1].shape(), x.shape());
    // The multi-input shape rule is the broadcast of all inputs.
    auto sp = sl[0].node()->def->infer(sl[0].node()->state, {{{5, 1}, mx::float32}, {{7, 1, 6}, mx::float32}});
    EXPECT_EQ(sp[0].shape, mx::Shape({7, 5, 6}));
    auto v = values<float>(sl[2]);
    EXPECT_EQ(v, std::vector<float>(24, 1.0f));
  }
  EXPECT_THAT(error_of([&] { mx::broadcast_arrays({x, mx::zeros({3, 2})}); }), HasSubstr("cannot be broadcast"));
}

TEST(ShapeViews, BroadcastArraysIgnoreAxes) {
  auto a = iota({3, 4}), b = mx::zeros({2, 4, 5});
  auto st = mx::broadcast_arrays({a, b}, {-2, -1});
  EXPECT_EQ(st[0].shape(), mx::Shape({2, 3, 4}));
  EXPECT_TRUE(st[1].is_same(b));
  auto v = values<float>(st[0]);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(v[i], i % 12);
  mx::detail::TraceGuard g(true);
  auto sl = mx::broadcast_arrays({a, b}, {-2, -1});
  EXPECT_EQ(sl[0].node()->def->name, "BroadcastAxes");
  EXPECT_EQ(state(sl[0]).ints(0), std::vector<int32_t>({-2, -1}));
  ASSERT_EQ(sl[0].inputs().size(), 2u);
  EXPECT_EQ(sl[0].shape(), mx::Shape({2, 3, 4}));
  auto& d = mx::registry::get("BroadcastAxes");
  auto sp = d.infer(mx::State{std::vector<int32_t>{-2, -1}}, {{{7, 3, 4}, mx::float32}, {{5, 1, 4, 6}, mx::float32}});
  EXPECT_EQ(sp[0].shape, mx::Shape({5, 7, 3, 4}));
  EXPECT_EQ(values<float>(sl[0]), v);
  EXPECT_THAT(error_of([&] { d.infer(mx::State{std::vector<int32_t>{-1, -2}}, {{{3, 4}, mx::float32}}); }),
              HasSubstr("invalid axes to ignore"));
}

TEST(ShapeViews, ExpandDimsAndSqueeze) {
  auto a = iota({2, 3});
  auto e = mx::expand_dims(a, {0, -1});
  EXPECT_EQ(e.shape(), mx::Shape({1, 2, 3, 1}));
  EXPECT_EQ(state(e).ints(0), std::vector<int32_t>({0, 3}));
  e.eval();
  EXPECT_EQ(e.buffer(), a.buffer());
  EXPECT_EQ(mx::expand_dims(a, 1).shape(), mx::Shape({2, 1, 3}));
  EXPECT_TRUE(mx::expand_dims(a, std::vector<int>{}).is_same(a));
  EXPECT_EQ(values<float>(e), values<float>(a));
  EXPECT_EQ(error_of([&] { mx::expand_dims(a, 3); }), "[expand_dims] Invalid axis 3 for output array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { mx::expand_dims(a, {0, 0}); }), "[expand_dims] Received duplicate axes.");
  EXPECT_EQ(error_of([&] { mx::expand_dims(a, {0, -4}); }), "[expand_dims] Received duplicate axes.");

  auto sq = mx::squeeze(e);
  EXPECT_EQ(sq.shape(), mx::Shape({2, 3}));
  EXPECT_EQ(state(sq).ints(0), std::vector<int32_t>({0, 3}));
  EXPECT_EQ(mx::squeeze(e, -1).shape(), mx::Shape({1, 2, 3}));
  EXPECT_EQ(mx::squeeze(e, {-1, 0}).shape(), mx::Shape({2, 3}));
  EXPECT_EQ(state(mx::squeeze(e, {-1, 0})).ints(0), std::vector<int32_t>({0, 3}));
  // squeeze() with nothing to squeeze still records a node (MLX does).
  EXPECT_TRUE(mx::squeeze(a).has_primitive());
  EXPECT_TRUE(mx::squeeze(a, std::vector<int>{}).is_same(a));
  EXPECT_EQ(values<float>(sq), values<float>(a));
  sq.eval();
  EXPECT_EQ(sq.buffer(), a.buffer());
  EXPECT_EQ(error_of([&] { mx::squeeze(a, 0); }),
            "[squeeze] Cannot squeeze axis 0 with size 2 which is not equal to 1.");
  EXPECT_EQ(error_of([&] { mx::squeeze(a, 5); }), "[squeeze] Invalid axes 5 for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { mx::squeeze(e, {0, -4}); }), "[squeeze] Received duplicate axes.");
  // A file's Squeeze that names a non-unit axis is refused by the shape rule.
  auto& d = mx::registry::get("Squeeze");
  EXPECT_THAT(error_of([&] { d.infer(mx::State{std::vector<int32_t>{1}}, {{{2, 3}, mx::float32}}); }),
              HasSubstr("Cannot squeeze axis 1"));
  EXPECT_THAT(error_of([&] { d.infer(mx::State{std::vector<int32_t>{2}}, {{{2, 1}, mx::float32}}); }),
              HasSubstr("Invalid axes"));
}

TEST(ShapeViews, ExpandSqueezeOfStridedViews) {
  auto a = iota({4, 6});
  auto c = mx::slice(a, {1, 0}, {4, 6}, {2, 3});  // rows 1,3; cols 0,3
  auto e = mx::expand_dims(mx::transpose(c), 1);
  EXPECT_EQ(e.shape(), mx::Shape({2, 1, 2}));
  EXPECT_EQ(values<float>(e), std::vector<float>({6, 18, 9, 21}));
  EXPECT_EQ(values<float>(mx::squeeze(e)), std::vector<float>({6, 18, 9, 21}));
}

TEST(ShapeViews, FlattenUnflatten) {
  auto a = iota({2, 3, 4});
  auto f = mx::flatten(a);
  EXPECT_EQ(f.node()->def->name, "Flatten");
  EXPECT_EQ(state(f).i(0), 0);
  EXPECT_EQ(state(f).i(1), 2);
  EXPECT_EQ(f.shape(), mx::Shape({24}));
  f.eval();
  EXPECT_EQ(f.buffer(), a.buffer());
  EXPECT_EQ(mx::flatten(a, 1, -1).shape(), mx::Shape({2, 12}));
  EXPECT_EQ(mx::flatten(a, -5, 5).shape(), mx::Shape({24}));
  EXPECT_TRUE(mx::flatten(a, 1, 1).is_same(a));
  auto z = mx::flatten(mx::array(3.0f));
  EXPECT_EQ(z.node()->def->name, "Reshape");
  EXPECT_EQ(z.shape(), mx::Shape({1}));
  // Non-contiguous input copies and keeps the logical order.
  auto ft = mx::flatten(mx::transpose(a, {2, 0, 1}));
  auto v = values<float>(ft);
  for (size_t i = 0; i < 24; ++i) {
    auto idx = unravel(i, {4, 2, 3});
    EXPECT_EQ(v[i], ravel({idx[1], idx[2], idx[0]}, {2, 3, 4}));
  }
  EXPECT_EQ(error_of([&] { mx::flatten(a, 1, 0); }), "[flatten] start_axis must be less than or equal to end_axis");
  EXPECT_EQ(error_of([&] { mx::flatten(a, 3, 4); }), "[flatten] start_axis must be less than or equal to end_axis");
  EXPECT_EQ(error_of([&] { mx::flatten(a, 3, 5); }), "[flatten] start_axis must be less than or equal to end_axis");

  auto u = mx::unflatten(f, 0, {2, -1, 3});
  EXPECT_EQ(u.shape(), mx::Shape({2, 4, 3}));
  EXPECT_EQ(state(u).get<std::vector<int32_t>>(1), std::vector<int32_t>({2, 4, 3}));
  EXPECT_EQ(values<float>(u), values<float>(a));
  EXPECT_TRUE(mx::unflatten(a, 1, {3}).is_same(a));
  auto ut = mx::unflatten(mx::transpose(a), -1, {1, 2});
  EXPECT_EQ(ut.shape(), mx::Shape({4, 3, 1, 2}));
  EXPECT_EQ(values<float>(ut), values<float>(mx::transpose(a)));
  EXPECT_EQ(error_of([&] { mx::unflatten(a, 3, {1, 3}); }), "[unflatten] Invalid axes 3 for array with 3 dimensions.");
  EXPECT_EQ(error_of([&] { mx::unflatten(a, 1, {-1, -1}); }), "[Unflatten] Can only infer one dimension.");
  EXPECT_EQ(error_of([&] { mx::unflatten(a, -1, {3, 3}); }),
            "[Unflatten] Cannot unflatten axis -1 with size 4 into shape (3,3).");
  EXPECT_EQ(error_of([&] { mx::unflatten(a, 0, {}); }), "[unflatten] Shape to unflatten to cannot be empty.");
}

TEST(ShapeViews, AsStrided) {
  auto a = iota({2, 3, 4});
  auto s = mx::as_strided(a, {2, 2}, {1, 2}, 3);
  auto names = primitives(s);
  EXPECT_EQ(names, std::vector<std::string>({"Flatten", "AsStrided"}));
  EXPECT_EQ(values<float>(s), std::vector<float>({3, 5, 4, 6}));
  s.eval();
  EXPECT_EQ(s.buffer(), a.buffer());
  // A non-contiguous input is read in its logical (row-major) order.
  auto t = mx::as_strided(mx::transpose(a), {3}, {5}, 1);
  auto tv = values<float>(mx::flatten(mx::transpose(a)));
  EXPECT_EQ(values<float>(t), std::vector<float>({tv[1], tv[6], tv[11]}));
  // Overlapping windows (a sliding view).
  auto w = mx::as_strided(mx::arange(6.0), {4, 3}, {1, 1}, 0);
  EXPECT_EQ(values<float>(w), std::vector<float>({0, 1, 2, 1, 2, 3, 2, 3, 4, 3, 4, 5}));
  EXPECT_THAT(error_of([&] { mx::as_strided(a, {2, 2}, {23, 1}, 0); }), HasSubstr("reaches outside"));
  EXPECT_THAT(error_of([&] { mx::as_strided(a, {2}, {-1}, 0); }), HasSubstr("reaches outside"));
  EXPECT_THAT(error_of([&] { mx::as_strided(a, {2}, {1, 1}, 0); }), HasSubstr("strides"));
  EXPECT_EQ(values<float>(mx::as_strided(a, {0, 5}, {100, 100}, 0)).size(), 0u);
  EXPECT_FALSE(mx::registry::get("AsStrided").shapeless);
}

TEST(ShapeViews, Contiguous) {
  auto a = iota({3, 4});
  auto c = mx::contiguous(mx::transpose(a));
  EXPECT_EQ(c.node()->def->name, "Contiguous");
  EXPECT_TRUE(mx::registry::get("Contiguous").flags & mx::kNotSerializable);
  c.eval();
  EXPECT_TRUE(c.row_contiguous());
  auto v = values<float>(c);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(v[i], (i % 3) * 4 + i / 3);
  auto same = mx::contiguous(a);
  same.eval();
  EXPECT_EQ(same.buffer(), a.buffer());
  auto col = mx::contiguous(mx::transpose(a), true);
  col.eval();
  EXPECT_EQ(col.buffer(), a.buffer());
}

TEST(ShapeViews, Atleast) {
  auto s = mx::array(2.0f);
  EXPECT_EQ(mx::atleast_1d(s).shape(), mx::Shape({1}));
  EXPECT_EQ(mx::atleast_2d(s).shape(), mx::Shape({1, 1}));
  EXPECT_EQ(mx::atleast_3d(s).shape(), mx::Shape({1, 1, 1}));
  auto v = iota({4});
  EXPECT_TRUE(mx::atleast_1d(v).is_same(v));
  EXPECT_EQ(mx::atleast_2d(v).shape(), mx::Shape({1, 4}));
  EXPECT_EQ(mx::atleast_3d(v).shape(), mx::Shape({1, 4, 1}));
  EXPECT_EQ(mx::atleast_3d(iota({2, 3})).shape(), mx::Shape({2, 3, 1}));
  EXPECT_EQ(mx::atleast_3d(iota({2, 3})).node()->def->name, "Reshape");
  auto m = mx::atleast_2d(std::vector<mx::array>{s, v, iota({2, 3})});
  EXPECT_EQ(m[0].shape(), mx::Shape({1, 1}));
  EXPECT_EQ(m[1].shape(), mx::Shape({1, 4}));
  EXPECT_EQ(m[2].shape(), mx::Shape({2, 3}));
  EXPECT_EQ(values<float>(mx::atleast_3d(v)), std::vector<float>({0, 1, 2, 3}));
}
