// Derivative rules of the fused rows (autodiff_rules.h). As MLX: RMSNorm and LayerNorm's vjp is their
// VJP row, RoPE's vjp is the inverse rotation. Each row also declares its fallback (the same values
// written with other rows); the machinery differentiates it where a row has no direct rule: the
// forward mode of all four, SDPA's reverse mode, and the VJP rows' own derivatives (grad of grad).
#include <limits>

#include "kiln/fast.h"
#include "kiln/ops.h"
#include "kiln/utils.h"
#include "primitives/autodiff_rules.h"

namespace kiln {

namespace {

using detail::autodiff::Application;
using detail::autodiff::RuleTable;
using detail::autodiff::unbroadcast;
using detail::autodiff::zeros_of;
using Arrays = std::vector<array>;
using Ints = std::vector<int>;

float eps_of(const Application& app) { return app.state().f(1); }

// Parameter gradients: a scalar parameter stands for "none" and gets zeros (as the VJP rows).
array param_grad(const array& g, const array& p, StreamOrDevice s) {
  if (p.ndim() == 0) return zeros_of(p, s);
  return unbroadcast(g, p.shape(), s);
}

// ---- RMSNorm(x, w) ----
Arrays rms_fallback(const Application& app, const Arrays& in) {
  auto s = app.s();
  const array& x = in[0];
  array ms = mean(square(x, s), -1, true, s);
  array r = rsqrt(add(ms, array(eps_of(app), x.dtype()), s), s);
  return {multiply(multiply(x, r, s), in[1], s)};
}
Arrays pick(const Arrays& all, const Ints& argnums) {
  Arrays out;
  for (int i : argnums) out.push_back(all[i]);
  return out;
}
Arrays rms_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  return pick(fast::detail::rms_norm_vjp(app.inputs[0], app.inputs[1], cot[0], eps_of(app), app.s()), argnums);
}
// RMSNormVJP(x, w, g) -> {dx, dw}
Arrays rms_vjp_fallback(const Application& app, const Arrays& in) {
  auto s = app.s();
  const array &x = in[0], &w = in[1], &g = in[2];
  array ms = mean(square(x, s), -1, true, s);
  array r = rsqrt(add(ms, array(eps_of(app), x.dtype()), s), s);
  array n = multiply(x, r, s);
  array gw = multiply(g, w, s);
  array dx = multiply(r, subtract(gw, multiply(n, mean(multiply(gw, n, s), -1, true, s), s), s), s);
  return {dx, param_grad(multiply(g, n, s), w, s)};
}

// ---- LayerNorm(x, w, b) ----
struct Normed {
  array n, r;
};
Normed layer_normed(const Application& app, const array& x) {
  auto s = app.s();
  array mu = mean(x, -1, true, s);
  array xc = subtract(x, mu, s);
  array var = mean(square(xc, s), -1, true, s);
  array r = rsqrt(add(var, array(eps_of(app), x.dtype()), s), s);
  return {multiply(xc, r, s), r};
}
Arrays layer_fallback(const Application& app, const Arrays& in) {
  auto s = app.s();
  return {add(multiply(layer_normed(app, in[0]).n, in[1], s), in[2], s)};
}
Arrays layer_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  return pick(fast::detail::layer_norm_vjp(app.inputs[0], app.inputs[1], app.inputs[2], cot[0], eps_of(app), app.s()),
              argnums);
}
// LayerNormVJP(x, w, b, g) -> {dx, dw, db}
Arrays layer_vjp_fallback(const Application& app, const Arrays& in) {
  auto s = app.s();
  const array &x = in[0], &w = in[1], &b = in[2], &g = in[3];
  auto [n, r] = layer_normed(app, x);
  array gw = multiply(g, w, s);
  array dx = multiply(
      r, subtract(subtract(gw, mean(gw, -1, true, s), s), multiply(n, mean(multiply(gw, n, s), -1, true, s), s), s),
      s);
  return {dx, param_grad(multiply(g, n, s), w, s), param_grad(g, b, s)};
}

// ---- RoPE(x, offset[, freqs]): a rotation of x, linear in it ----
array rope_apply(const Application& app, const array& x, bool invert) {
  const auto& st = app.state();
  std::optional<array> freqs;
  if (app.inputs.size() > 2) freqs = app.inputs[2];
  const bool forward = st.b(5);
  return fast::detail::rope(x, st.i(1), st.b(2), st.f(3), st.f(4), app.inputs[1], freqs, invert ? !forward : forward,
                            app.s());
}
Arrays rope_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  Arrays out;
  for (int i : argnums) out.push_back(i == 0 ? rope_apply(app, cot[0], true) : zeros_of(app.inputs[i], app.s()));
  return out;
}
Arrays rope_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  if (argnums.empty() || argnums[0] != 0) return {zeros_of(app.outputs[0], app.s())};
  return {rope_apply(app, tan[0], false)};
}

// ---- ScaledDotProductAttention(q, k, v[, mask][, sinks]) ----
Arrays sdpa_fallback(const Application& app, const Arrays& in) {
  auto s = app.s();
  const auto& st = app.state();
  const float scale = st.f(1);
  const bool causal = st.b(2), has_sinks = st.b(3), with_lse = st.b(4);
  const array &q = in[0], &k = in[1], &v = in[2];
  const int B = q.shape(0), Hq = q.shape(1), Lq = q.shape(2), D = q.shape(3);
  const int Hk = k.shape(1), Lk = k.shape(2), G = Hq / Hk;
  const Dtype t = q.dtype();
  // Grouped heads: (B, Hk, G, Lq, D) against (B, Hk, 1, Lk, D).
  array qg = reshape(multiply(q, array(scale, t), s), {B, Hk, G, Lq, D}, s);
  array kg = expand_dims(k, 2, s), vg = expand_dims(v, 2, s);
  array scores = matmul(qg, swapaxes(kg, -1, -2, s), s);  // (B, Hk, G, Lq, Lk)
  // Masked scores take the dtype's lowest finite value, as the forward kernel (and MLX) do: a row
  // whose keys are all masked then averages the values instead of dividing 0 by 0.
  const array masked(finfo(t).min, t);
  const bool has_mask = in.size() > static_cast<size_t>(3 + (has_sinks ? 1 : 0));
  if (has_mask) {
    array m = reshape(in[3], {B, Hk, G, Lq, Lk}, s);
    scores = m.dtype() == bool_ ? where(m, scores, masked, s) : add(scores, m, s);
  }
  if (causal) {  // key j is visible from query i when j <= i + max(Lk - Lq, 0), as in the forward kernel
    array qi = reshape(arange(0, Lq, int32, s), {Lq, 1}, s);
    array kj = reshape(arange(0, Lk, int32, s), {1, Lk}, s);
    scores = where(less_equal(kj, add(qi, array(std::max(Lk - Lq, 0), int32), s), s), scores, masked, s);
  }
  // The weights as a softmax (normalized after subtracting the row's maximum), not exp(scores - lse):
  // in a row masked everywhere, lse = lowest + log(Lk) rounds to lowest, and exp would give ones.
  array all = scores;
  if (has_sinks) {  // one extra logit per query head, attending to nothing
    array sink = broadcast_to(reshape(in.back(), {1, Hk, G, 1, 1}, s), {B, Hk, G, Lq, 1}, s);
    all = concatenate({sink, scores}, -1, s);
  }
  array p = softmax(all, std::vector<int>{-1}, false, s);
  if (has_sinks) p = slice(p, {0, 0, 0, 0, 1}, {B, Hk, G, Lq, Lk + 1}, s);
  array out = reshape(matmul(p, vg, s), {B, Hq, Lq, v.shape(3)}, s);
  if (!with_lse) return {out};
  array lse = logsumexp(all, -1, true, s);
  return {out, astype(reshape(lse, {B, Hq, Lq, 1}, s), float32, s)};
}

}  // namespace

namespace primitives {
void register_fast_grad(RuleTable& t) {
  t.add("RMSNorm", rms_vjp, nullptr, rms_fallback);
  t.add("RMSNormVJP", nullptr, nullptr, rms_vjp_fallback);
  t.add("LayerNorm", layer_vjp, nullptr, layer_fallback);
  t.add("LayerNormVJP", nullptr, nullptr, layer_vjp_fallback);
  t.add("RoPE", rope_vjp, rope_jvp);
  t.add("ScaledDotProductAttention", nullptr, nullptr, sdpa_fallback);
}
}  // namespace primitives

}  // namespace kiln
