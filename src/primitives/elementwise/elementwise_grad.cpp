// Derivative rules of the element-wise rows (autodiff_rules.h). Unary rows declare their derivative
// d(out)/d(in) once; the vjp multiplies the cotangent by it, the jvp the tangent. Binary rows reduce
// each input's share back to that input's shape (the rows broadcast their operands themselves).
#include <cmath>
#include <numbers>

#include "kiln/ops.h"
#include "primitives/autodiff_rules.h"

namespace kiln {

namespace {

using detail::autodiff::Application;
using detail::autodiff::RuleTable;
using detail::autodiff::tangent_of;
using detail::autodiff::unbroadcast;
using detail::autodiff::zero_jvp;
using detail::autodiff::zero_vjp;
using Arrays = std::vector<array>;
using Ints = std::vector<int>;

array scalar_like(double v, const array& a) { return array(v, a.dtype()); }

// ---- unary: the derivative of each row ----
using DerivFn = array (*)(const Application& app);

// Reverse mode multiplies by the conjugate of the derivative (MLX's convention for complex arrays).
array conj_if_complex(const array& d, StreamOrDevice s) { return d.dtype() == complex64 ? conjugate(d, s) : d; }

template <DerivFn D>
Arrays unary_vjp(const Application& app, const Arrays& cot, const Ints&) {
  return {multiply(cot[0], conj_if_complex(D(app), app.s()), app.s())};
}
template <DerivFn D>
Arrays unary_jvp(const Application& app, const Arrays& tan, const Ints&) {
  return {multiply(tan[0], D(app), app.s())};
}

#define X app.inputs[0]
#define Y app.outputs[0]
#define S app.s()
array d_abs(const Application& app) { return sign(X, S); }
array d_negative(const Application& app) { return scalar_like(-1.0, Y); }
array d_square(const Application& app) { return multiply(scalar_like(2.0, X), X, S); }
array d_exp(const Application& app) { return Y; }
array d_expm1(const Application& app) { return add(Y, scalar_like(1.0, Y), S); }
array d_log1p(const Application& app) { return reciprocal(add(X, scalar_like(1.0, X), S), S); }
array d_log(const Application& app) {
  const int base = app.state().i(0);  // 0: log2, 1: log10, 2: natural
  array r = reciprocal(X, S);
  if (base == 2) return r;
  return multiply(r, scalar_like(1.0 / std::log(base == 0 ? 2.0 : 10.0), X), S);
}
array d_sin(const Application& app) { return cos(X, S); }
array d_cos(const Application& app) { return negative(sin(X, S), S); }
array d_tan(const Application& app) { return reciprocal(square(cos(X, S), S), S); }
array d_sinh(const Application& app) { return cosh(X, S); }
array d_cosh(const Application& app) { return sinh(X, S); }
array d_tanh(const Application& app) { return subtract(scalar_like(1.0, Y), square(Y, S), S); }
array one_minus_sq(const Application& app) { return subtract(scalar_like(1.0, X), square(X, S), S); }
array d_arcsin(const Application& app) { return rsqrt(one_minus_sq(app), S); }
array d_arccos(const Application& app) { return negative(rsqrt(one_minus_sq(app), S), S); }
array d_arctan(const Application& app) { return reciprocal(add(scalar_like(1.0, X), square(X, S), S), S); }
array d_arcsinh(const Application& app) { return rsqrt(add(square(X, S), scalar_like(1.0, X), S), S); }
array d_arccosh(const Application& app) { return rsqrt(subtract(square(X, S), scalar_like(1.0, X), S), S); }
array d_arctanh(const Application& app) { return reciprocal(one_minus_sq(app), S); }
array d_sigmoid(const Application& app) { return multiply(Y, subtract(scalar_like(1.0, Y), Y, S), S); }
array d_erf(const Application& app) {
  return multiply(scalar_like(2.0 / std::sqrt(std::numbers::pi), X), exp(negative(square(X, S), S), S), S);
}
array d_erfinv(const Application& app) {
  return multiply(scalar_like(std::sqrt(std::numbers::pi) / 2.0, Y), exp(square(Y, S), S), S);
}
array d_sqrt(const Application& app) {
  if (app.state().b(0)) {  // rsqrt: -y^3 / 2
    return multiply(scalar_like(-0.5, Y), multiply(Y, square(Y, S), S), S);
  }
  return divide(scalar_like(0.5, Y), Y, S);
}

// ---- unary rows with their own shape ----
Arrays identity_vjp(const Application&, const Arrays& cot, const Ints&) { return {cot[0]}; }
Arrays identity_jvp(const Application&, const Arrays& tan, const Ints&) { return {tan[0]}; }
Arrays negative_vjp(const Application& app, const Arrays& cot, const Ints&) { return {negative(cot[0], S)}; }
Arrays astype_vjp(const Application& app, const Arrays& cot, const Ints&) {
  if (cot[0].dtype() != Y.dtype()) {
    throw std::invalid_argument("[astype] Type of cotangents does not match primal output type.");
  }
  return {astype(cot[0], X.dtype(), S)};
}
Arrays astype_jvp(const Application& app, const Arrays& tan, const Ints&) { return {astype(tan[0], Y.dtype(), S)}; }
// Real: the cotangent becomes the real part of a complex one; Imag: the imaginary part.
Arrays real_vjp(const Application& app, const Arrays& cot, const Ints&) { return {astype(cot[0], complex64, S)}; }
Arrays imag_vjp(const Application& app, const Arrays& cot, const Ints&) {
  return {multiply(array(complex64_t{0.0f, 1.0f}), astype(cot[0], complex64, S), S)};
}
Arrays real_jvp(const Application& app, const Arrays& tan, const Ints&) { return {real(tan[0], S)}; }
Arrays imag_jvp(const Application& app, const Arrays& tan, const Ints&) { return {imag(tan[0], S)}; }

// ---- binary ----
#define A app.inputs[0]
#define B app.inputs[1]
// One partial derivative per input: d(out)/d(input k), broadcastable to the output.
using PartialFn = array (*)(const Application& app, int k);

template <PartialFn P>
Arrays binary_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  Arrays out;
  for (int k : argnums) {
    out.push_back(unbroadcast(multiply(cot[0], conj_if_complex(P(app, k), S), S), app.inputs[k].shape(), S));
  }
  return out;
}
template <PartialFn P>
Arrays binary_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  array acc;
  for (size_t j = 0; j < argnums.size(); ++j) {
    array t = multiply(tan[j], P(app, argnums[j]), S);
    acc = acc.valid() ? add(acc, t, S) : t;
  }
  return {broadcast_to(acc, Y.shape(), S)};
}

array one(const Application& app) { return scalar_like(1.0, Y); }
array p_add(const Application& app, int) { return one(app); }
array p_subtract(const Application& app, int k) { return k == 0 ? one(app) : scalar_like(-1.0, Y); }
array p_multiply(const Application& app, int k) { return k == 0 ? B : A; }
// a / b by the quotient rule, each term rounded as MLX rounds it: cot / conj(b) for a and
// -(cot conj(a)) / conj(b)^2 for b (not cot times a reciprocal: one rounding fewer, and the same last bit).
Arrays divide_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  Arrays out;
  const array b_bar = conj_if_complex(B, S);
  for (int k : argnums) {
    array g = k == 0 ? divide(cot[0], b_bar, S)
                     : negative(divide(multiply(cot[0], conj_if_complex(A, S), S), square(b_bar, S), S), S);
    out.push_back(unbroadcast(g, app.inputs[k].shape(), S));
  }
  return out;
}
Arrays divide_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  array acc;
  for (size_t j = 0; j < argnums.size(); ++j) {
    array t = argnums[j] == 0 ? divide(tan[j], B, S) : negative(divide(multiply(tan[j], A, S), square(B, S), S), S);
    acc = acc.valid() ? add(acc, t, S) : t;
  }
  return {broadcast_to(acc, Y.shape(), S)};
}
// a - b * floor(a / b): 1 for a, -floor(a / b) for b.
array p_remainder(const Application& app, int k) {
  return k == 0 ? one(app) : negative(floor(divide(A, B, S), S), S);
}
array p_power(const Application& app, int k) {
  if (k == 0) return multiply(B, power(A, subtract(B, scalar_like(1.0, B), S), S), S);
  // d/db a^b = log(a) a^b, taken as 0 where a is 0 (and the output with it).
  array zero = scalar_like(0.0, A);
  return where(equal(A, zero, S), zero, multiply(log(A, S), Y, S), S);
}
// Maximum and minimum send the cotangent to the chosen operand; where they tie, all of it to the second
// one (as MLX 0.30.1: one operand's gradient is nonzero, not both).
array p_maximum(const Application& app, int k) {
  return astype(k == 0 ? greater(A, B, S) : less_equal(A, B, S), Y.dtype(), S);
}
array p_minimum(const Application& app, int k) {
  return astype(k == 0 ? less(A, B, S) : greater_equal(A, B, S), Y.dtype(), S);
}
array p_arctan2(const Application& app, int k) {
  array denom = add(square(A, S), square(B, S), S);
  return k == 0 ? divide(B, denom, S) : negative(divide(A, denom, S), S);
}
array p_logaddexp(const Application& app, int k) {
  return k == 0 ? sigmoid(subtract(A, B, S), S) : sigmoid(subtract(B, A, S), S);
}

// DivMod(a, b) = {q, r} with q = floor(a / b) (piecewise constant) and r = a - b q.
Arrays divmod_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  Arrays out;
  for (int k : argnums) {
    array g = k == 0 ? cot[1] : negative(multiply(cot[1], app.outputs[0], S), S);
    out.push_back(unbroadcast(g, app.inputs[k].shape(), S));
  }
  return out;
}
Arrays divmod_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  array ta = tangent_of(tan, argnums, 0), tb = tangent_of(tan, argnums, 1);
  array r = zeros_like(app.outputs[1], S);
  if (ta.valid()) r = add(r, ta, S);
  if (tb.valid()) r = subtract(r, multiply(tb, app.outputs[0], S), S);
  return {zeros_like(app.outputs[0], S), r};
}

// Select(condition, x, y): the condition gets zeros.
Arrays select_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  Arrays out;
  const array& c = app.inputs[0];
  for (int k : argnums) {
    if (k == 0) {
      out.push_back(zeros_like(c, S));
      continue;
    }
    array z = zeros_like(cot[0], S);
    array g = k == 1 ? where(c, cot[0], z, S) : where(c, z, cot[0], S);
    out.push_back(unbroadcast(g, app.inputs[k].shape(), S));
  }
  return out;
}
Arrays select_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  const array& c = app.inputs[0];
  array tx = tangent_of(tan, argnums, 1), ty = tangent_of(tan, argnums, 2);
  array z = zeros_like(Y, S);
  return {where(c, tx.valid() ? tx : z, ty.valid() ? ty : z, S)};
}
#undef A
#undef B
#undef X
#undef Y
#undef S

}  // namespace

namespace primitives {
void register_elementwise_grad(RuleTable& t) {
  t.add("Copy", identity_vjp, identity_jvp);
  t.add("StopGradient", zero_vjp, zero_jvp);
  t.add("AsType", astype_vjp, astype_jvp);
  t.none("View", "MLX 0.30.1's View has no vjp or jvp (a reinterpretation of bytes)");
  t.add("Abs", unary_vjp<d_abs>, unary_jvp<d_abs>);
  t.add("Negative", negative_vjp, unary_jvp<d_negative>);
  for (const char* flat : {"Sign", "Floor", "Ceil", "Round", "LogicalNot"}) t.add(flat, zero_vjp, zero_jvp);
  t.add("Square", unary_vjp<d_square>, unary_jvp<d_square>);
  t.none("BitwiseInvert", "an integer op; MLX 0.30.1's BitwiseInvert has no vjp or jvp");
  t.none("Conjugate", "MLX 0.30.1's Conjugate has no vjp or jvp");
  t.add("Real", real_vjp, real_jvp);
  t.add("Imag", imag_vjp, imag_jvp);
#define KILN_UNARY(NAME, D) t.add(NAME, unary_vjp<D>, unary_jvp<D>);
  KILN_UNARY("Exp", d_exp)
  KILN_UNARY("Expm1", d_expm1)
  KILN_UNARY("Log1p", d_log1p)
  KILN_UNARY("Log", d_log)
  KILN_UNARY("Sin", d_sin)
  KILN_UNARY("Cos", d_cos)
  KILN_UNARY("Tan", d_tan)
  KILN_UNARY("Sinh", d_sinh)
  KILN_UNARY("Cosh", d_cosh)
  KILN_UNARY("Tanh", d_tanh)
  KILN_UNARY("ArcSin", d_arcsin)
  KILN_UNARY("ArcCos", d_arccos)
  KILN_UNARY("ArcTan", d_arctan)
  KILN_UNARY("ArcSinh", d_arcsinh)
  KILN_UNARY("ArcCosh", d_arccosh)
  KILN_UNARY("ArcTanh", d_arctanh)
  KILN_UNARY("Sigmoid", d_sigmoid)
  KILN_UNARY("Erf", d_erf)
  KILN_UNARY("ErfInv", d_erfinv)
  KILN_UNARY("Sqrt", d_sqrt)
#undef KILN_UNARY
#define KILN_BINARY(NAME, P) t.add(NAME, binary_vjp<P>, binary_jvp<P>);
  KILN_BINARY("Add", p_add)
  KILN_BINARY("Subtract", p_subtract)
  KILN_BINARY("Multiply", p_multiply)
  KILN_BINARY("Remainder", p_remainder)
  KILN_BINARY("Power", p_power)
  KILN_BINARY("Maximum", p_maximum)
  KILN_BINARY("Minimum", p_minimum)
  KILN_BINARY("ArcTan2", p_arctan2)
  KILN_BINARY("LogAddExp", p_logaddexp)
#undef KILN_BINARY
  t.add("Divide", divide_vjp, divide_jvp);
  // Piecewise constant (or boolean / integer valued): zero derivatives, as MLX.
  t.add("DivMod", divmod_vjp, divmod_jvp);
  for (const char* flat : {"FloorDivide", "Equal", "NotEqual", "Greater", "GreaterEqual", "Less",
                           "LessEqual", "LogicalAnd", "LogicalOr", "BitwiseBinary"}) {
    t.add(flat, zero_vjp, zero_jvp);
  }
  t.add("Select", select_vjp, select_jvp);
}
}  // namespace primitives

}  // namespace kiln
