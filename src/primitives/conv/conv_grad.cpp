// Derivative rules of the convolution row (autodiff_rules.h). Convolution(input, weight) is bilinear,
// so its jvp is two convolutions with the node's parameters. Its vjp (input N, spatial..., C_in; weight
// C_out, spatial..., C_in): the input's cotangent is the transposed convolution of the output's (dilated
// by the stride, padded to the input's size, with the weight's channels swapped and the flip inverted);
// the weight's is the convolution of the padded input with the cotangent as kernel (batch and channels
// exchanged, the stride as the kernel dilation). Input dilation: the same over the input with its zeros
// made explicit (the input's cotangent is every idil-th place of that one's). Groups: one such vjp per
// group on its slice of the channels.
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

// The input with its input dilation made explicit: idil - 1 zeros between neighbours on each spatial
// axis (a convolution with input dilation is the plain one over this array).
array dilate_input(const array& x, const std::vector<int>& idil, StreamOrDevice s) {
  array r = x;
  for (size_t i = 0; i < idil.size(); ++i) {
    if (idil[i] == 1) continue;
    const int a = static_cast<int>(i) + 1, n = r.shape(a);
    array e = pad(expand_dims(r, a + 1, s), {a + 1}, {0}, {idil[i] - 1}, array(0, r.dtype()), "constant", s);
    Shape merged = r.shape();
    merged[a] = n * idil[i];
    Shape start(r.ndim(), 0), stop = merged;
    stop[a] = (n - 1) * idil[i] + 1;
    r = slice(reshape(e, merged, s), start, stop, s);
  }
  return r;
}

// The vjp of one group (groups == 1 in p; input dilation allowed), for the argnums asked.
Arrays group_vjp(const array& x, const array& w, const array& g, const ConvParams& p, const Ints& argnums,
                 StreamOrDevice s) {
  const int d = static_cast<int>(x.ndim()) - 2;
  const bool dilated = std::any_of(p.idil.begin(), p.idil.end(), [](int v) { return v != 1; });
  Arrays out;
  for (int k : argnums) {
    if (k == 0) {
      // The cotangent of the dilated input, then every idil-th place of it (the inserted zeros are constants).
      std::vector<int> lo(d), hi(d), ones(d, 1);
      for (int i = 0; i < d; ++i) {
        const int in = (x.shape(i + 1) - 1) * p.idil[i] + 1, o = g.shape(i + 1), kk = w.shape(i + 1);
        lo[i] = p.kdil[i] * (kk - 1) - p.lo[i];
        hi[i] = in - 1 + p.lo[i] - (o - 1) * p.stride[i];
      }
      array wt = swap_ends(w, s);  // (C_in, spatial..., C_out)
      array dxd = conv_general(g, wt, ones, lo, hi, p.kdil, p.stride, 1, !p.flip, s);
      if (dilated) {
        Shape start(dxd.ndim(), 0), stop = dxd.shape(), str(dxd.ndim(), 1);
        for (int i = 0; i < d; ++i) str[i + 1] = p.idil[i];
        dxd = slice(dxd, start, stop, str, s);
      }
      out.push_back(dxd);
    } else {
      // dw[co, k, ci] = sum over n, o of g[n, o, co] * x_pad[n, o * stride + k * dilation, ci]
      array xd = dilated ? dilate_input(x, p.idil, s) : x;
      array xs = swap_ends(xd, s), gs = swap_ends(g, s);  // (C_in, S..., N), (C_out, O..., N)
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

// Channels [lo, hi) of the last axis (first = false) or the first one.
array channels(const array& a, bool first, int lo, int hi, StreamOrDevice s) {
  const int axis = first ? 0 : static_cast<int>(a.ndim()) - 1;
  Shape start(a.ndim(), 0), stop = a.shape();
  start[axis] = lo;
  stop[axis] = hi;
  return slice(a, start, stop, s);
}

Arrays conv_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  ConvParams p = params(app);
  auto s = app.s();
  const array &x = app.inputs[0], &w = app.inputs[1];
  const array& g = cot[0];
  const int groups = p.groups;
  if (groups == 1) return group_vjp(x, w, g, p, argnums, s);
  // Groups are independent convolutions on slices of the channels: input channels [gi * cg, (gi + 1) * cg)
  // against output channels [gi * og, (gi + 1) * og); the cotangents are the groups' joined back.
  const int cg = x.shape(-1) / groups, og = w.shape(0) / groups;
  p.groups = 1;
  std::vector<Arrays> parts(argnums.size());
  for (int gi = 0; gi < groups; ++gi) {
    Arrays r = group_vjp(channels(x, false, gi * cg, (gi + 1) * cg, s), channels(w, true, gi * og, (gi + 1) * og, s),
                         channels(g, false, gi * og, (gi + 1) * og, s), p, argnums, s);
    for (size_t j = 0; j < r.size(); ++j) parts[j].push_back(r[j]);
  }
  Arrays out;
  for (size_t j = 0; j < argnums.size(); ++j) {
    out.push_back(concatenate(parts[j], argnums[j] == 0 ? static_cast<int>(x.ndim()) - 1 : 0, s));
  }
  return out;
}

}  // namespace

namespace primitives {
void register_conv_grad(RuleTable& t) { t.add("Convolution", conv_vjp, conv_jvp); }
}  // namespace primitives

}  // namespace kiln
