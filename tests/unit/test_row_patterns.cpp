// The row pattern pass (src/core/row_patterns.h): decomposed RMSNorm, LayerNorm, Softmax and RoPE graphs
// run as one fused node each (observed through the pass's counters), give the unrewritten graph's values
// within float32 rounding, and are left alone when an intermediate is needed elsewhere (another
// consumer, an output of the evaluation, an array the caller holds) or the graph is not float32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include <kiln/export.h>
#include <kiln/fast.h>
#include <kiln/kiln.h>
#include <kiln/profile.h>

#include "core/row_patterns.h"
#include "unit/fast_test_util.h"

namespace {

namespace mx = kiln;
using namespace fast_test;
using kiln::detail::row_pattern_counts;
using kiln::detail::RowPatternCounts;
using kiln::detail::set_row_patterns_enabled;

RowPatternCounts delta(const RowPatternCounts& a, const RowPatternCounts& b) {
  return {b.rms_norm - a.rms_norm, b.layer_norm - a.layer_norm, b.softmax - a.softmax, b.rope - a.rope};
}

// Builds the graph twice (fresh each time: evaluation consumes it), evaluates it with the pass on and
// off, and returns how many of each kind the pass rewrote; the two results must agree within `rtol`.
RowPatternCounts run_both(const std::function<mx::array()>& build, double rtol = 2e-6, double atol = 1e-6) {
  std::vector<double> off;
  {
    RewritePasses p(false);
    mx::array y = build();
    y.eval();
    off = vals(y);
  }
  const RowPatternCounts before = row_pattern_counts();
  mx::array y = build();
  y.eval();
  const RowPatternCounts d = delta(before, row_pattern_counts());
  expect_close(y, off, rtol, atol, "rewritten vs unrewritten");
  return d;
}

mx::array X(const mx::Shape& s = {37, 4097}, mx::Dtype t = mx::float32, uint32_t seed = 1) {
  return rand_array(s, t, seed, -3.0f, 3.0f);
}
mx::array W(int d, mx::Dtype t = mx::float32) { return rand_array({d}, t, 2, 0.5f, 1.5f); }
mx::array B(int d, mx::Dtype t = mx::float32) { return rand_array({d}, t, 3); }

mx::array rms_decomposed(const mx::array& x, const std::optional<mx::array>& w, float eps) {
  mx::array r = mx::rsqrt(mx::add(mx::mean(mx::square(x), -1, true), mx::array(eps)));
  mx::array y = mx::multiply(x, r);
  return w ? mx::multiply(y, *w) : y;
}

mx::array ln_decomposed(const mx::array& x, const std::optional<mx::array>& w, const std::optional<mx::array>& b,
                        float eps) {
  mx::array xc = mx::subtract(x, mx::mean(x, -1, true));
  mx::array y = mx::multiply(xc, mx::rsqrt(mx::add(mx::mean(mx::square(xc), -1, true), mx::array(eps))));
  if (w) y = mx::multiply(y, *w);
  if (b) y = mx::add(y, *b);
  return y;
}

mx::array softmax_decomposed(const mx::array& x, bool stop_gradient_max) {
  mx::array m = mx::max(x, -1, true);
  if (stop_gradient_max) m = mx::stop_gradient(m);
  mx::array e = mx::exp(mx::subtract(x, m));
  return mx::divide(e, mx::sum(e, -1, true));
}

// MLX's CPU fallback of fast.rope (not traditional) on x of shape (B, N, T, D), as its exports hold it.
// `shared` (when given) is the offset's float Broadcast, reused by a second instance as MLX's graphs do;
// `angles` (when given) receives theta; `not_rotation` writes the second half as x1·cos + x2·sin. The
// cosines and sines are cast to x's type, as MLX's fallback does (`cast` false: left float32, so a 16-bit
// x is promoted, which is not MLX's form).
mx::array rope_decomposed(const mx::array& x, int dims, float base, float scale, const mx::array& offset,
                          mx::array* shared = nullptr, mx::array* angles = nullptr, bool not_rotation = false,
                          bool cast = true) {
  const mx::Shape& sh = x.shape();
  const int T = sh[2], h = dims / 2;
  mx::array off = shared && shared->valid() ? *shared : mx::broadcast_to(mx::astype(offset, mx::float32), {T});
  if (shared) *shared = off;
  mx::array pos = mx::add(mx::arange(0.0, static_cast<double>(T), 1.0, mx::float32), off);
  if (scale != 1.0f) pos = mx::multiply(pos, mx::array(scale));
  mx::array freqs = mx::exp(mx::multiply(mx::arange(0.0, static_cast<double>(-h), -1.0, mx::float32),
                                         mx::array(static_cast<float>(std::log(static_cast<double>(base)) / h))));
  mx::array theta = mx::multiply(mx::expand_dims(pos, 1), freqs);
  if (angles) *angles = theta;
  mx::array c = mx::cos(theta), s = mx::sin(theta);
  if (cast && x.dtype() != mx::float32) {
    c = mx::astype(c, x.dtype());
    s = mx::astype(s, x.dtype());
  }
  mx::array x1 = mx::slice(x, {0, 0, 0, 0}, {sh[0], sh[1], T, h});
  mx::array x2 = mx::slice(x, {0, 0, 0, h}, {sh[0], sh[1], T, 2 * h});
  std::vector<mx::array> parts{mx::subtract(mx::multiply(x1, c), mx::multiply(x2, s)),
                               not_rotation ? mx::add(mx::multiply(x1, c), mx::multiply(x2, s))
                                            : mx::add(mx::multiply(x1, s), mx::multiply(x2, c))};
  if (dims < sh[3]) parts.push_back(mx::slice(x, {0, 0, 0, dims}, sh));
  return mx::concatenate(parts, 3);
}

TEST(RowPatterns, RmsNormForms) {
  const mx::array x = X(), w = W(4097);
  auto d = run_both([&] { return rms_decomposed(x, w, 1e-5f); });
  EXPECT_EQ(d.rms_norm, 1u);
  d = run_both([&] { return rms_decomposed(x, std::nullopt, 1e-6f); });
  EXPECT_EQ(d.rms_norm, 1u);
  // The weight first, x · x for the square, mean as sum / n, and sqrt with a division.
  d = run_both([&] {
    mx::array ms = mx::divide(mx::sum(mx::multiply(x, x), -1, true), mx::array(4097.0f));
    return mx::multiply(w, mx::divide(x, mx::sqrt(mx::add(mx::array(1e-5f), ms))));
  });
  EXPECT_EQ(d.rms_norm, 1u);
  // A 3-D input and a scalar weight.
  const mx::array x3 = X({2, 5, 64});
  d = run_both([&] { return rms_decomposed(x3, mx::array(0.5f), 1e-5f); });
  EXPECT_EQ(d.rms_norm, 1u);
}

TEST(RowPatterns, LayerNormForms) {
  const mx::array x = X({33, 1023}), w = W(1023), b = B(1023);
  EXPECT_EQ(run_both([&] { return ln_decomposed(x, w, b, 1e-5f); }).layer_norm, 1u);
  EXPECT_EQ(run_both([&] { return ln_decomposed(x, w, std::nullopt, 1e-5f); }).layer_norm, 1u);
  EXPECT_EQ(run_both([&] { return ln_decomposed(x, std::nullopt, b, 1e-5f); }).layer_norm, 1u);
  auto d = run_both([&] { return ln_decomposed(x, std::nullopt, std::nullopt, 1e-5f); });
  EXPECT_EQ(d.layer_norm, 1u);
  EXPECT_EQ(d.rms_norm, 0u);  // the inner x_c · rsqrt(mean(x_c²) + eps) is part of the LayerNorm
}

TEST(RowPatterns, SoftmaxForms) {
  const mx::array x = X({64, 257});
  EXPECT_EQ(run_both([&] { return softmax_decomposed(x, false); }).softmax, 1u);
  EXPECT_EQ(run_both([&] { return softmax_decomposed(x, true); }).softmax, 1u);
}

// Several patterns in one graph (a residual block: two norms and a softmax), each rewritten.
TEST(RowPatterns, SeveralInOneGraph) {
  const mx::array x = X({16, 128}), w = W(128), b = B(128);
  auto d = run_both([&] {
    mx::array h = rms_decomposed(x, w, 1e-5f);
    mx::array s = softmax_decomposed(mx::matmul(h, mx::transpose(h)), false);
    mx::array o = mx::add(x, mx::matmul(s, h));
    return ln_decomposed(o, w, b, 1e-5f);
  });
  EXPECT_EQ(d.rms_norm, 1u);
  EXPECT_EQ(d.softmax, 1u);
  EXPECT_EQ(d.layer_norm, 1u);
}

// An intermediate needed elsewhere keeps the graph as it is.
TEST(RowPatterns, NotRewrittenWhenIntermediatesAreNeeded) {
  const mx::array x = X({8, 300}), w = W(300);
  // Held by the caller.
  {
    const RowPatternCounts before = row_pattern_counts();
    mx::array ms = mx::mean(mx::square(x), -1, true);
    mx::array y = mx::multiply(mx::multiply(x, mx::rsqrt(mx::add(ms, mx::array(1e-5f)))), w);
    y.eval();
    EXPECT_EQ(delta(before, row_pattern_counts()).rms_norm, 0u);
    ms.eval();
    EXPECT_EQ(ms.shape(), (mx::Shape{8, 1}));
  }
  // An output of the same evaluation.
  {
    const RowPatternCounts before = row_pattern_counts();
    mx::array r = mx::rsqrt(mx::add(mx::mean(mx::square(x), -1, true), mx::array(1e-5f)));
    mx::array y = mx::multiply(x, r);
    mx::eval({y, r});
    EXPECT_EQ(delta(before, row_pattern_counts()).rms_norm, 0u);
  }
  // Another consumer inside the graph (the exponentials also feed a second output).
  {
    const RowPatternCounts before = row_pattern_counts();
    mx::array e = mx::exp(mx::subtract(x, mx::max(x, -1, true)));
    mx::array y = mx::add(mx::divide(e, mx::sum(e, -1, true)), mx::sum(e));
    e = mx::array();  // only the graph holds it now
    y.eval();
    EXPECT_EQ(delta(before, row_pattern_counts()).softmax, 0u);
  }
  // The centered input also used elsewhere: not a LayerNorm (its inner RMS form of x_c still is fused).
  {
    const RowPatternCounts before = row_pattern_counts();
    std::vector<double> off;
    auto build = [&] {
      mx::array xc = mx::subtract(x, mx::mean(x, -1, true));
      mx::array n = mx::multiply(xc, mx::rsqrt(mx::add(mx::mean(mx::square(xc), -1, true), mx::array(1e-5f))));
      return mx::add(mx::multiply(n, w), mx::sum(xc, -1, true));
    };
    {
      RewritePasses p(false);
      off = vals(build());
    }
    mx::array y = build();
    y.eval();
    const auto d = delta(before, row_pattern_counts());
    EXPECT_EQ(d.layer_norm, 0u);
    EXPECT_EQ(d.rms_norm, 1u);
    expect_close(y, off, 2e-6, 1e-5, "x_c shared");
  }
}

TEST(RowPatterns, NotRewrittenWhenNotFloat32OrNotTheForm) {
  // 16-bit graphs round every intermediate; the fused kernels would not reproduce them.
  const mx::array xh = X({4, 64}, mx::float16);
  EXPECT_EQ(run_both([&] { return rms_decomposed(xh, std::nullopt, 1e-5f); }, 0, 0).rms_norm, 0u);
  // The mean's constant is not 1/n; the sum is over the first axis.
  const mx::array x = X({6, 50});
  EXPECT_EQ(run_both([&] {
              mx::array ms = mx::multiply(mx::sum(mx::square(x), -1, true), mx::array(0.5f));
              return mx::multiply(x, mx::rsqrt(mx::add(ms, mx::array(1e-5f))));
            }).rms_norm,
            0u);
  EXPECT_EQ(run_both([&] {
              mx::array ms = mx::mean(mx::square(x), 0, true);
              return mx::multiply(x, mx::rsqrt(mx::add(ms, mx::array(1e-5f))));
            }).rms_norm,
            0u);
  // The square of a different array than the one normalized.
  const mx::array z = X({6, 50}, mx::float32, 9);
  EXPECT_EQ(run_both([&] { return mx::multiply(x, mx::rsqrt(mx::add(mx::mean(mx::square(z), -1, true), mx::array(1e-5f)))); })
                .rms_norm,
            0u);
}

TEST(RowPatterns, SwitchTurnsThePassOff) {
  const mx::array x = X({4, 33});
  RewritePasses p(false);
  EXPECT_FALSE(kiln::detail::row_patterns_enabled());
  const RowPatternCounts before = row_pattern_counts();
  rms_decomposed(x, std::nullopt, 1e-5f).eval();
  softmax_decomposed(x, false).eval();
  const auto d = delta(before, row_pattern_counts());
  EXPECT_EQ(d.rms_norm + d.layer_norm + d.softmax, 0u);
}

// An exported and re-imported decomposed graph (as MLX writes them) is rewritten at call time too.
TEST(RowPatterns, ImportedFunctionsAreRewritten) {
  const std::string path = (std::filesystem::temp_directory_path() / "kiln_row_patterns.mlxfn").string();
  const mx::array x = X({32, 512}), w = W(512), b = B(512);
  mx::export_function(
      path,
      [](const mx::Args& a) {
        return std::vector<mx::array>{rms_decomposed(a[0], a[1], 1e-5f), ln_decomposed(a[0], a[1], a[2], 1e-5f),
                                      softmax_decomposed(a[0], false)};
      },
      {x, w, b});
  // The first call of a fresh import (its constants, eps and 1/n, are still unread Load nodes) and a
  // later one are both rewritten.
  for (int call = 0; call < 2; ++call) {
    auto f = mx::import_function(path);
    if (call == 1) f({x, w, b});
    const RowPatternCounts before = row_pattern_counts();
    auto outs = f({x, w, b});
    mx::eval(outs);
    const auto d = delta(before, row_pattern_counts());
    EXPECT_EQ(d.rms_norm, 1u) << "call " << call;
    EXPECT_EQ(d.layer_norm, 1u) << "call " << call;
    EXPECT_EQ(d.softmax, 1u) << "call " << call;
    std::vector<std::vector<double>> off;
    {
      RewritePasses p(false);
      for (auto& o : f({x, w, b})) off.push_back(vals(o));
    }
    ASSERT_EQ(outs.size(), 3u);
    for (size_t i = 0; i < 3; ++i) expect_close(outs[i], off[i], 2e-6, 1e-6, "output " + std::to_string(i));
  }
  std::remove(path.c_str());
}

// RoPE: one fused node per decomposition, with the unrewritten graph's values (the fused kernel computes
// the same float32 angles, sines and cosines; only the rotation's roundings differ) and mx::fast::rope's.
TEST(RowPatterns, RopeForms) {
  const mx::array x = X({2, 3, 5, 64}, mx::float32, 4);
  for (int32_t offset : {0, 7, 300}) {
    const mx::array off = mx::array(offset, mx::int32);
    for (float scale : {1.0f, 0.5f}) {
      for (float base : {10000.0f, 500000.0f}) {
        auto d = run_both([&] { return rope_decomposed(x, 64, base, scale, off); });
        EXPECT_EQ(d.rope, 1u) << offset << " " << scale << " " << base;
        mx::array want = mx::fast::rope(x, 64, false, base, scale, off);
        expect_close(rope_decomposed(x, 64, base, scale, off), vals(want), 2e-6, 1e-6, "vs fast::rope");
      }
    }
  }
  // A part of the last axis rotated, the rest copied.
  EXPECT_EQ(run_both([&] { return rope_decomposed(x, 32, 10000.0f, 1.0f, mx::array(3, mx::int32)); }).rope,
            1u);
}

// 16-bit x (a bfloat16 or float16 model's queries and keys): MLX's fallback casts the cosines and sines to
// x's type and rounds each product to it. The fused node computes the same roundings, so the rewritten
// graph gives the unrewritten one's bits, and fast::rope's kernel (which MLX's CPU runs as that same
// decomposition) gives them too.
TEST(RowPatterns, RopeFormsInSixteenBits) {
  for (mx::Dtype t : {mx::bfloat16, mx::float16}) {
    for (int dims : {64, 32}) {
      const mx::array x = X({2, 3, 5, 64}, t, 9);
      for (int32_t offset : {0, 300}) {
        const mx::array off = mx::array(offset, mx::int32);
        for (float scale : {1.0f, 0.5f}) {
          const std::string what = mx::dtype_name(t) + " dims " + std::to_string(dims) + " offset " +
                                   std::to_string(offset) + " scale " + std::to_string(scale);
          auto d = run_both([&] { return rope_decomposed(x, dims, 10000.0f, scale, off); }, 0, 0);
          EXPECT_EQ(d.rope, 1u) << what;
          mx::array want = mx::fast::rope(x, dims, false, 10000.0f, scale, off);
          EXPECT_EQ(want.dtype(), t);
          RewritePasses p(false);
          expect_close(rope_decomposed(x, dims, 10000.0f, scale, off), vals(want), 0, 0, "fast::rope " + what);
        }
      }
    }
  }
}

// Queries and keys rotated in one graph share the offset's Broadcast (as MLX's exports do): both are
// rewritten, nothing the second pattern reads goes with the first, and once both are gone the shared
// Broadcast and AsType go too (no AsType kernel runs).
TEST(RowPatterns, RopeTwiceSharingTheOffset) {
  const mx::array q = X({1, 8, 3, 64}, mx::float32, 5), k = X({1, 2, 3, 64}, mx::float32, 6);
  const mx::array off = mx::array(256, mx::int32);
  auto build = [&] {
    mx::array shared;
    mx::array rq = rope_decomposed(q, 64, 10000.0f, 1.0f, off, &shared);
    mx::array rk = rope_decomposed(k, 64, 10000.0f, 1.0f, off, &shared);
    return mx::add(mx::sum(rq, 1), mx::sum(rk, 1));
  };
  EXPECT_EQ(run_both(build, 1e-5, 1e-5).rope, 2u);
  mx::array y = build();
  const bool was = mx::set_profiling(true);
  mx::profile_report(true);
  y.eval();
  const auto rows = mx::profile_report(true);
  mx::set_profiling(was);
  for (const auto& r : rows) {
    EXPECT_NE(r.primitive, "AsType");
    EXPECT_NE(r.primitive, "Cos");
  }
  bool rope = false;
  for (const auto& r : rows) rope |= r.primitive == "RoPE" && r.calls == 2;
  EXPECT_TRUE(rope);
}

TEST(RowPatterns, RopeNotRewrittenWhenNotTheForm) {
  const mx::array x = X({1, 2, 4, 16}, mx::float32, 7);
  const mx::array off = mx::array(2, mx::int32);
  // The second half not the rotation's (x1·cos + x2·sin), the angles also an output, a float16 x.
  EXPECT_EQ(run_both([&] { return rope_decomposed(x, 16, 10000.0f, 1.0f, off, nullptr, nullptr, true); }).rope, 0u);
  {
    // The angles are also an output of the evaluation.
    const RowPatternCounts before = row_pattern_counts();
    mx::array theta;
    mx::array y = rope_decomposed(x, 16, 10000.0f, 1.0f, off, nullptr, &theta);
    mx::eval({y, theta});
    EXPECT_EQ(delta(before, row_pattern_counts()).rope, 0u);
    EXPECT_EQ(theta.shape(), (mx::Shape{4, 8}));
  }
  // A float16 x whose cosines and sines stay float32: the products are promoted to float32.
  const mx::array xh = X({1, 2, 4, 16}, mx::float16, 8);
  EXPECT_EQ(run_both([&] { return rope_decomposed(xh, 16, 10000.0f, 1.0f, off, nullptr, nullptr, false, false); }, 0, 0)
                .rope,
            0u);
}

}  // namespace
