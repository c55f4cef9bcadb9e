// Shape family, joining: concatenate, stack, tile, repeat, roll, pad (constant and edge). References
// are index arithmetic loops; graph shapes follow MLX 0.30.1's exports of the same calls.
#include <gmock/gmock.h>

#include <algorithm>

#include "test_shape_util.h"

using namespace shape_test;
using ::testing::HasSubstr;

namespace {
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

TEST(ShapeJoining, ConcatenateValuesPromotionAndViews) {
  auto a = mx::astype(iota({2, 3}), mx::int32);
  auto b = mx::transpose(iota({2, 2}));  // non-contiguous float32
  auto c = mx::concatenate({a, b}, -1);
  EXPECT_EQ(c.dtype(), mx::float32);
  EXPECT_EQ(c.shape(), mx::Shape({2, 5}));
  EXPECT_EQ(c.node()->def->name, "Concatenate");
  EXPECT_EQ(state(c).i(0), 1);
  EXPECT_EQ(c.inputs()[0].node()->def->name, "AsType");
  EXPECT_EQ(values<float>(c), std::vector<float>({0, 1, 2, 0, 2, 3, 4, 5, 1, 3}));
  auto d = mx::concatenate({iota({1, 2}), mx::zeros({0, 2}), iota({2, 2})}, 0);
  EXPECT_EQ(values<float>(d), std::vector<float>({0, 1, 0, 1, 2, 3}));
  auto f = mx::concatenate({iota({2, 2}), iota({3})});
  EXPECT_EQ(values<float>(f), std::vector<float>({0, 1, 2, 3, 0, 1, 2}));
  auto one = iota({2});
  EXPECT_TRUE(mx::concatenate({one}, 0).is_same(one));
  for (auto t : all_dtypes()) {
    auto x = iota({2, 2}, t), y = iota({2, 1}, t);
    auto out = mx::concatenate({x, y}, 1);
    auto xb = bytes(x), yb = bytes(y), ob = bytes(out);
    const size_t isz = t.size;
    std::vector<uint8_t> ref;
    for (int r = 0; r < 2; ++r) {
      ref.insert(ref.end(), xb.begin() + r * 2 * isz, xb.begin() + (r + 1) * 2 * isz);
      ref.insert(ref.end(), yb.begin() + r * isz, yb.begin() + (r + 1) * isz);
    }
    EXPECT_EQ(ob, ref) << mx::dtype_name(t);
  }
  auto x = mx::zeros({2, 3});
  EXPECT_EQ(error_of([&] { mx::concatenate({x, mx::zeros({3, 2})}, 1); }),
            "[concatenate] All the input array dimensions must match exactly except for the concatenation axis. "
            "However, the provided shapes are (2,3), (3,2), and the concatenation axis is 1.");
  EXPECT_EQ(error_of([&] { mx::concatenate({x, mx::zeros({3})}, 1); }),
            "[concatenate] All the input arrays must have the same number of dimensions. However, got arrays with "
            "dimensions 2 and 1.");
  EXPECT_EQ(error_of([&] { mx::concatenate({x, x}, 2); }),
            "[concatenate] Axis 2 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { mx::concatenate({x, x}, -3); }),
            "[concatenate] Axis -3 is out of bounds for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { mx::concatenate(std::vector<mx::array>{}, 0); }),
            "[concatenate] No arrays provided for concatenation");
}

TEST(ShapeJoining, Stack) {
  auto a = iota({3, 4});
  auto s = mx::stack({a, a}, 1);
  EXPECT_EQ(primitives(s), std::vector<std::string>({"ExpandDims", "ExpandDims", "Concatenate"}));
  EXPECT_EQ(s.shape(), mx::Shape({3, 2, 4}));
  auto v = values<float>(s);
  for (size_t i = 0; i < v.size(); ++i) {
    auto idx = unravel(i, {3, 2, 4});
    EXPECT_EQ(v[i], idx[0] * 4 + idx[2]);
  }
  EXPECT_EQ(mx::stack({a, a}, -1).shape(), mx::Shape({3, 4, 2}));
  EXPECT_EQ(mx::stack({a}).shape(), mx::Shape({1, 3, 4}));
  EXPECT_EQ(error_of([&] { mx::stack({a, mx::zeros({4, 3})}); }), "[stack] All arrays must have the same shape");
  EXPECT_EQ(error_of([&] { mx::stack({a, a}, 3); }), "[stack] Axis 3 is out of bounds for array with 3 dimensions.");
  EXPECT_EQ(error_of([&] { mx::stack(std::vector<mx::array>{}); }), "[stack] No arrays provided for stacking");
}

TEST(ShapeJoining, Tile) {
  auto a = iota({3, 4});
  auto t = mx::tile(a, {2, 1, 3});
  EXPECT_EQ(primitives(t), std::vector<std::string>({"Reshape", "Broadcast", "Reshape"}));
  EXPECT_EQ(state(t.inputs()[0].inputs()[0]).ints(0), std::vector<int32_t>({1, 1, 3, 1, 4}));
  EXPECT_EQ(state(t.inputs()[0]).ints(0), std::vector<int32_t>({2, 1, 3, 3, 4}));
  EXPECT_EQ(t.shape(), mx::Shape({2, 3, 12}));
  auto v = values<float>(t);
  for (size_t i = 0; i < v.size(); ++i) {
    auto idx = unravel(i, {2, 3, 12});
    EXPECT_EQ(v[i], idx[1] * 4 + idx[2] % 4);
  }
  EXPECT_EQ(values<float>(mx::tile(mx::transpose(iota({2, 2})), {2})), std::vector<float>({0, 2, 0, 2, 1, 3, 1, 3}));
  EXPECT_EQ(mx::tile(a, {0}).shape(), mx::Shape({3, 0}));
  EXPECT_THAT(error_of([&] { mx::tile(a, {-1}); }), HasSubstr("[tile]"));
}

TEST(ShapeJoining, Repeat) {
  auto a = iota({3, 4});
  auto r = mx::repeat(a, 2, 1);
  EXPECT_EQ(primitives(r), std::vector<std::string>({"ExpandDims", "Broadcast", "Reshape"}));
  auto v = values<float>(r);
  for (size_t i = 0; i < v.size(); ++i) {
    auto idx = unravel(i, {3, 8});
    EXPECT_EQ(v[i], idx[0] * 4 + idx[1] / 2);
  }
  auto f = mx::repeat(mx::transpose(iota({2, 2})), 3);
  EXPECT_EQ(primitives(f), std::vector<std::string>({"Transpose", "Flatten", "ExpandDims", "Broadcast", "Reshape"}));
  EXPECT_EQ(values<float>(f), std::vector<float>({0, 0, 0, 2, 2, 2, 1, 1, 1, 3, 3, 3}));
  EXPECT_TRUE(mx::repeat(a, 1, 0).is_same(a));
  auto z = mx::repeat(a, 0, 1);
  EXPECT_EQ(z.shape(), mx::Shape({0}));  // MLX returns an empty 1-D array
  EXPECT_EQ(z.dtype(), mx::float32);
  EXPECT_EQ(error_of([&] { mx::repeat(a, -1, 1); }), "[repeat] Number of repeats cannot be negative");
  EXPECT_EQ(error_of([&] { mx::repeat(a, 2, 2); }), "[repeat] Axis 2 is out of bounds for array with 2 dimensions.");
}

TEST(ShapeJoining, Roll) {
  auto a = iota({3, 4});
  auto r = mx::roll(a, 1, 1);
  EXPECT_EQ(primitives(r), std::vector<std::string>({"Split", "Concatenate"}));
  EXPECT_EQ(values<float>(r), std::vector<float>({3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10}));
  auto fl = mx::roll(a, 5);
  EXPECT_EQ(primitives(fl), std::vector<std::string>({"Flatten", "Split", "Concatenate", "Reshape"}));
  auto fv = values<float>(fl);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(fv[i], (i - 5 + 12) % 12);
  auto n = mx::roll(a, -1, 0);
  EXPECT_EQ(values<float>(n), std::vector<float>({4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3}));
  // Shift by a multiple of the size: MLX's split falls back to slices; the values are unchanged.
  auto m = mx::roll(a, 4, 1);
  EXPECT_EQ(values<float>(m), values<float>(a));
  auto two = mx::roll(a, mx::Shape{1, 2}, std::vector<int>{0, -1});
  auto tv = values<float>(two);
  for (size_t i = 0; i < 12; ++i) {
    auto idx = unravel(i, {3, 4});
    EXPECT_EQ(tv[i], ((idx[0] + 2) % 3) * 4 + (idx[1] + 2) % 4);
  }
  EXPECT_EQ(values<float>(mx::roll(a, mx::Shape{1, 2}, 1)), values<float>(mx::roll(a, 3, 1)));
  EXPECT_EQ(values<float>(mx::roll(a, 2, std::vector<int>{0, 1})), values<float>(mx::roll(a, mx::Shape{2, 2}, std::vector<int>{0, 1})));
  EXPECT_EQ(values<float>(mx::roll(a, mx::Shape{2, 3})), values<float>(mx::roll(a, 5)));
  EXPECT_EQ(mx::roll(mx::zeros({0, 3}), 2, 0).shape(), mx::Shape({0, 3}));
  EXPECT_EQ(error_of([&] { mx::roll(a, 1, 3); }), "[roll] Invalid axis 3 for array with 2 dimensions.");
  EXPECT_EQ(error_of([&] { mx::roll(a, mx::Shape{1}, std::vector<int>{0, 1}); }),
            "[roll] At least one shift value per axis is required, 1 provided for 2 axes.");
}

TEST(ShapeJoining, PadConstant) {
  auto a = iota({2, 3});
  auto p = mx::pad(a, {{1, 2}, {0, 1}});
  EXPECT_EQ(primitives(p), std::vector<std::string>({"AsType", "Pad"}));  // the int 0 is cast, as MLX does
  EXPECT_EQ(state(p).ints(0), std::vector<int32_t>({0, 1}));
  EXPECT_EQ(state(p).ints(1), std::vector<int32_t>({1, 0}));
  EXPECT_EQ(state(p).ints(2), std::vector<int32_t>({2, 1}));
  EXPECT_EQ(p.shape(), mx::Shape({5, 4}));
  EXPECT_EQ(values<float>(p), std::vector<float>({0, 0, 0, 0, 0, 1, 2, 0, 3, 4, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  auto q = mx::pad(mx::transpose(a), 1, mx::array(-1.5f));
  EXPECT_EQ(primitives(q), std::vector<std::string>({"Transpose", "Pad"}));
  auto qv = values<float>(q);
  for (size_t i = 0; i < qv.size(); ++i) {
    auto idx = unravel(i, {5, 4});
    bool inside = idx[0] >= 1 && idx[0] <= 3 && idx[1] >= 1 && idx[1] <= 2;
    EXPECT_EQ(qv[i], inside ? (idx[1] - 1) * 3 + (idx[0] - 1) : -1.5f);
  }
  // A subset of axes, negative.
  auto r = mx::pad(a, std::vector<int>{-1}, {2}, {0}, mx::array(7));
  EXPECT_EQ(values<float>(r), std::vector<float>({7, 7, 0, 1, 2, 7, 7, 3, 4, 5}));
  EXPECT_EQ(mx::pad(a, std::pair<int, int>{0, 0}).shape(), a.shape());
  EXPECT_EQ(mx::pad(mx::zeros({0, 2}), 1).shape(), mx::Shape({2, 4}));
  for (auto t : all_dtypes()) {
    auto x = mx::ones({1, 2}, t);
    auto out = mx::pad(x, std::vector<std::pair<int, int>>{{0, 1}, {1, 0}}, mx::array(2));
    EXPECT_EQ(out.dtype(), t);
    float two = t == mx::bool_ ? 1.0f : 2.0f;
    EXPECT_EQ(values<float>(mx::astype(out, mx::float32)), std::vector<float>({two, 1, 1, two, two, two}))
        << mx::dtype_name(t);
  }
  EXPECT_EQ(error_of([&] { mx::pad(a, {{1, -1}, {0, 0}}); }),
            "[pad] Invalid high padding size (-1) passed to pad for axis 0. Padding sizes must be non-negative");
  EXPECT_EQ(error_of([&] { mx::pad(a, 1, mx::array(0), "reflect"); }),
            "[pad] Invalid padding mode (reflect) passed to pad");
  EXPECT_EQ(error_of([&] { mx::pad(a, {{1, 1}}); }),
            "[pad] Invalid number of padding sizes passed to pad with axes of size 2");
  EXPECT_FALSE(mx::registry::get("Pad").shapeless);
}

TEST(ShapeJoining, PadEdge) {
  auto a = iota({3, 4});
  auto p = mx::pad(a, {{1, 2}, {0, 1}}, mx::array(0), "edge");
  // The node sequence MLX 0.30.1 exports for this call.
  EXPECT_EQ(primitives(p), std::vector<std::string>({"Broadcast", "Full", "SliceUpdate", "Slice", "SliceUpdate",
                                                     "Slice", "Broadcast", "SliceUpdate", "Slice", "SliceUpdate"}));
  EXPECT_EQ(p.shape(), mx::Shape({6, 5}));
  auto v = values<float>(p);
  for (size_t i = 0; i < v.size(); ++i) {
    auto idx = unravel(i, {6, 5});
    int r = std::clamp(idx[0] - 1, 0, 2), c = std::clamp(idx[1], 0, 3);
    EXPECT_EQ(v[i], r * 4 + c) << i;
  }
  auto t = mx::pad(mx::transpose(a), 2, mx::array(0), "edge");
  auto tv = values<float>(t);
  for (size_t i = 0; i < tv.size(); ++i) {
    auto idx = unravel(i, {8, 7});
    int r = std::clamp(idx[0] - 2, 0, 3), c = std::clamp(idx[1] - 2, 0, 2);
    EXPECT_EQ(tv[i], c * 4 + r);
  }
  auto i8 = mx::pad(mx::astype(a, mx::int8), {{0, 0}, {3, 0}}, mx::array(0), "edge");
  EXPECT_EQ(i8.dtype(), mx::int8);
  EXPECT_EQ(values<int>(i8)[0], 0);
  EXPECT_EQ(values<int>(i8)[7], 4);
}
