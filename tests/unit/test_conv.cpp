// Convolution tests: every case is checked against a direct-loop reference written here (and, for the
// transposed convolutions, a second reference that scatters each input into the output), plus values
// computed by MLX 0.30.1 for fixed inputs, and MLX's error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

#include <kiln/kiln.h>
#include <kiln/ops/conv.h>

namespace mx = kiln;
using ::testing::HasSubstr;
// conv_general has two overloads (as in MLX); typed vectors pick the one with padding_lo and padding_hi.
using V = std::vector<int>;

namespace {

// ---- data ----

// Deterministic values in [-1, 1).
std::vector<float> rnd(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 12345u;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>((s >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return v;
}

// The formulas the MLX constants below were computed from (flat row-major index i).
std::vector<float> mlx_x(const mx::Shape& s) {
  std::vector<float> v(mx::shape_size(s));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>((i * 37) % 17) - 8) / 8.0f;
  return v;
}
std::vector<float> mlx_w(const mx::Shape& s) {
  std::vector<float> v(mx::shape_size(s));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>((i * 23) % 13) - 6) / 6.0f;
  return v;
}

std::vector<float> to_floats(const mx::array& a) {
  mx::array b = mx::contiguous(mx::astype(a, mx::float32));
  b.eval();
  const float* p = b.data<float>();
  return std::vector<float>(p, p + b.size());
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::abs(want[i]))) << what << " at flat index " << i;
  }
}
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol, const std::string& what) {
  expect_close(got, std::vector<double>(want.begin(), want.end()), tol, what);
}

// ---- references ----

struct Params {
  std::vector<int> stride, lo, hi, kdil, idil;
  int groups = 1;
  bool flip = false;
};

int64_t flat(const mx::Shape& s, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t i = 0; i < s.size(); ++i) f = f * s[i] + idx[i];
  return f;
}

// Visits every multi-index of `s`.
void for_each_index(const mx::Shape& s, const std::function<void(const std::vector<int64_t>&)>& fn) {
  if (mx::shape_size(s) == 0) return;
  std::vector<int64_t> idx(s.size(), 0);
  while (true) {
    fn(idx);
    int d = static_cast<int>(s.size()) - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// The Convolution primitive, by definition: out[n, o, oc] = sum over taps k and group channels c of
// x_dilated_padded[n, o * stride + k * kdil, g * Cg + c] * w[oc, flip ? K - 1 - k : k, c].
std::vector<double> ref_conv(const std::vector<float>& x, const mx::Shape& xs, const std::vector<float>& w,
                             const mx::Shape& ws, const Params& p, mx::Shape& os) {
  const int d = static_cast<int>(xs.size()) - 2;
  const int cin = xs.back(), cout = ws[0], cg = cin / p.groups, og = cout / p.groups;
  os = mx::Shape(xs.size());
  os[0] = xs[0];
  os.back() = cout;
  for (int i = 0; i < d; ++i) {
    int id = 1 + p.idil[i] * (xs[i + 1] - 1), kd = 1 + p.kdil[i] * (ws[i + 1] - 1);
    os[i + 1] = (id + p.lo[i] + p.hi[i] - kd) / p.stride[i] + 1;
  }
  std::vector<double> out(mx::shape_size(os), 0.0);
  mx::Shape ks(ws.begin() + 1, ws.end() - 1);
  for_each_index(os, [&](const std::vector<int64_t>& o) {
    const int oc = static_cast<int>(o.back()), g = oc / og;
    double acc = 0;
    for_each_index(ks, [&](const std::vector<int64_t>& k) {
      std::vector<int64_t> xi(xs.size()), wi(ws.size());
      xi[0] = o[0];
      wi[0] = oc;
      for (int i = 0; i < d; ++i) {
        int64_t pos = o[i + 1] * p.stride[i] + k[i] * p.kdil[i] - p.lo[i];
        int64_t id = 1 + int64_t(p.idil[i]) * (xs[i + 1] - 1);
        if (pos < 0 || pos >= id || pos % p.idil[i] != 0) return;
        xi[i + 1] = pos / p.idil[i];
        wi[i + 1] = p.flip ? ks[i] - 1 - k[i] : k[i];
      }
      for (int c = 0; c < cg; ++c) {
        xi.back() = g * cg + c;
        wi.back() = c;
        acc += double(x[flat(xs, xi)]) * double(w[flat(ws, wi)]);
      }
    });
    out[flat(os, o)] = acc;
  });
  return out;
}

// Transposed convolution, independently: every input entry adds input * weight to the outputs it
// reaches, out position = i * stride + k * dilation - padding.
std::vector<double> ref_conv_transpose(const std::vector<float>& x, const mx::Shape& xs, const std::vector<float>& w,
                                       const mx::Shape& ws, const std::vector<int>& stride,
                                       const std::vector<int>& pad, const std::vector<int>& dil,
                                       const std::vector<int>& out_pad, int groups, mx::Shape& os) {
  const int d = static_cast<int>(xs.size()) - 2;
  const int cin = xs.back(), cout = ws[0], cg = cin / groups, og = cout / groups;
  os = mx::Shape(xs.size());
  os[0] = xs[0];
  os.back() = cout;
  for (int i = 0; i < d; ++i) {
    os[i + 1] = (xs[i + 1] - 1) * stride[i] - 2 * pad[i] + dil[i] * (ws[i + 1] - 1) + 1 + out_pad[i];
  }
  std::vector<double> out(mx::shape_size(os), 0.0);
  mx::Shape ks(ws.begin() + 1, ws.end() - 1);
  for_each_index(xs, [&](const std::vector<int64_t>& xi) {
    const int ci = static_cast<int>(xi.back()), g = ci / cg, c = ci % cg;
    for_each_index(ks, [&](const std::vector<int64_t>& k) {
      std::vector<int64_t> oi(os.size()), wi(ws.size());
      oi[0] = xi[0];
      for (int i = 0; i < d; ++i) {
        int64_t y = xi[i + 1] * stride[i] + k[i] * dil[i] - pad[i];
        if (y < 0 || y >= os[i + 1]) return;
        oi[i + 1] = y;
        wi[i + 1] = k[i];
      }
      wi.back() = c;
      for (int o = 0; o < og; ++o) {
        oi.back() = g * og + o;
        wi[0] = g * og + o;
        out[flat(os, oi)] += double(x[flat(xs, xi)]) * double(w[flat(ws, wi)]);
      }
    });
  });
  return out;
}

mx::array arr(const std::vector<float>& v, const mx::Shape& s, mx::Dtype t = mx::float32) {
  return mx::astype(mx::array(v, s), t);
}

// ---- values computed by MLX 0.30.1 (inputs: mlx_x / mlx_w of the given shapes) ----
const std::vector<float> kMlxA = {0.625f, 1.74999988f, 0.708333373f, -0.1875f, 0.187499955f, -1.06249988f,
    -1.41666675f, -1.49999988f, 0.854166687f, -1.95833349f, 0.75f, 1.83333325f, 0.791666746f, -1.5625f,
    -1.47916663f, -0.187499881f, 0.25000006f, -0.93750006f, 0.875f, 1.91666675f, 0.791666627f, 1.58333325f,
    0.8125f, -1.58333325f, -1.37499988f, 1.0625f, 0.25f, -0.479166657f, 0.770833313f, 0.395833373f, 1.14583325f,
    -0.729166746f, -1.25f, 0.708333313f, -0.333333343f, 1.0625f, -0.583333254f, 1.04166663f, -0.583333433f,
    0.270833373f, -0.0416666158f, -1.16666663f, -1.25f, -0.729166865f, 1.14583337f, -1.22916675f, -0.458333343f,
    0.854166567f, -1.5625f, -1.08333325f, 0.75f, 0.458333552f, -0.166666657f, 1.10416663f, 1.27083325f,
    0.708333254f, 0.145833343f, 0.74999994f, -1.33333325f, -0.166666687f, -1.1875f, -0.729166746f, 1.08333337f,
    -1.35416663f, -0.375f, 0.875000119f, -0.791666746f, -1.43749988f, -0.729166627f, -1.08333337f, 2.04166651f,
    2.18749976f, 0.666666627f, -0.0208334923f, 0.645833254f, 2.02083349f, -0.854166567f, -0.75f, -0.708333492f,
    2.10416651f, 1.66666663f, 0.520833254f, -0.208333343f, -1.20833325f, 0.5625f, -1.02083349f, -0.708333313f,
    -0.291666657f, 1.25f, -0.729166746f, 1.02083325f, 0.958333373f, -1.27083325f, 1.31250012f, 0.770833313f,
    -0.854166746f, -1.25000012f, 1.02083337f, 1.125f, -0.687500119f, -0.24999994f, 0.458333403f, -1.39583325f,
    -1.39583337f, 1.04166663f, -0.5625f, 0.854166627f, -0.708333373f, 0.9375f, 0.791666746f, -1.52083325f,
    1.6875f, -0.520833373f, 0.25f, 0.895833313f, 1.39583325f, 0.270833313f, 0.145833343f, -0.0208333135f,
    -0.458333313f, -1.54166675f, -1.58333325f, 0.8125f, -1.95833325f, 0.791666627f, 1.91666651f, 0.3125f,
    -0.9375f, 0.25000006f, 1.58333325f, -1.47916675f, -1.5625f, 0.75f, 1.83333337f, 0.75f, 1.58333337f,
    0.854166627f, -1.49999988f, 0.125f, -1.0625f, 0.18749994f, -1.95833349f, 0.708333313f, 1.74999988f,
    0.854166627f, -0.979166746f, -0.104166672f, -0.5625f, -1.10416675f, 1.33333337f, -0.645833492f, 2.10416675f,
    1.60416651f, 0.395833224f, -0.125f, -1.18749988f, -1.31249988f, -0.729166627f, 1.20833325f, -0.0416666865f,
    1.58333325f, -0.583333373f, 1.20833325f, -0.729166627f, -1.31249976f, 0.583333373f, -0.25000003f,
    1.08333337f, 1.60416663f, 2.10416651f, -0.645833313f, 0.145833269f, -2.08333349f, -0.791666806f,
    -1.20833325f, -0.5625f, -0.187499985f, -0.416666627f, -0.43750003f, -0.187499955f, -1.5625f, -1.08333325f,
    0.75f, 0.458333552f, -0.166666657f, 1.10416663f, 1.66666675f, 2.10416651f, -0.708333313f, 2.14583325f,
    -0.93749994f, -0.770833373f, 0.645833373f, -0.0208334327f, 0.666666627f, -1.125f, -1.00000012f,
    -0.874999881f, -0.729166687f, -1.43749988f, -0.791666687f, -1.20833349f, 1.06249988f, 0.0833333433f,
    1.27083325f, -0.166666627f, 0.0208333284f, -0.395833284f, 0.729166687f, -0.0416666865f, -1.20833349f,
    1.10416663f, 1.25f, -0.520833433f, -0.31249997f, 0.4375f, 0.770833313f, -1.66666663f, -1.66666687f,
    -0.395833313f, 0.791666627f, -0.729166746f, 0.979166627f, 0.87499994f, -1.39583325f, 1.85416663f,
    -0.583333313f, 0.229166642f, -1.29166663f, 0.9375f, 0.99999994f, -0.854166627f, -0.18749994f, 0.479166687f,
    -1.33333325f, -0.500000119f, 0.0625000298f, -0.854166687f, -0.895833313f, 0.416666687f};
const std::vector<float> kMlxB = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, -1.35416663f, 0.0416666642f, 0.270833373f,
    2.02083325f, 0.104166798f, 2.1875f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 1.1875f, 0.333333343f, 2.33333349f,
    -2.87500024f, 2.16666651f, -2.70833349f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, -1.9375f, 0.270833313f,
    1.20833325f, -1.04166663f, 0.333333224f, -0.875f};
const std::vector<float> kMlxC = {-0.229166672f, 0.3125f, 0.854166627f, 0.291666687f, 0.333333343f,
    -0.166666657f, 0.0208333284f, -0.4375f, -0.895833313f, 0.0833333731f, 0.541666627f, -0.895833313f,
    -0.0416666269f, 0.458333313f, -1.20833337f, 0.458333313f, -0.0416666493f, 0.8125f, 0.354166627f,
    0.270833373f, 1.27083325f, -0.0625f, 0.270833313f, 0.604166687f, -0.166666657f, 0.333333373f, 0.5625f,
    0.3125f, 0.0833333209f, -0.958333373f, 0.375f, 0.291666627f, -1.41666675f, 0.9375f, 0.18749997f, -1.375f,
    -0.0625f, -0.104166672f, -0.145833343f, -1.3125f, 0.3125f, 1.125f, -0.375f, 0.0f, 0.375f, -0.375f, 0.3125f,
    0.1875f, -0.291666746f, 0.604166687f, -0.9375f, -0.166666672f, 0.166666672f, 0.5f, -0.916666627f,
    0.583333313f, 1.0f, -0.229166687f, 0.229166687f, 0.6875f, -0.0833333582f, 0.166666701f, 0.6875f,
    0.708333313f, -0.87499994f, -1.375f, -0.416666538f, 0.5625f, -1.4375f, -0.749999881f, 0.520833373f,
    0.979166627f, -0.68750006f, 0.375f, 1.16666651f, -1.0625f, 1.14583325f, 0.645833313f, -0.729166627f,
    1.0625f, 0.68750006f, -0.458333313f, 0.0f, 0.458333254f, 0.145833328f, -0.229166657f, -0.0625000149f,
    0.833333313f, 0.0f, -0.833333254f, -0.895833254f, 0.75f, 1.04166675f, 0.0f, 0.0f, 0.0f, 0.416666687f, 0.5f,
    0.583333313f, 0.166666687f, 0.458333313f, -0.604166627f, -0.0416666679f, -0.25f, -0.458333313f,
    -1.45833337f, -1.45833337f, 0.43749994f, -1.64583337f, -1.35416675f, 0.5625f, 0.145833313f, 0.145833343f,
    0.68750006f, 0.875f, 0.583333373f, 0.5625f, 0.6875f, 0.81250006f, 0.12500003f, 0.583333373f, 0.875f,
    0.0833333731f, 0.6875f, 0.145833299f, -1.20833337f, -1.35416675f, -1.64583325f, 0.229166657f, 0.25f,
    -1.52083325f, 0.5f, -0.25f, -0.0416666679f, 0.166666672f, -0.75f, 0.3125f, 0.5625f, 0.5f, 0.416666687f,
    0.333333313f, 0.1875f, 0.3125f, -0.375f, 0.75f, -0.895833313f, 0.4375f, -0.416666657f, 0.416666687f, 1.25f,
    -0.229166657f, 0.145833343f, 0.25f, 0.229166687f, -0.229166657f, -0.6875f, 1.0625f, -0.729166567f, -1.4375f,
    0.895833313f, -1.3125f, -0.81250006f, 0.37500006f, -0.68749994f, 0.6875f, 0.499999911f, -0.270833373f,
    -0.229166627f, 0.56249994f, -0.416666508f, -0.0416666865f, -1.125f, 0.458333313f, 0.958333313f,
    0.166666657f, -0.0833333135f, -0.874999881f, 0.895833313f, -0.6875f, -0.645833194f, 0.583333313f,
    -0.916666627f, -0.25000003f, 0.333333343f, 0.0f, -0.333333313f, 0.604166627f, -0.291666687f, -0.916666627f,
    -0.5f, 0.0f, 0.5f, 0.0f, -0.375f, -0.75f, 0.0416666865f, 0.583333313f, -1.04166663f, -0.104166672f,
    -0.0625f, -0.0208333284f, 0.541666627f, 0.0833333731f, 0.708333373f, 0.291666657f, 0.375f, 1.27083337f,
    -0.166666657f, 0.333333373f, 0.5625f, 0.333333343f, -0.166666657f, -1.20833337f, 0.375f, 0.291666627f,
    -1.41666675f, 0.270833373f, 0.354166627f, -1.45833325f, 1.0625f, 0.208333313f, -1.45833337f, 0.458333313f,
    -0.0416666493f, 0.8125f, -1.5f, 0.31249997f, 1.3125f, -0.4375f, 0.0208333284f, 0.479166687f, -0.1875f,
    0.3125f, 0.0f, 0.3125f, -0.229166672f, -0.770833373f, 0.75f, 0.3125f, -0.9375f, -0.9375f, 0.3125f, 0.75f,
    -0.770833373f, -0.229166672f, 0.3125f, 0.0f, 0.3125f, -0.1875f, 0.479166687f, 0.0208333284f, -0.4375f,
    1.3125f, 0.31249997f, -1.5f, 0.8125f, -0.0416666269f, 0.458333313f, -1.45833325f, 0.208333328f, 1.0625f,
    -1.45833325f, 0.354166627f, 0.270833373f, -1.41666675f, 0.291666657f, 0.375f, -1.20833337f, -0.166666657f,
    0.333333373f, 0.5625f, 0.333333343f, -0.166666657f, 1.27083325f, 0.375f, 0.291666627f, 0.708333373f,
    0.0833333731f, 0.541666627f, -0.0208333284f, -0.0625f, -0.104166672f, -1.04166663f, 0.583333313f,
    0.0416666865f, -0.75f, -0.375f, 0.0f};
const std::vector<float> kMlxD = {0.645833313f, 0.25f, -0.0625f, -0.99999994f, -0.958333313f, -0.0624999404f,
    0.270833313f, -0.875f, -0.62500006f, 0.125f, 0.895833313f, 1.70833337f, 0.604166687f, 0.124999993f, -0.125f,
    -0.875f, -0.791666627f, -0.0624999404f, 0.229166687f, -1.0f, -0.6875f, 0.25f, 1.0625f, 1.70833325f, 0.5625f,
    0.0f, -0.1875f, -0.75f, -0.9375f, 0.125f, 0.0f, 0.0f, -1.58333325f, 0.645833313f, 0.666666687f,
    0.729166687f, 1.22916663f, 0.645833254f, 0.520833373f, -0.125f, -0.25f, -0.62499994f, -0.8125f,
    -1.47916675f, -1.625f, 0.520833254f, 0.604166687f, 0.854166746f, 1.39583325f, 0.645833373f, 0.479166687f,
    -0.25f, -0.3125f, -0.49999997f, -0.645833313f, -1.47916663f, -1.66666663f, 0.395833313f, 0.541666687f,
    0.979166627f, 1.125f, 0.208333313f, 0.0f, 0.0f};
const std::vector<float> kMlxE = {0.395833373f, -0.31249994f, -0.4375f, -0.604166627f, 0.854166627f,
    0.666666746f, -0.0833333433f, -1.08333325f, 0.604166627f, -0.833333373f, -0.0833333433f, 0.916666687f,
    0.354166657f, -0.562499881f, -0.43750003f, -0.270833373f, 1.66666663f, -0.395833343f, -0.520833373f,
    0.395833373f, 0.0833333731f, 0.166666657f, -0.583333373f, 0.854166627f, -0.791666627f, -0.333333343f,
    0.416666687f, 0.604166627f, 1.52083325f, -0.479166687f, -0.354166716f, 0.354166657f, -1.10416675f,
    0.958333313f, 0.270833343f, -0.645833373f, 0.770833313f, 0.166666687f, -0.0833333358f, -0.416666627f,
    -1.25f, 0.0833333731f, 0.270833313f, 0.520833373f, -1.14583337f, 0.708333313f, 0.270833343f, -0.31250006f,
    -0.75f, 0.5f, -0.1875f, -1.10416675f, -0.208333313f, 0.0f, -0.25f, 0.770833313f, 1.04166663f, 0.208333343f,
    0.395833313f, -1.25f, -0.895833373f, 0.416666657f, -0.0208333544f, -1.14583337f, 0.0f, 0.0f, 0.0f, 0.0f,
    0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
const std::vector<float> kMlxF = {-2.25f, 2.20833325f, -2.54166675f, 1.1875f, -0.87500006f, 1.66666663f,
    1.29166651f, -2.3125f, -0.229166597f, -0.87500006f, 1.66666663f, -0.125f, -0.770833373f, -0.854166627f,
    0.958333313f, 3.14583325f, -1.45833349f, 3.14583325f, 5.96046448e-08f, -2.06250024f, 0.479166508f,
    -2.16666675f, 3.4375f, -4.50000048f, -2.06250024f, 0.479166508f, -0.5f, 2.29166675f, -2.54166675f,
    1.56249988f, -0.125f, 0.104166657f, 0.333333433f, -0.791666746f, 1.27083349f, -1.27083325f, 2.39583325f,
    -1.04166698f, 3.10416675f, 1.27083349f, -1.27083325f, -0.0208332837f, -1.45833349f, 3.14583325f,
    -3.62499976f, -0.916666627f, 1.3125f, -1.06250012f, 2.66666675f, -2.125f, 2.29166651f, 0.9375f,
    -0.208333284f, -0.270833313f, -2.125f, 2.29166651f, -0.604166687f, 0.104166657f, 0.333333433f, 1.10416663f,
    1.125f, -1.33333349f, 0.81250006f, -1.20833325f, 1.14583325f, -1.10416663f, -1.45833349f, 0.833333492f,
    0.416666657f, 1.14583325f, -1.10416663f, 0.166666627f, 0.0833333731f, 0.166666627f, 0.791666627f};
const std::vector<float> kMlxG = {0.312744141f, -1.10449219f, 0.458251953f, 1.25f, 0.166503906f, 1.25f,
    0.583007812f, -0.541503906f, 0.5f, -1.5f, 0.874511719f, 0.812011719f, -0.395996094f, 0.875f, -0.291503906f,
    -0.354003906f, 0.875f, -0.333496094f, -0.666503906f, 0.520507812f, -0.729003906f, -1.33398438f, 0.625f,
    0.958007812f};
const std::vector<float> kMlxH = {0.354166687f, -0.62500006f, 0.604166687f, -1.125f, 0.520833313f, -0.125f,
    0.229166687f, 0.5625f, 0.333333373f, -0.6875f, 0.5625f, -0.9375f, 0.5f, -0.1875f, -1.58333325f, 0.75f,
    -0.0416666716f, 0.666666687f, 0.0f, 0.0f};

}  // namespace

TEST(Conv, GeneralMatchesDirectLoopReference) {
  struct Case {
    mx::Shape xs, ws;
    Params p;
  };
  const std::vector<Case> cases = {
      // 1-D: plain, strided, asymmetric padding, kernel and input dilation, groups, flip.
      {{2, 9, 3}, {4, 3, 3}, {{1}, {0}, {0}, {1}, {1}, 1, false}},
      {{2, 11, 4}, {6, 3, 2}, {{2}, {1}, {3}, {2}, {1}, 2, false}},
      {{1, 7, 2}, {3, 4, 2}, {{3}, {2}, {0}, {1}, {2}, 1, true}},
      {{3, 6, 6}, {6, 2, 2}, {{1}, {0}, {1}, {3}, {3}, 3, true}},
      // 2-D.
      {{1, 6, 6, 2}, {3, 3, 3, 2}, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, false}},
      {{2, 7, 8, 4}, {6, 3, 2, 2}, {{2, 3}, {0, 2}, {1, 0}, {2, 1}, {1, 1}, 2, false}},
      {{1, 5, 4, 3}, {2, 2, 3, 3}, {{1, 2}, {1, 2}, {0, 1}, {2, 1}, {2, 1}, 1, true}},
      {{2, 4, 5, 6}, {4, 3, 3, 3}, {{2, 1}, {2, 2}, {3, 1}, {1, 2}, {3, 2}, 2, true}},
      {{1, 5, 5, 8}, {8, 1, 1, 1}, {{1, 1}, {0, 0}, {0, 0}, {1, 1}, {1, 1}, 8, false}},  // depthwise
      {{2, 6, 5, 4}, {8, 3, 3, 1}, {{2, 1}, {1, 2}, {0, 1}, {1, 2}, {1, 1}, 4, true}},   // depthwise, multiplier 2
      {{1, 7, 3}, {3, 3, 1}, {{1}, {2}, {2}, {1}, {2}, 3, false}},                       // depthwise 1-D
      // 3-D (groups too: the primitive supports them even though MLX's op refuses).
      {{1, 4, 4, 4, 2}, {2, 2, 2, 2, 2}, {{1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, {1, 1, 1}, 1, false}},
      {{2, 5, 3, 4, 3}, {4, 2, 3, 2, 3}, {{2, 1, 3}, {1, 0, 2}, {0, 2, 1}, {1, 2, 1}, {1, 1, 2}, 1, true}},
      {{1, 3, 4, 3, 4}, {4, 2, 2, 2, 2}, {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 2, false}},
  };
  int k = 0;
  for (const auto& c : cases) {
    auto xv = rnd(mx::shape_size(c.xs), 11 + k);
    auto wv = rnd(mx::shape_size(c.ws), 97 + k);
    mx::Shape os;
    auto want = ref_conv(xv, c.xs, wv, c.ws, c.p, os);
    mx::array y;
    if (c.xs.size() == 5 && c.p.groups != 1) {
      // conv_general refuses 3-D groups (as MLX does): build the node directly.
      y = mx::make_array(mx::registry::get("Convolution"),
                         mx::State{c.p.stride, c.p.lo, c.p.hi, c.p.kdil, c.p.idil, c.p.groups, c.p.flip},
                         {arr(xv, c.xs), arr(wv, c.ws)});
    } else {
      y = mx::conv_general(arr(xv, c.xs), arr(wv, c.ws), c.p.stride, c.p.lo, c.p.hi, c.p.kdil, c.p.idil, c.p.groups,
                           c.p.flip);
    }
    EXPECT_EQ(y.shape(), os) << "case " << k;
    EXPECT_EQ(y.dtype(), mx::float32);
    expect_close(to_floats(y), want, 1e-5, "case " + std::to_string(k));
    ++k;
  }
}

TEST(Conv, ValuesFromMlx) {
  auto x = [](mx::Shape s) { return arr(mlx_x(s), s); };
  auto w = [](mx::Shape s) { return arr(mlx_w(s), s); };
  auto check = [](const mx::array& y, mx::Shape shape, const std::vector<float>& want, double tol, const char* what) {
    EXPECT_EQ(y.shape(), shape) << what;
    expect_close(to_floats(y), want, tol, what);
  };
  check(mx::conv_general(x({2, 7, 6, 4}), w({6, 3, 2, 2}), {2, 1}, {1, 0}, {2, 1}, {1, 2}, {1, 1}, 2, false),
        {2, 4, 5, 6}, kMlxA, 1e-5, "conv_general groups/strides/asymmetric padding");
  check(mx::conv_general(x({1, 4, 5, 3}), w({2, 2, 3, 3}), {1, 2}, {1, 2}, {0, 1}, {2, 1}, {2, 1}, 1, true),
        {1, 6, 3, 2}, kMlxB, 1e-5, "conv_general input dilation + flip");
  check(mx::conv_transpose2d(x({1, 3, 4, 4}), w({6, 3, 3, 2}), {2, 1}, {1, 0}, {1, 2}, {1, 0}, 2), {1, 6, 8, 6},
        kMlxC, 1e-5, "conv_transpose2d");
  check(mx::conv_transpose1d(x({2, 5, 3}), w({2, 4, 3}), 3, 1, 1, 2), {2, 16, 2}, kMlxD, 1e-5, "conv_transpose1d");
  check(mx::conv_transpose3d(x({1, 2, 3, 2, 2}), w({2, 2, 2, 2, 2}), {2, 1, 2}, {0, 1, 0}, {1, 1, 1}, {1, 0, 0}),
        {1, 5, 2, 4, 2}, kMlxE, 1e-5, "conv_transpose3d");
  check(mx::conv3d(x({1, 4, 3, 5, 2}), w({3, 2, 2, 3, 2}), {1, 2, 1}, {1, 0, 2}, {1, 1, 2}), {1, 5, 1, 5, 3}, kMlxF,
        1e-5, "conv3d");
  auto g = mx::conv1d(mx::astype(x({1, 8, 4}), mx::float16), mx::astype(w({3, 3, 4}), mx::float16), 1, 1);
  EXPECT_EQ(g.dtype(), mx::float16);
  check(g, {1, 8, 3}, kMlxG, 2e-3, "conv1d float16");
  // Negative padding crops the input (low side) before the input dilation.
  check(mx::conv_general(x({1, 6, 3}), w({2, 2, 3}), V{1}, V{-1}, V{2}, V{1}, V{2}, 1, false), {1, 10, 2}, kMlxH, 1e-5,
        "conv_general negative padding");
}

TEST(Conv, Conv123dDefaultsAndMatchReference) {
  auto xv = rnd(2 * 10 * 4, 1), wv = rnd(6 * 3 * 2, 2);
  mx::Shape os;
  auto want = ref_conv(xv, {2, 10, 4}, wv, {6, 3, 2}, {{2}, {1}, {1}, {2}, {1}, 2, false}, os);
  auto y = mx::conv1d(arr(xv, {2, 10, 4}), arr(wv, {6, 3, 2}), 2, 1, 2, 2);
  EXPECT_EQ(y.shape(), os);
  expect_close(to_floats(y), want, 1e-5, "conv1d");

  auto xv2 = rnd(1 * 6 * 7 * 3, 3), wv2 = rnd(4 * 3 * 2 * 3, 4);
  want = ref_conv(xv2, {1, 6, 7, 3}, wv2, {4, 3, 2, 3}, {{1, 2}, {2, 0}, {2, 0}, {1, 3}, {1, 1}, 1, false}, os);
  y = mx::conv2d(arr(xv2, {1, 6, 7, 3}), arr(wv2, {4, 3, 2, 3}), {1, 2}, {2, 0}, {1, 3});
  EXPECT_EQ(y.shape(), os);
  expect_close(to_floats(y), want, 1e-5, "conv2d");

  auto xv3 = rnd(2 * 3 * 4 * 5 * 2, 5), wv3 = rnd(3 * 2 * 2 * 2 * 2, 6);
  want = ref_conv(xv3, {2, 3, 4, 5, 2}, wv3, {3, 2, 2, 2, 2},
                  {{1, 1, 2}, {0, 1, 0}, {0, 1, 0}, {1, 2, 1}, {1, 1, 1}, 1, false}, os);
  y = mx::conv3d(arr(xv3, {2, 3, 4, 5, 2}), arr(wv3, {3, 2, 2, 2, 2}), {1, 1, 2}, {0, 1, 0}, {1, 2, 1});
  EXPECT_EQ(y.shape(), os);
  expect_close(to_floats(y), want, 1e-5, "conv3d");

  // Defaults: stride 1, no padding, no dilation.
  y = mx::conv2d(arr(xv2, {1, 6, 7, 3}), arr(wv2, {4, 3, 2, 3}));
  want = ref_conv(xv2, {1, 6, 7, 3}, wv2, {4, 3, 2, 3}, {{1, 1}, {0, 0}, {0, 0}, {1, 1}, {1, 1}, 1, false}, os);
  EXPECT_EQ(y.shape(), mx::Shape({1, 4, 6, 4}));
  expect_close(to_floats(y), want, 1e-5, "conv2d defaults");
}

TEST(Conv, TransposedMatchesScatterReference) {
  struct Case {
    mx::Shape xs, ws;
    std::vector<int> stride, pad, dil, out_pad;
    int groups;
  };
  const std::vector<Case> cases = {
      {{2, 5, 3}, {2, 4, 3}, {3}, {1}, {1}, {2}, 1},
      {{1, 6, 4}, {6, 3, 2}, {2}, {0}, {2}, {1}, 2},
      {{1, 4, 4, 3}, {2, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1},
      {{2, 3, 5, 4}, {4, 2, 3, 2}, {1, 3}, {0, 2}, {2, 1}, {0, 2}, 2},
      {{1, 3, 4, 2, 2}, {3, 2, 3, 2, 2}, {2, 1, 3}, {1, 1, 0}, {1, 2, 1}, {1, 0, 2}, 1},
      {{1, 4, 3}, {2, 5, 3}, {1}, {3}, {1}, {0}, 1},  // padding larger than the kernel overlap: a crop
  };
  int k = 0;
  for (const auto& c : cases) {
    auto xv = rnd(mx::shape_size(c.xs), 300 + k), wv = rnd(mx::shape_size(c.ws), 400 + k);
    mx::Shape os;
    auto want = ref_conv_transpose(xv, c.xs, wv, c.ws, c.stride, c.pad, c.dil, c.out_pad, c.groups, os);
    mx::array x = arr(xv, c.xs), w = arr(wv, c.ws), y;
    const auto& s = c.stride;
    const auto& p = c.pad;
    const auto& d = c.dil;
    const auto& o = c.out_pad;
    if (c.xs.size() == 3) {
      y = mx::conv_transpose1d(x, w, s[0], p[0], d[0], o[0], c.groups);
    } else if (c.xs.size() == 4) {
      y = mx::conv_transpose2d(x, w, {s[0], s[1]}, {p[0], p[1]}, {d[0], d[1]}, {o[0], o[1]}, c.groups);
    } else {
      y = mx::conv_transpose3d(x, w, {s[0], s[1], s[2]}, {p[0], p[1], p[2]}, {d[0], d[1], d[2]},
                               {o[0], o[1], o[2]}, c.groups);
    }
    EXPECT_EQ(y.shape(), os) << "case " << k;
    expect_close(to_floats(y), want, 1e-5, "transposed case " + std::to_string(k));
    ++k;
  }
}

TEST(Conv, TransposedBuildsMlxNode) {
  // As MLX: stride 1, input dilation = stride, flip, low padding dil*(k-1)-p, high = low + output_padding.
  auto y = mx::conv_transpose2d(mx::zeros({1, 4, 4, 3}), mx::zeros({2, 3, 3, 3}), {2, 2}, {1, 1}, {1, 1}, {1, 0});
  ASSERT_TRUE(y.has_primitive());
  const auto& node = *y.node();
  EXPECT_EQ(node.def->name, "Convolution");
  EXPECT_EQ(node.state.ints(0), std::vector<int>({1, 1}));
  EXPECT_EQ(node.state.ints(1), std::vector<int>({1, 1}));
  EXPECT_EQ(node.state.ints(2), std::vector<int>({2, 1}));
  EXPECT_EQ(node.state.ints(3), std::vector<int>({1, 1}));
  EXPECT_EQ(node.state.ints(4), std::vector<int>({2, 2}));
  EXPECT_EQ(node.state.i(5), 1);
  EXPECT_TRUE(node.state.b(6));
  EXPECT_EQ(y.shape(), mx::Shape({1, 8, 7, 2}));
  // Single-entry vectors apply to every spatial axis; dtypes are promoted first.
  auto z = mx::conv_general(mx::zeros({1, 5, 5, 2}, mx::float16), mx::zeros({3, 2, 2, 2}), V{2}, V{1}, V{0}, V{}, V{}, 1,
                            false);
  EXPECT_EQ(z.dtype(), mx::float32);
  EXPECT_EQ(z.node()->state.ints(0), std::vector<int>({2, 2}));
  EXPECT_EQ(z.node()->state.ints(1), std::vector<int>({1, 1}));
  EXPECT_EQ(z.node()->state.ints(2), std::vector<int>({0, 0}));
  EXPECT_EQ(z.shape(), mx::Shape({1, 3, 3, 3}));
}

TEST(Conv, AllFloatDtypes) {
  const mx::Shape xs{2, 6, 5, 4}, ws{4, 3, 2, 2};
  const Params p{{2, 1}, {1, 0}, {1, 1}, {1, 2}, {1, 1}, 2, false};
  auto xv = rnd(mx::shape_size(xs), 7), wv = rnd(mx::shape_size(ws), 8);
  mx::Shape os;
  const auto want = ref_conv(xv, xs, wv, ws, p, os);
  const std::vector<std::pair<mx::Dtype, double>> types = {
      {mx::float32, 1e-5}, {mx::float64, 1e-6}, {mx::float16, 4e-3}, {mx::bfloat16, 3e-2}};
  for (auto [t, tol] : types) {
    // Round the inputs to the dtype first, so the reference sees the same operands.
    auto x = arr(xv, xs, t), w = arr(wv, ws, t);
    auto ref = ref_conv(to_floats(x), xs, to_floats(w), ws, p, os);
    auto y = mx::conv_general(x, w, p.stride, p.lo, p.hi, p.kdil, p.idil, p.groups, p.flip);
    EXPECT_EQ(y.dtype(), t);
    expect_close(to_floats(y), ref, tol, "dtype " + mx::dtype_name(t));
    // Depthwise (its own kernel path).
    auto wd = arr(rnd(8 * 3 * 3, 9), {8, 3, 3, 1}, t);
    auto refd = ref_conv(to_floats(x), xs, to_floats(wd), {8, 3, 3, 1},
                         {{1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 4, false}, os);
    auto yd = mx::conv2d(x, wd, {1, 1}, {1, 1}, {1, 1}, 4);
    EXPECT_EQ(yd.dtype(), t);
    expect_close(to_floats(yd), refd, tol, "depthwise dtype " + mx::dtype_name(t));
    // Transposed (the gather path).
    auto wtr = arr(rnd(3 * 3 * 2 * 4, 10), {3, 3, 2, 4}, t);
    mx::Shape ost;
    auto reft = ref_conv_transpose(to_floats(x), xs, to_floats(wtr), {3, 3, 2, 4}, {2, 2}, {1, 0}, {1, 1}, {1, 0}, 1,
                                   ost);
    auto yt = mx::conv_transpose2d(x, wtr, {2, 2}, {1, 0}, {1, 1}, {1, 0});
    EXPECT_EQ(yt.dtype(), t);
    EXPECT_EQ(yt.shape(), ost);
    expect_close(to_floats(yt), reft, tol, "transposed dtype " + mx::dtype_name(t));
  }
  // float64 keeps double precision (values that float32 would round).
  auto x = mx::array({1.0 + 1e-12, 1.0}, {1, 2, 1}, mx::float64);
  auto w = mx::array({1.0, -1.0}, {1, 2, 1}, mx::float64);
  auto y = mx::conv1d(x, w);
  y.eval();
  EXPECT_NEAR(y.data<double>()[0], 1e-12, 1e-15);
  // Mixed dtypes promote: float16 x bfloat16 -> float32.
  auto m = mx::conv1d(mx::ones({1, 3, 2}, mx::float16), mx::ones({1, 2, 2}, mx::bfloat16));
  EXPECT_EQ(m.dtype(), mx::float32);
  EXPECT_EQ(to_floats(m), std::vector<float>({4.0f, 4.0f}));
}

TEST(Conv, EmptyBatchAndEmptyChannels) {
  auto y = mx::conv2d(mx::zeros({0, 5, 5, 3}), mx::ones({4, 3, 3, 3}), {1, 1}, {1, 1});
  EXPECT_EQ(y.shape(), mx::Shape({0, 5, 5, 4}));
  y.eval();
  EXPECT_EQ(y.size(), 0u);
  auto z = mx::conv1d(mx::ones({2, 5, 3}), mx::ones({0, 2, 3}));
  EXPECT_EQ(z.shape(), mx::Shape({2, 4, 0}));
  z.eval();
  // No input channels: every output is an empty sum.
  auto e = mx::conv1d(mx::ones({1, 4, 0}), mx::ones({2, 2, 0}));
  EXPECT_EQ(e.shape(), mx::Shape({1, 3, 2}));
  EXPECT_EQ(to_floats(e), std::vector<float>(6, 0.0f));
}

TEST(Conv, NonContiguousInputs) {
  // Input stored (N, C, H, W) and viewed channels-last; weight sliced with a step; input sliced.
  const mx::Shape nchw{2, 4, 6, 5};
  auto xv = rnd(mx::shape_size(nchw), 21);
  auto base = mx::array(xv, nchw);
  auto x = mx::transpose(base, {0, 2, 3, 1});  // (2, 6, 5, 4), not row-contiguous
  auto wbig = mx::array(rnd(6 * 3 * 3 * 4, 22), {6, 3, 3, 4});
  auto w = mx::slice(wbig, {0, 0, 0, 0}, {6, 3, 3, 4}, {2, 1, 1, 1});  // (3, 3, 3, 4)
  const Params p{{1, 2}, {1, 1}, {0, 1}, {1, 1}, {1, 1}, 1, false};
  mx::Shape os;
  auto want = ref_conv(to_floats(x), {2, 6, 5, 4}, to_floats(w), {3, 3, 3, 4}, p, os);
  auto y = mx::conv_general(x, w, p.stride, p.lo, p.hi, p.kdil, p.idil);
  EXPECT_EQ(y.shape(), os);
  expect_close(to_floats(y), want, 1e-5, "transposed view");

  // Strided channel axis with groups, and a 1x1 kernel over a view (no direct fast path).
  auto xc = mx::slice(mx::array(rnd(1 * 4 * 4 * 8, 23), {1, 4, 4, 8}), {0, 0, 0, 0}, {1, 4, 4, 8}, {1, 1, 1, 2});
  auto w1 = mx::array(rnd(4 * 1 * 1 * 2, 24), {4, 1, 1, 2});
  want = ref_conv(to_floats(xc), {1, 4, 4, 4}, to_floats(w1), {4, 1, 1, 2},
                  {{1, 1}, {0, 0}, {0, 0}, {1, 1}, {1, 1}, 2, false}, os);
  y = mx::conv2d(xc, w1, {1, 1}, {0, 0}, {1, 1}, 2);
  expect_close(to_floats(y), want, 1e-5, "strided channels");
  // The same strided channels through the depthwise path (one input channel per group, multiplier 2).
  auto wd = mx::array(rnd(8 * 3 * 3 * 1, 25), {8, 3, 3, 1});
  want = ref_conv(to_floats(xc), {1, 4, 4, 4}, to_floats(wd), {8, 3, 3, 1},
                  {{1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 4, false}, os);
  y = mx::conv2d(xc, wd, {1, 1}, {1, 1}, {1, 1}, 4);
  expect_close(to_floats(y), want, 1e-5, "strided channels, depthwise");
}

TEST(Conv, LargeSizesUseTiledGemm) {
  // A patch matrix larger than one tile (4096 rows x 1152 columns), and a 1x1 convolution that skips
  // the patch matrix.
  const mx::Shape xs{1, 64, 64, 128}, ws{8, 3, 3, 128};
  auto xv = rnd(mx::shape_size(xs), 31), wv = rnd(mx::shape_size(ws), 32);
  const Params p{{1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, false};
  mx::Shape os;
  auto want = ref_conv(xv, xs, wv, ws, p, os);
  auto y = mx::conv2d(arr(xv, xs), arr(wv, ws), {1, 1}, {1, 1});
  expect_close(to_floats(y), want, 1e-4, "tiled 3x3");

  const mx::Shape ws1{16, 1, 1, 128};
  auto wv1 = rnd(mx::shape_size(ws1), 33);
  want = ref_conv(xv, xs, wv1, ws1, {{1, 1}, {0, 0}, {0, 0}, {1, 1}, {1, 1}, 1, false}, os);
  y = mx::conv2d(arr(xv, xs), arr(wv1, ws1));
  EXPECT_EQ(y.shape(), mx::Shape({1, 64, 64, 16}));
  expect_close(to_floats(y), want, 1e-4, "1x1");

  // A transposed convolution whose products span several batch tiles (5 entries of 1M products each).
  const mx::Shape xt{5, 32, 32, 4}, wts{64, 4, 4, 4};
  auto xtv = rnd(mx::shape_size(xt), 34), wtv = rnd(mx::shape_size(wts), 35);
  auto wantt = ref_conv_transpose(xtv, xt, wtv, wts, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 1, os);
  y = mx::conv_transpose2d(arr(xtv, xt), arr(wtv, wts), {2, 2}, {1, 1});
  EXPECT_EQ(y.shape(), os);
  expect_close(to_floats(y), wantt, 1e-4, "transposed, batch tiles");
}

namespace {
void expect_error(const std::function<void()>& fn, const std::string& msg) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing: " << msg;
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr(msg));
  }
}
}  // namespace

TEST(Conv, ErrorsMatchMlx) {
  auto x = mx::zeros({1, 5, 5, 4});
  auto w = mx::zeros({6, 3, 3, 2});
  auto w4 = mx::zeros({6, 3, 3, 4});
  expect_error([&] { mx::conv2d(mx::astype(x, mx::int32), mx::astype(w, mx::int32)); },
               "[conv] Invalid input array with type int32. Convolution currently only supports floating point types");
  expect_error([&] { mx::conv2d(mx::zeros({1, 5, 4}), w); },
               "[conv] Invalid weight array with 4 dimensions for 1D convolution. Expected an array with 3 "
               "dimensions following the format [C_out, ..., C_in].");
  expect_error([&] { mx::conv2d(x, mx::zeros({6, 3, 4})); },
               "[conv] Invalid weight array with 3 dimensions for 2D convolution.");
  expect_error([&] { mx::conv_general(mx::zeros({1, 2, 2, 2, 2, 2, 1}), mx::zeros({1, 1, 1, 1, 1, 1, 1}), V{}, V{}, V{}, V{},
                                        V{}, 1, false); },
               "[conv] Only works for inputs with 1-3 spatial dimensions. The inputs must be in the format [N, ..., "
               "C_in]");
  expect_error([&] { mx::conv3d(mx::zeros({1, 3, 3, 3, 4}), mx::zeros({2, 1, 1, 1, 2}), {1, 1, 1}, {0, 0, 0},
                                {1, 1, 1}, 2); },
               "[conv] Can only handle groups != 1 in 1D or 2D convolutions.");
  expect_error([&] { mx::conv2d(x, w, {1, 1}, {0, 0}, {1, 1}, 3); },
               "[conv] The input channels must be divisible by the number of groups. Got input with shape (1,5,5,4) "
               "and 3 groups.");
  expect_error([&] { mx::conv2d(x, mx::zeros({5, 3, 3, 2}), {1, 1}, {0, 0}, {1, 1}, 2); },
               "[conv] If groups > 1, the output channels must be divisible by the number of groups. Got 5 output "
               "channels and 2 groups.");
  expect_error([&] { mx::conv2d(x, mx::zeros({6, 3, 3, 1}), {1, 1}, {0, 0}, {1, 1}, 2); },
               "Given groups=2 and weights of shape (6,3,3,1), expected to have 2 input channels but got 4 input "
               "channels instead.");
  expect_error([&] { mx::conv2d(x, mx::zeros({6, 3, 3, 3})); },
               "[conv] Expect the input channels in the input and weight array to match but got shapes - input: "
               "(1,5,5,4) and weight: (6,3,3,3)");
  expect_error([&] { mx::conv2d(x, mx::zeros({6, 7, 3, 4})); },
               "[conv] Spatial dimensions of input after padding cannot be smaller than weight spatial dimensions. "
               "Got error at axis 1 for input with shape (1,5,5,4), padding low (0,0), padding high (0,0), and "
               "weight of shape (6,7,3,4).");
  expect_error([&] { mx::conv2d(x, w4, {1, 0}); }, "[conv] Stride sizes must be positive. Got strides (1,0).");
  expect_error([&] { mx::conv2d(x, w4, {1, 1}, {0, 0}, {0, 1}); },
               "[conv] Kernel dilation sizes must be positive. Got kernel dilation (0,1).");
  expect_error([&] { mx::conv_general(x, w4, V{}, V{}, V{}, V{}, V{1, 0}, 1, false); },
               "[conv] Input dilation sizes must be positive. Got input dilation (1,0).");
  expect_error([&] { mx::conv_general(x, w4, V{1, 1, 1}, V{}, V{}, V{}, V{}, 1, false); },
               "[conv] Invalid strides (1,1,1) for 2D convolution.");
  expect_error([&] { mx::conv_general(x, w4, V{}, V{1, 1, 1}, V{}, V{}, 1, false); },
               "[conv] Invalid padding (1,1,1) | (1,1,1) for 2D convolution.");
  expect_error([&] { mx::conv_general(x, w4, V{}, V{}, V{}, V{1, 1, 1}, V{}, 1, false); },
               "[conv] Invalid kernel dilation (1,1,1) for 2D convolution.");
  expect_error([&] { mx::conv_general(x, w4, V{}, V{}, V{}, V{}, V{1, 1, 1}, 1, false); },
               "[conv] Invalid input dilation (1,1,1) for 2D convolution.");
  expect_error([&] { mx::conv2d(x, w4, {1, 1}, {0, 0}, {1, 1}, 0); }, "[conv] The number of groups must be positive.");
}

TEST(Conv, ShapeRuleValidatesNodesFromFiles) {
  // The primitive's shape rule is what validates a Convolution read from a file.
  const auto& def = mx::registry::get("Convolution");
  ASSERT_NE(def.infer, nullptr);
  std::vector<mx::ArraySpec> in = {{{1, 5, 5, 4}, mx::float32}, {{6, 3, 3, 2}, mx::float32}};
  mx::State ok{std::vector<int>{1, 1}, std::vector<int>{1, 1}, std::vector<int>{1, 1}, std::vector<int>{1, 1},
               std::vector<int>{1, 1}, 2, false};
  auto out = def.infer(ok, in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, mx::Shape({1, 5, 5, 6}));
  mx::State neg = ok;
  neg.values[1] = std::vector<int>{-1, 0};
  expect_error([&] { def.infer(neg, in); }, "[conv] Padding sizes must be non-negative. Got padding (-1,0) | (1,1).");
  mx::State huge = ok;
  huge.values[4] = std::vector<int>{2000000000, 1};
  expect_error([&] { def.infer(huge, in); }, "is too large");
  std::vector<mx::ArraySpec> mixed = {{{1, 5, 5, 4}, mx::float32}, {{6, 3, 3, 2}, mx::float16}};
  expect_error([&] { def.infer(ok, mixed); }, "[conv] Expected the input and weight to have the same dtype");
  // Truncating division, as MLX: a kernel overhanging by less than a stride still gives an output,
  // and the overhang reads zeros.
  auto y = mx::conv1d(mx::ones({1, 5, 3}), mx::ones({2, 6, 3}), 2);
  EXPECT_EQ(y.shape(), mx::Shape({1, 1, 2}));
  EXPECT_EQ(to_floats(y), std::vector<float>({15.0f, 15.0f}));
}

#if __has_include(<kiln/io.h>)
#include <kiln/io.h>

// The golden corpus (inputs and outputs written by MLX 0.30.1), run through the matching kiln ops.
// The parameters are the Convolution states stored in the corpus files.
TEST(Conv, GoldenCorpusValues) {
  const std::string dir = std::string(KILN_TEST_DATA) + "/golden/mlx-0.30.1/";
  auto run = [&](const std::string& name, const std::function<mx::array(const mx::array&, const mx::array&)>& fn) {
    auto x = mx::load(dir + name + "/call0_arg0.npy");
    auto w = mx::load(dir + name + "/call0_arg1.npy");
    auto want = mx::load(dir + name + "/call0_out0.npy");
    auto y = fn(x, w);
    EXPECT_EQ(y.shape(), want.shape()) << name;
    expect_close(to_floats(y), to_floats(want), 1e-4, name);
  };
  run("conv1d", [](auto& x, auto& w) { return mx::conv1d(x, w, 2, 1); });
  run("conv2d", [](auto& x, auto& w) { return mx::conv2d(x, w, {1, 1}, {1, 1}); });
  run("conv2d_groups", [](auto& x, auto& w) { return mx::conv2d(x, w, {1, 1}, {0, 0}, {1, 1}, 2); });
  run("conv2d_strided_dilated", [](auto& x, auto& w) { return mx::conv2d(x, w, {2, 1}, {0, 1}, {1, 2}); });
  run("conv3d", [](auto& x, auto& w) { return mx::conv3d(x, w); });
  run("conv_transpose2d", [](auto& x, auto& w) { return mx::conv_transpose2d(x, w, {2, 2}, {1, 1}); });
}
#endif
