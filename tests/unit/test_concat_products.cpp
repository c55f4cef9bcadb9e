// Products over a concatenation (src/core/concat_products.h): a Matmul reading a Concatenate (through
// ExpandDims, Transpose and Broadcast views) runs as one product per part, for each place the
// concatenated axis can land (a free axis of either operand, a batch axis, the contraction axis), with
// the unsplit graph's values within float32 rounding; and it is left alone when the concatenation is
// needed elsewhere or the split would change a 16-bit product's rounding.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>

#include <kiln/export.h>
#include <kiln/kiln.h>
#include <kiln/profile.h>

#include "core/concat_products.h"
#include "core/row_patterns.h"
#include "unit/fast_test_util.h"

namespace {

namespace mx = kiln;
using namespace fast_test;
using kiln::detail::concat_product_splits;

// Evaluates build() with the passes off and on (fresh graphs); the two must agree within rtol/atol.
// Returns how many products the pass split.
uint64_t run_both(const std::function<mx::array()>& build, double rtol = 2e-6, double atol = 1e-6) {
  std::vector<double> off;
  {
    RewritePasses p(false);
    mx::array y = build();
    y.eval();
    off = vals(y);
  }
  const uint64_t before = concat_product_splits();
  mx::array y = build();
  y.eval();
  const uint64_t n = concat_product_splits() - before;
  expect_close(y, off, rtol, atol, "split vs unsplit");
  return n;
}

// MLX's attention fallback in a decode step, grouped queries (4 query heads per KV head): the keys and
// values are the cache concatenated with the new token's, read through ExpandDims (and Transpose for
// the keys) and Broadcast.
struct Attn {
  int S = 37;
  mx::array q = rand_array({1, 2, 4, 1, 64}, mx::float32, 1);
  mx::array kc = rand_array({1, 2, 37, 64}, mx::float32, 2), kn = rand_array({1, 2, 1, 64}, mx::float32, 3);
  mx::array vc = rand_array({1, 2, 37, 64}, mx::float32, 4), vn = rand_array({1, 2, 1, 64}, mx::float32, 5);

  mx::array keys() const { return mx::concatenate({kc, kn}, 2); }
  mx::array values() const { return mx::concatenate({vc, vn}, 2); }
  mx::array scores(const mx::array& k) const {
    mx::array kt = mx::transpose(mx::expand_dims(k, 2), {0, 1, 2, 4, 3});
    return mx::matmul(q, mx::broadcast_to(kt, {1, 2, 4, 64, S + 1}));
  }
  mx::array out(const mx::array& k, const mx::array& v) const {
    mx::array p = mx::softmax(scores(k), -1, true);
    return mx::matmul(p, mx::broadcast_to(mx::expand_dims(v, 2), {1, 2, 4, S + 1, 64}));
  }
  mx::array operator()() const { return out(keys(), values()); }
};

TEST(ConcatProducts, DecodeAttentionOverTheKvCache) {
  Attn a;
  // Both products: the scores (keys concatenated along B's columns) and the output (values along the
  // contraction axis).
  EXPECT_EQ(run_both(a), 2u);
  // Against float64 from the parts by hand: the same values within float32 rounding.
  mx::array y = a();
  mx::array want = a.out(mx::concatenate({a.kc, a.kn}, 2), mx::concatenate({a.vc, a.vn}, 2));
  {
    RewritePasses p(false);
    expect_close(y, vals(want), 2e-6, 1e-6, "vs unsplit");
  }
  // No Concatenate of the cache's size runs: only the scores' (2·4·(S+1) values) remains.
  kiln::profile_report(true);
  kiln::set_profiling(true);
  a().eval();
  kiln::set_profiling(false);
  int64_t concats = 0;
  for (const auto& row : kiln::profile_report(true)) {
    if (row.primitive == "Concatenate") concats += row.calls;
  }
  EXPECT_EQ(concats, 1);
}

TEST(ConcatProducts, EveryAxisOfEitherOperand) {
  const mx::array a1 = rand_array({3, 5, 16}, mx::float32, 6), a2 = rand_array({3, 2, 16}, mx::float32, 7);
  const mx::array b = rand_array({3, 16, 9}, mx::float32, 8);
  // A's rows (a free axis): the output's rows concatenated.
  EXPECT_EQ(run_both([&] { return mx::matmul(mx::concatenate({a1, a2}, 1), b); }), 1u);
  // A's batch axis: B sliced along it.
  const mx::array a3 = rand_array({2, 5, 16}, mx::float32, 9), b5 = rand_array({5, 16, 9}, mx::float32, 10);
  EXPECT_EQ(run_both([&] { return mx::matmul(mx::concatenate({a1, a3}, 0), b5); }), 1u);
  // A's batch axis against a B that is 1 there (broadcast): B read whole by each part.
  const mx::array b1 = rand_array({1, 16, 9}, mx::float32, 11);
  EXPECT_EQ(run_both([&] { return mx::matmul(mx::concatenate({a1, a3}, 0), b1); }), 1u);
  // A's contraction axis, three parts: B sliced along its rows, the parts' products summed.
  const mx::array c1 = rand_array({3, 5, 7}, mx::float32, 12), c2 = rand_array({3, 5, 1}, mx::float32, 13);
  EXPECT_EQ(run_both([&] { return mx::matmul(mx::concatenate({a1, c1, c2}, 2), rand_array({3, 24, 9}, mx::float32, 14)); }),
            1u);
  // B's contraction axis through a Transpose (B = concat(...)ᵀ with the parts along its last axis).
  const mx::array k1 = rand_array({3, 9, 10}, mx::float32, 15), k2 = rand_array({3, 9, 6}, mx::float32, 16);
  EXPECT_EQ(run_both([&] { return mx::matmul(a1, mx::transpose(mx::concatenate({k1, k2}, 2), {0, 2, 1})); }), 1u);
  // B's columns, 2-D.
  const mx::array m1 = rand_array({16, 4}, mx::float32, 17), m2 = rand_array({16, 3}, mx::float32, 18);
  EXPECT_EQ(run_both([&] { return mx::matmul(rand_array({5, 16}, mx::float32, 19), mx::concatenate({m1, m2}, 1)); }),
            1u);
  // An empty part is skipped.
  const mx::array e = mx::zeros({16, 0});
  EXPECT_EQ(run_both([&] { return mx::matmul(rand_array({5, 16}, mx::float32, 19), mx::concatenate({m1, e, m2}, 1)); }),
            1u);
}

TEST(ConcatProducts, SixteenBitProducts) {
  Attn a;
  a.q = mx::astype(a.q, mx::bfloat16);
  a.kc = mx::astype(a.kc, mx::bfloat16);
  a.kn = mx::astype(a.kn, mx::bfloat16);
  a.vc = mx::astype(a.vc, mx::bfloat16);
  a.vn = mx::astype(a.vn, mx::bfloat16);
  // The scores' split only divides the columns (each output the same sum): split, and identical to the
  // unsplit product. The values' split would add two rounded bfloat16 parts: left alone.
  const uint64_t before = concat_product_splits();
  mx::array s = a.scores(a.keys());
  s.eval();
  EXPECT_EQ(concat_product_splits() - before, 1u);
  {
    RewritePasses p(false);
    mx::array want = a.scores(a.keys());
    expect_close(s, vals(want), 0, 0, "bfloat16 scores");
  }
  const uint64_t before2 = concat_product_splits();
  mx::array p = mx::softmax(s, -1, true);
  mx::matmul(p, mx::broadcast_to(mx::expand_dims(a.values(), 2), {1, 2, 4, a.S + 1, 64})).eval();
  EXPECT_EQ(concat_product_splits() - before2, 0u);
}

TEST(ConcatProducts, LeftAloneWhenTheConcatenationIsNeeded) {
  Attn a;
  // The concatenated keys are also being evaluated.
  {
    const uint64_t before = concat_product_splits();
    mx::array k = a.keys();
    mx::array s = a.scores(k);
    mx::eval({s, k});
    EXPECT_EQ(concat_product_splits() - before, 0u);
  }
  // The caller holds the concatenation (it may evaluate it later), or a view of it.
  {
    const uint64_t before = concat_product_splits();
    mx::array k = a.keys();
    a.scores(k).eval();
    EXPECT_EQ(concat_product_splits() - before, 0u);
    k.eval();
  }
  // Another node reads it.
  {
    const uint64_t before = concat_product_splits();
    mx::array k = a.keys();
    mx::array y = mx::add(mx::sum(a.scores(k)), mx::sum(k));
    k = mx::array();
    y.eval();
    EXPECT_EQ(concat_product_splits() - before, 0u);
  }
  // The passes are off.
  {
    RewritePasses p(false);
    const uint64_t before = concat_product_splits();
    a().eval();
    EXPECT_EQ(concat_product_splits() - before, 0u);
  }
}

// An exported decode-style function (the cache passed in, the new keys and values out) is split at call
// time, as MLX's own exports are.
TEST(ConcatProducts, ImportedFunctionsAreSplit) {
  const std::string path = (std::filesystem::temp_directory_path() / "kiln_concat_products.mlxfn").string();
  Attn a;
  mx::export_function(
      path,
      [](const mx::Args& in) {
        Attn b;
        b.q = in[0];
        b.kc = in[1];
        b.kn = in[2];
        b.vc = in[3];
        b.vn = in[4];
        return std::vector<mx::array>{b(), in[2]};
      },
      {a.q, a.kc, a.kn, a.vc, a.vn});
  auto f = mx::import_function(path);
  const std::vector<mx::array> args{a.q, a.kc, a.kn, a.vc, a.vn};
  for (int call = 0; call < 3; ++call) {
    const uint64_t before = concat_product_splits();
    auto outs = f(args);
    mx::eval(outs);
    // The first call runs its graph, the second plans the program the later ones run: both split.
    EXPECT_EQ(concat_product_splits() - before, call < 2 ? 2u : 0u) << "call " << call;
    RewritePasses p(false);
    expect_close(outs[0], vals(a()), 2e-6, 1e-6, "imported call " + std::to_string(call));
  }
  std::remove(path.c_str());
}

}  // namespace
