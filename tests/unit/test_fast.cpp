// The fused primitives (RMSNorm, LayerNorm and their VJPs, RoPE, ScaledDotProductAttention) and
// CustomKernel, against unfused double-precision loops written here and against MLX's golden outputs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <kiln/fast.h>
#include <kiln/kiln.h>

#include "unit/fast_test_util.h"

namespace {

namespace mx = kiln;
using namespace fast_test;
using ::testing::HasSubstr;

const std::vector<mx::Dtype> kFloatTypes = {mx::float32, mx::float16, mx::bfloat16, mx::float64};

// ---------------------------------------------------------------- references (double, unfused)

std::vector<double> ref_rms(const std::vector<double>& x, const std::vector<double>& w, int D, double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / D; ++r) {
    double ss = 0;
    for (int i = 0; i < D; ++i) ss += x[r * D + i] * x[r * D + i];
    const double inv = 1.0 / std::sqrt(ss / D + eps);
    for (int i = 0; i < D; ++i) y[r * D + i] = (w.size() == 1 ? w[0] : w[i]) * x[r * D + i] * inv;
  }
  return y;
}

std::vector<double> ref_ln(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                           int D, double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / D; ++r) {
    double m = 0, v = 0;
    for (int i = 0; i < D; ++i) m += x[r * D + i];
    m /= D;
    for (int i = 0; i < D; ++i) v += (x[r * D + i] - m) * (x[r * D + i] - m);
    const double inv = 1.0 / std::sqrt(v / D + eps);
    for (int i = 0; i < D; ++i) {
      y[r * D + i] = (x[r * D + i] - m) * inv * (w.size() == 1 ? w[0] : w[i]) + (b.size() == 1 ? b[0] : b[i]);
    }
  }
  return y;
}

// The VJPs by central differences of the references: an independent check of the analytic kernels.
template <typename F>
std::vector<double> numeric_grad(std::vector<double> p, const std::vector<double>& g, F&& f) {
  std::vector<double> out(p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    const double h = 1e-6 * std::max(1.0, std::abs(p[i]));
    const double keep = p[i];
    p[i] = keep + h;
    auto a = f(p);
    p[i] = keep - h;
    auto b = f(p);
    p[i] = keep;
    double s = 0;
    for (size_t j = 0; j < g.size(); ++j) s += g[j] * (a[j] - b[j]);
    out[i] = s / (2 * h);
  }
  return out;
}

struct RopeRef {
  int dims;
  bool traditional;
  double base, scale;
  bool forward = true;
  std::vector<double> freqs;  // empty: from base
};

// x viewed as (B, rows_per_b, L, D) rows; offsets per batch entry (size 1 or B).
std::vector<double> ref_rope(const std::vector<double>& x, const mx::Shape& shape, const std::vector<double>& off,
                             const RopeRef& p) {
  const int B = shape[0], L = shape[shape.size() - 2], D = shape.back();
  const int half = p.dims / 2;
  std::vector<double> y = x;
  const size_t per_b = x.size() / B;
  for (int b = 0; b < B; ++b) {
    for (size_t e = 0; e < per_b; e += D) {
      const size_t r0 = b * per_b + e;
      const int t = static_cast<int>((e / D) % L);
      const double pos = (t + off[off.size() == 1 ? 0 : b]) * p.scale;
      for (int i = 0; i < half; ++i) {
        const double inv = p.freqs.empty() ? std::pow(p.base, -double(i) / half) : 1.0 / p.freqs[i];
        const double th = pos * inv * (p.forward ? 1 : -1);
        const size_t j1 = r0 + (p.traditional ? 2 * i : i), j2 = j1 + (p.traditional ? 1 : half);
        y[j1] = x[j1] * std::cos(th) - x[j2] * std::sin(th);
        y[j2] = x[j1] * std::sin(th) + x[j2] * std::cos(th);
      }
    }
  }
  return y;
}

struct SdpaRef {
  double scale;
  bool causal = false;
  std::vector<double> mask;  // (B, Hq, Lq, Lk), additive; empty: none
  std::vector<bool> keep;    // (B, Hq, Lq, Lk), bool mask; empty: none
  std::vector<double> sinks;
  double lowest = -std::numeric_limits<double>::max();
};

std::vector<double> ref_sdpa(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                             int B, int Hq, int Hk, int Lq, int Lk, int D, int Dv, const SdpaRef& p,
                             std::vector<double>* lse = nullptr) {
  std::vector<double> out(static_cast<size_t>(B) * Hq * Lq * Dv);
  if (lse) lse->assign(static_cast<size_t>(B) * Hq * Lq, 0);
  const int rep = Hq / Hk, qoff = std::max(Lk - Lq, 0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < Hq; ++h)
      for (int i = 0; i < Lq; ++i) {
        const int hk = h / rep;
        std::vector<double> s(Lk);
        for (int j = 0; j < Lk; ++j) {
          double d = 0;
          for (int c = 0; c < D; ++c) d += q[((b * Hq + h) * Lq + i) * D + c] * k[((b * Hk + hk) * Lk + j) * D + c];
          s[j] = p.scale * d;
          const size_t mi = ((static_cast<size_t>(b) * Hq + h) * Lq + i) * Lk + j;
          if (p.causal && j > i + qoff) s[j] = p.lowest;
          if (!p.mask.empty()) s[j] += p.mask[mi];
          if (!p.keep.empty() && !p.keep[mi]) s[j] = p.lowest;
        }
        double m = p.sinks.empty() ? -INFINITY : p.sinks[h];
        for (double x : s) m = std::max(m, x);
        double sum = p.sinks.empty() ? 0 : std::exp(p.sinks[h] - m);
        for (double& x : s) sum += (x = std::exp(x - m));
        for (int c = 0; c < Dv; ++c) {
          double acc = 0;
          for (int j = 0; j < Lk; ++j) acc += s[j] * v[((b * Hk + hk) * Lk + j) * Dv + c];
          out[((b * Hq + h) * Lq + i) * Dv + c] = acc / sum;
        }
        if (lse) (*lse)[(b * Hq + h) * Lq + i] = m + std::log(sum);
      }
  return out;
}

// ---------------------------------------------------------------- RMSNorm

TEST(FastRMSNorm, MatchesReferenceAllDtypes) {
  for (mx::Dtype t : kFloatTypes) {
    mx::array x = rand_array({3, 5, 33}, t, 1);
    mx::array w = rand_array({33}, t, 2);
    auto y = mx::fast::rms_norm(x, w, 1e-5f);
    EXPECT_EQ(y.dtype(), t);
    EXPECT_EQ(y.shape(), x.shape());
    expect_close(y, ref_rms(vals(x), vals(w), 33, 1e-5), tol_for(t), tol_for(t), "rms " + mx::dtype_name(t));
    auto y2 = mx::fast::rms_norm(x, std::nullopt, 1e-3f);
    expect_close(y2, ref_rms(vals(x), {1.0}, 33, 1e-3), tol_for(t), tol_for(t), "rms no weight");
  }
}

TEST(FastRMSNorm, RoundsLikeMLXForHalfTypes) {
  // MLX normalizes in float, rounds to the dtype, then multiplies by the weight in the dtype.
  mx::array x = rand_array({4, 16}, mx::float16, 3);
  mx::array w = rand_array({16}, mx::float16, 4);
  auto y = mx::fast::rms_norm(x, w, 1e-5f);
  auto xv = vals(x), wv = vals(w), yv = vals(y);
  for (int r = 0; r < 4; ++r) {
    float ss = 0;
    for (int i = 0; i < 16; ++i) ss += float(xv[r * 16 + i]) * float(xv[r * 16 + i]);
    const float inv = 1.0f / std::sqrt(ss / 16.0f + 1e-5f);
    for (int i = 0; i < 16; ++i) {
      const float n = float(mx::float16_t(float(xv[r * 16 + i]) * inv));
      EXPECT_EQ(yv[r * 16 + i], float(mx::float16_t(float(wv[i]) * n))) << r << "," << i;
    }
  }
}

TEST(FastRMSNorm, NonContiguousPromotionAndEdges) {
  mx::array base = rand_array({7, 3, 12}, mx::float32, 5);
  mx::array xt = mx::transpose(base, {1, 0, 2});  // rows of 12 with a stride of 36 between consecutive rows
  mx::array w = rand_array({12}, mx::float16, 6);
  auto y = mx::fast::rms_norm(xt, w, 1e-5f);
  EXPECT_EQ(y.dtype(), mx::float32);  // float32 x with a float16 weight promotes to float32
  expect_close(y, ref_rms(vals(xt), vals(w), 12, 1e-5), 2e-5, 2e-6, "transposed");
  // A sliced weight (stride 2) and a last axis of size 1.
  mx::array w2 = mx::slice(rand_array({24}, mx::float32, 7), {0}, {24}, {2});
  expect_close(mx::fast::rms_norm(xt, w2, 1e-5f), ref_rms(vals(xt), vals(w2), 12, 1e-5), 2e-5, 2e-6, "sliced w");
  mx::array x1 = rand_array({5, 1}, mx::float32, 8);
  expect_close(mx::fast::rms_norm(x1, std::nullopt, 0.0f), ref_rms(vals(x1), {1.0}, 1, 0.0), 1e-6, 0, "D=1");
  // Empty rows evaluate to an empty result.
  auto e = mx::fast::rms_norm(mx::zeros({0, 8}), std::nullopt, 1e-5f);
  e.eval();
  EXPECT_EQ(e.shape(), mx::Shape({0, 8}));
}

TEST(FastRMSNorm, Errors) {
  mx::array x = rand_array({2, 8}, mx::float32, 9);
  EXPECT_THAT(error_of([&] { mx::fast::rms_norm(x, mx::ones({7}), 1e-5f); }),
              HasSubstr("[rms_norm] (*weight) must have the same size as the last dimension of x but has 7 elements."));
  EXPECT_THAT(error_of([&] { mx::fast::rms_norm(x, mx::ones({2, 8}), 1e-5f); }),
              HasSubstr("[rms_norm] (*weight) must have 1 dimension but has 2 dimensions."));
  EXPECT_THAT(error_of([&] { mx::fast::rms_norm(mx::array(1.0f), std::nullopt, 1e-5f); }),
              HasSubstr("[rms_norm] Input must have at least 1 dimension but got input with 0 dimensions."));
  EXPECT_THAT(error_of([&] { mx::fast::rms_norm(mx::array({1, 2}), std::nullopt, 1e-5f); }),
              HasSubstr("[rms_norm] Received unsupported type int32."));
  EXPECT_THROW(mx::fast::rms_norm(x, mx::ones({7}), 1e-5f), std::invalid_argument);
}

TEST(FastRMSNorm, GoldenMLX) {
  auto x = read_npy(golden("fast_rms_norm/call0_arg0.npy"));
  auto w = read_npy(golden("fast_rms_norm/call0_arg1.npy"));
  auto want = vals(read_npy(golden("fast_rms_norm/call0_out0.npy")));
  expect_close(mx::fast::rms_norm(x, w, 1e-5f), want, 1e-5, 1e-5, "golden rms");
}

TEST(FastRMSNormVJP, MatchesNumericGradientAndGolden) {
  for (mx::Dtype t : {mx::float32, mx::float64, mx::float16}) {
    const int D = 9;
    mx::array x = rand_array({4, D}, t, 10), w = rand_array({D}, t, 11), g = rand_array({4, D}, t, 12);
    auto out = mx::fast::detail::rms_norm_vjp(x, w, g, 1e-5f);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[1].shape(), mx::Shape({D}));
    auto xv = vals(x), wv = vals(w), gv = vals(g);
    auto dx = numeric_grad(xv, gv, [&](const std::vector<double>& p) { return ref_rms(p, wv, D, 1e-5); });
    auto dw = numeric_grad(wv, gv, [&](const std::vector<double>& p) { return ref_rms(xv, p, D, 1e-5); });
    const double tol = t == mx::float16 ? 2e-2 : 1e-5;
    expect_close(out[0], dx, tol, tol, "rms dx");
    expect_close(out[1], dw, tol, tol, "rms dw");
  }
  // A scalar weight (no weight in the forward pass) gets a zero gradient of its own shape.
  mx::array x = rand_array({3, 5}, mx::float32, 13), g = rand_array({3, 5}, mx::float32, 14);
  auto out = mx::fast::detail::rms_norm_vjp(x, mx::array(1.0f), g, 1e-5f);
  EXPECT_EQ(out[1].ndim(), 0u);
  EXPECT_EQ(out[1].item<float>(), 0.0f);
  auto dx = numeric_grad(vals(x), vals(g), [&](const std::vector<double>& p) { return ref_rms(p, {1.0}, 5, 1e-5); });
  expect_close(out[0], dx, 1e-5, 1e-5, "rms dx scalar w");
  // MLX's golden outputs.
  std::string d = "fast_rms_norm_vjp/";
  auto gold = mx::fast::detail::rms_norm_vjp(read_npy(golden(d + "call0_arg0.npy")),
                                             read_npy(golden(d + "call0_arg1.npy")),
                                             read_npy(golden(d + "call0_arg2.npy")), 1e-5f);
  expect_close(gold[0], vals(read_npy(golden(d + "call0_out0.npy"))), 1e-4, 1e-4, "golden dx");
  expect_close(gold[1], vals(read_npy(golden(d + "call0_out1.npy"))), 1e-4, 1e-4, "golden dw");
}

// ---------------------------------------------------------------- LayerNorm

TEST(FastLayerNorm, MatchesReferenceAllDtypes) {
  for (mx::Dtype t : kFloatTypes) {
    mx::array x = rand_array({2, 3, 17}, t, 20, -3.0f, 5.0f);
    mx::array w = rand_array({17}, t, 21), b = rand_array({17}, t, 22);
    // Rounding the normalized value, the product and the sum to a 16-bit type costs a few of its ulps.
    const double tol = 2 * tol_for(t);
    expect_close(mx::fast::layer_norm(x, w, b, 1e-5f), ref_ln(vals(x), vals(w), vals(b), 17, 1e-5), tol, tol,
                 "ln " + mx::dtype_name(t));
    expect_close(mx::fast::layer_norm(x, std::nullopt, b, 1e-5f), ref_ln(vals(x), {1.0}, vals(b), 17, 1e-5), tol,
                 tol, "ln no weight");
    expect_close(mx::fast::layer_norm(x, w, std::nullopt, 1e-5f), ref_ln(vals(x), vals(w), {0.0}, 17, 1e-5), tol,
                 tol, "ln no bias");
    expect_close(mx::fast::layer_norm(x, std::nullopt, std::nullopt, 1e-2f), ref_ln(vals(x), {1.0}, {0.0}, 17, 1e-2),
                 tol, tol, "ln plain");
  }
}

TEST(FastLayerNorm, NonContiguousErrorsAndGolden) {
  mx::array base = rand_array({6, 10}, mx::float32, 23);
  mx::array xt = mx::transpose(base);  // (10, 6), last-axis stride 10
  mx::array w = rand_array({6}, mx::float32, 24);
  expect_close(mx::fast::layer_norm(xt, w, std::nullopt, 1e-5f), ref_ln(vals(xt), vals(w), {0.0}, 6, 1e-5), 2e-5,
               2e-6, "transposed");
  EXPECT_THAT(error_of([&] { mx::fast::layer_norm(xt, mx::ones({5}), std::nullopt, 1e-5f); }),
              HasSubstr("[layer_norm] weight must have the same size as the last dimension of x but has 5 elements."));
  EXPECT_THAT(error_of([&] { mx::fast::layer_norm(xt, std::nullopt, mx::ones({1, 6}), 1e-5f); }),
              HasSubstr("[layer_norm] bias must have 1 dimension but has 2 dimensions."));
  EXPECT_THAT(error_of([&] { mx::fast::layer_norm(mx::array({1, 2}), std::nullopt, std::nullopt, 1e-5f); }),
              HasSubstr("[layer_norm] Received unsupported type int32."));
  std::string d = "fast_layer_norm/";
  auto y = mx::fast::layer_norm(read_npy(golden(d + "call0_arg0.npy")), read_npy(golden(d + "call0_arg1.npy")),
                                read_npy(golden(d + "call0_arg2.npy")), 1e-5f);
  expect_close(y, vals(read_npy(golden(d + "call0_out0.npy"))), 1e-5, 1e-5, "golden ln");
}

TEST(FastLayerNormVJP, MatchesNumericGradientAndGolden) {
  for (mx::Dtype t : {mx::float32, mx::float64, mx::bfloat16}) {
    const int D = 7;
    mx::array x = rand_array({5, D}, t, 30), w = rand_array({D}, t, 31), b = rand_array({D}, t, 32);
    mx::array g = rand_array({5, D}, t, 33);
    auto out = mx::fast::detail::layer_norm_vjp(x, w, b, g, 1e-5f);
    ASSERT_EQ(out.size(), 3u);
    auto xv = vals(x), wv = vals(w), bv = vals(b), gv = vals(g);
    auto f = [&](auto&& make) { return [&, make](const std::vector<double>& p) { return make(p); }; };
    auto dx = numeric_grad(xv, gv, f([&](const std::vector<double>& p) { return ref_ln(p, wv, bv, D, 1e-5); }));
    auto dw = numeric_grad(wv, gv, f([&](const std::vector<double>& p) { return ref_ln(xv, p, bv, D, 1e-5); }));
    auto db = numeric_grad(bv, gv, f([&](const std::vector<double>& p) { return ref_ln(xv, wv, p, D, 1e-5); }));
    const double tol = t == mx::bfloat16 ? 8e-2 : 1e-5;
    expect_close(out[0], dx, tol, tol, "ln dx");
    expect_close(out[1], dw, tol, tol, "ln dw");
    expect_close(out[2], db, tol, tol, "ln db");
  }
  std::string d = "fast_layer_norm_vjp/";
  auto gold = mx::fast::detail::layer_norm_vjp(
      read_npy(golden(d + "call0_arg0.npy")), read_npy(golden(d + "call0_arg1.npy")),
      read_npy(golden(d + "call0_arg2.npy")), read_npy(golden(d + "call0_arg3.npy")), 1e-5f);
  for (int i = 0; i < 3; ++i) {
    expect_close(gold[i], vals(read_npy(golden(d + "call0_out" + std::to_string(i) + ".npy"))), 1e-4, 1e-4,
                 "golden ln vjp " + std::to_string(i));
  }
  // Scalar weight and bias: zero gradients with their (scalar) shapes.
  auto z = mx::fast::detail::layer_norm_vjp(rand_array({2, 4}, mx::float32, 34), mx::array(1.0f), mx::array(0.0f),
                                            rand_array({2, 4}, mx::float32, 35), 1e-5f);
  EXPECT_EQ(z[1].item<float>(), 0.0f);
  EXPECT_EQ(z[2].item<float>(), 0.0f);
}

// ---------------------------------------------------------------- RoPE

TEST(FastRoPE, MatchesReferenceAllDtypesAndModes) {
  const mx::Shape shape{2, 3, 5, 10};
  for (mx::Dtype t : kFloatTypes) {
    mx::array x = rand_array(shape, t, 40);
    for (bool trad : {false, true}) {
      for (int dims : {10, 6}) {
        auto y = mx::fast::rope(x, dims, trad, 10000.0f, 1.0f, 3);
        expect_close(y, ref_rope(vals(x), shape, {3.0}, {dims, trad, 10000.0, 1.0}), 2 * tol_for(t),
                     2 * tol_for(t), "rope " + mx::dtype_name(t) + (trad ? " trad " : " ") + std::to_string(dims));
      }
    }
  }
}

TEST(FastRoPE, FreqsScaleOffsetsAndRanks) {
  // Per-batch offsets, a position scale, explicit frequencies, 3-D and 5-D inputs.
  mx::array x = rand_array({3, 4, 8}, mx::float32, 41);
  mx::array offs({2, 0, 7}, mx::int32);
  auto y = mx::fast::rope(x, 8, false, 500.0f, 0.5f, offs);
  expect_close(y, ref_rope(vals(x), {3, 4, 8}, {2, 0, 7}, {8, false, 500.0, 0.5}), 2e-5, 2e-5, "3-D per batch");
  mx::array freqs({1.0f, 3.0f, 10.0f, 40.0f});
  auto yf = mx::fast::rope(x, 8, true, std::nullopt, 1.0f, 5, freqs);
  RopeRef pf{8, true, 1.0, 1.0};
  pf.freqs = {1.0, 3.0, 10.0, 40.0};
  expect_close(yf, ref_rope(vals(x), {3, 4, 8}, {5}, pf), 2e-5, 2e-5, "freqs");
  mx::array x5 = rand_array({2, 2, 3, 4, 6}, mx::float32, 42);
  auto y5 = mx::fast::rope(x5, 4, false, 10000.0f, 1.0f, mx::array({1, 9}, mx::uint32));
  expect_close(y5, ref_rope(vals(x5), {2, 2, 3, 4, 6}, {1, 9}, {4, false, 10000.0, 1.0}), 2e-5, 2e-5, "5-D");
  // int64 offsets are cast to int32 by the op.
  auto y64 = mx::fast::rope(x, 8, false, 500.0f, 0.5f, mx::astype(offs, mx::int64));
  expect_close(y64, vals(y), 0, 0, "int64 offsets");
}

TEST(FastRoPE, InverseUndoesForwardAndNonContiguous) {
  mx::array base = rand_array({1, 6, 2, 8}, mx::float32, 43);
  mx::array x = mx::transpose(base, {0, 2, 1, 3});  // (B, L, H, D) -> (B, H, L, D), a strided view
  auto fwd = mx::fast::rope(x, 8, false, 10000.0f, 1.0f, 4);
  expect_close(fwd, ref_rope(vals(x), {1, 2, 6, 8}, {4}, {8, false, 10000.0, 1.0}), 2e-5, 2e-5, "strided x");
  auto back = mx::fast::detail::rope(fwd, 8, false, 10000.0f, 1.0f, mx::array(4), std::nullopt, false);
  expect_close(back, vals(x), 1e-5, 1e-5, "inverse");
  RopeRef inv{8, false, 10000.0, 1.0, false};
  expect_close(mx::fast::detail::rope(x, 8, false, 10000.0f, 1.0f, mx::array(4), std::nullopt, false),
               ref_rope(vals(x), {1, 2, 6, 8}, {4}, inv), 2e-5, 2e-5, "inverse reference");
}

TEST(FastRoPE, Errors) {
  mx::array x = rand_array({1, 2, 3, 8}, mx::float32, 44);
  EXPECT_THAT(error_of([&] { mx::fast::rope(mx::zeros({3, 8}), 8, false, 1e4f, 1.0f, 0); }),
              HasSubstr("[rope] Input must have at least 3 dimensions but got input with 2 dimensions."));
  EXPECT_THAT(error_of([&] { mx::fast::rope(mx::astype(x, mx::int32), 8, false, 1e4f, 1.0f, 0); }),
              HasSubstr("[rope] Input must be a floating type but got int32."));
  EXPECT_THAT(error_of([&] { mx::fast::rope(x, 8, false, 1e4f, 1.0f, mx::array({1, 2})); }),
              HasSubstr("[rope] offset must be a scalar or vector with 1 elements but has shape (2)."));
  EXPECT_THAT(error_of([&] { mx::fast::rope(x, 8, false, 1e4f, 1.0f, mx::array(1.5f)); }),
              HasSubstr("[rope] offset must be an integer but got type float32."));
  EXPECT_THAT(error_of([&] { mx::fast::rope(x, 8, false, 1e4f, 1.0f, 0, mx::ones({4})); }),
              HasSubstr("[rope] Only one of base or freqs can have a value."));
  EXPECT_THAT(error_of([&] { mx::fast::rope(x, 8, false, std::nullopt, 1.0f, 0); }),
              HasSubstr("[rope] Neither base nor freqs has a value."));
  EXPECT_THAT(error_of([&] { mx::fast::rope(x, 8, false, std::nullopt, 1.0f, 0, mx::ones({3})); }),
              HasSubstr("[rope] freqs must be one dimensional with size 4 but got shape (3)."));
  EXPECT_THAT(error_of([&] { mx::fast::rope(x, 7, false, 1e4f, 1.0f, 0); }), HasSubstr("[rope] The number of rotated"));
  EXPECT_THAT(error_of([&] { mx::fast::rope(x, 10, false, 1e4f, 1.0f, 0); }), HasSubstr("but got 10."));
}

TEST(FastRoPE, GoldenMLX) {
  auto run = [](const std::string& c, int dims, bool trad, std::optional<float> base, float scale, bool freqs) {
    auto x = read_npy(golden(c + "/call0_arg0.npy"));
    auto off = read_npy(golden(c + "/call0_arg1.npy"));
    std::optional<mx::array> f;
    if (freqs) f = read_npy(golden(c + "/call0_arg2.npy"));
    auto y = mx::fast::rope(x, dims, trad, base, scale, off, f);
    expect_close(y, vals(read_npy(golden(c + "/call0_out0.npy"))), 1e-5, 1e-5, c);
  };
  run("fast_rope", 8, false, 10000.0f, 1.0f, false);
  run("fast_rope_freqs", 8, false, std::nullopt, 1.0f, true);
  run("fast_rope_traditional_partial", 4, true, 500.0f, 0.5f, false);
}

// ---------------------------------------------------------------- ScaledDotProductAttention

struct Qkv {
  mx::array q, k, v;
};
Qkv make_qkv(int B, int Hq, int Hk, int Lq, int Lk, int D, int Dv, mx::Dtype t, uint32_t seed) {
  return {rand_array({B, Hq, Lq, D}, t, seed), rand_array({B, Hk, Lk, D}, t, seed + 1),
          rand_array({B, Hk, Lk, Dv}, t, seed + 2)};
}

TEST(FastSDPA, PlainAndGroupedQueryAllDtypes) {
  for (mx::Dtype t : kFloatTypes) {
    for (auto [Hq, Hk] : {std::pair{2, 2}, std::pair{6, 2}}) {
      auto [q, k, v] = make_qkv(2, Hq, Hk, 5, 7, 12, 9, t, 50);
      auto o = mx::fast::scaled_dot_product_attention(q, k, v, 0.3f);
      EXPECT_EQ(o.shape(), mx::Shape({2, Hq, 5, 9}));
      EXPECT_EQ(o.dtype(), t);
      expect_close(o, ref_sdpa(vals(q), vals(k), vals(v), 2, Hq, Hk, 5, 7, 12, 9, {double(0.3f)}), 2 * tol_for(t),
                   2 * tol_for(t), "sdpa " + mx::dtype_name(t));
    }
  }
}

TEST(FastSDPA, CausalBothAlignments) {
  for (auto [Lq, Lk] : {std::pair{4, 9}, std::pair{9, 4}, std::pair{1, 6}, std::pair{70, 70}}) {
    auto [q, k, v] = make_qkv(1, 4, 2, Lq, Lk, 8, 8, mx::float32, 60);
    auto o = mx::fast::scaled_dot_product_attention(q, k, v, 0.35f, "causal");
    SdpaRef p{0.35, true};
    expect_close(o, ref_sdpa(vals(q), vals(k), vals(v), 1, 4, 2, Lq, Lk, 8, 8, p), 2e-5, 2e-6,
                 "causal " + std::to_string(Lq) + "x" + std::to_string(Lk));
  }
}

TEST(FastSDPA, ArrayMasksSinksAndLogsumexp) {
  auto [q, k, v] = make_qkv(2, 4, 2, 3, 6, 8, 5, mx::float32, 70);
  // Additive mask broadcast from (Lq, Lk).
  mx::array add = rand_array({3, 6}, mx::float32, 73, -3.0f, 1.0f);
  SdpaRef pa{0.5};
  for (int i = 0; i < 2 * 4; ++i) {
    auto a = vals(add);
    pa.mask.insert(pa.mask.end(), a.begin(), a.end());
  }
  expect_close(mx::fast::scaled_dot_product_attention(q, k, v, 0.5f, "", add),
               ref_sdpa(vals(q), vals(k), vals(v), 2, 4, 2, 3, 6, 8, 5, pa), 2e-5, 2e-6, "additive");
  // Bool mask per head, broadcast over the batch; one fully masked row (uniform weights, as MLX).
  std::vector<bool> keep(4 * 3 * 6);
  std::vector<uint8_t> kb(keep.size());
  for (size_t i = 0; i < keep.size(); ++i) kb[i] = keep[i] = ((i * 7) % 5) != 0 && i / 6 != 5;
  mx::array bm = mx::astype(mx::array(std::vector<int32_t>(kb.begin(), kb.end()), {1, 4, 3, 6}), mx::bool_);
  SdpaRef pb{0.5};
  pb.lowest = -std::numeric_limits<float>::max();
  for (int b = 0; b < 2; ++b) pb.keep.insert(pb.keep.end(), keep.begin(), keep.end());
  expect_close(mx::fast::scaled_dot_product_attention(q, k, v, 0.5f, "array", bm),
               ref_sdpa(vals(q), vals(k), vals(v), 2, 4, 2, 3, 6, 8, 5, pb), 2e-5, 2e-6, "bool");
  // Sinks with causal masking, and the logsumexp output.
  mx::array sinks = rand_array({4}, mx::float32, 74);
  SdpaRef ps{0.4, true};
  ps.sinks = vals(sinks);
  std::vector<double> lse;
  auto want = ref_sdpa(vals(q), vals(k), vals(v), 2, 4, 2, 3, 6, 8, 5, ps, &lse);
  expect_close(mx::fast::scaled_dot_product_attention(q, k, v, 0.4f, "causal", {}, sinks), want, 2e-5, 2e-6,
               "sinks");
  auto both = mx::fast::detail::scaled_dot_product_attention_with_lse(q, k, v, 0.4f, "causal", {}, sinks);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[1].shape(), mx::Shape({2, 4, 3, 1}));
  EXPECT_EQ(both[1].dtype(), mx::float32);
  expect_close(both[0], want, 2e-5, 2e-6, "sinks with lse");
  expect_close(both[1], lse, 2e-5, 2e-5, "lse");
}

TEST(FastSDPA, NonContiguousHalfAndLongKeys) {
  // (B, L, H, D) tensors transposed to (B, H, L, D), as attention layers produce them.
  mx::array qb = rand_array({1, 3, 4, 16}, mx::bfloat16, 80), kb = rand_array({1, 300, 2, 16}, mx::bfloat16, 81);
  mx::array vb = rand_array({1, 300, 2, 16}, mx::bfloat16, 82);
  auto q = mx::transpose(qb, {0, 2, 1, 3}), k = mx::transpose(kb, {0, 2, 1, 3}), v = mx::transpose(vb, {0, 2, 1, 3});
  auto o = mx::fast::scaled_dot_product_attention(q, k, v, 0.25f, "causal");
  expect_close(o, ref_sdpa(vals(q), vals(k), vals(v), 1, 4, 2, 3, 300, 16, 16, {0.25, true}), 2e-2, 2e-2, "bf16");
  // float32 keys whose last axis is strided (converted per tile); more than 4096 keys.
  auto [q2, k2, v2] = make_qkv(1, 2, 1, 3, 5000, 4, 4, mx::float32, 83);
  auto k2t = mx::swapaxes(rand_array({1, 1, 4, 5000}, mx::float32, 84), 2, 3);
  expect_close(mx::fast::scaled_dot_product_attention(q2, k2t, v2, 0.5f),
               ref_sdpa(vals(q2), vals(k2t), vals(v2), 1, 2, 1, 3, 5000, 4, 4, {0.5}), 2e-5, 2e-6, "long");
}

TEST(FastSDPA, LargeTilesThroughBlas) {
  // Tiles of this size go through BLAS (one after another) instead of the per-thread loops.
  for (auto [causal, t] : {std::pair{false, mx::float32}, std::pair{true, mx::float32}, std::pair{true, mx::float16}}) {
    auto [q, k, v] = make_qkv(1, 4, 2, 200, 600, 128, 96, t, 95);
    mx::array sinks = rand_array({4}, t, 96);
    mx::array add = rand_array({200, 600}, t, 97, -1.0f, 0.0f);
    SdpaRef p{0.1, causal};
    p.sinks = vals(sinks);
    if (!causal) {
      auto a = vals(add);
      for (int h = 0; h < 4; ++h) p.mask.insert(p.mask.end(), a.begin(), a.end());
    }
    std::vector<double> lse;
    auto want = ref_sdpa(vals(q), vals(k), vals(v), 1, 4, 2, 200, 600, 128, 96, p, &lse);
    auto got = mx::fast::detail::scaled_dot_product_attention_with_lse(
        q, k, v, 0.1f, causal ? "causal" : "", causal ? std::nullopt : std::optional<mx::array>(add), sinks);
    const double tol = t == mx::float16 ? 4e-3 : 1e-4;
    expect_close(got[0], want, tol, tol / 10, causal ? "blas causal" : "blas masked");
    expect_close(got[1], lse, tol / 10, tol / 10, "blas lse");
  }
}

TEST(FastSDPA, Errors) {
  Qkv t = make_qkv(1, 4, 2, 3, 5, 8, 8, mx::float32, 90);
  mx::array q = t.q, k = t.k, v = t.v;
  const std::string p = "[scaled_dot_product_attention] ";
  EXPECT_THAT(error_of([&] { mx::fast::scaled_dot_product_attention(mx::zeros({4, 3, 8}), k, v, 1.0f); }),
              HasSubstr(p + "input with shape (4,3,8) expected to be rank 4"));
  EXPECT_THAT(error_of([&] { mx::fast::scaled_dot_product_attention(q, k, v, 1.0f, "bogus"); }),
              HasSubstr(p + "Invalid mask_mode bogus. mask_mode must be 'causal', 'array' or ''."));
  EXPECT_THAT(error_of([&] { mx::fast::scaled_dot_product_attention(q, k, v, 1.0f, "causal", mx::zeros({3, 5})); }),
              HasSubstr("No array mask should be passed."));
  EXPECT_THAT(error_of([&] { mx::fast::scaled_dot_product_attention(q, mx::zeros({1, 2, 5, 7}), v, 1.0f); }),
              HasSubstr(p + "query, keys expected to have matching last dimension"));
  EXPECT_THAT(error_of([&] { mx::fast::scaled_dot_product_attention(q, k, mx::zeros({1, 3, 5, 8}), 1.0f); }),
              HasSubstr(p + "keys, values expected to have matching n_kv_heads"));
  auto k3 = mx::zeros({1, 3, 5, 8}), v3 = mx::zeros({1, 3, 5, 8});
  EXPECT_THAT(error_of([&] { mx::fast::scaled_dot_product_attention(q, k3, v3, 1.0f); }),
              HasSubstr(p + "n_heads must be a multiple of n_kv_heads, found n_heads 4 for n_kv_heads 3."));
  EXPECT_THAT(error_of([&] { mx::fast::scaled_dot_product_attention(q, k, v, 1.0f, "", {}, mx::zeros({3})); }),
              HasSubstr(p + "Received invalid shape for sinks (3)."));
  EXPECT_THAT(error_of([&] {
                mx::fast::scaled_dot_product_attention(q, k, v, 1.0f, "", mx::zeros({3, 5}, mx::float64));
              }),
              HasSubstr(p + "Mask type must promote to output type float32."));
  EXPECT_THAT(error_of([&] {
                auto qi = mx::astype(q, mx::int32);
                mx::fast::scaled_dot_product_attention(qi, mx::astype(k, mx::int32), mx::astype(v, mx::int32), 1.0f);
              }),
              HasSubstr(p + "Received unsupported type int32."));
}

TEST(FastSDPA, GoldenMLX) {
  auto in = [](const std::string& c, int i) { return read_npy(golden(c + "/call0_arg" + std::to_string(i) + ".npy")); };
  auto out = [](const std::string& c) { return vals(read_npy(golden(c + "/call0_out0.npy"))); };
  std::string c = "fast_sdpa_additive_mask";
  expect_close(mx::fast::scaled_dot_product_attention(in(c, 0), in(c, 1), in(c, 2), 0.5f, "", in(c, 3)), out(c), 1e-5,
               1e-5, c);
  c = "fast_sdpa_causal";
  expect_close(mx::fast::scaled_dot_product_attention(in(c, 0), in(c, 1), in(c, 2), 0.35f, "causal"), out(c), 1e-5,
               1e-5, c);
  c = "fast_sdpa_sinks";
  expect_close(mx::fast::scaled_dot_product_attention(in(c, 0), in(c, 1), in(c, 2), 0.4f, "causal", {}, in(c, 3)),
               out(c), 1e-5, 1e-5, c);
}

// ---------------------------------------------------------------- schemas and CustomKernel

TEST(FastPrimitives, SchemasAndFlags) {
  auto fields = [](const char* name) {
    std::vector<mx::FieldType> t;
    for (auto& f : mx::registry::get(name).fields) t.push_back(f.type);
    return t;
  };
  using FT = mx::FieldType;
  EXPECT_EQ(fields("RMSNorm"), (std::vector<FT>{FT::Placeholder, FT::Float}));
  EXPECT_EQ(fields("LayerNormVJP"), (std::vector<FT>{FT::Placeholder, FT::Float}));
  EXPECT_EQ(fields("RoPE"), (std::vector<FT>{FT::Placeholder, FT::Int, FT::Bool, FT::Float, FT::Float, FT::Bool}));
  EXPECT_EQ(fields("ScaledDotProductAttention"),
            (std::vector<FT>{FT::Placeholder, FT::Float, FT::Bool, FT::Bool, FT::Bool}));
  EXPECT_EQ(fields("CustomKernel"),
            (std::vector<FT>{FT::String, FT::String, FT::Int, FT::Int, FT::Int, FT::Int, FT::Int, FT::Int,
                             FT::BoolTripleVec, FT::Bool, FT::OptFloat, FT::ScalarVec, FT::Bool, FT::Int}));
  EXPECT_FALSE(mx::registry::get("RMSNormVJP").shapeless);
  EXPECT_FALSE(mx::registry::get("LayerNormVJP").shapeless);
  EXPECT_TRUE(mx::registry::get("RoPE").shapeless);
  EXPECT_FALSE(mx::registry::get("CustomKernel").shapeless);
  EXPECT_TRUE(mx::registry::get("CustomKernel").flags & mx::kNoCSE);
  // File validation goes through infer: a weight of the wrong size is rejected there too.
  const auto& rms = mx::registry::get("RMSNorm");
  EXPECT_THAT(error_of([&] { rms.infer(mx::State{std::monostate{}, 1e-5f}, {{{2, 8}, mx::float32}, {{7}, mx::float32}}); }),
              HasSubstr("[rms_norm] weight must be a scalar or have the size of the last dimension of x (8)"));
  const auto& sdpa = mx::registry::get("ScaledDotProductAttention");
  auto specs = sdpa.infer(mx::State{std::monostate{}, 1.0f, false, false, true},
                          {{{1, 4, 3, 8}, mx::float16}, {{1, 2, 5, 8}, mx::float16}, {{1, 2, 5, 6}, mx::float16}});
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].shape, mx::Shape({1, 4, 3, 6}));
  EXPECT_EQ(specs[1].dtype, mx::float32);
}

TEST(CustomKernel, RecordsEveryFieldAndRefusesToRunOnCpu) {
  mx::array a = mx::ones({4}), b = mx::zeros({2, 3});
  auto outs = mx::fast::precompiled_cuda_kernel("my_axpy", "PTX-BYTES", {a, b}, {{4}, {2, 3}},
                                                {mx::float32, mx::float16}, {mx::ScalarArg(int32_t(3)), 2.5f, true},
                                                {4, 1, 1}, {32, 1, 1}, 128, 0.5f, true);
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[1].shape(), mx::Shape({2, 3}));
  EXPECT_EQ(outs[1].dtype(), mx::float16);
  const auto& node = *outs[0].node();
  EXPECT_EQ(node.def->name, "CustomKernel");
  const mx::State& st = node.state;
  EXPECT_EQ(st.get<std::string>(0), "my_axpy");
  EXPECT_EQ(st.get<std::string>(1), "PTX-BYTES");
  EXPECT_EQ(st.i(2), 4);
  EXPECT_EQ(st.i(5), 32);
  using Triples = std::vector<std::array<bool, 3>>;
  EXPECT_EQ(st.get<Triples>(8).size(), 2u);
  EXPECT_TRUE(st.b(9));
  EXPECT_EQ(st.get<std::optional<float>>(10), std::optional<float>(0.5f));
  auto scalars = st.get<std::vector<mx::ScalarArg>>(11);
  ASSERT_EQ(scalars.size(), 3u);
  EXPECT_EQ(std::get<int32_t>(scalars[0]), 3);
  EXPECT_EQ(std::get<float>(scalars[1]), 2.5f);
  EXPECT_TRUE(std::get<bool>(scalars[2]));
  EXPECT_TRUE(st.b(12));
  EXPECT_EQ(st.i(13), 128);
  EXPECT_THAT(error_of([&] { outs[0].eval(); }),
              HasSubstr("[CustomKernel] Cannot run custom kernel 'my_axpy' on the CPU: "));
  EXPECT_THROW(outs[1].eval(), std::runtime_error);
  // The generic builder: a Metal-style record with shape information and no outputs given is refused.
  mx::fast::detail::CustomKernelSpec spec;
  spec.name = "custom_kernel_myexp";
  spec.source = "out[elem] = metal::exp(inp[elem]);";
  spec.shape_infos = {{true, false, true}};
  auto one = mx::fast::detail::custom_kernel(spec, {a}, {{4}}, {mx::float32});
  EXPECT_EQ(one[0].node()->state.get<Triples>(8)[0], (std::array<bool, 3>{true, false, true}));
  EXPECT_THAT(error_of([&] { mx::fast::detail::custom_kernel(spec, {a}, {}, {}); }), HasSubstr("at least one output"));
  EXPECT_THAT(error_of([&] { mx::fast::detail::custom_kernel(spec, {a}, {{4}}, {}); }),
              HasSubstr("[custom_kernel] Expected one dtype per output shape"));
}

}  // namespace
