// Shape family, shape rules as the file reader and shapeless replay use them: every primitive's
// `infer` recomputes shapes from new input shapes and refuses states a hostile file could carry;
// plus empty-array and buffer-sharing cases not covered by the op tests.
#include <gmock/gmock.h>

#include "core/kernels.h"
#include "test_shape_util.h"

using namespace shape_test;
using ::testing::HasSubstr;

namespace {
const mx::PrimitiveDef& def(const char* n) { return mx::registry::get(n); }
mx::ArraySpec f32(mx::Shape s) { return {std::move(s), mx::float32}; }
std::string infer_error(const char* name, const mx::State& st, const std::vector<mx::ArraySpec>& in) {
  return error_of([&] { def(name).infer(st, in); });
}
}  // namespace

TEST(ShapeRules, RegistryRows) {
  // Names, arity and flags of every primitive of the family (spec 3.4); each has a CPU kernel.
  const auto& cpu = mx::detail::kernels_for(mx::Device{});
  for (auto n : {"Reshape", "Transpose", "Broadcast", "BroadcastAxes", "ExpandDims", "Squeeze", "Flatten", "Unflatten",
                 "AsStrided", "Contiguous", "Slice", "SliceUpdate", "DynamicSlice", "DynamicSliceUpdate", "Split",
                 "Concatenate", "Pad", "Full", "Arange"}) {
    ASSERT_NE(mx::registry::find(n), nullptr) << n;
    EXPECT_NE(cpu.find(def(n)), nullptr) << n;
    EXPECT_NE(def(n).infer, nullptr) << n;
  }
  for (auto n : {"AsStrided", "Slice", "Split", "Pad"}) EXPECT_FALSE(def(n).shapeless) << n;
  for (auto n : {"Reshape", "Broadcast", "DynamicSlice", "Concatenate", "Full", "Arange"}) {
    EXPECT_TRUE(def(n).shapeless) << n;
  }
  EXPECT_EQ(def("Split").num_outputs, -1);
  EXPECT_EQ(def("Broadcast").max_inputs, -1);
  EXPECT_EQ(def("Arange").max_inputs, 0);
  EXPECT_EQ(def("Slice").fields.size(), 3u);
  EXPECT_EQ(def("AsStrided").fields[1].type, mx::FieldType::StridesF);
  EXPECT_EQ(def("AsStrided").fields[2].type, mx::FieldType::Size);
  EXPECT_EQ(def("Arange").fields[0].type, mx::FieldType::Double);
  EXPECT_EQ(def("Pad").fields[0].type, mx::FieldType::IntVec);
  EXPECT_EQ(def("Pad").fields[1].type, mx::FieldType::ShapeF);
  EXPECT_EQ(def("Full").fields.size(), 0u);
}

TEST(ShapeRules, ReplayOnNewShapes) {
  using V = std::vector<int32_t>;
  EXPECT_EQ(def("Reshape").infer(mx::State{V{-1, 4}}, {f32({6, 2, 4})})[0].shape, mx::Shape({12, 4}));
  EXPECT_EQ(def("Transpose").infer(mx::State{V{1, 0}}, {f32({5, 7})})[0].shape, mx::Shape({7, 5}));
  EXPECT_EQ(def("ExpandDims").infer(mx::State{V{0, 3}}, {f32({5, 7})})[0].shape, mx::Shape({1, 5, 7, 1}));
  EXPECT_EQ(def("Squeeze").infer(mx::State{V{1}}, {f32({5, 1, 7})})[0].shape, mx::Shape({5, 7}));
  EXPECT_EQ(def("Flatten").infer(mx::State{int32_t(1), int32_t(2)}, {f32({5, 2, 3})})[0].shape, mx::Shape({5, 6}));
  EXPECT_EQ(def("Unflatten").infer(mx::State{int32_t(0), V{2, 3}}, {f32({6, 4})})[0].shape, mx::Shape({2, 3, 4}));
  EXPECT_EQ(def("Concatenate").infer(mx::State{int32_t(1)}, {f32({2, 3}), f32({2, 5})})[0].shape, mx::Shape({2, 8}));
  EXPECT_EQ(def("Full").infer({}, {{mx::Shape{4, 4}, mx::int8}})[0].dtype, mx::int8);
  EXPECT_EQ(def("DynamicSlice").infer(mx::State{V{0}, V{2, 3}}, {f32({9, 3}), {{1}, mx::int32}})[0].shape,
            mx::Shape({2, 3}));
  EXPECT_EQ(def("SliceUpdate").infer(mx::State{V{1, 0}, V{3, 2}, V{1, 1}}, {f32({4, 2}), f32({2, 2})})[0].shape,
            mx::Shape({4, 2}));
  EXPECT_EQ(def("DynamicSliceUpdate").infer(mx::State{V{0}}, {f32({4, 2}), f32({1, 2}), {{}, mx::int64}})[0].shape,
            mx::Shape({4, 2}));
  EXPECT_EQ(def("Pad").infer(mx::State{V{0, -1}, V{1, 0}, V{2, 3}}, {f32({2, 2}), f32({})})[0].shape,
            mx::Shape({5, 5}));
  EXPECT_EQ(def("AsStrided").infer(mx::State{V{2, 2}, std::vector<int64_t>{2, 1}, uint64_t(1)}, {f32({5})})[0].shape,
            mx::Shape({2, 2}));
}

TEST(ShapeRules, HostileStatesAreRefused) {
  using V = std::vector<int32_t>;
  EXPECT_THAT(infer_error("Reshape", mx::State{V{-3, 2}}, {f32({6})}), HasSubstr("Cannot reshape"));
  EXPECT_THAT(infer_error("Transpose", mx::State{V{0, 0}}, {f32({2, 2})}), HasSubstr("Repeat axes"));
  EXPECT_THAT(infer_error("Transpose", mx::State{V{0, 5}}, {f32({2, 2})}), HasSubstr("Invalid axis"));
  EXPECT_THAT(infer_error("Transpose", mx::State{V{0}}, {f32({2, 2})}), HasSubstr("axes for array"));
  EXPECT_THAT(infer_error("Broadcast", mx::State{V{2, 3}}, {f32({4})}), HasSubstr("cannot be broadcast"));
  EXPECT_THAT(infer_error("Broadcast", mx::State{V{-1, 3}}, {f32({1, 3})}), HasSubstr("non-negative"));
  EXPECT_THAT(infer_error("ExpandDims", mx::State{V{4}}, {f32({2})}), HasSubstr("Invalid axis"));
  EXPECT_THAT(infer_error("ExpandDims", mx::State{V{-1}}, {f32({2})}), HasSubstr("Invalid axis"));
  EXPECT_THAT(infer_error("Squeeze", mx::State{V{1, 0}}, {f32({1, 1})}), HasSubstr("Invalid axes"));
  EXPECT_THAT(infer_error("Flatten", mx::State{int32_t(1), int32_t(0)}, {f32({2, 2})}), HasSubstr("Invalid axes"));
  EXPECT_THAT(infer_error("Flatten", mx::State{int32_t(0), int32_t(2)}, {f32({2, 2})}), HasSubstr("Invalid axes"));
  EXPECT_THAT(infer_error("Unflatten", mx::State{int32_t(0), V{2, 2}}, {f32({6})}), HasSubstr("Cannot unflatten"));
  EXPECT_THAT(infer_error("Unflatten", mx::State{int32_t(0), V{-1, -6}}, {f32({6})}), HasSubstr("non-negative"));
  EXPECT_THAT(infer_error("Unflatten", mx::State{int32_t(1), V{6}}, {f32({6})}), HasSubstr("Invalid axes"));
  EXPECT_THAT(infer_error("Concatenate", mx::State{int32_t(0)}, {f32({2, 3}), f32({2, 4})}),
              HasSubstr("must match exactly"));
  EXPECT_THAT(infer_error("Concatenate", mx::State{int32_t(0)}, {f32({2}), {{2}, mx::int32}}), HasSubstr("dtype"));
  EXPECT_THAT(infer_error("Concatenate", mx::State{int32_t(2)}, {f32({2}), f32({2})}), HasSubstr("out of bounds"));
  EXPECT_THAT(infer_error("Pad", mx::State{V{0}, V{-1}, V{0}}, {f32({2}), f32({})}), HasSubstr("non-negative"));
  EXPECT_THAT(infer_error("Pad", mx::State{V{3}, V{1}, V{0}}, {f32({2}), f32({})}), HasSubstr("out of bounds"));
  EXPECT_THAT(infer_error("Pad", mx::State{V{0}, V{1}, V{0}}, {f32({2}), f32({2})}), HasSubstr("single value"));
  EXPECT_THAT(infer_error("Pad", mx::State{V{0}, V{1}, V{}}, {f32({2}), f32({})}), HasSubstr("padding sizes"));
  EXPECT_THAT(infer_error("DynamicSlice", mx::State{V{0}, V{5}}, {f32({3}), {{1}, mx::int32}}),
              HasSubstr("Invalid slice size"));
  EXPECT_THAT(infer_error("DynamicSlice", mx::State{V{0}, V{1}}, {f32({3}), f32({1})}), HasSubstr("integers"));
  EXPECT_THAT(infer_error("DynamicSlice", mx::State{V{2}, V{1}}, {f32({3}), {{1}, mx::int32}}),
              HasSubstr("Invalid axis"));
  EXPECT_THAT(infer_error("DynamicSliceUpdate", mx::State{V{0}}, {f32({3}), f32({4}), {{1}, mx::int32}}),
              HasSubstr("does not fit"));
  EXPECT_THAT(infer_error("SliceUpdate", mx::State{V{2}, V{4}, V{1}}, {f32({3}), f32({2})}), HasSubstr("out of bounds"));
  EXPECT_THAT(infer_error("SliceUpdate", mx::State{V{0}, V{2}, V{1}}, {f32({3}), {{2}, mx::int8}}), HasSubstr("dtype"));
  EXPECT_THAT(infer_error("Split", mx::State{V{4}, int32_t(0)}, {f32({3})}), HasSubstr("must be sorted"));
  EXPECT_THAT(infer_error("Split", mx::State{V{1}, int32_t(1)}, {f32({3})}), HasSubstr("Invalid axis"));
  EXPECT_THAT(infer_error("AsStrided", mx::State{V{2}, std::vector<int64_t>{4}, uint64_t(1)}, {f32({5})}),
              HasSubstr("reaches outside"));
  EXPECT_THAT(infer_error("AsStrided", mx::State{V{2}, std::vector<int64_t>{1}, uint64_t(1) << 62}, {f32({5})}),
              HasSubstr("reaches outside"));
  EXPECT_THAT(infer_error("Arange", mx::State{0.0, double(NAN), 1.0}, {}), HasSubstr("Cannot compute length"));
  EXPECT_THAT(infer_error("Arange", mx::State{0.0, 1e300, 1e-300}, {}), HasSubstr("Maximum size"));
  EXPECT_THAT(infer_error("BroadcastAxes", mx::State{V{-3}}, {f32({2, 2}), f32({2, 2})}),
              HasSubstr("invalid axes to ignore"));
}

TEST(ShapeRules, EmptyArraysAndSharing) {
  auto e = mx::zeros({0, 3});
  EXPECT_EQ(mx::transpose(e).shape(), mx::Shape({3, 0}));
  EXPECT_EQ(values<float>(mx::transpose(e)).size(), 0u);
  EXPECT_EQ(mx::expand_dims(e, 1).shape(), mx::Shape({0, 1, 3}));
  EXPECT_EQ(mx::squeeze(mx::zeros({0, 1})).shape(), mx::Shape({0}));
  EXPECT_EQ(mx::flatten(e).shape(), mx::Shape({0}));
  EXPECT_EQ(mx::unflatten(e, 1, {3, 1}).shape(), mx::Shape({0, 3, 1}));
  EXPECT_EQ(values<float>(mx::concatenate({e, e}, 1)).size(), 0u);
  auto c = mx::concatenate({e, mx::ones({2, 3})}, 0);
  EXPECT_EQ(values<float>(c), std::vector<float>(6, 1.0f));
  EXPECT_EQ(values<float>(mx::pad(e, {{1, 0}, {0, 0}}, mx::array(3.0f))), std::vector<float>(3, 3.0f));
  auto sp = mx::split(e, 3, 1);
  EXPECT_EQ(sp[2].shape(), mx::Shape({0, 1}));
  EXPECT_EQ(values<float>(sp[2]).size(), 0u);
  EXPECT_EQ(values<float>(mx::tile(e, {2, 2})).size(), 0u);
  EXPECT_EQ(values<float>(mx::broadcast_to(e, {2, 0, 3})).size(), 0u);
  EXPECT_EQ(values<float>(mx::slice(e, mx::array({0}), {1}, {0, 2})).size(), 0u);
  EXPECT_EQ(values<float>(mx::slice_update(e, mx::array(1.0f), {0, 0}, {0, 2})).size(), 0u);
  EXPECT_EQ(values<float>(mx::as_strided(e, {0}, {1}, 0)).size(), 0u);
  EXPECT_EQ(values<float>(mx::contiguous(mx::transpose(e))).size(), 0u);
  EXPECT_EQ(mx::arange(0).shape(), mx::Shape({0}));
  EXPECT_EQ(values<float>(mx::full({0}, 1.0f)).size(), 0u);

  // Buffer sharing of the remaining views: unflatten, dynamic slice, split pieces, squeeze of a slice.
  auto a = iota({4, 6});
  auto u = mx::unflatten(a, 1, {2, 3});
  auto d = mx::slice(a, mx::array({1}), {0}, {2, 6});
  auto q = mx::squeeze(mx::slice(a, {1, 0}, {2, 6}));
  mx::eval(u, d, q);
  EXPECT_EQ(u.buffer(), a.buffer());
  EXPECT_EQ(d.buffer(), a.buffer());
  EXPECT_EQ(q.buffer(), a.buffer());
  EXPECT_EQ(values<float>(d)[0], 6.0f);
  EXPECT_EQ(values<float>(q), std::vector<float>({6, 7, 8, 9, 10, 11}));
  // Copies where the data must move: concatenate, pad, full, slice_update, non-restridable reshape.
  auto cc = mx::concatenate({a, a}, 0);
  auto fu = mx::full({4, 6}, a);
  mx::eval(cc, fu);
  EXPECT_NE(cc.buffer(), a.buffer());
  EXPECT_NE(fu.buffer(), a.buffer());
  EXPECT_EQ(values<float>(fu), values<float>(a));
}

TEST(ShapeRules, LargeCopiesAcrossThreads) {
  // Big enough for the copy loops to split across threads; checked against index arithmetic.
  const int n = 700, m = 900;
  auto a = iota({n, m});
  auto t = mx::reshape(mx::transpose(a), {m * n});
  auto c = mx::concatenate({mx::transpose(a), mx::transpose(a)}, 1);
  auto p = mx::pad(a, {{1, 1}, {2, 2}}, mx::array(-1.0f));
  auto tv = values<float>(t), cv = values<float>(c), pv = values<float>(p);
  for (int i = 0; i < m; i += 37) {
    for (int j = 0; j < n; j += 13) {
      ASSERT_EQ(tv[i * n + j], float(j * m + i));
      ASSERT_EQ(cv[i * 2 * n + j], float(j * m + i));
      ASSERT_EQ(cv[i * 2 * n + n + j], float(j * m + i));
    }
  }
  for (int i = 0; i < n + 2; i += 29) {
    for (int j = 0; j < m + 4; j += 31) {
      bool in = i >= 1 && i <= n && j >= 2 && j < m + 2;
      ASSERT_EQ(pv[i * (m + 4) + j], in ? float((i - 1) * m + (j - 2)) : -1.0f);
    }
  }
}
