// kiln ops, element-wise family: unary and binary math, comparisons, where, clip, isclose, casts.
#include "ops_common.h"

namespace kiln::py {

namespace {

using BinaryFn = array (*)(const array&, const array&, StreamOrDevice);

struct UnaryDef {
  const char* name;
  UnaryFn fn;
  bool kw_only;  // MLX's `*` before stream
  const char* doc;
};
struct BinaryDef {
  const char* name;
  BinaryFn fn;
  bool kw_only;
  const char* doc;
};

array conj_fn(const array& a, StreamOrDevice s) { return conjugate(a, s); }

// Unary functions in MLX's names; the argument may be any array-like.
const UnaryDef kUnary[] = {
    {"abs", [](const array& a, StreamOrDevice s) { return abs(a, s); }, true, "Element-wise absolute value."},
    {"sign", [](const array& a, StreamOrDevice s) { return sign(a, s); }, true, "Element-wise sign (-1, 0 or 1)."},
    {"negative", [](const array& a, StreamOrDevice s) { return negative(a, s); }, true, "Element-wise negation."},
    {"square", [](const array& a, StreamOrDevice s) { return square(a, s); }, true, "Element-wise square."},
    {"sqrt", [](const array& a, StreamOrDevice s) { return sqrt(a, s); }, true, "Element-wise square root."},
    {"rsqrt", [](const array& a, StreamOrDevice s) { return rsqrt(a, s); }, true, "Element-wise 1 / sqrt(a)."},
    {"reciprocal", [](const array& a, StreamOrDevice s) { return reciprocal(a, s); }, true, "Element-wise 1 / a."},
    {"logical_not", [](const array& a, StreamOrDevice s) { return logical_not(a, s); }, true,
     "Element-wise logical not (the result is bool)."},
    {"exp", [](const array& a, StreamOrDevice s) { return exp(a, s); }, true, "Element-wise e**a."},
    {"expm1", [](const array& a, StreamOrDevice s) { return expm1(a, s); }, true, "Element-wise exp(a) - 1, accurate near 0."},
    {"erf", [](const array& a, StreamOrDevice s) { return erf(a, s); }, true, "Element-wise error function."},
    {"erfinv", [](const array& a, StreamOrDevice s) { return erfinv(a, s); }, true, "Element-wise inverse error function."},
    {"sin", [](const array& a, StreamOrDevice s) { return sin(a, s); }, true, "Element-wise sine."},
    {"cos", [](const array& a, StreamOrDevice s) { return cos(a, s); }, true, "Element-wise cosine."},
    {"tan", [](const array& a, StreamOrDevice s) { return tan(a, s); }, true, "Element-wise tangent."},
    {"arcsin", [](const array& a, StreamOrDevice s) { return arcsin(a, s); }, true, "Element-wise inverse sine."},
    {"arccos", [](const array& a, StreamOrDevice s) { return arccos(a, s); }, true, "Element-wise inverse cosine."},
    {"arctan", [](const array& a, StreamOrDevice s) { return arctan(a, s); }, true, "Element-wise inverse tangent."},
    {"sinh", [](const array& a, StreamOrDevice s) { return sinh(a, s); }, true, "Element-wise hyperbolic sine."},
    {"cosh", [](const array& a, StreamOrDevice s) { return cosh(a, s); }, true, "Element-wise hyperbolic cosine."},
    {"tanh", [](const array& a, StreamOrDevice s) { return tanh(a, s); }, true, "Element-wise hyperbolic tangent."},
    {"arcsinh", [](const array& a, StreamOrDevice s) { return arcsinh(a, s); }, true, "Element-wise inverse hyperbolic sine."},
    {"arccosh", [](const array& a, StreamOrDevice s) { return arccosh(a, s); }, true, "Element-wise inverse hyperbolic cosine."},
    {"arctanh", [](const array& a, StreamOrDevice s) { return arctanh(a, s); }, true, "Element-wise inverse hyperbolic tangent."},
    {"degrees", [](const array& a, StreamOrDevice s) { return degrees(a, s); }, true, "Radians to degrees, element-wise."},
    {"radians", [](const array& a, StreamOrDevice s) { return radians(a, s); }, true, "Degrees to radians, element-wise."},
    {"log", [](const array& a, StreamOrDevice s) { return log(a, s); }, true, "Element-wise natural logarithm."},
    {"log2", [](const array& a, StreamOrDevice s) { return log2(a, s); }, true, "Element-wise base-2 logarithm."},
    {"log10", [](const array& a, StreamOrDevice s) { return log10(a, s); }, true, "Element-wise base-10 logarithm."},
    {"log1p", [](const array& a, StreamOrDevice s) { return log1p(a, s); }, true, "Element-wise log(1 + a), accurate near 0."},
    {"stop_gradient", [](const array& a, StreamOrDevice s) { return stop_gradient(a, s); }, true,
     "The same values, with no gradient flowing back through them."},
    {"sigmoid", [](const array& a, StreamOrDevice s) { return sigmoid(a, s); }, true, "Element-wise logistic sigmoid 1 / (1 + exp(-a))."},
    {"floor", [](const array& a, StreamOrDevice s) { return floor(a, s); }, true, "Element-wise floor."},
    {"ceil", [](const array& a, StreamOrDevice s) { return ceil(a, s); }, true, "Element-wise ceiling."},
    {"isnan", [](const array& a, StreamOrDevice s) { return isnan(a, s); }, false, "Element-wise test for NaN."},
    {"isinf", [](const array& a, StreamOrDevice s) { return isinf(a, s); }, false, "Element-wise test for +-infinity."},
    {"isfinite", [](const array& a, StreamOrDevice s) { return isfinite(a, s); }, false,
     "Element-wise test for finite values (neither infinite nor NaN)."},
    {"isposinf", [](const array& a, StreamOrDevice s) { return isposinf(a, s); }, false, "Element-wise test for +infinity."},
    {"isneginf", [](const array& a, StreamOrDevice s) { return isneginf(a, s); }, false, "Element-wise test for -infinity."},
    {"conj", conj_fn, true, "Element-wise complex conjugate (real arrays are returned unchanged)."},
    {"conjugate", conj_fn, true, "Element-wise complex conjugate (as conj)."},
    {"real", [](const array& a, StreamOrDevice s) { return real(a, s); }, true, "The real part of a complex array."},
    {"imag", [](const array& a, StreamOrDevice s) { return imag(a, s); }, true, "The imaginary part of a complex array."},
    {"bitwise_invert", [](const array& a, StreamOrDevice s) { return bitwise_invert(a, s); }, false,
     "Element-wise bitwise not of an integer or bool array."},
    {"zeros_like", [](const array& a, StreamOrDevice s) { return zeros_like(a, s); }, true, "Zeros of a's shape and dtype."},
    {"ones_like", [](const array& a, StreamOrDevice s) { return ones_like(a, s); }, true, "Ones of a's shape and dtype."},
};

// Binary functions; operands are array-likes with MLX's weak Python scalars.
const BinaryDef kBinary[] = {
    {"add", [](const array& a, const array& b, StreamOrDevice s) { return add(a, b, s); }, false,
     "Element-wise a + b with broadcasting."},
    {"subtract", [](const array& a, const array& b, StreamOrDevice s) { return subtract(a, b, s); }, false,
     "Element-wise a - b with broadcasting."},
    {"multiply", [](const array& a, const array& b, StreamOrDevice s) { return multiply(a, b, s); }, false,
     "Element-wise a * b with broadcasting."},
    {"divide", [](const array& a, const array& b, StreamOrDevice s) { return divide(a, b, s); }, false,
     "Element-wise true division a / b (integers give floats)."},
    {"floor_divide", [](const array& a, const array& b, StreamOrDevice s) { return floor_divide(a, b, s); }, false,
     "Element-wise a // b."},
    {"remainder", [](const array& a, const array& b, StreamOrDevice s) { return remainder(a, b, s); }, false,
     "Element-wise a % b, with the sign of b (Python's convention)."},
    {"equal", [](const array& a, const array& b, StreamOrDevice s) { return equal(a, b, s); }, false, "Element-wise a == b."},
    {"not_equal", [](const array& a, const array& b, StreamOrDevice s) { return not_equal(a, b, s); }, false,
     "Element-wise a != b."},
    {"less", [](const array& a, const array& b, StreamOrDevice s) { return less(a, b, s); }, false, "Element-wise a < b."},
    {"less_equal", [](const array& a, const array& b, StreamOrDevice s) { return less_equal(a, b, s); }, false,
     "Element-wise a <= b."},
    {"greater", [](const array& a, const array& b, StreamOrDevice s) { return greater(a, b, s); }, false,
     "Element-wise a > b."},
    {"greater_equal", [](const array& a, const array& b, StreamOrDevice s) { return greater_equal(a, b, s); }, false,
     "Element-wise a >= b."},
    {"matmul", [](const array& a, const array& b, StreamOrDevice s) { return matmul(a, b, s); }, true,
     "Matrix product with NumPy's rules for 1-D operands and broadcast batch dimensions."},
    {"logical_and", [](const array& a, const array& b, StreamOrDevice s) { return logical_and(a, b, s); }, true,
     "Element-wise logical and (the result is bool)."},
    {"logical_or", [](const array& a, const array& b, StreamOrDevice s) { return logical_or(a, b, s); }, true,
     "Element-wise logical or (the result is bool)."},
    {"logaddexp", [](const array& a, const array& b, StreamOrDevice s) { return logaddexp(a, b, s); }, true,
     "Element-wise log(exp(a) + exp(b)), computed stably."},
    {"arctan2", [](const array& a, const array& b, StreamOrDevice s) { return arctan2(a, b, s); }, true,
     "Element-wise arctangent of a / b, using the signs of both for the quadrant."},
    {"power", [](const array& a, const array& b, StreamOrDevice s) { return power(a, b, s); }, true,
     "Element-wise a ** b."},
    {"minimum", [](const array& a, const array& b, StreamOrDevice s) { return minimum(a, b, s); }, true,
     "Element-wise minimum (NaN propagates)."},
    {"maximum", [](const array& a, const array& b, StreamOrDevice s) { return maximum(a, b, s); }, true,
     "Element-wise maximum (NaN propagates)."},
    {"kron", [](const array& a, const array& b, StreamOrDevice s) { return kron(a, b, s); }, true,
     "Kronecker product of two arrays."},
    {"inner", [](const array& a, const array& b, StreamOrDevice s) { return inner(a, b, s); }, true,
     "Inner product over the last axes of a and b."},
    {"outer", [](const array& a, const array& b, StreamOrDevice s) { return outer(a, b, s); }, true,
     "Outer product of the flattened a and b."},
    {"bitwise_and", [](const array& a, const array& b, StreamOrDevice s) { return bitwise_and(a, b, s); }, false,
     "Element-wise bitwise and."},
    {"bitwise_or", [](const array& a, const array& b, StreamOrDevice s) { return bitwise_or(a, b, s); }, false,
     "Element-wise bitwise or."},
    {"bitwise_xor", [](const array& a, const array& b, StreamOrDevice s) { return bitwise_xor(a, b, s); }, false,
     "Element-wise bitwise xor."},
    {"left_shift", [](const array& a, const array& b, StreamOrDevice s) { return left_shift(a, b, s); }, false,
     "Element-wise a << b."},
    {"right_shift", [](const array& a, const array& b, StreamOrDevice s) { return right_shift(a, b, s); }, false,
     "Element-wise a >> b."},
};

}  // namespace

array round_op(const array& a, int decimals, StreamOrDevice s) { return decimals == 0 ? round(a, s) : round(a, decimals, s); }

void init_ops_elementwise(nb::module_& m) {
  for (const auto& d : kUnary) {
    UnaryFn fn = d.fn;
    const char* name = d.name;
    auto f = [fn, name](nb::handle a, nb::handle stream) { return fn(arr(a, name), S(stream)); };
    if (d.kw_only) {
      m.def(d.name, f, "a"_a, nb::kw_only(), KILN_STREAM, d.doc);
    } else {
      m.def(d.name, f, "a"_a, KILN_STREAM, d.doc);
    }
  }
  for (const auto& d : kBinary) {
    BinaryFn fn = d.fn;
    const char* name = d.name;
    auto f = [fn, name](nb::handle a, nb::handle b, nb::handle stream) {
      auto [x, y] = to_arrays(a, b, name);
      return fn(x, y, S(stream));
    };
    if (d.kw_only) {
      m.def(d.name, f, "a"_a, "b"_a, nb::kw_only(), KILN_STREAM, d.doc);
    } else {
      m.def(d.name, f, "a"_a, "b"_a, KILN_STREAM, d.doc);
    }
  }

  m.def(
      "divmod",
      [](nb::handle a, nb::handle b, nb::handle stream) {
        auto [x, y] = to_arrays(a, b, "divmod");
        return arrays_tuple(divmod(x, y, S(stream)));
      },
      "a"_a, "b"_a, KILN_STREAM, "Element-wise (a // b, a % b) as a tuple of two arrays.");
  m.def(
      "where",
      [](nb::handle c, nb::handle x, nb::handle y, nb::handle stream) {
        auto v = to_arrays(std::vector<nb::handle>{c, x, y}, "where");
        return where(v[0], v[1], v[2], S(stream));
      },
      "condition"_a, "x"_a, "y"_a, nb::kw_only(), KILN_STREAM,
      "Elements of x where condition is true and of y elsewhere, all three broadcast together.");
  m.def(
      "clip",
      [](nb::handle a, nb::handle a_min, nb::handle a_max, nb::handle stream) {
        if (a_min.is_none() && a_max.is_none()) {
          throw std::invalid_argument("[clip] At most one of a_min and a_max may be None, found both None.");
        }
        std::vector<nb::handle> hs{a};
        if (!a_min.is_none()) hs.push_back(a_min);
        if (!a_max.is_none()) hs.push_back(a_max);
        auto v = to_arrays(hs, "clip");
        std::optional<array> lo, hi;
        size_t i = 1;
        if (!a_min.is_none()) lo = v[i++];
        if (!a_max.is_none()) hi = v[i++];
        return clip(v[0], lo, hi, S(stream));
      },
      "a"_a, "a_min"_a.none(), "a_max"_a.none(), nb::kw_only(), KILN_STREAM,
      "Values of a limited to [a_min, a_max]; either bound may be None.");
  m.def(
      "isclose",
      [](nb::handle a, nb::handle b, double rtol, double atol, bool equal_nan, nb::handle stream) {
        auto [x, y] = to_arrays(a, b, "isclose");
        return isclose(x, y, rtol, atol, equal_nan, S(stream));
      },
      "a"_a, "b"_a, "rtol"_a = 1e-5, "atol"_a = 1e-8, nb::kw_only(), "equal_nan"_a = false, KILN_STREAM,
      "Element-wise |a - b| <= atol + rtol * |b|.");
  m.def(
      "allclose",
      [](nb::handle a, nb::handle b, double rtol, double atol, bool equal_nan, nb::handle stream) {
        auto [x, y] = to_arrays(a, b, "allclose");
        return allclose(x, y, rtol, atol, equal_nan, S(stream));
      },
      "a"_a, "b"_a, "rtol"_a = 1e-5, "atol"_a = 1e-8, nb::kw_only(), "equal_nan"_a = false, KILN_STREAM,
      "Whether every element of a is close to b (a bool scalar array).");
  m.def(
      "array_equal",
      [](nb::handle a, nb::handle b, bool equal_nan, nb::handle stream) {
        auto [x, y] = to_arrays(a, b, "array_equal");
        return array_equal(x, y, equal_nan, S(stream));
      },
      "a"_a, "b"_a, "equal_nan"_a = false, KILN_STREAM,
      "Whether a and b have the same shape and equal values (dtypes may differ).");
  m.def(
      "nan_to_num",
      [](nb::handle a, float nan, std::optional<float> posinf, std::optional<float> neginf, nb::handle stream) {
        return nan_to_num(arr(a, "nan_to_num"), nan, posinf, neginf, S(stream));
      },
      "a"_a, "nan"_a = 0.0f, "posinf"_a.none() = nb::none(), "neginf"_a.none() = nb::none(), nb::kw_only(),
      KILN_STREAM, "Replaces NaN with `nan` and infinities with posinf / neginf (default: the dtype's extremes).");
  m.def(
      "round",
      [](nb::handle a, int decimals, nb::handle stream) { return round_op(arr(a, "round"), decimals, S(stream)); },
      "a"_a, "decimals"_a = 0, KILN_STREAM, "Rounds to the given number of decimals (halves to even).");
  m.def(
      "view",
      [](nb::handle a, const Dtype& dtype, nb::handle stream) { return view(arr(a, "view"), dtype, S(stream)); },
      "a"_a, "dtype"_a, KILN_STREAM, "The same bytes read as another dtype (the last axis is rescaled).");
}

}  // namespace kiln::py
