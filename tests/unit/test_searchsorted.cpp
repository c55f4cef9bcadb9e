// searchsorted / the SearchSorted primitive (MLX 0.32.1+): values, dtypes, NaN order, errors and the
// file round trip, against values printed by MLX 0.32.4 (mlx[cpu] from PyPI).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <kiln/kiln.h>
#include <kiln/ops/index.h>
#include <string>
#include <vector>

#include "unit/test_util.h"

namespace mx = kiln;
using ::testing::HasSubstr;

namespace {

std::vector<uint32_t> u32(mx::array a) {
  a = mx::contiguous(a);
  a.eval();
  EXPECT_EQ(a.dtype(), mx::uint32);
  const uint32_t* p = a.data<uint32_t>();
  return std::vector<uint32_t>(p, p + a.size());
}

std::string error_of(const std::function<void()>& f) { return test_util::message_of(f, "(no error)"); }

TEST(SearchSorted, LeftRightEveryDtype) {
  // MLX 0.32.4: seq [0,1,1,3,7,7,9], values [[-1,1,8],[7,10,3]] (unsigned and bool wrap or clamp first).
  const std::vector<float> seq = {0, 1, 1, 3, 7, 7, 9};
  const std::vector<float> vals = {-1, 1, 8, 7, 10, 3};
  struct Want {
    mx::Dtype t;
    std::vector<uint32_t> left, right, transposed;
  };
  const std::vector<uint32_t> l = {0, 1, 6, 4, 7, 3}, r = {0, 3, 6, 6, 7, 4}, tr = {0, 4, 1, 7, 6, 3};
  const std::vector<Want> cases = {
      {mx::bool_, {1, 1, 1, 1, 1, 1}, {7, 7, 7, 7, 7, 7}, {1, 1, 1, 1, 1, 1}},
      {mx::uint8, {7, 1, 6, 4, 7, 3}, {7, 3, 6, 6, 7, 4}, {7, 4, 1, 7, 6, 3}},
      {mx::uint32, {7, 1, 6, 4, 7, 3}, {7, 3, 6, 6, 7, 4}, {7, 4, 1, 7, 6, 3}},
      {mx::int16, l, r, tr},
      {mx::int64, l, r, tr},
      {mx::float16, l, r, tr},
      {mx::bfloat16, l, r, tr},
      {mx::float32, l, r, tr},
      {mx::float64, l, r, tr},
  };
  for (auto& c : cases) {
    auto a = mx::astype(mx::array(seq.data(), {7}, mx::float32), c.t);
    auto v = mx::astype(mx::array(vals.data(), {2, 3}, mx::float32), c.t);
    auto left = mx::searchsorted(a, v);
    EXPECT_EQ(left.shape(), (mx::Shape{2, 3}));
    EXPECT_EQ(u32(left), c.left) << c.t;
    EXPECT_EQ(u32(mx::searchsorted(a, v, "right")), c.right) << c.t;
    // A transposed (non-contiguous) values array.
    EXPECT_EQ(u32(mx::searchsorted(a, mx::transpose(v))), c.transposed) << c.t;
  }
}

TEST(SearchSorted, NanOrdersLastPromotionEmptyAndScalar) {
  const float nan = std::nanf("");
  auto a = mx::array({1.f, 2.f, 2.f, 5.f, nan});
  auto v = mx::array({nan, 2.f, -1.f, 6.f, 100.f});
  EXPECT_EQ(u32(mx::searchsorted(a, v)), (std::vector<uint32_t>{4, 1, 0, 4, 4}));
  EXPECT_EQ(u32(mx::searchsorted(a, v, "right")), (std::vector<uint32_t>{5, 3, 0, 4, 4}));
  // int32 sequence, float32 values: both compared as float32.
  EXPECT_EQ(u32(mx::searchsorted(mx::array({1, 3, 5}), mx::array({2.5f, 3.0f}))), (std::vector<uint32_t>{1, 1}));
  // uint8 sequence, int32 values: compared as int32 (no wrap-around of -1 or 300).
  EXPECT_EQ(u32(mx::searchsorted(mx::astype(mx::array({1, 3, 5}), mx::uint8), mx::array({-1, 300}))),
            (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(u32(mx::searchsorted(mx::zeros({0}), mx::array({1.f}))), (std::vector<uint32_t>{0}));
  auto s = mx::searchsorted(mx::array({1.f, 2.f}), mx::array(1.5f));
  EXPECT_EQ(s.ndim(), 0u);
  EXPECT_EQ(u32(s), (std::vector<uint32_t>{1}));
  EXPECT_EQ(mx::searchsorted(mx::array({1.f, 2.f}), mx::zeros({0, 3})).shape(), (mx::Shape{0, 3}));
  // complex: ordered by real part, then imaginary part.
  auto c = mx::astype(mx::array({1.f, 2.f}), mx::complex64) + mx::astype(mx::array({1.f, 0.f}), mx::complex64) *
                                                                    mx::array(mx::complex64_t(0, 1));
  auto cv = mx::astype(mx::array({1.f}), mx::complex64) + mx::array(mx::complex64_t(0, 2));
  EXPECT_EQ(u32(mx::searchsorted(c, cv)), (std::vector<uint32_t>{1}));
}

TEST(SearchSorted, Errors) {
  EXPECT_EQ(error_of([] { mx::searchsorted(mx::array({1}), mx::array({1}), "middle"); }),
            "[searchsorted] Invalid side 'middle'. Expected 'left' or 'right'.");
  EXPECT_EQ(error_of([] { mx::searchsorted(mx::zeros({1, 2}), mx::array(1.5f)); }),
            "[searchsorted] The sorted sequence must be 1-D but has 2 dimensions.");
}

TEST(SearchSorted, ExportsInTheMlx0321LayoutOnly) {
  auto dir = std::filesystem::temp_directory_path() / ("kiln_ss_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / "ss.mlxfn").string();
  auto f = [](const mx::Args& a) { return std::vector<mx::array>{mx::searchsorted(a[0], a[1], "right")}; };
  const mx::Args args = {mx::array({1, 3, 5}), mx::array({2.5f, 3.0f, 9.f})};
  mx::ExportOptions o;
  o.version = "0.32.1";
  mx::export_function(path, f, args, o);
  auto g = mx::import_function(path);
  EXPECT_EQ(u32(g(args)[0]), (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(g.info().functions[0].primitive_histogram.count("SearchSorted"), 1u);
  // MLX 0.30.1 has no SearchSorted: kiln refuses to write it in that layout.
  auto err = error_of([&] { mx::export_function((dir / "old.mlxfn").string(), f, args); });
  EXPECT_THAT(err, HasSubstr("SearchSorted"));
  std::filesystem::remove_all(dir);
}

}  // namespace
