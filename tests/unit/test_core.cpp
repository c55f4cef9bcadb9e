#include <gtest/gtest.h>

#include <kiln/kiln.h>

namespace mx = kiln;

TEST(Core, ScalarAndListConstructors) {
  mx::array a(3.5f);
  EXPECT_EQ(a.dtype(), mx::float32);
  EXPECT_EQ(a.ndim(), 0u);
  EXPECT_FLOAT_EQ(a.item<float>(), 3.5f);
  mx::array b({1, 2, 3});
  EXPECT_EQ(b.dtype(), mx::int32);
  EXPECT_EQ(b.shape(), mx::Shape({3}));
  mx::array c({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});
  EXPECT_EQ(c.shape(), mx::Shape({2, 2}));
  EXPECT_EQ(c.data<float>()[3], 4.0f);
  mx::array d(7, mx::float16);
  EXPECT_EQ(d.item<float>(), 7.0f);
  EXPECT_EQ(d.nbytes(), 2u);
  EXPECT_THROW(mx::array({1, 2, 3}, {2, 2}), std::invalid_argument);
}

TEST(Core, LazyAddAndPrint) {
  mx::array a({1.0f, 2.0f, 3.0f});
  mx::array b(1.5f);
  auto c = a + b;
  EXPECT_FALSE(c.is_available());
  EXPECT_TRUE(c.has_primitive());
  c.eval();
  EXPECT_TRUE(c.is_available());
  EXPECT_FALSE(c.has_primitive());
  std::ostringstream os;
  os << c;
  EXPECT_EQ(os.str(), "array([2.5, 3.5, 4.5], dtype=float32)");
  mx::array m({1, 2, 3, 4}, {2, 2});
  std::ostringstream os2;
  os2 << m;
  EXPECT_EQ(os2.str(), "array([[1, 2],\n       [3, 4]], dtype=int32)");
}

TEST(Core, MillionDeepChainEvaluatesAndFrees) {
  mx::array x(0.0f);
  mx::array one(1.0f);
  for (int i = 0; i < 1000000; ++i) x = x + one;
  EXPECT_FLOAT_EQ(x.item<float>(), 1000000.0f);
  // Dropping an unevaluated deep chain must not overflow the stack either.
  mx::array y(0.0f);
  for (int i = 0; i < 1000000; ++i) y = y + one;
  y = mx::array();
  SUCCEED();
}
