// Slices moved ahead of row-wise work (src/core/slice_pushdown.h): a Slice of a norm, an element-wise
// op, a product or a quantized product read by nothing else becomes that operation on sliced inputs, up
// the chain, with the same bits as computing every row and slicing after; and it is left alone where
// the producer is needed elsewhere or the slice cuts across what the operation mixes.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include <kiln/export.h>
#include <kiln/fast.h>
#include <kiln/kiln.h>

#include "core/row_patterns.h"
#include "core/slice_pushdown.h"
#include "unit/fast_test_util.h"

namespace {

namespace mx = kiln;
using namespace fast_test;
using kiln::detail::slice_pushdowns;

// Evaluates build() with the passes off and on (fresh graphs); the results must be the same bits (as
// doubles of the same floats), or with rtol > 0 agree within it: a product over fewer rows may run
// another kernel (the skinny one instead of the blocked one), which orders its sums differently.
// Returns how many moves the pass made.
uint64_t run_both(const std::function<std::vector<mx::array>()>& build, double rtol = 0) {
  std::vector<std::vector<double>> off;
  {
    RewritePasses p(false);
    std::vector<mx::array> ys = build();
    mx::eval(ys);
    for (auto& y : ys) off.push_back(vals(y));
  }
  const uint64_t before = slice_pushdowns();
  std::vector<mx::array> ys = build();
  mx::eval(ys);
  const uint64_t n = slice_pushdowns() - before;
  EXPECT_EQ(ys.size(), off.size());
  for (size_t i = 0; i < ys.size() && i < off.size(); ++i) {
    if (rtol == 0) EXPECT_EQ(vals(ys[i]), off[i]) << "output " << i << " differs with the pass";
    else expect_close(ys[i], off[i], rtol, rtol, "with the pass");
  }
  return n;
}

// A decoder layer's tail as mlx-lm writes it, then the last position's normalized hidden state (what its
// prefill hands the head): residual + MLP(norm(x)), the gate read by its sigmoid and by the product.
struct Tail {
  mx::array x = rand_array({1, 24, 64}, mx::float32, 1);
  mx::array n1 = rand_array({64}, mx::float32, 2, 0.5f, 1.5f), n2 = rand_array({64}, mx::float32, 3, 0.5f, 1.5f);
  mx::array w1 = rand_array({64, 96}, mx::float32, 4, -0.2f, 0.2f), w3 = rand_array({64, 96}, mx::float32, 5);
  mx::array w2 = rand_array({96, 64}, mx::float32, 6, -0.2f, 0.2f);
  mx::array h() const {
    mx::array a = mx::fast::rms_norm(x, n1, 1e-5f);
    mx::array g = mx::matmul(a, w1);
    mx::array act = mx::multiply(mx::multiply(g, mx::sigmoid(g)), mx::matmul(a, w3));
    return mx::add(x, mx::matmul(act, w2));
  }
  mx::array last() const { return mx::slice(mx::fast::rms_norm(h(), n2, 1e-5f), {0, 23, 0}, {1, 24, 64}); }
};

}  // namespace

TEST(SlicePushdown, LastPositionThroughNormResidualAndMlp) {
  Tail t;
  // Through the final norm, the residual Add, the down product (its Unflatten, Matmul and Flatten: kiln's
  // matmul of a 3-D by a 2-D array folds the rows, as MLX's), the two Multiplies, the Sigmoid, the gate and
  // up products (three moves each) and the first norm: the slice ends on the input x (a leaf), one node.
  EXPECT_EQ(run_both([&] { return std::vector<mx::array>{t.last()}; }, 1e-6), 15u);
  // The same rows as slicing the whole computation, by a second route: the layer on the last row alone.
  Tail one = t;
  one.x = mx::slice(t.x, {0, 23, 0}, {1, 24, 64});
  mx::array want = mx::fast::rms_norm(one.h(), t.n2, 1e-5f);
  mx::array got = t.last();
  expect_close(got, vals(want), 1e-6, 1e-6, "the layer on the last row");
}

// The last layer's attention as mlx-lm's fallback writes it: the heads split (Reshape, Transpose), RoPE at an
// offset, scores against every key, a causal mask from aranges, Softmax, the values, the heads merged, the
// output product, the residual. Cut to the last position, only its query row is computed: the slice moves
// through the residual, the output product, the merge, the values' product, Softmax, the mask's Select,
// the scores' scale and product, RoPE (whose offset then starts at the row kept), the split and the query
// product. The keys and values (read by every row) stay whole.
TEST(SlicePushdown, AttentionQueryRowsThroughRopeAndSoftmax) {
  const int L = 12, H = 4, Dh = 16, D = H * Dh;
  mx::array x = rand_array({1, L, D}, mx::float32, 20);
  mx::array wq = rand_array({D, D}, mx::float32, 21, -0.3f, 0.3f), wk = rand_array({D, D}, mx::float32, 22);
  mx::array wv = rand_array({D, D}, mx::float32, 23, -0.3f, 0.3f), wo = rand_array({D, D}, mx::float32, 24);
  auto heads = [&](const mx::array& t) { return mx::transpose(mx::reshape(t, {1, L, H, Dh}), {0, 2, 1, 3}); };
  for (int rows : {1, 3}) {
    auto build = [&] {
      mx::array q = mx::fast::rope(heads(mx::matmul(x, wq)), Dh, false, 10000.0f, 1.0f, 5);
      mx::array k = mx::fast::rope(heads(mx::matmul(x, wk)), Dh, false, 10000.0f, 1.0f, 5);
      mx::array v = heads(mx::matmul(x, wv));
      mx::array scores = mx::multiply(mx::matmul(q, mx::transpose(k, {0, 1, 3, 2})), mx::array(0.25f));
      mx::array mask = mx::greater_equal(mx::reshape(mx::arange(0.0, L, mx::int32), {L, 1}),
                                         mx::reshape(mx::arange(0.0, L, mx::int32), {1, L}));
      mx::array p = mx::softmax(mx::where(mask, scores, mx::array(-1e9f)), -1);
      mx::array o = mx::reshape(mx::transpose(mx::matmul(p, v), {0, 2, 1, 3}), {1, L, D});
      mx::array h = mx::add(x, mx::matmul(o, wo));
      return std::vector<mx::array>{mx::slice(h, {0, L - rows, 0}, {1, L, D})};
    };
    EXPECT_GE(run_both(build, 1e-5), 14u) << rows << " rows";
  }
}

// A quantized product with a broadcast bias, sliced on a batch axis and with a step along the rows.
TEST(SlicePushdown, QuantizedProductAndBroadcastOperand) {
  mx::array x = rand_array({3, 10, 128}, mx::float32, 7);
  mx::array w = rand_array({256, 128}, mx::float32, 8, -0.5f, 0.5f);
  mx::array bias = rand_array({256}, mx::float32, 9);
  auto q = mx::quantize(w, 64, 4);
  auto build = [&] {
    mx::array y = mx::add(mx::quantized_matmul(mx::exp(x), q[0], q[1], q[2], true, 64, 4), bias);
    return std::vector<mx::array>{mx::slice(y, {1, 2, 0}, {3, 9, 256}, {1, 3, 1})};
  };
  // Through the Add (the bias left whole: it is broadcast along the cut axes), the product and the Exp.
  EXPECT_EQ(run_both(build, 1e-5), 3u);
}

// A batched product cut on its batch axis (B has the batch too, so it is sliced along it) and on its rows;
// a 3-D by 2-D product (rows folded by Flatten) cut on its rows within each batch stops at the Unflatten:
// those rows are not one range of the folded axis.
TEST(SlicePushdown, BatchedProduct) {
  mx::array a = rand_array({4, 6, 8}, mx::float32, 10), b = rand_array({4, 8, 5}, mx::float32, 11);
  mx::array b2 = rand_array({8, 5}, mx::float32, 12);
  EXPECT_EQ(run_both(
                [&] {
                  return std::vector<mx::array>{mx::slice(mx::matmul(mx::tanh(a), b), {1, 2, 0}, {3, 5, 5}),
                                                mx::slice(mx::matmul(a, b2), {0, 5, 0}, {4, 6, 5})};
                },
                1e-6),
            2u);
}

// Left alone: the producer is an output too, is held by the caller, or is read by another node; the slice
// cuts the axis a norm or a product mixes (the last); the passes are off.
TEST(SlicePushdown, LeftAloneWhereRowsAreNeededOrMixed) {
  mx::array x = rand_array({2, 12, 32}, mx::float32, 13);
  mx::array w = rand_array({32, 16}, mx::float32, 14);
  mx::array nw = rand_array({32}, mx::float32, 15);
  auto cut = [](const mx::array& y) {
    return mx::slice(y, {0, 11, 0}, {y.shape(0), 12, y.shape(2)});
  };
  EXPECT_EQ(run_both([&] {
              mx::array e = mx::exp(x);
              return std::vector<mx::array>{cut(e), e};  // the whole array is an output as well
            }),
            0u);
  {
    mx::array held = mx::matmul(x, w);  // the caller keeps it
    EXPECT_EQ(run_both([&] { return std::vector<mx::array>{cut(held)}; }), 0u);
  }
  EXPECT_EQ(run_both([&] {
              mx::array m = mx::matmul(x, w);
              return std::vector<mx::array>{mx::add(cut(m), mx::sum(m, 1, true))};  // m read twice
            }),
            0u);
  EXPECT_EQ(run_both([&] {  // the normalized axis
              return std::vector<mx::array>{mx::slice(mx::fast::rms_norm(x, nw, 1e-5f), {0, 0, 0}, {2, 12, 16})};
            }),
            0u);
  EXPECT_EQ(run_both([&] {  // a product's columns: through its Unflatten only
              return std::vector<mx::array>{mx::slice(mx::matmul(mx::sin(x), w), {0, 0, 0}, {2, 12, 8})};
            }),
            1u);
  RewritePasses off(false);
  const uint64_t before = slice_pushdowns();
  mx::array y = cut(mx::exp(x));
  y.eval();
  EXPECT_EQ(slice_pushdowns(), before);
}

// An imported function (a prefill-like export that returns the last row) moves its slices when called,
// with the same bits as with the passes off.
TEST(SlicePushdown, ImportedFunction) {
  const std::string path = (std::filesystem::temp_directory_path() / "kiln_slice_pushdown.mlxfn").string();
  Tail t;
  mx::export_function(
      path,
      [&t](const mx::Args& a) {
        Tail u = t;
        u.x = a[0];
        return std::vector<mx::array>{u.last()};
      },
      {t.x});
  auto f = mx::import_function(path);
  EXPECT_GE(run_both([&] { return f({t.x}); }), 9u);
  std::remove(path.c_str());
}
