// Shape family, slicing: slice (static and dynamic), slice_update (static and dynamic), split. The
// reference for static slices is Python's slice.indices rule applied index by index.
#include <gmock/gmock.h>

#include <random>

#include "test_shape_util.h"

using namespace shape_test;
using ::testing::HasSubstr;

namespace {

// Python's slice(start, stop, step).indices(n), then the selected indices.
std::vector<int> py_indices(int n, int s, int e, int k) {
  auto fix = [&](int v) {
    if (v < 0) {
      v += n;
      if (v < 0) v = k < 0 ? -1 : 0;
    } else if (v >= n) {
      v = k < 0 ? n - 1 : n;
    }
    return v;
  };
  s = fix(s);
  e = fix(e);
  std::vector<int> out;
  for (int i = s; k > 0 ? i < e : i > e; i += k) out.push_back(i);
  return out;
}

// Reference slice of a 2-D float array held as values.
std::vector<float> ref_slice2(const std::vector<float>& x, const mx::Shape& sh, const std::vector<int>& r,
                              const std::vector<int>& c) {
  std::vector<float> out;
  for (int i : r)
    for (int j : c) out.push_back(x[i * sh[1] + j]);
  return out;
}

}  // namespace

TEST(ShapeSlicing, StaticSliceStateNormalisation) {
  auto x = iota({3, 4});
  auto a = mx::slice(x, {1, 0}, {3, 4}, {1, 2});
  EXPECT_EQ(a.node()->def->name, "Slice");
  EXPECT_EQ(state(a).ints(0), std::vector<int32_t>({1, 0}));
  EXPECT_EQ(state(a).ints(1), std::vector<int32_t>({3, 4}));
  EXPECT_EQ(state(a).ints(2), std::vector<int32_t>({1, 2}));
  EXPECT_EQ(values<float>(a), std::vector<float>({4, 6, 8, 10}));
  // Values taken from MLX 0.30.1's export of x[5:1:-1, 1:2:3]: start clamped, stop kept, stride 1.
  auto b = mx::slice(x, {5, 1}, {1, 2}, {-1, 3});
  EXPECT_EQ(b.shape(), mx::Shape({1, 1}));
  EXPECT_EQ(state(b).ints(0), std::vector<int32_t>({2, 1}));
  EXPECT_EQ(state(b).ints(1), std::vector<int32_t>({1, 2}));
  EXPECT_EQ(state(b).ints(2), std::vector<int32_t>({1, 1}));
  EXPECT_EQ(values<float>(b), std::vector<float>({9}));
  // x[::-1, ::-1] on (1,4): MLX records start (0,3), stop (-2,-5), strides (1,-1).
  auto y = iota({1, 4});
  auto c = mx::slice(y, {-1, -1}, {-2, -5}, {-1, -1});
  EXPECT_EQ(state(c).ints(0), std::vector<int32_t>({0, 3}));
  EXPECT_EQ(state(c).ints(1), std::vector<int32_t>({-2, -5}));
  EXPECT_EQ(state(c).ints(2), std::vector<int32_t>({1, -1}));
  EXPECT_EQ(values<float>(c), std::vector<float>({3, 2, 1, 0}));
  // A full slice is the input itself; a full reversed one is not.
  EXPECT_TRUE(mx::slice(x, {0, 0}, {3, 4}).is_same(x));
  EXPECT_TRUE(mx::slice(x, {-9, 0}, {9, 4}).is_same(x));
  EXPECT_FALSE(mx::slice(x, {2, 0}, {-4, 4}, {-1, 1}).is_same(x));
  // Views share the buffer.
  a.eval();
  EXPECT_EQ(a.buffer(), x.buffer());
}

TEST(ShapeSlicing, StaticSliceMatchesPythonSlicing) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> pos(-8, 8), stride(-3, 3);
  const mx::Shape sh{5, 6};
  auto x = iota(sh);
  auto xv = values<float>(x);
  // Also through a transposed (non-contiguous) input.
  auto xt = mx::transpose(iota({6, 5}));
  auto xtv = values<float>(xt);
  int checked = 0, forced_count = 0;
  for (int trial = 0; trial < 300; ++trial) {
    int s0 = pos(rng), e0 = pos(rng), k0 = stride(rng), s1 = pos(rng), e1 = pos(rng), k1 = stride(rng);
    if (k0 == 0) k0 = 1;
    if (k1 == 0) k1 = -1;
    auto r = py_indices(sh[0], s0, e0, k0), c = py_indices(sh[1], s1, e1, k1);
    auto out = mx::slice(x, {s0, s1}, {e0, e1}, {k0, k1});
    ASSERT_EQ(out.shape(), mx::Shape({static_cast<int>(r.size()), static_cast<int>(c.size())}))
        << s0 << ":" << e0 << ":" << k0 << ", " << s1 << ":" << e1 << ":" << k1;
    // The recorded state must validate the recorded shape (the file reader's check), and re-infer it
    // unless MLX forced a stride to 1 (then the state alone is ambiguous).
    if (out.has_primitive()) {
      ++checked;
      const auto& def = *out.node()->def;
      mx::State st = out.node()->state;
      EXPECT_NO_THROW(def.check(st, {{sh, mx::float32}}, {{out.shape(), mx::float32}}));
      bool forced = false;
      int ks[2] = {k0, k1};
      for (int d = 0; d < 2; ++d) forced |= st.ints(2)[d] != ks[d];
      if (!forced) {
        EXPECT_EQ(def.infer(st, {{sh, mx::float32}})[0].shape, out.shape());
      } else {
        ++forced_count;
      }
    }
    EXPECT_EQ(values<float>(out), ref_slice2(xv, sh, r, c));
    auto out2 = mx::slice(xt, {s0, s1}, {e0, e1}, {k0, k1});
    EXPECT_EQ(values<float>(out2), ref_slice2(xtv, sh, r, c));
  }
  EXPECT_GT(checked, 200);
  EXPECT_GT(forced_count, 20);
}

// Records written by MLX 0.30.1 whose Slice shape the state alone does not determine.
TEST(ShapeSlicing, SliceCheckAcceptsMlxRecords) {
  auto& d = mx::registry::get("Slice");
  auto check = [&](mx::Shape start, mx::Shape stop, mx::Shape strides, mx::Shape in, mx::Shape out) {
    return error_of([&] { d.check(mx::State{start, stop, strides}, {{in, mx::float32}}, {{out, mx::float32}}); });
  };
  // x[:, ::2] on (3,2), x[::-1] on (1,2), x[2:1] on (3,2) (exported by MLX 0.30.1).
  EXPECT_EQ(check({0, 0}, {3, 2}, {1, 1}, {3, 2}, {3, 1}), "");
  EXPECT_EQ(check({0, 0}, {-2, 2}, {1, 1}, {1, 2}, {1, 2}), "");
  EXPECT_EQ(check({2, 0}, {1, 2}, {1, 1}, {3, 2}, {0, 2}), "");
  // Impossible records.
  EXPECT_THAT(check({0, 0}, {3, 2}, {1, 1}, {3, 2}, {3, 3}), HasSubstr("does not follow"));
  EXPECT_THAT(check({0, 0}, {3, 4}, {1, 2}, {3, 4}, {3, 1}), HasSubstr("does not follow"));
  EXPECT_THAT(check({3, 0}, {4, 2}, {1, 1}, {3, 2}, {1, 2}), HasSubstr("does not follow"));
  EXPECT_THAT(check({0}, {3}, {1}, {3, 2}, {3}), HasSubstr("Invalid number"));
  // The ops record exactly these states.
  auto a = mx::slice(mx::zeros({3, 2}), {0, 0}, {3, 2}, {1, 2});
  EXPECT_EQ(state(a).ints(2), std::vector<int32_t>({1, 1}));
  EXPECT_EQ(a.shape(), mx::Shape({3, 1}));
}

TEST(ShapeSlicing, SliceOfSliceAndEveryDtype) {
  for (auto t : all_dtypes()) {
    auto x = iota({4, 6}, t);
    auto a = mx::slice(x, {3, 5}, {-5, -7}, {-1, -2});  // rows 3..0, cols 5,3,1
    auto b = mx::slice(a, {1, 0}, {4, 3}, {2, 2});        // rows 2,0 ; cols 5,1
    auto in = bytes(x), out = bytes(b);
    const size_t isz = t.size;
    std::vector<int> src{2 * 6 + 5, 2 * 6 + 1, 0 * 6 + 5, 0 * 6 + 1};
    ASSERT_EQ(out.size(), 4 * isz);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(0, std::memcmp(&out[i * isz], &in[src[i] * isz], isz)) << mx::dtype_name(t);
    b.eval();
    EXPECT_EQ(b.buffer(), x.buffer());
  }
}

TEST(ShapeSlicing, EmptySlicesAndErrors) {
  auto x = iota({3, 4});
  EXPECT_EQ(mx::slice(x, {0, 0}, {0, 4}).shape(), mx::Shape({0, 4}));
  EXPECT_EQ(values<float>(mx::slice(x, {2, 0}, {1, 4})).size(), 0u);
  EXPECT_EQ(mx::slice(mx::zeros({0, 3}), {0, 0}, {0, 3}, {-1, 1}).shape(), mx::Shape({0, 3}));
  EXPECT_EQ(error_of([&] { mx::slice(x, {0}, {1}); }),
            "[slice] Invalid number of indices or strides for array with dimension 2.");
  EXPECT_EQ(error_of([&] { mx::slice(x, {0, 0}, {1, 1}, {1, 0}); }), "[slice] Slice strides cannot be zero.");
  // A hostile Slice record that reads outside the input is refused by the shape rule and the kernel.
  auto& d = mx::registry::get("Slice");
  EXPECT_THAT(error_of([&] {
                d.infer(mx::State{mx::Shape{-2, 0}, mx::Shape{3, 4}, mx::Shape{1, 1}}, {{{3, 4}, mx::float32}});
              }),
              HasSubstr("out of bounds"));
  auto bad = mx::make_array(d, mx::State{mx::Shape{2}, mx::Shape{3}, mx::Shape{1}}, {iota({3})},
                            {{mx::Shape{5}, mx::float32}});
  EXPECT_THAT(error_of([&] { bad.eval(); }), HasSubstr("out of bounds"));
  EXPECT_FALSE(d.shapeless);
}

TEST(ShapeSlicing, SliceUpdateStatic) {
  auto x = iota({3, 4});
  auto u = mx::slice_update(x, mx::array({-1.0f, -2.0f}), {0, 1}, {3, 4}, {2, 2});
  EXPECT_EQ(u.node()->def->name, "SliceUpdate");
  EXPECT_EQ(values<float>(u), std::vector<float>({0, -1, 2, -2, 4, 5, 6, 7, 8, -1, 10, -2}));
  EXPECT_EQ(values<float>(x)[1], 1.0f);  // the source is unchanged
  // Negative strides, int update cast to float, update broadcast.
  auto r = mx::slice_update(x, mx::array({7, 8, 9}), {2, 3}, {-4, 0}, {-1, -1});
  EXPECT_EQ(values<float>(r), std::vector<float>({0, 9, 8, 7, 4, 9, 8, 7, 8, 9, 8, 7}));
  // Updating everything returns the (broadcast, cast) update.
  auto all = mx::slice_update(x, mx::array(5), {0, 0}, {3, 4});
  EXPECT_EQ(primitives(all), std::vector<std::string>({"AsType", "Broadcast"}));
  EXPECT_EQ(values<float>(all), std::vector<float>(12, 5));
  // Non-contiguous source and update.
  auto xt = mx::transpose(iota({4, 3}));
  auto ut = mx::slice_update(xt, mx::transpose(mx::array({1.f, 2.f, 3.f, 4.f}, {2, 2})), {1, 2}, {3, 4});
  auto xtv = values<float>(xt);
  xtv[1 * 4 + 2] = 1, xtv[1 * 4 + 3] = 3, xtv[2 * 4 + 2] = 2, xtv[2 * 4 + 3] = 4;
  EXPECT_EQ(values<float>(ut), xtv);
  // Empty update: the output is the source.
  auto e = mx::slice_update(x, mx::zeros({0, 4}), {1, 0}, {1, 4});
  EXPECT_EQ(values<float>(e), values<float>(x));
  EXPECT_EQ(error_of([&] { mx::slice_update(x, mx::zeros({5}), {0, 0}, {1, 3}); }),
            "[broadcast_shapes] Shapes (5) and (1,3) cannot be broadcast.");
  EXPECT_EQ(error_of([&] { mx::slice_update(x, x, {0}, {1}); }),
            "[slice_update] Invalid number of indices or strides for array with dimension 2.");
  // Every dtype.
  for (auto t : all_dtypes()) {
    auto src = mx::zeros({2, 3}, t);
    auto out = mx::slice_update(src, mx::ones({2}, t), {1, 0}, {2, 3}, {1, 2});
    auto v = values<float>(mx::astype(out, mx::float32));
    EXPECT_EQ(v, std::vector<float>({0, 0, 0, 1, 0, 1})) << mx::dtype_name(t);
  }
}

TEST(ShapeSlicing, DynamicSlice) {
  auto x = iota({3, 4});
  auto a = mx::slice(x, mx::array({1, 2}), {0, 1}, {2, 2});
  EXPECT_EQ(a.node()->def->name, "DynamicSlice");
  EXPECT_EQ(state(a).ints(0), std::vector<int32_t>({0, 1}));
  EXPECT_EQ(state(a).ints(1), std::vector<int32_t>({2, 2}));
  EXPECT_EQ(values<float>(a), std::vector<float>({6, 7, 10, 11}));
  // A 0-d start, negative axis, unsigned start, non-contiguous source.
  EXPECT_EQ(values<float>(mx::slice(x, mx::array(2u), {-1}, {3, 1})), std::vector<float>({2, 6, 10}));
  auto xt = mx::transpose(x);
  EXPECT_EQ(values<float>(mx::slice(xt, mx::array(int64_t(1)), {1}, {2, 2})), std::vector<float>({4, 8, 5, 9}));
  // Starts past the end are clamped so the window stays inside (MLX reads out of bounds here).
  EXPECT_EQ(values<float>(mx::slice(x, mx::array({5}), {0}, {1, 4})), std::vector<float>({8, 9, 10, 11}));
  EXPECT_EQ(values<float>(mx::slice(x, mx::array({-3}), {0}, {1, 2})), std::vector<float>({0, 1}));
  // A strided start array (every other element of a vector).
  auto st = mx::slice(mx::array({1, 9, 2, 9}), {0}, {4}, {2});
  EXPECT_EQ(values<float>(mx::slice(x, st, {0, 1}, {1, 1})), std::vector<float>({6}));
  // Errors, MLX's texts.
  EXPECT_EQ(error_of([&] { mx::slice(x, mx::array({1}), {0}, {1, 1, 1}); }),
            "[slice] Invalid slice size for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { mx::slice(x, mx::array({1.0f}), {0}, {1, 1}); }),
            "[slice] Start indices must be integers, got type float32.");
  EXPECT_EQ(error_of([&] { mx::slice(x, mx::array({1, 2}), {0}, {1, 1}); }),
            "[slice] Number of starting indices 2 does not match number of axes 1.");
  EXPECT_EQ(error_of([&] { mx::slice(x, mx::array({1}), {3}, {1, 1}); }),
            "[slice] Invalid axis 3 for array with dimension 2.");
  EXPECT_EQ(error_of([&] { mx::slice(x, mx::array({1}, {1, 1}), {0}, {1, 1}); }),
            "[slice] array of starting indices must be zero or one dimensional but has dimension 2.");
  EXPECT_EQ(error_of([&] { mx::slice(x, mx::array({1}), {0}, {4, 1}); }),
            "[slice] Invalid slice size (4,1) for array with shape (3,4).");
  EXPECT_EQ(error_of([&] { mx::slice(x, mx::array({1, 1}), {0, -2}, {1, 1}); }), "[slice] Repeat axes not allowed.");
  EXPECT_EQ(error_of([&] { mx::slice(x, mx::array({1, 1, 1}), {0, 1, 2}, {1, 1}); }),
            "[slice] Invalid number of starting positions for array with dimension 2.");
}

TEST(ShapeSlicing, DynamicSliceUpdate) {
  auto x = iota({3, 4});
  auto u = mx::slice_update(x, mx::array({-1.0f}), mx::array({1}), {0});
  // Exported by MLX as Broadcast(1,1) then DynamicSliceUpdate [[0]].
  EXPECT_EQ(primitives(u), std::vector<std::string>({"Broadcast", "DynamicSliceUpdate"}));
  EXPECT_EQ(u.inputs()[1].shape(), mx::Shape({1, 1}));
  EXPECT_EQ(values<float>(u), std::vector<float>({0, 1, 2, 3, -1, 5, 6, 7, 8, 9, 10, 11}));
  // Update of a (2,2) window at (1,2); int update cast to float; clamped start.
  auto w = mx::slice_update(x, mx::array({1, 2, 3, 4}, {2, 2}), mx::array({1, 7}), {0, 1});
  EXPECT_EQ(values<float>(w), std::vector<float>({0, 1, 2, 3, 4, 5, 1, 2, 8, 9, 3, 4}));
  // The update lacks the leading axis: it takes the source's size there.
  auto l = mx::slice_update(x, mx::array({5.0f}), mx::array({3}), {1});
  EXPECT_EQ(l.inputs()[1].shape(), mx::Shape({3, 1}));
  EXPECT_EQ(values<float>(l), std::vector<float>({0, 1, 2, 5, 4, 5, 6, 5, 8, 9, 10, 5}));
  EXPECT_EQ(error_of([&] { mx::slice_update(x, mx::zeros({5}), mx::array({1}), {0}); }),
            "[broadcast_shapes] Shapes (5) and (1,4) cannot be broadcast.");
  EXPECT_EQ(error_of([&] { mx::slice_update(x, mx::zeros({5}), mx::array({1}), {3}); }),
            "[slice_update] Invalid axis 3 for array with dimension 2.");
  for (auto t : all_dtypes()) {
    auto out = mx::slice_update(mx::zeros({2, 3}, t), mx::ones({1, 2}, t), mx::array({1, 1}), {0, 1});
    EXPECT_EQ(values<float>(mx::astype(out, mx::float32)), std::vector<float>({0, 0, 0, 0, 1, 1}))
        << mx::dtype_name(t);
  }
}

TEST(ShapeSlicing, SplitPrimitiveOrSlices) {
  auto x = iota({3, 4});
  auto p = mx::split(x, 2, 1);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].node()->def->name, "Split");
  EXPECT_TRUE(p[0].node() == p[1].node());
  EXPECT_EQ(state(p[0]).ints(0), std::vector<int32_t>({2}));
  EXPECT_EQ(state(p[0]).i(1), 1);
  EXPECT_EQ(values<float>(p[0]), std::vector<float>({0, 1, 4, 5, 8, 9}));
  EXPECT_EQ(values<float>(p[1]), std::vector<float>({2, 3, 6, 7, 10, 11}));
  EXPECT_EQ(p[0].buffer(), x.buffer());
  EXPECT_EQ(p[1].buffer(), x.buffer());
  auto q = mx::split(x, mx::Shape{1, 3}, -1);
  EXPECT_EQ(q[0].shape(), mx::Shape({3, 1}));
  EXPECT_EQ(q[1].shape(), mx::Shape({3, 2}));
  EXPECT_EQ(values<float>(q[2]), std::vector<float>({3, 7, 11}));
  // Unsorted, zero or out-of-range indices become Slices (MLX does the same).
  auto u = mx::split(x, mx::Shape{3, 1}, 1);
  EXPECT_EQ(u[0].node()->def->name, "Slice");
  EXPECT_EQ(u[1].shape(), mx::Shape({3, 0}));
  EXPECT_EQ(values<float>(u[2]), std::vector<float>({1, 2, 3, 5, 6, 7, 9, 10, 11}));
  auto z = mx::split(x, mx::Shape{0, 3}, 1);
  EXPECT_EQ(z[0].shape(), mx::Shape({3, 0}));
  auto o = mx::split(x, mx::Shape{1, 6}, 1);
  EXPECT_EQ(o[1].shape(), mx::Shape({3, 3}));
  EXPECT_EQ(o[2].shape(), mx::Shape({3, 0}));
  auto one = mx::split(x, 1, 1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(one[0].is_same(x));
  // Split of a non-contiguous input along axis 0.
  auto t = mx::split(mx::transpose(x), 2);
  EXPECT_EQ(values<float>(t[1]), std::vector<float>({2, 6, 10, 3, 7, 11}));
  EXPECT_EQ(error_of([&] { mx::split(x, 3, 1); }),
            "[split] Array split does not result in sub arrays with equal size: attempting 3 splits along axis 1 for "
            "shape (3,4).");
  EXPECT_EQ(error_of([&] { mx::split(x, 2, 2); }), "[split] Invalid axis 2 passed to split for array with shape (3,4).");
  EXPECT_EQ(error_of([&] { mx::split(x, mx::Shape{1}, -3); }),
            "[split] Invalid axis (-3) passed to split for array with shape (3,4).");
  EXPECT_THAT(error_of([&] { mx::split(x, 0, 1); }), HasSubstr("must be positive"));
  // The shape rule refuses unsorted split points in a file.
  auto& d = mx::registry::get("Split");
  EXPECT_THAT(error_of([&] { d.infer(mx::State{mx::Shape{3, 1}, int32_t(1)}, {{{3, 4}, mx::float32}}); }),
              HasSubstr("must be sorted"));
  auto sp = d.infer(mx::State{mx::Shape{1, 3}, int32_t(0)}, {{{5, 2}, mx::int8}});
  ASSERT_EQ(sp.size(), 3u);
  EXPECT_EQ(sp[2].shape, mx::Shape({2, 2}));
}
