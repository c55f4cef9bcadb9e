// Derivative rules of the reduction rows (autodiff_rules.h): Reduce (sum, prod, max, min; all and any
// are flat), ArgReduce (flat), LogSumExp, Softmax, Scan (cumsum, logcumsumexp).
#include <numeric>

#include "kiln/ops.h"
#include "primitives/autodiff_rules.h"
#include "primitives/reduce/reduce.h"

namespace kiln {

namespace {

using detail::autodiff::Application;
using detail::autodiff::RuleTable;
using detail::autodiff::zero_jvp;
using detail::autodiff::zero_vjp;
using Arrays = std::vector<array>;
using Ints = std::vector<int>;

// For each input element, the product of the other elements of its reduction group (exact where
// inputs are zero: an exclusive cumulative product from each side).
array prod_of_others(const array& x, const std::vector<int>& axes, StreamOrDevice s) {
  const int nd = static_cast<int>(x.ndim());
  std::vector<int> perm;
  for (int i = 0; i < nd; ++i) {
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) perm.push_back(i);
  }
  Shape kept;
  for (int i : perm) kept.push_back(x.shape(i));
  int n = 1;
  for (int a : axes) {
    perm.push_back(a);
    n *= x.shape(a);
  }
  array xt = transpose(x, perm, s);
  Shape tshape = xt.shape();
  Shape flat = kept;
  flat.push_back(n);
  array xf = reshape(xt, flat, s);
  array left = cumprod(xf, -1, false, false, s), right = cumprod(xf, -1, true, false, s);
  array g = reshape(multiply(left, right, s), tshape, s);
  std::vector<int> inv(nd);
  for (int i = 0; i < nd; ++i) inv[perm[i]] = i;
  return transpose(g, inv, s);
}

// d(out)/d(in), broadcastable against the input, for the differentiable reduce types.
array reduce_partial(const Application& app) {
  const array& x = app.inputs[0];
  const array& y = app.outputs[0];
  const auto& axes = app.state().ints(1);
  switch (app.state().i(0)) {
    case reduce::Sum:
      return ones_like(x, app.s());
    case reduce::Prod:
      return prod_of_others(x, axes, app.s());
    default: {  // Min, Max: shared equally among the elements that reach the extremum
      array mask = astype(equal(x, y, app.s()), x.dtype(), app.s());
      return divide(mask, sum(mask, axes, true, app.s()), app.s());
    }
  }
}

bool flat_reduce(const Application& app) {
  const int type = app.state().i(0);
  return type == reduce::And || type == reduce::Or;
}

Arrays reduce_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  if (flat_reduce(app)) return zero_vjp(app, cot, argnums);
  const array& x = app.inputs[0];
  if (app.state().i(0) == reduce::Sum) return {broadcast_to(cot[0], x.shape(), app.s())};
  return {multiply(cot[0], reduce_partial(app), app.s())};
}

Arrays reduce_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  if (flat_reduce(app)) return zero_jvp(app, tan, argnums);
  const auto& axes = app.state().ints(1);
  if (app.state().i(0) == reduce::Sum) return {sum(tan[0], axes, true, app.s())};
  return {sum(multiply(tan[0], reduce_partial(app), app.s()), axes, true, app.s())};
}

Arrays logsumexp_vjp(const Application& app, const Arrays& cot, const Ints&) {
  return {multiply(cot[0], exp(subtract(app.inputs[0], app.outputs[0], app.s()), app.s()), app.s())};
}
Arrays logsumexp_jvp(const Application& app, const Arrays& tan, const Ints&) {
  array w = exp(subtract(app.inputs[0], app.outputs[0], app.s()), app.s());
  return {sum(multiply(tan[0], w, app.s()), -1, true, app.s())};
}

// y (g - sum(g y)) over the last axis: the same expression in both modes.
array softmax_apply(const Application& app, const array& g) {
  const array& y = app.outputs[0];
  return multiply(y, subtract(g, sum(multiply(g, y, app.s()), -1, true, app.s()), app.s()), app.s());
}
Arrays softmax_vjp(const Application& app, const Arrays& cot, const Ints&) { return {softmax_apply(app, cot[0])}; }
Arrays softmax_jvp(const Application& app, const Arrays& tan, const Ints&) { return {softmax_apply(app, tan[0])}; }

void scan_supported(const Application& app) {
  const int type = app.state().i(0);
  if (type != reduce::ScanSum && type != reduce::ScanLogAddExp) {
    throw std::invalid_argument("[vjp] Not implemented for " + app.name() + " in kiln yet (only cumsum and "
                                "logcumsumexp have derivative rules).");
  }
}

Arrays scan_vjp(const Application& app, const Arrays& cot, const Ints&) {
  scan_supported(app);
  const auto& st = app.state();
  const int axis = st.i(1);
  const bool reverse = st.b(2), inclusive = st.b(3);
  auto s = app.s();
  if (st.i(0) == reduce::ScanSum) return {cumsum(cot[0], axis, !reverse, inclusive, s)};
  // logcumsumexp: dx_j = sum over the outputs i that include j of g_i exp(x_j - y_i), computed in the
  // log domain on the positive and negative parts of g separately.
  const array& x = app.inputs[0];
  const array& y = app.outputs[0];
  const array& g = cot[0];
  array zero = array(0.0, g.dtype());
  array lowest = array(-std::numeric_limits<float>::infinity(), g.dtype());
  array log_abs = log(abs(g, s), s);
  auto part = [&](const array& mask) {
    array lg = where(mask, log_abs, lowest, s);
    return exp(add(logcumsumexp(subtract(lg, y, s), axis, !reverse, inclusive, s), x, s), s);
  };
  return {subtract(part(greater(g, zero, s)), part(less(g, zero, s)), s)};
}

Arrays scan_jvp(const Application& app, const Arrays& tan, const Ints&) {
  scan_supported(app);
  const auto& st = app.state();
  const int axis = st.i(1);
  const bool reverse = st.b(2), inclusive = st.b(3);
  auto s = app.s();
  if (st.i(0) == reduce::ScanSum) return {cumsum(tan[0], axis, reverse, inclusive, s)};
  // dy_i = sum over j in the window of t_j exp(x_j - y_i) = cumsum(t exp(x - m)) exp(m - y) with m the
  // overall maximum along the axis (for range).
  const array& x = app.inputs[0];
  const array& y = app.outputs[0];
  array m = stop_gradient(max(x, axis, true, s), s);
  array acc = cumsum(multiply(tan[0], exp(subtract(x, m, s), s), s), axis, reverse, inclusive, s);
  return {multiply(acc, exp(subtract(m, y, s), s), s)};
}

}  // namespace

namespace primitives {
void register_reduce_grad(RuleTable& t) {
  t.add("Reduce", reduce_vjp, reduce_jvp);
  t.add("ArgReduce", zero_vjp, zero_jvp);
  t.add("LogSumExp", logsumexp_vjp, logsumexp_jvp);
  t.add("Softmax", softmax_vjp, softmax_jvp);
  t.none("NumberOfElements", "an element count; MLX 0.30.1's NumberOfElements has no vjp or jvp");
  t.add("Scan", scan_vjp, scan_jvp);
}
}  // namespace primitives

}  // namespace kiln
