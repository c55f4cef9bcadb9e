// Op builders of the unary family, with MLX's dtype rules: math ops compute in at least float32,
// logical_not gives bool, abs of complex gives float32, and no-op cases return the input itself.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "kiln/ops/shape.h"
#include "primitives/elementwise/rows.h"

namespace kiln {

namespace {

using detail::at_least_float;

// A unary primitive whose output has the input's shape and dtype.
array unary_same(const char* prim, const array& a, StreamOrDevice s, State st = {}) {
  const PrimitiveDef& d = detail::def(prim);
  return make_array(d, std::move(st), {a}, {{a.shape(), a.dtype()}}, to_stream(s));
}

// A math primitive: the input is cast to at least float32 first.
array unary_float(const char* prim, const array& a, StreamOrDevice s, State st = {}) {
  Dtype t = at_least_float(a.dtype());
  const PrimitiveDef& d = detail::def(prim);
  return make_array(d, std::move(st), {astype(a, t, s)}, {{a.shape(), t}}, to_stream(s));
}

void reject_complex(const array& a, const char* api) {
  if (a.dtype() == complex64) throw std::invalid_argument(std::string("[") + api + "] Not supported for complex64.");
}

}  // namespace

array astype(array a, Dtype dtype, StreamOrDevice s) {
  if (a.dtype() == dtype) return a;
  static const PrimitiveDef& d = detail::def("AsType");
  return make_array(d, State{dtype}, {a}, {{a.shape(), dtype}}, to_stream(s));
}

array view(const array& a, const Dtype& dtype, StreamOrDevice s) {
  if (a.dtype() == dtype) return a;
  static const PrimitiveDef& d = detail::def("View");
  auto specs = d.infer(State{dtype}, {{a.shape(), a.dtype()}});
  return make_array(d, State{dtype}, {a}, std::move(specs), to_stream(s));
}

array stop_gradient(const array& a, StreamOrDevice s) { return unary_same("StopGradient", a, s); }
array copy(array a, StreamOrDevice s) { return unary_same("Copy", a, s); }

array abs(const array& a, StreamOrDevice s) {
  array out = unary_same("Abs", a, s);
  return a.dtype() == complex64 ? astype(out, float32, s) : out;
}

array negative(const array& a, StreamOrDevice s) {
  if (a.dtype() == bool_) {
    throw std::invalid_argument("[negative] Not supported for bool, use logical_not instead.");
  }
  return unary_same("Negative", a, s);
}

array sign(const array& a, StreamOrDevice s) { return unary_same("Sign", a, s); }

array logical_not(const array& a, StreamOrDevice s) {
  static const PrimitiveDef& d = detail::def("LogicalNot");
  return make_array(d, {}, {astype(a, bool_, s)}, {{a.shape(), bool_}}, to_stream(s));
}

// MLX says "[floor]" for ceil too.
array floor(const array& a, StreamOrDevice s) {
  reject_complex(a, "floor");
  return unary_same("Floor", a, s);
}
array ceil(const array& a, StreamOrDevice s) {
  reject_complex(a, "floor");
  return unary_same("Ceil", a, s);
}

array round(const array& a, int decimals, StreamOrDevice s) {
  if (decimals == 0) return unary_same("Round", a, s);
  // Scale, round half to even, scale back, and return to the input dtype (as MLX does).
  Dtype t = at_least_float(a.dtype());
  float scale = static_cast<float>(std::pow(10.0, decimals));
  array r = multiply(a, array(scale, t), s);
  r = round(r, 0, s);
  r = multiply(r, array(1.0f / scale, t), s);
  return astype(r, a.dtype(), s);
}
array round(const array& a, StreamOrDevice s) { return round(a, 0, s); }

array square(const array& a, StreamOrDevice s) { return unary_same("Square", a, s); }
array sqrt(const array& a, StreamOrDevice s) { return unary_float("Sqrt", a, s, State{false}); }
array rsqrt(const array& a, StreamOrDevice s) { return unary_float("Sqrt", a, s, State{true}); }
array reciprocal(const array& a, StreamOrDevice s) {
  return divide(array(1.0f, at_least_float(a.dtype())), a, s);
}

array exp(const array& a, StreamOrDevice s) { return unary_float("Exp", a, s); }
array expm1(const array& a, StreamOrDevice s) { return unary_float("Expm1", a, s); }
array log(const array& a, StreamOrDevice s) { return unary_float("Log", a, s, State{int32_t{2}}); }
array log2(const array& a, StreamOrDevice s) { return unary_float("Log", a, s, State{int32_t{0}}); }
array log10(const array& a, StreamOrDevice s) { return unary_float("Log", a, s, State{int32_t{1}}); }
array log1p(const array& a, StreamOrDevice s) { return unary_float("Log1p", a, s); }
array sigmoid(const array& a, StreamOrDevice s) { return unary_float("Sigmoid", a, s); }

// MLX accepts complex here and fails during evaluation; kiln refuses it up front.
array erf(const array& a, StreamOrDevice s) {
  if (a.dtype() == complex64) throw std::invalid_argument("[erf] Does not support complex64.");
  return unary_float("Erf", a, s);
}
array erfinv(const array& a, StreamOrDevice s) {
  if (a.dtype() == complex64) throw std::invalid_argument("[erfinv] Does not support complex64.");
  return unary_float("ErfInv", a, s);
}

array sin(const array& a, StreamOrDevice s) { return unary_float("Sin", a, s); }
array cos(const array& a, StreamOrDevice s) { return unary_float("Cos", a, s); }
array tan(const array& a, StreamOrDevice s) { return unary_float("Tan", a, s); }
array arcsin(const array& a, StreamOrDevice s) { return unary_float("ArcSin", a, s); }
array arccos(const array& a, StreamOrDevice s) { return unary_float("ArcCos", a, s); }
array arctan(const array& a, StreamOrDevice s) { return unary_float("ArcTan", a, s); }
array sinh(const array& a, StreamOrDevice s) { return unary_float("Sinh", a, s); }
array cosh(const array& a, StreamOrDevice s) { return unary_float("Cosh", a, s); }
array tanh(const array& a, StreamOrDevice s) { return unary_float("Tanh", a, s); }
array arcsinh(const array& a, StreamOrDevice s) { return unary_float("ArcSinh", a, s); }
array arccosh(const array& a, StreamOrDevice s) { return unary_float("ArcCosh", a, s); }
array arctanh(const array& a, StreamOrDevice s) { return unary_float("ArcTanh", a, s); }

array degrees(const array& a, StreamOrDevice s) {
  return multiply(a, array(180.0 / M_PI, at_least_float(a.dtype())), s);
}
array radians(const array& a, StreamOrDevice s) {
  return multiply(a, array(M_PI / 180.0, at_least_float(a.dtype())), s);
}

// NumPy's behaviour for real input: conjugate and real return the input, imag returns zeros.
array conjugate(const array& a, StreamOrDevice s) {
  if (a.dtype() != complex64) return a;
  return unary_same("Conjugate", a, s);
}
array real(const array& a, StreamOrDevice s) {
  if (a.dtype() != complex64) return a;
  static const PrimitiveDef& d = detail::def("Real");
  return make_array(d, {}, {a}, {{a.shape(), float32}}, to_stream(s));
}
array imag(const array& a, StreamOrDevice s) {
  if (a.dtype() != complex64) return zeros_like(a, s);
  static const PrimitiveDef& d = detail::def("Imag");
  return make_array(d, {}, {a}, {{a.shape(), float32}}, to_stream(s));
}

// Integers and bool are never NaN or infinite: a constant, as in MLX.
array isnan(const array& a, StreamOrDevice s) {
  if (!is_inexact(a.dtype())) return full(a.shape(), false, bool_, s);
  return not_equal(a, a, s);
}
array isposinf(const array& a, StreamOrDevice s) {
  if (!is_inexact(a.dtype())) return full(a.shape(), false, bool_, s);
  return equal(a, array(std::numeric_limits<float>::infinity(), a.dtype()), s);
}
array isneginf(const array& a, StreamOrDevice s) {
  if (!is_inexact(a.dtype())) return full(a.shape(), false, bool_, s);
  return equal(a, array(-std::numeric_limits<float>::infinity(), a.dtype()), s);
}
array isinf(const array& a, StreamOrDevice s) {
  if (!is_inexact(a.dtype())) return full(a.shape(), false, bool_, s);
  return logical_or(isposinf(a, s), isneginf(a, s), s);
}
array isfinite(const array& a, StreamOrDevice s) {
  if (!is_inexact(a.dtype())) return full(a.shape(), true, bool_, s);
  return logical_not(logical_or(isinf(a, s), isnan(a, s), s), s);
}

array bitwise_invert(const array& a, StreamOrDevice s) {
  if (is_inexact(a.dtype())) {
    throw std::invalid_argument("[bitwise_invert] Bitwise inverse only allowed on integer types.");
  }
  if (a.dtype() == bool_) return logical_not(a, s);
  return unary_same("BitwiseInvert", a, s);
}

array operator-(const array& a) { return negative(a); }
array operator!(const array& a) { return logical_not(a); }
array operator~(const array& a) { return bitwise_invert(a); }

}  // namespace kiln
