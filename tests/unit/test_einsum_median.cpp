// einsum, median, diagonal, diag and trace (compositions of other ops) against values computed with
// MLX 0.30.1 (python: mx.einsum / mx.median / ... on the same inputs), plus MLX's error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

#include "unit/test_util.h"

namespace mx = kiln;
using ::testing::HasSubstr;

namespace {

// ((i * 7 + seed * 3) % 11 - 5) / 2, the inputs the reference values were computed from.
mx::array input(const mx::Shape& shape, int seed) {
  size_t n = 1;
  for (int d : shape) n *= static_cast<size_t>(d);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>((i * 7 + seed * 3) % 11) - 5) / 2.0f;
  return mx::array(v.data(), shape, mx::float32);
}

std::vector<float> values(const mx::array& a) {
  auto c = mx::astype(mx::contiguous(a), mx::float32);
  mx::eval(c);
  return std::vector<float>(c.data<float>(), c.data<float>() + c.size());
}

struct EinsumCase {
  const char* subscripts;
  std::vector<mx::Shape> shapes;
  mx::Shape out_shape;
  std::vector<float> want;
};

const std::vector<EinsumCase> kEinsum = {
    {"ij,jk->ik", {{2, 3}, {3, 4}}, {2, 4}, {-5, 4.75, -2, -6, -4.75, 5.25, -4, -5}},
    {"bij,bjk->bik", {{2, 2, 3}, {2, 3, 2}}, {2, 2, 2}, {3.5, 2.25, 3.25, 2.25, 1.25, 3.25, -0.25, 4.75}},
    {"ii->i", {{3, 3}}, {3}, {-1, 2, -0.5}},
    {"ii", {{3, 3}}, {}, {0.5}},
    {"ij->ji", {{2, 3}}, {3, 2}, {-1, -1.5, 2.5, 2, 0.5, 0}},
    {"ij,kl->ikjl", {{2, 3}, {2, 2}}, {2, 2, 3, 2},
     {-0.5, 1.5, 1.25, -3.75, 0.25, -0.75, -2, -0, 5, 0, 1, 0, -0.75, 2.25, 1, -3, 0, -0, -3, -0, 4, 0, 0, 0}},
    {"i,i", {{4}, {4}}, {}, {-3.25}},
    {"ij,j->i", {{3, 4}, {4}}, {3}, {-3.25, -3, 5.5}},
    {"...ij,...jk->...ik", {{2, 2, 3}, {2, 3, 4}}, {2, 2, 4},
     {-5, 4.75, -2, -6, -4.75, 5.25, -4, -5, 5.75, -6, -4, 6.25, 6.25, -8, -3, 7.5}},
    {"ijk->", {{2, 3, 2}}, {}, {-1}},
    {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}, {2, 2}, {-24.5, 18.125, -23, 22.875}},
    {"abc,cd,bd->a", {{2, 3, 4}, {4, 2}, {3, 2}}, {2}, {-23.125, 36.5}},
    {"ij,ij->ij", {{2, 3}, {2, 3}}, {2, 3}, {-0.5, -3.75, 1, -0, -4, 0}},
    {"iij->j", {{2, 2, 3}}, {3}, {-3.5, 3.5, -0.5}},
    {"ba", {{2, 3}}, {3, 2}, {-1, -1.5, 2.5, 2, 0.5, 0}},
};

std::string error_of(const std::function<void()>& f) { return test_util::message_of(f, "(no error)"); }

}  // namespace

TEST(Einsum, MatchesMlx) {
  for (auto& c : kEinsum) {
    std::vector<mx::array> ops;
    for (size_t i = 0; i < c.shapes.size(); ++i) ops.push_back(input(c.shapes[i], static_cast<int>(i) + 1));
    auto r = mx::einsum(c.subscripts, ops);
    EXPECT_EQ(r.shape(), c.out_shape) << c.subscripts;
    auto got = values(r);
    ASSERT_EQ(got.size(), c.want.size()) << c.subscripts;
    for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], c.want[k], 1e-5) << c.subscripts << " at " << k;
  }
}

TEST(Einsum, NonContiguousIntegerAndBroadcastOperands) {
  // A transposed view gives the same as its contiguous copy.
  auto a = input({3, 2}, 1);
  auto b = input({3, 4}, 2);
  auto want = values(mx::einsum("ij,jk->ik", {mx::contiguous(mx::transpose(a)), b}));
  EXPECT_EQ(values(mx::einsum("ij,jk->ik", {mx::transpose(a), b})), want);
  EXPECT_EQ(values(mx::einsum("ji,jk->ik", {a, b})), want);
  // Integers contract by multiply-and-sum (exact), keeping the dtype.
  auto ia = mx::astype(mx::multiply(a, mx::array(2.0f)), mx::int32);
  auto ib = mx::astype(mx::multiply(b, mx::array(2.0f)), mx::int32);
  auto ir = mx::einsum("ji,jk->ik", {ia, ib});
  EXPECT_EQ(ir.dtype(), mx::int32);
  auto fr = values(mx::matmul(mx::transpose(mx::astype(ia, mx::float32)), mx::astype(ib, mx::float32)));
  EXPECT_EQ(values(ir), fr);
  // A size-1 axis broadcasts against the same label elsewhere; an empty axis contracts to zeros.
  auto r1 = mx::einsum("ij,jk->ik", {mx::ones({2, 3}), mx::ones({1, 4})});
  EXPECT_EQ(r1.shape(), (mx::Shape{2, 4}));
  EXPECT_EQ(values(r1), std::vector<float>(8, 3.0f));
  auto r0 = mx::einsum("ij,jk->ik", {mx::ones({2, 0}), mx::ones({0, 3})});
  EXPECT_EQ(values(r0), std::vector<float>(6, 0.0f));
}

TEST(Einsum, ErrorsNameWhatIsWrong) {
  auto a = mx::ones({2, 3}), b = mx::ones({3, 4});
  EXPECT_EQ(error_of([&] { mx::einsum("ij,jk->ik", {a}); }),
            "[einsum] Number of operands, 1, does not match number of input subscripts, 2");
  EXPECT_EQ(error_of([&] { mx::einsum("ij,jk", {a, a}); }),
            "[einsum] Cannot broadcast dimension 0 of input 1 with shape (2,3) to size 3.");
  EXPECT_EQ(error_of([&] { mx::einsum("ijk,jk->ik", {a, b}); }),
            "[einsum] Invalid number of subscripts 3 for input 0 with 2 dimensions.");
  EXPECT_EQ(error_of([&] { mx::einsum("ij,jk->ikk", {a, b}); }), "[einsum] Repeat indices not allowed in output.");
  EXPECT_EQ(error_of([&] { mx::einsum("i.j,jk->ik", {a, b}); }), "[einsum] Subscripts must be letters, but got '.'.");
  EXPECT_THAT(error_of([&] { mx::einsum("ij,jk->iz", {a, b}); }), HasSubstr("'z' does not appear in the inputs"));
}

TEST(Median, MatchesMlx) {
  auto a = mx::astype(mx::multiply(input({2, 3, 4}, 0), mx::array(2.0f)), mx::float32);  // (i*7 % 11) - 5
  EXPECT_EQ(values(mx::median(a)), (std::vector<float>{0.0f}));
  EXPECT_EQ(values(mx::median(a, -1)), (std::vector<float>{0.0, 0.5, -2.5, 1.5, -1.5, 0.5}));
  EXPECT_EQ(values(mx::median(a, 1)), (std::vector<float>{-4, 2, -1, 0, 2, -1, 0, 1}));
  auto k = mx::median(a, {0, 2}, /*keepdims=*/true);
  EXPECT_EQ(k.shape(), (mx::Shape{1, 3, 1}));
  EXPECT_EQ(values(k), (std::vector<float>{1.5, 0.0, -1.0}));
  // Non-contiguous input: the same as its copy.
  EXPECT_EQ(values(mx::median(mx::transpose(a), 0)), values(mx::median(mx::contiguous(mx::transpose(a)), 0)));
  // Integers give float32, float16 stays float16; NaN sorts last (MLX: only a middle NaN shows).
  auto im = mx::median(mx::array({3, 1, 2, 4}));
  EXPECT_EQ(im.dtype(), mx::float32);
  EXPECT_EQ(im.item<float>(), 2.5f);
  EXPECT_EQ(mx::median(mx::astype(mx::array({1.0f, 2.0f}), mx::float16)).dtype(), mx::float16);
  const float nan = std::nanf("");
  auto nm = values(mx::median(mx::array({1.0f, nan, 2.0f, 3.0f}, {2, 2}), 1));
  EXPECT_TRUE(std::isnan(nm[0]));
  EXPECT_EQ(nm[1], 2.5f);
  EXPECT_EQ(mx::median(mx::array(3.0f)).item<float>(), 3.0f);
}

TEST(Median, Errors) {
  EXPECT_EQ(error_of([] { mx::median(mx::zeros({0, 3}), 0); }), "[median] Cannot take median along empty axis.");
  EXPECT_EQ(error_of([] { mx::median(mx::zeros({2, 3}), {0, 0}); }), "[median] Received duplicate axis.");
  EXPECT_EQ(error_of([] { mx::median(mx::zeros({2, 3}), 2); }),
            "[median] axis 2 is out of bounds for array with 2 dimensions.");
}

TEST(Diagonal, DiagAndTraceMatchMlx) {
  auto b = mx::reshape(mx::arange(12), {3, 4});
  EXPECT_EQ(values(mx::diagonal(b, 1)), (std::vector<float>{1, 6, 11}));
  EXPECT_EQ(values(mx::diagonal(b, -1)), (std::vector<float>{4, 9}));
  EXPECT_EQ(mx::diagonal(b, 1).dtype(), mx::int32);
  auto a = mx::multiply(input({2, 3, 4}, 0), mx::array(2.0f));
  auto d = mx::diagonal(a, 0, 0, 2);
  EXPECT_EQ(d.shape(), (mx::Shape{3, 2}));
  EXPECT_EQ(values(d), (std::vector<float>{-5, -2, 1, 4, -4, -1}));
  EXPECT_EQ(mx::diagonal(a, 5).shape(), (mx::Shape{4, 0}));
  EXPECT_EQ(values(mx::diagonal(mx::transpose(b), 0, -2, -1)), (std::vector<float>{0, 5, 10}));
  EXPECT_EQ(values(mx::diag(mx::array({1, 2}), -1)), (std::vector<float>{0, 0, 0, 1, 0, 0, 0, 2, 0}));
  EXPECT_EQ(values(mx::diag(b)), (std::vector<float>{0, 5, 10}));
  EXPECT_EQ(mx::trace(b, 1, 0, 1).item<int32_t>(), 18);
  EXPECT_EQ(mx::trace(mx::ones({2, 2}, mx::int8)).dtype(), mx::int32);
  EXPECT_EQ(error_of([] { mx::diagonal(mx::ones({3})); }),
            "[diagonal] Array must have at least two dimensions, but got 1 dimensions.");
  EXPECT_EQ(error_of([&] { mx::diagonal(b, 0, 0, 0); }), "[diagonal] axis1 and axis2 cannot be the same axis");
  EXPECT_EQ(error_of([&] { mx::diagonal(b, 0, 0, 5); }), "[diagonal] Invalid axis2 5 for array with 2 dimensions.");
  EXPECT_EQ(error_of([] { mx::diag(mx::ones({2, 2, 2})); }), "[diag] array must be 1-D or 2-D, got array with 3 dimensions.");
}

TEST(Einsum, ExportsAndReplays) {
  auto path = ::testing::TempDir() + "/kiln_einsum_" + std::to_string(::getpid()) + ".mlxfn";
  auto fn = [](const mx::Args& x) { return std::vector<mx::array>{mx::einsum("bij,bjk->bik", {x[0], x[1]})}; };
  mx::export_function(path, fn, {input({2, 2, 3}, 1), input({2, 3, 2}, 2)});
  auto f = mx::import_function(path);
  auto got = values(f({input({2, 2, 3}, 1), input({2, 3, 2}, 2)})[0]);
  EXPECT_EQ(got, (std::vector<float>{3.5, 2.25, 3.25, 2.25, 1.25, 3.25, -0.25, 4.75}));
  std::remove(path.c_str());
}
