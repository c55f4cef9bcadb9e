// Element-wise ops built from other ops, as MLX builds them (so traced graphs match MLX's): clip,
// isclose, allclose, array_equal, nan_to_num.
#include <limits>
#include <stdexcept>

#include "kiln/ops.h"
#include "primitives/elementwise/rows.h"

namespace kiln {

array clip(const array& a, const std::optional<array>& a_min, const std::optional<array>& a_max, StreamOrDevice s) {
  if (!a_min.has_value() && !a_max.has_value()) {
    throw std::invalid_argument("[clip] At most one of a_min and a_max may be None.");
  }
  array r = a;
  if (a_min.has_value()) r = maximum(r, *a_min, s);
  if (a_max.has_value()) r = minimum(r, *a_max, s);
  return r;
}

// |a - b| <= atol + rtol·|b|, with infinities equal only to themselves and, if asked, NaN to NaN.
array isclose(const array& a, const array& b, double rtol, double atol, bool equal_nan, StreamOrDevice s) {
  array rhs = add(array(atol), multiply(array(rtol), abs(b, s), s), s);
  array lhs = abs(subtract(a, b, s), s);
  array out = less_equal(lhs, rhs, s);
  array a_pos = isposinf(a, s), b_pos = isposinf(b, s);
  array a_neg = isneginf(a, s), b_neg = isneginf(b, s);
  array any_inf = logical_or(logical_or(a_pos, a_neg, s), logical_or(b_pos, b_neg, s), s);
  array both_inf = logical_or(logical_and(a_pos, b_pos, s), logical_and(a_neg, b_neg, s), s);
  out = logical_and(out, logical_not(any_inf, s), s);
  out = logical_or(out, both_inf, s);
  if (equal_nan) out = logical_or(out, logical_and(isnan(a, s), isnan(b, s), s), s);
  return out;
}

array allclose(const array& a, const array& b, double rtol, double atol, bool equal_nan, StreamOrDevice s) {
  return all(isclose(a, b, rtol, atol, equal_nan, s), false, s);
}

// Different shapes are simply unequal; dtypes are promoted and do not matter.
array array_equal(const array& a, const array& b, bool equal_nan, StreamOrDevice s) {
  if (a.shape() != b.shape()) return array(false);
  Dtype t = promote_types(a.dtype(), b.dtype());
  equal_nan = equal_nan && is_inexact(t);
  static const PrimitiveDef& d = detail::def("Equal");
  array eq = make_array(d, State{equal_nan}, {astype(a, t, s), astype(b, t, s)}, {{a.shape(), bool_}}, to_stream(s));
  return all(eq, false, s);
}

array nan_to_num(const array& a, float nan, const std::optional<float> posinf_, const std::optional<float> neginf_,
                 StreamOrDevice s) {
  Dtype t = a.dtype();
  if (!is_inexact(t)) return a;
  // MLX 0.30.1 maps +-inf to 0 for float16 / bfloat16 (a limits lookup that fails for its half types);
  // kiln uses the largest finite value, as NumPy and MLX's float32. Types without a default (float64,
  // complex64) are accepted when both replacements are given, as in MLX.
  float big = 0;
  bool has_big = true;
  if (t == float32) big = std::numeric_limits<float>::max();
  else if (t == float16) big = 65504.0f;
  else if (t == bfloat16) big = 3.38953139e38f;  // (2 - 2^-7) * 2^127
  else has_big = false;
  if (!has_big && (!posinf_ || !neginf_)) {
    throw std::invalid_argument("[nan_to_num] Does not yet support given type: " + dtype_name(t) + ".");
  }
  float posinf = posinf_ ? *posinf_ : big;
  float neginf = neginf_ ? *neginf_ : -big;
  array out = where(isnan(a, s), array(nan, t), a, s);
  out = where(isposinf(a, s), array(posinf, t), out, s);
  out = where(isneginf(a, s), array(neginf, t), out, s);
  return out;
}

}  // namespace kiln
