// The FloorDivide primitive (what MLX 0.32.4 records for `//`; kiln reads it from such files), built
// directly from its registry row, against values printed by MLX 0.32.4 (mlx[cpu] from PyPI).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <kiln/kiln.h>
#include <limits>
#include <vector>

namespace mx = kiln;
using ::testing::HasSubstr;

namespace {

mx::array fdiv(const mx::array& a, const mx::array& b) {
  return mx::make_array(mx::registry::get("FloorDivide"), {}, {a, b});
}

template <typename T>
std::vector<T> values(mx::array a) {
  a = mx::contiguous(a);
  a.eval();
  const T* p = a.data<T>();
  return std::vector<T>(p, p + a.size());
}

TEST(FloorDividePrimitive, IntegersRoundDownAndDivisionByZeroIsZero) {
  auto a = mx::array({7, -7, 7, -7, 0, -8, 7});
  auto b = mx::array({0, 0, -2, -2, 5, -3, 2});
  EXPECT_EQ(values<int32_t>(fdiv(a, b)), (std::vector<int32_t>{0, 0, -4, 3, 0, 2, 3}));
  auto i8 = mx::astype(mx::array({-128, -128, 127}), mx::int8);
  auto j8 = mx::astype(mx::array({1, 3, -128}), mx::int8);
  EXPECT_EQ(values<int8_t>(fdiv(i8, j8)), (std::vector<int8_t>{-128, -43, -1}));
  auto u8 = mx::astype(mx::array({7, 200}), mx::uint8);
  EXPECT_EQ(values<uint8_t>(fdiv(u8, mx::astype(mx::array({2, 0}), mx::uint8))), (std::vector<uint8_t>{3, 0}));
  auto bt = mx::array({true, false, true, false});
  auto bf = mx::array({true, true, false, false});
  auto r = values<bool>(fdiv(bt, bf));
  EXPECT_EQ(r, (std::vector<bool>{true, false, false, false}));
}

TEST(FloorDividePrimitive, FloatsTakeTheFloorOfTheQuotient) {
  const float inf = std::numeric_limits<float>::infinity();
  auto a = mx::array({0.1f, 1.0f, -1.0f, 5.0f, inf, -7.5f, 3e38f});
  auto b = mx::array({0.01f, 0.0f, 0.0f, inf, 2.0f, -2.0f, 1e-38f});
  auto r = values<float>(fdiv(a, b));
  const std::vector<float> want = {10.0f, inf, -inf, 0.0f, inf, 3.0f, inf};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(r[i], want[i]) << i;
  EXPECT_TRUE(std::isnan(values<float>(fdiv(mx::array({0.0f}), mx::array({0.0f})))[0]));
  auto d = values<double>(fdiv(mx::astype(mx::array({-7.0f, 7.0f}), mx::float64),
                               mx::astype(mx::array({2.0f, -0.0f}), mx::float64)));
  EXPECT_EQ(d, (std::vector<double>{-4.0, -std::numeric_limits<double>::infinity()}));
  auto h = fdiv(mx::astype(mx::array({7.5f}), mx::float16), mx::astype(mx::array({2.0f}), mx::float16));
  EXPECT_EQ(mx::astype(h, mx::float32).item<float>(), 3.0f);
  auto bh = fdiv(mx::astype(mx::array({7.5f}), mx::bfloat16), mx::astype(mx::array({-2.0f}), mx::bfloat16));
  EXPECT_EQ(mx::astype(bh, mx::float32).item<float>(), -4.0f);
  // Transposed operands take the strided path.
  auto m = mx::reshape(mx::array({-3.0f, 3.0f, -5.0f, 5.0f}), {2, 2});
  EXPECT_EQ(values<float>(fdiv(mx::transpose(m), mx::full({2, 2}, 2.0f))), (std::vector<float>{-2, -3, 1, 2}));
}

TEST(FloorDividePrimitive, ComplexIsPlainDivisionAndDtypesMustMatch) {
  auto z = mx::astype(mx::array({1.0f, 4.0f}), mx::complex64) +
           mx::astype(mx::array({1.0f, -2.0f}), mx::complex64) * mx::array(mx::complex64_t(0, 1));
  auto w = mx::astype(mx::array({2.0f, 1.0f}), mx::complex64) +
           mx::astype(mx::array({0.0f, 1.0f}), mx::complex64) * mx::array(mx::complex64_t(0, 1));
  auto r = values<mx::complex64_t>(fdiv(z, w));
  EXPECT_NEAR(r[0].real(), 0.5f, 1e-6);
  EXPECT_NEAR(r[0].imag(), 0.5f, 1e-6);
  EXPECT_NEAR(r[1].real(), 1.0f, 1e-6);
  EXPECT_NEAR(r[1].imag(), -3.0f, 1e-6);
  try {
    fdiv(mx::array({1.0f}), mx::array({1}));
    FAIL() << "expected a dtype error";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("[FloorDivide] Inputs must have the same dtype"));
  }
  EXPECT_EQ(mx::registry::get("FloorDivide").min_inputs, 2);
  EXPECT_TRUE(mx::registry::get("FloorDivide").flags & mx::kBinary);
}

}  // namespace
