// MLX's primitive classes over the registry rows (kiln/primitives.h): array::primitive() gives the
// row's class, the classes build nodes through MLX's array constructor, and the class list and the
// registry agree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <typeinfo>

#include "kiln/kiln.h"
#include "test_util.h"

namespace mx = kiln;
using ::testing::HasSubstr;

TEST(PrimitiveClasses, EveryRowHasItsClassAndEveryClassItsRow) {
  std::set<std::string> classes;
#define KILN_TEST_NAME(NAME, BASE) classes.insert(mx::NAME::row_name);
  KILN_PRIMITIVE_CLASSES(KILN_TEST_NAME)
#undef KILN_TEST_NAME
#define KILN_TEST_NAME(NAME, BASE) classes.insert(mx::fast::NAME::row_name);
  KILN_FAST_PRIMITIVE_CLASSES(KILN_TEST_NAME)
#undef KILN_TEST_NAME
  classes.insert(mx::ArgReduce::row_name);
  classes.insert(mx::Reduce::row_name);
  classes.insert(mx::Compiled::row_name);
  std::set<std::string> rows;
  for (auto* def : mx::registry::all()) rows.insert(def->name);
  EXPECT_EQ(classes, rows);
  // Each row's object is of the class of its name, with the row's display name.
  for (auto* def : mx::registry::all()) {
    mx::State st;
    if (!def->fields.empty()) continue;  // the stateless rows are built from a stream alone below
    auto p = mx::Primitive::make(*def, st, mx::default_stream(mx::Device::cpu));
    EXPECT_EQ(&p->def(), def);
    EXPECT_EQ(std::string(p->name()), def->display_name(st));
  }
}

TEST(PrimitiveClasses, ArrayPrimitiveHasTheRowsDynamicType) {
  auto x = mx::array({1.0f, -2.0f});
  auto e = mx::exp(x);
  auto& pe = e.primitive();
  EXPECT_EQ(typeid(pe), typeid(mx::Exp));
  auto s = mx::sum(mx::abs(x), true);
  auto& ps = s.primitive();
  EXPECT_EQ(typeid(ps), typeid(mx::Reduce));
  EXPECT_STREQ(s.primitive().name(), "Sum");
  EXPECT_EQ(std::dynamic_pointer_cast<mx::Reduce>(s.primitive_ptr())->reduce_type(), mx::Reduce::Sum);
  EXPECT_EQ(std::dynamic_pointer_cast<mx::Exp>(s.primitive_ptr()), nullptr);
  auto sum_xx = mx::add(x, x);
  auto& pa = sum_xx.primitive();
  EXPECT_EQ(typeid(pa), typeid(mx::Add));
  EXPECT_NE(dynamic_cast<mx::UnaryPrimitive*>(&e.primitive()), nullptr);
  // The object is made once per node and shared by its outputs.
  EXPECT_EQ(e.primitive_ptr(), e.primitive_ptr());
  auto parts = mx::split(mx::arange(6.0f), 2);
  auto& pp = parts[0].primitive();
  EXPECT_EQ(typeid(pp), typeid(mx::Split));
  EXPECT_EQ(parts[0].primitive_ptr(), parts[1].primitive_ptr());
  // The stream is the node's.
  auto s2 = mx::new_stream(mx::Device::cpu);
  EXPECT_EQ(mx::exp(x, s2).primitive().stream(), s2);
  EXPECT_EQ(mx::exp(x, s2).primitive().device(), mx::Device(mx::Device::cpu));
  // Evaluated arrays and leaves have none.
  e.eval();
  EXPECT_THAT(test_util::message_of([&] { e.primitive(); }), HasSubstr("has no primitive"));
  EXPECT_THROW(x.primitive_ptr(), std::invalid_argument);
}

TEST(PrimitiveClasses, IsEquivalentComparesRowAndState) {
  auto x = mx::array({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});
  auto s0 = mx::sum(x, 0, true), s0b = mx::sum(x, 0, true), s1 = mx::sum(x, 1, true), m0 = mx::prod(x, 0, true);
  EXPECT_TRUE(s0.primitive().is_equivalent(s0b.primitive()));
  EXPECT_FALSE(s0.primitive().is_equivalent(s1.primitive()));
  EXPECT_FALSE(s0.primitive().is_equivalent(m0.primitive()));
  EXPECT_FALSE(mx::exp(x).primitive().is_equivalent(mx::sin(x).primitive()));
  // Rows MLX never merges (kNoCSE) are not equivalent even to themselves.
  auto a = mx::expm1(x);
  EXPECT_FALSE(a.primitive().is_equivalent(a.primitive()));
}

TEST(PrimitiveClasses, MlxArrayConstructorBuildsANode) {
  auto x = mx::array({0, 2, 1, 7, 5, -5}, {2, 3});
  auto s = mx::default_stream(mx::Device::cpu);
  auto p = std::make_shared<mx::ArgReduce>(s, mx::ArgReduce::ArgMax, 1);
  auto y = mx::array({2}, mx::uint32, p, {x});
  EXPECT_EQ(y.primitive_ptr(), p);  // the given object is the node's
  EXPECT_EQ(test_util::vals<uint32_t>(y), (std::vector<uint32_t>{1, 0}));
  auto z = mx::array({3}, mx::uint32, std::make_shared<mx::ArgReduce>(s, mx::ArgReduce::ArgMin, 0), {x});
  EXPECT_EQ(test_util::vals<uint32_t>(z), (std::vector<uint32_t>{0, 0, 1}));
  // A generic (Stream, State) construction, and a stateless class from a stream alone.
  auto r = mx::array({2}, mx::int32, std::make_shared<mx::Reduce>(s, mx::State{int32_t{2}, std::vector<int32_t>{1}}),
                     {x});
  EXPECT_EQ(test_util::vals<int32_t>(r), (std::vector<int32_t>{3, 7}));
  auto n = mx::array({2, 3}, mx::int32, std::make_shared<mx::Negative>(s), {x});
  EXPECT_EQ(test_util::vals<int32_t>(n), (std::vector<int32_t>{0, -2, -1, -7, -5, 5}));
  // Several outputs.
  auto outs = mx::array::make_arrays({{2, 1}, {2, 2}}, {mx::int32, mx::int32},
                                     std::make_shared<mx::Split>(s, mx::State{std::vector<int32_t>{1}, int32_t{1}}),
                                     {x});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(test_util::vals<int32_t>(outs[1]), (std::vector<int32_t>{2, 1, 5, -5}));
}

TEST(PrimitiveClasses, BadConstructionsSayWhatWasExpected) {
  auto x = mx::array({1.0f, 2.0f});
  auto s = mx::default_stream(mx::Device::cpu);
  // Wrong output shape for the row's shape rule.
  EXPECT_THAT(test_util::message_of([&] { mx::array({3}, mx::float32, std::make_shared<mx::Exp>(s), {x}); }),
              HasSubstr("[Exp] These inputs give outputs of"));
  // Wrong arity.
  EXPECT_THAT(test_util::message_of([&] { mx::array({2}, mx::float32, std::make_shared<mx::Add>(s), {x}); }),
              HasSubstr("[Add] Expected 2 input(s), found 1."));
  // A state that does not fit the schema; a stateful class from a stream alone.
  EXPECT_THAT(test_util::message_of([&] { mx::Reduce(s, mx::State{1.5f}); }),
              HasSubstr("[Reduce] Expected a state of 2 field(s) (type, axes) but found 1"));
  EXPECT_THAT(test_util::message_of([&] { mx::ArgReduce(s, mx::State{1.5f, int32_t{0}}); }),
              HasSubstr("State field 0 ('type') holds a value of the wrong type"));
  EXPECT_THAT(test_util::message_of([&] { mx::Transpose{s}; }), HasSubstr("construct it with (Stream, State)"));
  // A multi-output row through the single-output constructor; a null primitive.
  EXPECT_THAT(test_util::message_of([&] {
                mx::array({1}, mx::float32,
                          std::make_shared<mx::Split>(s, mx::State{std::vector<int32_t>{1}, int32_t{0}}), {x});
              }),
              HasSubstr("build them with array::make_arrays"));
  EXPECT_THROW(mx::array({2}, mx::float32, std::shared_ptr<mx::Primitive>(), {x}), std::invalid_argument);
}

TEST(PrimitiveClasses, OutputShapesFollowTheShapeRule) {
  auto x = mx::ones({2, 3});
  auto t = mx::transpose(x, {1, 0});
  EXPECT_EQ(t.primitive().output_shapes({mx::ones({4, 5})}), (std::vector<mx::Shape>{{5, 4}}));
}

TEST(PrimitiveClasses, Complex64ConvertsToFloatAsItsRealPart) {
  mx::complex64_t c{2.5f, -1.0f};
  float f = c;
  EXPECT_EQ(f, 2.5f);
  EXPECT_EQ(static_cast<double>(c), 2.5);
  mx::complex64_t from_int = 3;
  EXPECT_EQ(from_int, mx::complex64_t(3.0f, 0.0f));
  std::complex<float> sc = c * c;
  EXPECT_EQ(sc, std::complex<float>(5.25f, -5.0f));
  auto a = mx::array(c);
  EXPECT_EQ(a.dtype(), mx::complex64);
  EXPECT_EQ(mx::array(std::complex<float>(1.0f, 2.0f)).dtype(), mx::complex64);
  EXPECT_EQ((a + a).item<mx::complex64_t>(), mx::complex64_t(5.0f, -2.0f));
}
