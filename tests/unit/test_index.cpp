// Indexing ops (take, gather, take_along_axis, put_along_axis, scatter*, masked_scatter) against
// scalar reference loops and values printed by MLX 0.30.1.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <kiln/kiln.h>
#include <kiln/export.h>
#include <kiln/ops/index.h>

#include "unit/test_util.h"

namespace mx = kiln;
using ::testing::HasSubstr;

namespace {

using test_util::message_of;
using test_util::vals;

const std::vector<mx::Dtype> kAllTypes = {mx::bool_,   mx::uint8,   mx::uint16,  mx::uint32, mx::uint64,
                                          mx::int8,    mx::int16,   mx::int32,   mx::int64,  mx::float16,
                                          mx::float32, mx::float64, mx::bfloat16, mx::complex64};
const std::vector<mx::Dtype> kIndexTypes = {mx::uint8, mx::uint16, mx::uint32, mx::uint64,
                                            mx::int8,  mx::int16,  mx::int32,  mx::int64};

// Row-major multi-index helpers for the reference loops.
std::vector<int> unravel(int64_t i, const mx::Shape& s) {
  std::vector<int> ix(s.size());
  for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
    ix[d] = static_cast<int>(i % s[d]);
    i /= s[d];
  }
  return ix;
}
int64_t ravel(const std::vector<int>& ix, const mx::Shape& s) {
  int64_t r = 0;
  for (size_t d = 0; d < s.size(); ++d) r = r * s[d] + ix[d];
  return r;
}
int64_t numel(const mx::Shape& s) {
  int64_t n = 1;
  for (int v : s) n *= v;
  return n;
}

// NumPy's take along `axis` for in-range indices.
std::vector<double> ref_take(const std::vector<double>& a, const mx::Shape& as, const std::vector<int64_t>& idx,
                             const mx::Shape& is, int axis) {
  mx::Shape os(as.begin(), as.begin() + axis);
  os.insert(os.end(), is.begin(), is.end());
  os.insert(os.end(), as.begin() + axis + 1, as.end());
  std::vector<double> out(numel(os));
  for (int64_t o = 0; o < numel(os); ++o) {
    auto oi = unravel(o, os);
    std::vector<int> ii(oi.begin() + axis, oi.begin() + axis + is.size());
    int64_t v = idx[ravel(ii, is)];
    if (v < 0) v += as[axis];
    std::vector<int> ai(oi.begin(), oi.begin() + axis);
    ai.push_back(static_cast<int>(v));
    ai.insert(ai.end(), oi.begin() + axis + is.size(), oi.end());
    out[o] = a[ravel(ai, as)];
  }
  return out;
}

std::vector<double> iota(int n, double start = 0) {
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i) v[i] = start + i;
  return v;
}

}  // namespace

// ---- take ----

TEST(IndexTake, AlongEveryAxisMatchesReference) {
  const mx::Shape as{3, 4, 5};
  auto a = mx::reshape(mx::arange(60.0, mx::float32), as);
  const std::vector<int64_t> idx{2, -1, 0, 1, 1, -2};
  const mx::Shape is{2, 3};
  auto ia = mx::array(std::vector<int32_t>(idx.begin(), idx.end()), is);
  for (int axis = -3; axis < 3; ++axis) {
    int ax = axis < 0 ? axis + 3 : axis;
    std::vector<int64_t> id = idx;
    for (auto& v : id) {
      if (v >= as[ax]) v = as[ax] - 1;
    }
    auto out = mx::take(a, mx::array(std::vector<int32_t>(id.begin(), id.end()), is), axis);
    mx::Shape os(as.begin(), as.begin() + ax);
    os.insert(os.end(), is.begin(), is.end());
    os.insert(os.end(), as.begin() + ax + 1, as.end());
    EXPECT_EQ(out.shape(), os) << "axis " << axis;
    EXPECT_EQ(vals<double>(out), ref_take(iota(60), as, id, is, ax)) << "axis " << axis;
  }
  (void)ia;
}

TEST(IndexTake, ManyIndicesAlongAnInnerAxis) {
  // Long strided windows with many indices take the blocked gather path.
  const mx::Shape as{70, 40};
  auto a = mx::reshape(mx::arange(2800.0, mx::float32), as);
  std::vector<int64_t> id;
  for (int i = 0; i < 25; ++i) id.push_back((i * 17) % 40 - (i % 3 == 0 ? 40 : 0));
  auto idx = mx::array(std::vector<int32_t>(id.begin(), id.end()), {5, 5});
  for (auto dt : {mx::float32, mx::int8, mx::float64}) {
    auto out = mx::take(mx::astype(a, dt), idx, 1);
    EXPECT_EQ(out.shape(), mx::Shape({70, 5, 5}));
    auto ref = ref_take(iota(2800), as, id, {5, 5}, 1);
    if (dt == mx::int8) {
      for (auto& v : ref) v = static_cast<double>(static_cast<int8_t>(static_cast<int>(v)));
    }
    EXPECT_EQ(vals<double>(out), ref) << mx::dtype_name(dt);
  }
}

TEST(IndexTake, EveryDtype) {
  const mx::Shape as{3, 4};
  const std::vector<int64_t> idx{3, 0, -1, 2};
  for (auto dt : kAllTypes) {
    auto a = mx::astype(mx::reshape(mx::arange(1.0, 13.0, mx::float32), as), dt);
    auto out = mx::take(a, mx::array({3, 0, -1, 2}), 1);
    EXPECT_EQ(out.dtype(), dt);
    auto ref = ref_take(vals<double>(a), as, idx, {4}, 1);
    EXPECT_EQ(vals<double>(out), ref) << mx::dtype_name(dt);
  }
  // complex keeps both parts
  auto c = mx::array({mx::complex64_t(1, 2), mx::complex64_t(3, -4), mx::complex64_t(5, 6)});
  auto cv = vals<mx::complex64_t>(mx::take(c, mx::array({2, 0, 2})));
  EXPECT_EQ(cv, (std::vector<mx::complex64_t>{{5, 6}, {1, 2}, {5, 6}}));
}

TEST(IndexTake, EveryIndexDtype) {
  auto a = mx::arange(10.0, 20.0, mx::float32);
  for (auto it : kIndexTypes) {
    const bool sig = !mx::is_unsigned(it);
    auto idx = mx::astype(sig ? mx::array({9, -1, 0, -10, 4}) : mx::array({9, 9, 0, 0, 4}), it);
    auto out = vals<float>(mx::take(a, idx, 0));
    EXPECT_EQ(out, sig ? std::vector<float>({19, 19, 10, 10, 14}) : std::vector<float>({19, 19, 10, 10, 14}))
        << mx::dtype_name(it);
  }
}

TEST(IndexTake, FlattenedAndIntIndex) {
  auto a = mx::reshape(mx::arange(12.0, mx::float32), {3, 4});
  auto f = mx::take(a, mx::array({11, -12, 5}, {3, 1}));
  EXPECT_EQ(f.shape(), mx::Shape({3, 1}));
  EXPECT_EQ(vals<float>(f), (std::vector<float>{11, 0, 5}));
  auto s = mx::take(a, 7);
  EXPECT_EQ(s.ndim(), 0u);
  EXPECT_EQ(s.item<float>(), 7.0f);
  auto col = mx::take(a, 2, 1);
  EXPECT_EQ(col.shape(), mx::Shape({3}));
  EXPECT_EQ(vals<float>(col), (std::vector<float>{2, 6, 10}));
  auto row = mx::take(a, 1, -2);
  EXPECT_EQ(vals<float>(row), (std::vector<float>{4, 5, 6, 7}));
  // An int index goes through slice + squeeze, so (as MLX 0.30.1) a negative or too large one fails.
  EXPECT_EQ(message_of([&] { mx::take(a, -1); }),
            "[squeeze] Cannot squeeze axis 0 with size 0 which is not equal to 1.");
  EXPECT_EQ(message_of([&] { mx::take(a, 12); }),
            "[squeeze] Cannot squeeze axis 0 with size 0 which is not equal to 1.");
  // A 0-d index array drops the axis.
  auto z = mx::take(a, mx::array(3), 1);
  EXPECT_EQ(z.shape(), mx::Shape({3}));
  EXPECT_EQ(vals<float>(z), (std::vector<float>{3, 7, 11}));
}

TEST(IndexTake, NonContiguousInputsAndIndices) {
  // a: a transposed view; indices: a broadcast view and a strided slice.
  auto base = mx::reshape(mx::arange(20.0, mx::float32), {4, 5});
  auto a = mx::transpose(base);  // (5, 4)
  auto idx = mx::broadcast_to(mx::array({3, -1, 0}, {1, 3}), {2, 3});
  auto out = mx::take(a, idx, 1);
  EXPECT_EQ(out.shape(), mx::Shape({5, 2, 3}));
  std::vector<double> at(20);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) at[i * 4 + j] = j * 5 + i;
  EXPECT_EQ(vals<double>(out), ref_take(at, {5, 4}, {3, -1, 0, 3, -1, 0}, {2, 3}, 1));
  auto sl = mx::slice(mx::array({4, 9, 1, 9, 0, 9}), {0}, {6}, {2});  // 4, 1, 0
  EXPECT_EQ(vals<double>(mx::take(a, sl, 0)), ref_take(at, {5, 4}, {4, 1, 0}, {3}, 0));
}

TEST(IndexTake, EmptyArrays) {
  auto e = mx::zeros({0, 3});
  auto r = mx::take(e, mx::zeros({0}, mx::int32), 0);
  EXPECT_EQ(r.shape(), mx::Shape({0, 3}));
  r.eval();
  auto a = mx::ones({2, 3});
  auto r2 = mx::take(a, mx::zeros({0}, mx::int32), 1);
  EXPECT_EQ(r2.shape(), mx::Shape({2, 0}));
  EXPECT_EQ(vals<float>(r2).size(), 0u);
  auto r3 = mx::take(a, mx::zeros({2, 0}, mx::uint32), 0);
  EXPECT_EQ(r3.shape(), mx::Shape({2, 0, 3}));
  r3.eval();
}

TEST(IndexTake, OutOfRangeIndicesAreClamped) {
  // MLX reads outside the buffer here; kiln clamps into [0, n).
  auto a = mx::arange(5.0, mx::float32);
  EXPECT_EQ(vals<float>(mx::take(a, mx::array({7, -7, 100, -1}))), (std::vector<float>{4, 0, 4, 4}));
  EXPECT_EQ(vals<float>(mx::take(a, mx::array({uint64_t(1) << 63}, mx::uint64))), (std::vector<float>{4}));
}

TEST(IndexTake, ErrorsMatchMLX) {
  auto a = mx::reshape(mx::arange(6), {2, 3});
  EXPECT_EQ(message_of([&] { mx::take(a, mx::array({1.0f}), 0); }),
            "[gather] Got indices with invalid dtype. Indices must be integral.");
  EXPECT_EQ(message_of([&] { mx::take(a, mx::array({true}), 1); }), "[Gather] Boolean indices not supported.");
  EXPECT_EQ(message_of([&] { mx::take(a, mx::array({0}), 2); }),
            "[take] Received invalid axis 2 for array with 2 dimensions.");
  EXPECT_EQ(message_of([&] { mx::take(a, mx::array({0}), -3); }),
            "[take] Received invalid axis -3 for array with 2 dimensions.");
  EXPECT_EQ(message_of([&] { mx::take(mx::zeros({0, 3}), mx::array({0}), 1); }),
            "[take] Cannot do a non-empty take from an array with zero elements.");
  EXPECT_THROW(mx::take(a, mx::array({1.5}), 0), std::invalid_argument);
}

// ---- gather ----

TEST(IndexGather, GeneralSlicesAndBroadcastIndices) {
  const mx::Shape as{4, 5, 6};
  auto a = mx::reshape(mx::arange(120.0, mx::float32), as);
  // i0 (2, 3) int8 and i1 (3,) int32 broadcast to (2, 3) and promote to int32.
  std::vector<int> i0{0, 3, -1, 2, 1, 0}, i1{4, 0, -2};
  auto g = mx::gather(a, {mx::astype(mx::array(i0, {2, 3}), mx::int8), mx::array(i1, {3})}, {0, 2}, {1, 2, 2});
  EXPECT_EQ(g.shape(), mx::Shape({2, 3, 1, 2, 2}));
  std::vector<double> ref;
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 3; ++q)
      for (int s1 = 0; s1 < 2; ++s1)
        for (int s2 = 0; s2 < 2; ++s2) {
          int x = i0[p * 3 + q], z = i1[q];
          x = x < 0 ? x + 4 : x;
          z = z < 0 ? z + 6 : z;
          ref.push_back((x * 5 + s1) * 6 + z + s2);
        }
  EXPECT_EQ(vals<double>(g), ref);
  // Same on a non-contiguous source: the transpose of a (6, 5, 4) array.
  auto at = mx::transpose(mx::reshape(mx::transpose(a, {2, 1, 0}), {6, 5, 4}), {2, 1, 0});
  EXPECT_EQ(vals<double>(mx::gather(at, {mx::array(i0, {2, 3}), mx::array(i1, {3})}, {0, 2}, {1, 2, 2})), ref);
  // No index arrays: one slice.
  auto one = mx::gather(a, std::vector<mx::array>{}, std::vector<int>{}, {2, 1, 3});
  EXPECT_EQ(one.shape(), mx::Shape({2, 1, 3}));
  EXPECT_EQ(vals<double>(one), (std::vector<double>{0, 1, 2, 30, 31, 32}));
  // Windows near the end are clamped so they stay inside the array.
  auto c = mx::gather(mx::arange(6.0, mx::float32), mx::array({5}), 0, {3});
  EXPECT_EQ(vals<float>(c), (std::vector<float>{3, 4, 5}));
}

TEST(IndexGather, ValidationMessages) {
  auto a = mx::zeros({2, 3});
  EXPECT_EQ(message_of([&] { mx::gather(a, {mx::array({0}), mx::array({0}), mx::array({0})}, {0, 1, 2}, {1, 1}); }),
            "[gather] Too many index arrays. Got 3 index arrays for input with 2 dimensions.");
  EXPECT_EQ(message_of([&] { mx::gather(a, {mx::array({0}), mx::array({0})}, {0, 0}, {1, 1}); }),
            "[gather] Repeat axes not allowed in gather.");
  EXPECT_EQ(message_of([&] { mx::gather(a, {mx::array({0})}, {2}, {1, 1}); }),
            "[gather] Axes don't match array dimensions.");
  EXPECT_EQ(message_of([&] { mx::gather(a, {mx::array({0})}, {0, 1}, {1, 1}); }),
            "[gather] Number of index arrays does not match number of axes.");
  EXPECT_EQ(message_of([&] { mx::gather(a, {mx::array({0})}, {0}, {1}); }),
            "[gather] Got slice_sizes with size 1 for array with 2 dimensions.");
  EXPECT_EQ(message_of([&] { mx::gather(a, {mx::array({0})}, {0}, {1, 4}); }),
            "[gather] Slice sizes must be in [0, a.shape(i)]. Got (1,4) for array with shape (2,3).");
  EXPECT_EQ(message_of([&] { mx::gather(mx::zeros({0, 3}), {mx::array({0})}, {0}, {1, 1}); }),
            "[gather] If the input is empty, either the indices must be empty or the total slice size must be 0.");
  // File validation goes through the same rule: mismatched index arrays are refused.
  const auto& def = mx::registry::get("Gather");
  mx::State st{std::vector<int32_t>{0, 1}, std::vector<int32_t>{1, 1}};
  EXPECT_THAT(message_of([&] { def.infer(st, {{{2, 3}, mx::float32}, {{2}, mx::int32}, {{3}, mx::int32}}); }),
              HasSubstr("Index arrays must have one shape and dtype"));
  EXPECT_THAT(message_of([&] { def.infer(st, {{{2, 3}, mx::float32}, {{2}, mx::int32}, {{2}, mx::float32}}); }),
              HasSubstr("Indices must be integral"));
  auto specs = def.infer(st, {{{2, 3}, mx::float32}, {{4, 5}, mx::uint8}, {{4, 5}, mx::uint8}});
  EXPECT_EQ(specs[0].shape, mx::Shape({4, 5, 1, 1}));
}

// ---- take_along_axis / put_along_axis / scatter_add_axis ----

TEST(IndexAlongAxis, TakeAlongAxis) {
  auto a = mx::reshape(mx::arange(12.0, mx::float32), {3, 4});
  auto idx = mx::array({3, 0, -1, 1, 1, 1}, {3, 2});
  auto r = mx::take_along_axis(a, idx, 1);
  EXPECT_EQ(r.shape(), mx::Shape({3, 2}));
  EXPECT_EQ(vals<float>(r), (std::vector<float>{3, 0, 7, 5, 9, 9}));
  EXPECT_EQ(vals<float>(mx::take_along_axis(a, idx, -1)), vals<float>(r));
  // Along axis 0 with a broadcast index row; along a transposed input.
  auto r0 = mx::take_along_axis(a, mx::array({2, 0, 1, -1}, {1, 4}), 0);
  EXPECT_EQ(vals<float>(r0), (std::vector<float>{8, 1, 6, 11}));
  auto rt = mx::take_along_axis(mx::transpose(a), mx::array({2, 0, 1}, {1, 3}), 0);
  EXPECT_EQ(vals<float>(rt), (std::vector<float>{2, 4, 9}));
  // `a` broadcasts against the indices too (except on the axis).
  auto rb = mx::take_along_axis(mx::array({10.f, 20.f, 30.f}, {1, 3}), mx::array({2, 0, 1, 1}, {2, 2}), 1);
  EXPECT_EQ(rb.shape(), mx::Shape({2, 2}));
  EXPECT_EQ(vals<float>(rb), (std::vector<float>{30, 10, 20, 20}));
  for (auto dt : kAllTypes) {
    auto ad = mx::astype(a, dt);
    EXPECT_EQ(vals<double>(mx::take_along_axis(ad, mx::astype(idx, mx::int16), 1)),
              vals<double>(mx::astype(r, dt)))
        << mx::dtype_name(dt);
  }
  EXPECT_EQ(message_of([&] { mx::take_along_axis(a, mx::array({0}), 1); }),
            "[take_along_axis] Indices of dimension 1 does not match array of dimension 2.");
  EXPECT_EQ(message_of([&] { mx::take_along_axis(a, mx::array({0}, {1, 1}), 2); }),
            "[take_along_axis] Received invalid axis for array with 2 dimensions.");
  EXPECT_EQ(message_of([&] { mx::take_along_axis(a, mx::array({0, 1, 2, 0, 1}, {1, 5}), 0); }),
            "[broadcast_shapes] Shapes (4) and (5) cannot be broadcast.");
  EXPECT_THAT(message_of([&] { mx::take_along_axis(a, mx::array({0.5f}, {1, 1}), 1); }),
              HasSubstr("Indices must be integral"));
  auto e = mx::take_along_axis(mx::zeros({2, 0}), mx::zeros({2, 0}, mx::int32), 1);
  EXPECT_EQ(e.shape(), mx::Shape({2, 0}));
  e.eval();
}

TEST(IndexAlongAxis, PutAndScatterAddAlongAxis) {
  // MLX 0.30.1: repeated indices, last write wins / all add up.
  auto idx = mx::array({0, 0, 2, -1}, {2, 2});
  auto v = mx::array({1.f, 2.f, 3.f, 4.f}, {2, 2});
  EXPECT_EQ(vals<float>(mx::put_along_axis(mx::zeros({2, 3}), idx, v, 1)),
            (std::vector<float>{2, 0, 0, 0, 0, 4}));
  EXPECT_EQ(vals<float>(mx::scatter_add_axis(mx::zeros({2, 3}), idx, v, 1)),
            (std::vector<float>{3, 0, 0, 0, 0, 7}));
  EXPECT_EQ(vals<float>(mx::scatter_add_axis(mx::zeros({2, 3}), idx, v, -1)),
            (std::vector<float>{3, 0, 0, 0, 0, 7}));
  // A scalar value broadcasts; `a` broadcasts against the indices.
  EXPECT_EQ(vals<float>(mx::put_along_axis(mx::zeros({1, 3}), mx::array({0, 2}, {2, 1}), mx::array(5.0f), 1)),
            (std::vector<float>{5, 0, 0, 0, 0, 5}));
  // Along axis 0 with a transposed input and int values cast to a's dtype.
  auto a = mx::transpose(mx::reshape(mx::arange(6.0, mx::float32), {3, 2}));  // [[0,2,4],[1,3,5]]
  EXPECT_EQ(vals<float>(mx::scatter_add_axis(a, mx::array({1, 0, 1}, {1, 3}), mx::array({10, 20, 30}, {1, 3}), 0)),
            (std::vector<float>{0, 22, 4, 11, 3, 35}));
  for (auto dt : kAllTypes) {
    auto base = mx::astype(mx::zeros({2, 3}), dt);
    auto r = mx::scatter_add_axis(base, idx, mx::astype(mx::array({1, 1, 0, 1}, {2, 2}), dt), 1);
    auto want = dt == mx::bool_ ? std::vector<double>{1, 0, 0, 0, 0, 1} : std::vector<double>{2, 0, 0, 0, 0, 1};
    EXPECT_EQ(vals<double>(r), want) << mx::dtype_name(dt);
  }
  // Out-of-range indices are dropped (MLX writes outside the buffer).
  EXPECT_EQ(vals<float>(mx::put_along_axis(mx::zeros({1, 3}), mx::array({5, -9, 1}, {1, 3}),
                                           mx::array({1.f, 2.f, 3.f}, {1, 3}), 1)),
            (std::vector<float>{0, 3, 0}));
  EXPECT_EQ(message_of([&] { mx::put_along_axis(mx::zeros({2, 3}), mx::array({0}), mx::array(1.f), 1); }),
            "[put_along_axis] Indices of dimension 1 does not match array of dimension 2.");
  EXPECT_EQ(message_of([&] { mx::scatter_add_axis(mx::zeros({2, 3}), mx::array({0}, {1, 1}), mx::array(1.f), 3); }),
            "[scatter_add_axis] Received invalid axis for array with 2 dimensions.");
  // Display names (format spec 3.3).
  const auto& def = mx::registry::get("ScatterAxis");
  EXPECT_EQ(def.display_name(mx::State{int32_t(0), int32_t(1)}), "ScatterAxis Sum");
  EXPECT_EQ(def.display_name(mx::State{int32_t(1), int32_t(1)}), "ScatterAxis");
}

// ---- scatter ----

TEST(IndexScatter, ReduceTypesWithRepeatedIndices) {
  auto a = mx::array({1.f, 2.f, 3.f, 4.f, 5.f});
  auto idx = mx::array({1, 1, 3, -1});
  auto upd = mx::reshape(mx::array({10.f, 20.f, 0.5f, 7.f}), {4, 1});
  EXPECT_EQ(vals<float>(mx::scatter(a, idx, upd, 0)), (std::vector<float>{1, 20, 3, 0.5f, 7}));
  EXPECT_EQ(vals<float>(mx::scatter_add(a, idx, upd, 0)), (std::vector<float>{1, 32, 3, 4.5f, 12}));
  EXPECT_EQ(vals<float>(mx::scatter_prod(a, idx, upd, 0)), (std::vector<float>{1, 400, 3, 2, 35}));
  EXPECT_EQ(vals<float>(mx::scatter_max(a, idx, upd, 0)), (std::vector<float>{1, 20, 3, 4, 7}));
  EXPECT_EQ(vals<float>(mx::scatter_min(a, idx, upd, 0)), (std::vector<float>{1, 2, 3, 0.5f, 5}));
  const auto& def = mx::registry::get("Scatter");
  EXPECT_FALSE(def.shapeless);
  const std::vector<std::string> names{"Scatter Max", "Scatter Min", "Scatter Sum", "Scatter Prod", "Scatter"};
  for (int t = 0; t < 5; ++t) EXPECT_EQ(def.display_name(mx::State{int32_t(t), std::vector<int32_t>{0}}), names[t]);
}

TEST(IndexScatter, WindowsAndMultipleAxesMatchReference) {
  // a (4, 3, 5); indices on axes 0 and 2; window (1, 3, 1) covers all of axis 1.
  const mx::Shape as{4, 3, 5};
  std::vector<int> i0{0, 3, 0, -1}, i2{4, 1, 4, 0};
  auto a = mx::reshape(mx::arange(60.0, mx::float32), as);
  auto upd = mx::reshape(mx::arange(100.0, 112.0, mx::float32), {4, 1, 3, 1});
  auto r = mx::scatter_add(a, {mx::array(i0, {4}), mx::array(i2, {4})}, upd, {0, 2});
  std::vector<double> ref = iota(60);
  for (int p = 0; p < 4; ++p) {
    int x = i0[p] < 0 ? i0[p] + 4 : i0[p];
    for (int j = 0; j < 3; ++j) ref[(x * 3 + j) * 5 + i2[p]] += 100 + p * 3 + j;
  }
  EXPECT_EQ(vals<double>(r), ref);
  // Window wider than one along the indexed axis: windows overlap; applied in index order.
  auto w = mx::scatter(mx::zeros({6}), mx::array({0, 1}), mx::reshape(mx::array({1.f, 2.f, 3.f, 4.f}), {2, 2}), 0);
  EXPECT_EQ(vals<float>(w), (std::vector<float>{1, 3, 4, 0, 0, 0}));
  // Non-contiguous source and updates.
  auto at = mx::transpose(mx::reshape(mx::arange(6.0, mx::float32), {3, 2}));  // [[0,2,4],[1,3,5]]
  auto ut = mx::reshape(mx::transpose(mx::reshape(mx::array({10.f, 20.f, 30.f, 40.f, 50.f, 60.f}), {3, 2})), {2, 1, 3});
  EXPECT_EQ(vals<float>(mx::scatter(at, mx::array({1, 0}), ut, 0)), (std::vector<float>{20, 40, 60, 10, 30, 50}));
  // Out-of-range index positions are dropped whole.
  EXPECT_EQ(vals<float>(mx::scatter(mx::zeros({3}), mx::array({7, 1, -4}), mx::reshape(mx::array({1.f, 2.f, 3.f}), {3, 1}), 0)),
            (std::vector<float>{0, 2, 0}));
  // Large scatter (parallel path): rows of a (64, 4096) matrix.
  auto big = mx::scatter_add(mx::zeros({64, 4096}), mx::array({3, 3, 60}), mx::ones({3, 1, 4096}), 0);
  auto bv = vals<float>(mx::sum(big, 1));
  EXPECT_EQ(bv[3], 8192.0f);
  EXPECT_EQ(bv[60], 4096.0f);
  EXPECT_EQ(bv[0], 0.0f);
}

TEST(IndexScatter, EveryDtypeAndIndexDtype) {
  for (auto dt : kAllTypes) {
    auto a = mx::astype(mx::array({1, 0, 1, 1}), dt);
    auto u = mx::astype(mx::reshape(mx::array({1, 1, 0}), {3, 1}), dt);
    auto r = vals<double>(mx::scatter_add(a, mx::array({1, 1, 2}), u, 0));
    auto want = dt == mx::bool_ ? std::vector<double>{1, 1, 1, 1} : std::vector<double>{1, 2, 1, 1};
    EXPECT_EQ(r, want) << mx::dtype_name(dt);
    auto m = vals<double>(mx::scatter_max(a, mx::array({1, 3}), mx::astype(mx::reshape(mx::array({1, 0}), {2, 1}), dt), 0));
    EXPECT_EQ(m, (std::vector<double>{1, 1, 1, 1})) << mx::dtype_name(dt);
  }
  for (auto it : kIndexTypes) {
    auto r = mx::scatter(mx::zeros({4}), mx::astype(mx::array({3, 0}), it), mx::reshape(mx::array({5.f, 6.f}), {2, 1}), 0);
    EXPECT_EQ(vals<float>(r), (std::vector<float>{6, 0, 0, 5})) << mx::dtype_name(it);
  }
  // float16 sums round at every step (as MLX's CPU backend).
  auto h = mx::scatter_add(mx::zeros({1}, mx::float16), mx::array({0, 0, 0}),
                           mx::astype(mx::reshape(mx::array({2048.f, 1.f, 1.f}), {3, 1}), mx::float16), 0);
  EXPECT_EQ(vals<float>(h), (std::vector<float>{2048.f}));
}

TEST(IndexScatter, ErrorsMatchMLX) {
  auto a = mx::zeros({3, 4});
  EXPECT_EQ(message_of([&] { mx::scatter(a, mx::array({0, 1}), mx::zeros({2, 4}), 0); }),
            "[scatter] Updates with 2 dimensions does not match the sum of the array (2) and indices (1) dimensions.");
  EXPECT_EQ(message_of([&] { mx::scatter(a, mx::array({0, 1}), mx::zeros({3, 1, 4}), 0); }),
            "[scatter] Update shape (3,1,4) is not valid for broadcasted index shape (2).");
  EXPECT_EQ(message_of([&] { mx::scatter(a, mx::array({0, 1}), mx::zeros({2, 1, 5}), 0); }),
            "[scatter] Updates with shape (2,1,5) are too large for array with shape (3,4).");
  EXPECT_EQ(message_of([&] { mx::scatter(a, mx::array({0.f}), mx::zeros({1, 1, 4}), 0); }),
            "[scatter] Got indices with invalid dtype. Indices must be integral.");
  EXPECT_EQ(message_of([&] { mx::scatter(a, mx::array({true}), mx::zeros({1, 1, 4}), 0); }),
            "[scatter] Boolean indices not supported.");
  EXPECT_EQ(message_of([&] { mx::scatter(a, {mx::array({0}), mx::array({0})}, mx::zeros({1, 1, 1}), {0, 0}); }),
            "[scatter] Repeat axes not allowed in scatter.");
  EXPECT_EQ(message_of([&] { mx::scatter(a, {mx::array({0})}, mx::zeros({1, 1, 1}), {-1}); }),
            "[scatter] Axes don't match array dimensions.");
  // File validation: updates of another dtype are refused by the shape rule.
  const auto& def = mx::registry::get("Scatter");
  EXPECT_THAT(message_of([&] {
                def.infer(mx::State{int32_t(2), std::vector<int32_t>{0}},
                          {{{3}, mx::float32}, {{2}, mx::int32}, {{2, 1}, mx::int32}});
              }),
              HasSubstr("do not match the array type"));
  EXPECT_THAT(message_of([&] {
                def.infer(mx::State{int32_t(9), std::vector<int32_t>{0}},
                          {{{3}, mx::float32}, {{2}, mx::int32}, {{2, 1}, mx::float32}});
              }),
              HasSubstr("Invalid reduce type 9"));
}

// ---- masked_scatter ----

TEST(IndexMaskedScatter, FillsInOrder) {
  auto m = mx::array({true, false, true, false, true, true}, {2, 3});
  auto r = mx::masked_scatter(mx::zeros({2, 3}), m, mx::array({1.f, 2.f, 3.f, 4.f}));
  EXPECT_EQ(r.shape(), mx::Shape({2, 3}));
  EXPECT_EQ(vals<float>(r), (std::vector<float>{1, 0, 2, 0, 3, 4}));
  // A prefix mask selects rows; values are rows, a row broadcast, or a scalar (all cast to a's dtype).
  auto rm = mx::array({true, false, true});
  EXPECT_EQ(vals<float>(mx::masked_scatter(mx::zeros({3, 2}), rm, mx::array({1.f, 2.f, 3.f, 4.f}, {2, 2}))),
            (std::vector<float>{1, 2, 0, 0, 3, 4}));
  EXPECT_EQ(vals<float>(mx::masked_scatter(mx::zeros({3, 2}), rm, mx::array({7, 8}))),
            (std::vector<float>{7, 8, 0, 0, 7, 8}));
  EXPECT_EQ(vals<float>(mx::masked_scatter(mx::zeros({3, 2}), rm, mx::array(5))),
            (std::vector<float>{5, 5, 0, 0, 5, 5}));
  // Non-contiguous target; every dtype.
  auto at = mx::transpose(mx::reshape(mx::arange(6.0, mx::float32), {3, 2}));  // [[0,2,4],[1,3,5]]
  EXPECT_EQ(vals<float>(mx::masked_scatter(at, m, mx::array({9.f, 8.f, 7.f, 6.f}))),
            (std::vector<float>{9, 2, 8, 1, 7, 6}));
  for (auto dt : kAllTypes) {
    auto x = mx::masked_scatter(mx::astype(mx::zeros({4}), dt), mx::array({false, true, true, false}),
                                mx::astype(mx::array({1, 1}), dt));
    EXPECT_EQ(x.dtype(), dt);
    EXPECT_EQ(vals<double>(x), (std::vector<double>{0, 1, 1, 0})) << mx::dtype_name(dt);
  }
  // Large mask (chunked parallel fill).
  auto big = mx::masked_scatter(mx::zeros({200000}), mx::greater(mx::arange(200000), mx::array(50000)),
                                mx::arange(1.0, 200001.0, mx::float32));
  auto bv = vals<float>(big);
  EXPECT_EQ(bv[50000], 0.0f);
  EXPECT_EQ(bv[50001], 1.0f);
  EXPECT_EQ(bv[199999], 149999.0f);
}

TEST(IndexMaskedScatter, Errors) {
  EXPECT_EQ(message_of([] { mx::masked_scatter(mx::zeros({3}), mx::array({1, 0, 1}), mx::array({1.f})); }),
            "[masked_scatter] The mask has to be boolean.");
  EXPECT_EQ(message_of([] { mx::masked_scatter(mx::zeros({3}), mx::zeros({3, 1}, mx::bool_), mx::array({1.f})); }),
            "[masked_scatter] The mask cannot have more dimensions than the target.");
  EXPECT_EQ(message_of([] { mx::masked_scatter(mx::zeros({3, 2}), mx::zeros({2}, mx::bool_), mx::array({1.f})); }),
            "[masked_scatter] The boolean mask should have the same shape as the beginning of the indexed array but "
            "the mask has shape (2) and the array has shape (3,2)");
  EXPECT_EQ(message_of([] { mx::masked_scatter(mx::zeros({3}), mx::ones({3}, mx::bool_), mx::zeros({1, 1, 1})); }),
            "[masked_scatter] Value array shape must be broadcastable with the last 0 dimensions of the input.");
  // Too few values: an evaluation error, as MLX.
  auto r = mx::masked_scatter(mx::zeros({3}), mx::ones({3}, mx::bool_), mx::array({1.f, 2.f}));
  EXPECT_EQ(message_of([&] { r.eval(); }),
            "[MaskedScatter::eval_cpu] Source does not have enough elements for mask.");
}

// ---- export and shapeless replay ----

TEST(IndexExport, ShapelessReplayOnNewShapes) {
  auto fn = [](const mx::Args& a) -> std::vector<mx::array> {
    return {mx::take_along_axis(a[0], a[1], 1), mx::take(a[0], a[2], 1), mx::sort(a[0], -1), mx::argsort(a[0], 0),
            mx::put_along_axis(a[0], a[1], mx::array(-1.0f), 1)};
  };
  const std::string path = ::testing::TempDir() + "kiln_index_shapeless.mlxfn";
  auto x = mx::reshape(mx::arange(12.0, mx::float32), {3, 4});
  mx::export_function(path, fn, {x, mx::array({0, 1, 2}, {3, 1}), mx::array({3, 0})}, true);
  auto f = mx::import_function(path);
  // New shapes: x (4, 6), indices (4, 2), take indices (3,).
  auto y = mx::transpose(mx::reshape(mx::array({5.f, 1.f, 4.f, 2.f, 8.f, 0.f, 7.f, 3.f, 9.f, 6.f, 11.f, 10.f,
                                                23.f, 12.f, 22.f, 13.f, 21.f, 14.f, 20.f, 15.f, 19.f, 16.f, 18.f, 17.f}),
                                     {6, 4}));
  auto j = mx::array({5, 0, 1, -1, 2, 2, 3, 4}, {4, 2});
  auto t = mx::array({-1, 0, 2});
  auto got = f({y, j, t});
  auto want = fn({y, j, t});
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    if (k == 1) continue;
    EXPECT_EQ(got[k].shape(), want[k].shape()) << "output " << k;
    EXPECT_EQ(vals<double>(got[k]), vals<double>(want[k])) << "output " << k;
  }
  // take records Gather's slice sizes from the traced shape, so the replay keeps 3 rows, exactly as
  // MLX 0.30.1 replays its own shapeless take (checked with MLX: (3, 3), not (4, 3)).
  EXPECT_EQ(got[1].shape(), mx::Shape({3, 3}));
  auto w1 = vals<double>(want[1]);
  EXPECT_EQ(vals<double>(got[1]), std::vector<double>(w1.begin(), w1.begin() + 9));
}
