// Derivative rules of the convolution row (autodiff_rules.h). Convolution(input, weight) is bilinear,
// so its jvp is two convolutions with the node's parameters. Its vjp (input N, spatial..., C_in; weight
// C_out, spatial..., C_in): the input's cotangent is the transposed convolution of the output's (dilated
// by the stride, padded to the input's size, with the weight's channels swapped and the flip inverted);
// the weight's is the convolution of the padded input with the cotangent as kernel (batch and channels
// exchanged, the stride as the kernel dilation). Written for one group without input dilation;
// other cases raise naming the row.
#include <numeric>

#include "kiln/ops.h"
#include "primitives/autodiff_rules.h"

namespace kiln {

namespace {

using detail::autodiff::Application;
using detail::autodiff::RuleTable;
using detail::autodiff::tangent_of;
using Arrays = std::vector<array>;
using Ints = std::vector<int>;

struct ConvParams {
  std::vector<int> stride, lo, hi, kdil, idil;
  int groups;
  bool flip;
};

ConvParams params(const Application& app) {
  const auto& st = app.state();
  auto v = [&](size_t i) { return std::vector<int>(st.ints(i).begin(), st.ints(i).end()); };
  return {v(0), v(1), v(2), v(3), v(4), st.i(5), st.b(6)};
}

array conv_with(const array& x, const array& w, const ConvParams& p, StreamOrDevice s) {
  return conv_general(x, w, p.stride, p.lo, p.hi, p.kdil, p.idil, p.groups, p.flip, s);
}

Arrays conv_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  const ConvParams p = params(app);
  array tx = tangent_of(tan, argnums, 0), tw = tangent_of(tan, argnums, 1);
  array acc;
  if (tx.valid()) acc = conv_with(tx, app.inputs[1], p, app.s());
  if (tw.valid()) {
    array t = conv_with(app.inputs[0], tw, p, app.s());
    acc = acc.valid() ? add(acc, t, app.s()) : t;
  }
  return {acc};
}

// Moves the last axis to the front (and back): (N, S..., C) <-> (C, S..., N) exchange of axes 0 and -1.
array swap_ends(const array& a, StreamOrDevice s) { return swapaxes(a, 0, static_cast<int>(a.ndim()) - 1, s); }

Arrays conv_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  const ConvParams p = params(app);
  const bool simple = p.groups == 1 && std::all_of(p.idil.begin(), p.idil.end(), [](int v) { return v == 1; });
  if (!simple) {
    throw std::invalid_argument("[vjp] Not implemented for Convolution with groups or input dilation in kiln yet.");
  }
  auto s = app.s();
  const array &x = app.inputs[0], &w = app.inputs[1];
  const array& g = cot[0];
  const int d = static_cast<int>(x.ndim()) - 2;
  Arrays out;
  for (int k : argnums) {
    if (k == 0) {
      std::vector<int> lo(d), hi(d), ones(d, 1);
      for (int i = 0; i < d; ++i) {
        const int in = x.shape(i + 1), o = g.shape(i + 1), kk = w.shape(i + 1);
        lo[i] = p.kdil[i] * (kk - 1) - p.lo[i];
        hi[i] = in - 1 + p.lo[i] - (o - 1) * p.stride[i];
      }
      array wt = swap_ends(w, s);  // (C_in, spatial..., C_out)
      out.push_back(conv_general(g, wt, ones, lo, hi, p.kdil, p.stride, 1, !p.flip, s));
    } else {
      // dw[co, k, ci] = sum over n, o of g[n, o, co] * x_pad[n, o * stride + k * dilation, ci]
      array xs = swap_ends(x, s), gs = swap_ends(g, s);  // (C_in, S..., N), (C_out, O..., N)
      array r = conv_general(xs, gs, p.kdil, p.lo, p.hi, p.stride, std::vector<int>(d, 1), 1, false, s);
      // r: (C_in, K'..., C_out) with K' >= K; keep the kernel's extent.
      Shape start(r.ndim(), 0), stop = r.shape();
      for (int i = 0; i < d; ++i) stop[i + 1] = w.shape(i + 1);
      array dw = swap_ends(slice(r, start, stop, s), s);
      if (p.flip) {  // a flipped kernel: reverse its spatial axes
        for (int i = 0; i < d; ++i) {
          Shape st0(dw.ndim(), 0), sp = dw.shape(), str(dw.ndim(), 1);
          st0[i + 1] = dw.shape(i + 1) - 1;
          sp[i + 1] = -dw.shape(i + 1) - 1;
          str[i + 1] = -1;
          dw = slice(dw, st0, sp, str, s);
        }
      }
      out.push_back(dw);
    }
  }
  return out;
}

}  // namespace

namespace primitives {
void register_conv_grad(RuleTable& t) { t.add("Convolution", conv_vjp, conv_jvp); }
}  // namespace primitives

}  // namespace kiln
