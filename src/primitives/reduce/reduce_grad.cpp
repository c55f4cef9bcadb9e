// Derivative rules of the reduction rows (autodiff_rules.h): Reduce (sum, prod, max, min; all and any
// are flat), ArgReduce (flat), LogSumExp, Softmax, Scan (cumsum, cumprod, cummax, cummin, logcumsumexp).
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

// The cumulative product's pieces shared by both modes. A zero stops the product: before the first zero
// (in scan order) of a line every factor is nonzero and y_i / x_j is exact; at the first zero j0 the
// derivative is the product with x_j0 taken as 1; past it every term holds a zero factor.
struct ProdParts {
  array incl;        // the inclusive cumulative product
  array excl;        // the exclusive one
  array first_zero;  // true at the first zero of each line
  array with_one;    // the scan's own cumulative product with the first zero set to 1
  array safe_x;      // x with zeros set to 1 (the division is only used where no zero takes part)
};

ProdParts prod_parts(const Application& app) {
  const auto& st = app.state();
  const int axis = st.i(1);
  const bool reverse = st.b(2), inclusive = st.b(3);
  auto s = app.s();
  const array& x = app.inputs[0];
  array other = cumprod(x, axis, reverse, !inclusive, s);
  array incl = inclusive ? app.outputs[0] : other;
  array excl = inclusive ? other : app.outputs[0];
  array zero = array(0, x.dtype()), one = array(1, x.dtype());
  array first_zero = logical_and(equal(incl, zero, s), not_equal(excl, zero, s), s);
  array with_one = cumprod(where(first_zero, one, x, s), axis, reverse, inclusive, s);
  array safe_x = where(equal(x, zero, s), one, x, s);
  return {incl, excl, first_zero, with_one, safe_x};
}

// One line's slice [lo, hi) along axis.
array along(const array& a, int axis, int lo, int hi, StreamOrDevice s) {
  Shape start(a.ndim(), 0), stop = a.shape();
  start[axis] = lo;
  stop[axis] = hi;
  return slice(a, start, stop, s);
}

// Moves every element one place along axis (toward the end, or toward the start), filling with zero:
// the exclusive scans are the inclusive ones shifted by one.
array shift(const array& a, int axis, bool toward_end, StreamOrDevice s) {
  const int n = a.shape(axis);
  Shape one = a.shape();
  one[axis] = 1;
  array z = zeros(one, a.dtype(), s);
  if (toward_end) return concatenate({z, along(a, axis, 0, n - 1, s)}, axis, s);
  return concatenate({along(a, axis, 1, n, s), z}, axis, s);
}

// cummax / cummin: for each output of the inclusive scan, the index of the input it copies. An input
// that equals the running extremum at its own place starts a new run; the output takes the latest such
// input in scan order (on ties, the one nearest to it).
array extremum_source(const Application& app) {
  const auto& st = app.state();
  const int type = st.i(0), axis = st.i(1);
  const bool reverse = st.b(2), inclusive = st.b(3);
  auto s = app.s();
  const array& x = app.inputs[0];
  array incl = inclusive ? app.outputs[0]
               : type == reduce::ScanMax ? cummax(x, axis, reverse, true, s)
                                         : cummin(x, axis, reverse, true, s);
  const int n = x.shape(axis);
  Shape line(x.ndim(), 1);
  line[axis] = n;
  array iota = broadcast_to(reshape(arange(n, s), line, s), x.shape(), s);
  array starts = equal(x, incl, s);
  if (reverse) return cummin(where(starts, iota, array(n - 1, int32), s), axis, true, true, s);
  return cummax(where(starts, iota, array(0, int32), s), axis, false, true, s);
}

void scan_differentiable(const Application& app, const char* mode) {
  if (!issubdtype(app.inputs[0].dtype(), inexact)) {
    throw std::invalid_argument(std::string("[") + mode + "] " + app.name() + " of an integer or bool input has no "
                                "derivative (found " + dtype_name(app.inputs[0].dtype()) + ").");
  }
}

Arrays scan_vjp(const Application& app, const Arrays& cot, const Ints&) {
  const auto& st = app.state();
  const int type = st.i(0), axis = st.i(1);
  const bool reverse = st.b(2), inclusive = st.b(3);
  auto s = app.s();
  const array& x = app.inputs[0];
  if (type == reduce::ScanSum) return {cumsum(cot[0], axis, !reverse, inclusive, s)};
  if (x.shape(axis) == 0) return {zeros_like(x, s)};
  scan_differentiable(app, "vjp");
  const array& g = cot[0];
  if (type == reduce::ScanLogAddExp) {
    // dx_j = sum over the outputs i that include j of g_i exp(x_j - y_i), computed in the log domain on
    // the positive and negative parts of g separately.
    const array& y = app.outputs[0];
    array zero = array(0.0, g.dtype());
    array lowest = array(-std::numeric_limits<float>::infinity(), g.dtype());
    array log_abs = log(abs(g, s), s);
    auto part = [&](const array& mask) {
      array lg = where(mask, log_abs, lowest, s);
      return exp(add(logcumsumexp(subtract(lg, y, s), axis, !reverse, inclusive, s), x, s), s);
    };
    return {subtract(part(greater(g, zero, s)), part(less(g, zero, s)), s)};
  }
  if (type == reduce::ScanProd) {
    // dx_j = sum over the outputs i that include j of g_i prod_{k in i's window, k != j} x_k.
    ProdParts p = prod_parts(app);
    array zero = array(0, x.dtype());
    array regular = divide(cumsum(multiply(g, app.outputs[0], s), axis, !reverse, inclusive, s), p.safe_x, s);
    array at_zero = cumsum(multiply(g, p.with_one, s), axis, !reverse, inclusive, s);
    return {where(p.first_zero, at_zero, where(equal(p.incl, zero, s), zero, regular, s), s)};
  }
  // cummax / cummin: each output's cotangent goes to the input it copies; an exclusive scan's output i
  // is the inclusive one at the place before it in scan order (its first output is the identity).
  array gi = inclusive ? g : shift(g, axis, reverse, s);
  return {scatter_add_axis(zeros_like(x, s), extremum_source(app), gi, axis, s)};
}

Arrays scan_jvp(const Application& app, const Arrays& tan, const Ints&) {
  const auto& st = app.state();
  const int type = st.i(0), axis = st.i(1);
  const bool reverse = st.b(2), inclusive = st.b(3);
  auto s = app.s();
  const array& x = app.inputs[0];
  const array& t = tan[0];
  if (type == reduce::ScanSum) return {cumsum(t, axis, reverse, inclusive, s)};
  if (x.shape(axis) == 0) return {zeros_like(app.outputs[0], s)};
  scan_differentiable(app, "jvp");
  const array& y = app.outputs[0];
  if (type == reduce::ScanLogAddExp) {
    // dy_i = sum over j in the window of t_j exp(x_j - y_i) = cumsum(t exp(x - m)) exp(m - y) with m the
    // overall maximum along the axis (for range).
    array m = stop_gradient(max(x, axis, true, s), s);
    array acc = cumsum(multiply(t, exp(subtract(x, m, s), s), s), axis, reverse, inclusive, s);
    return {multiply(acc, exp(subtract(m, y, s), s), s)};
  }
  if (type == reduce::ScanProd) {
    // dy_i = sum over j in i's window of t_j prod_{k in the window, k != j} x_k: y_i cumsum(t / x)_i while
    // the window holds no zero; once it holds one, only the first zero's term is left.
    ProdParts p = prod_parts(app);
    array zero = array(0, x.dtype());
    array regular = multiply(y, cumsum(divide(t, p.safe_x, s), axis, reverse, inclusive, s), s);
    array t0 = sum(where(p.first_zero, t, zero, s), axis, true, s);
    return {where(equal(y, zero, s), multiply(t0, p.with_one, s), regular, s)};
  }
  array dy = take_along_axis(t, extremum_source(app), axis, s);
  return {inclusive ? dy : shift(dy, axis, !reverse, s)};
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
