// kiln ops: element-wise unary, binary and ternary operations, casts, bit views and comparisons.
// Names and signatures follow mlx/ops.h.
#pragma once

#include <optional>
#include <type_traits>

#include "kiln/array.h"

namespace kiln {

namespace detail {
// Types a scalar operand of an array operator may have (so `std::cout << x` is not an array shift).
template <typename T>
concept ScalarOperand = std::is_arithmetic_v<T> || std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t> ||
                        std::is_same_v<T, complex64_t> || std::is_same_v<T, std::complex<float>>;
}  // namespace detail

// ---- casts and views ----
array astype(array a, Dtype dtype, StreamOrDevice s = {});
array view(const array& a, const Dtype& dtype, StreamOrDevice s = {});
array stop_gradient(const array& a, StreamOrDevice s = {});
array copy(array a, StreamOrDevice s = {});

// ---- unary ----
array abs(const array& a, StreamOrDevice s = {});
array negative(const array& a, StreamOrDevice s = {});
array sign(const array& a, StreamOrDevice s = {});
array logical_not(const array& a, StreamOrDevice s = {});
array floor(const array& a, StreamOrDevice s = {});
array ceil(const array& a, StreamOrDevice s = {});
array round(const array& a, int decimals, StreamOrDevice s = {});
array round(const array& a, StreamOrDevice s = {});
array square(const array& a, StreamOrDevice s = {});
array sqrt(const array& a, StreamOrDevice s = {});
array rsqrt(const array& a, StreamOrDevice s = {});
array reciprocal(const array& a, StreamOrDevice s = {});
array exp(const array& a, StreamOrDevice s = {});
array expm1(const array& a, StreamOrDevice s = {});
array log(const array& a, StreamOrDevice s = {});
array log2(const array& a, StreamOrDevice s = {});
array log10(const array& a, StreamOrDevice s = {});
array log1p(const array& a, StreamOrDevice s = {});
array sigmoid(const array& a, StreamOrDevice s = {});
array erf(const array& a, StreamOrDevice s = {});
array erfinv(const array& a, StreamOrDevice s = {});
array sin(const array& a, StreamOrDevice s = {});
array cos(const array& a, StreamOrDevice s = {});
array tan(const array& a, StreamOrDevice s = {});
array arcsin(const array& a, StreamOrDevice s = {});
array arccos(const array& a, StreamOrDevice s = {});
array arctan(const array& a, StreamOrDevice s = {});
array sinh(const array& a, StreamOrDevice s = {});
array cosh(const array& a, StreamOrDevice s = {});
array tanh(const array& a, StreamOrDevice s = {});
array arcsinh(const array& a, StreamOrDevice s = {});
array arccosh(const array& a, StreamOrDevice s = {});
array arctanh(const array& a, StreamOrDevice s = {});
array degrees(const array& a, StreamOrDevice s = {});
array radians(const array& a, StreamOrDevice s = {});
array conjugate(const array& a, StreamOrDevice s = {});
array real(const array& a, StreamOrDevice s = {});
array imag(const array& a, StreamOrDevice s = {});
array isnan(const array& a, StreamOrDevice s = {});
array isinf(const array& a, StreamOrDevice s = {});
array isfinite(const array& a, StreamOrDevice s = {});
array isposinf(const array& a, StreamOrDevice s = {});
array isneginf(const array& a, StreamOrDevice s = {});
array bitwise_invert(const array& a, StreamOrDevice s = {});

// ---- binary (NumPy broadcasting, MLX type promotion) ----
array add(const array& a, const array& b, StreamOrDevice s = {});
array subtract(const array& a, const array& b, StreamOrDevice s = {});
array multiply(const array& a, const array& b, StreamOrDevice s = {});
array divide(const array& a, const array& b, StreamOrDevice s = {});
array floor_divide(const array& a, const array& b, StreamOrDevice s = {});
array remainder(const array& a, const array& b, StreamOrDevice s = {});
std::vector<array> divmod(const array& a, const array& b, StreamOrDevice s = {});
array power(const array& a, const array& b, StreamOrDevice s = {});
array maximum(const array& a, const array& b, StreamOrDevice s = {});
array minimum(const array& a, const array& b, StreamOrDevice s = {});
array arctan2(const array& a, const array& b, StreamOrDevice s = {});
array logaddexp(const array& a, const array& b, StreamOrDevice s = {});
array equal(const array& a, const array& b, StreamOrDevice s = {});
array not_equal(const array& a, const array& b, StreamOrDevice s = {});
array greater(const array& a, const array& b, StreamOrDevice s = {});
array greater_equal(const array& a, const array& b, StreamOrDevice s = {});
array less(const array& a, const array& b, StreamOrDevice s = {});
array less_equal(const array& a, const array& b, StreamOrDevice s = {});
array logical_and(const array& a, const array& b, StreamOrDevice s = {});
array logical_or(const array& a, const array& b, StreamOrDevice s = {});
array bitwise_and(const array& a, const array& b, StreamOrDevice s = {});
array bitwise_or(const array& a, const array& b, StreamOrDevice s = {});
array bitwise_xor(const array& a, const array& b, StreamOrDevice s = {});
array left_shift(const array& a, const array& b, StreamOrDevice s = {});
array right_shift(const array& a, const array& b, StreamOrDevice s = {});

// ---- ternary and composites ----
array where(const array& condition, const array& x, const array& y, StreamOrDevice s = {});
array clip(const array& a, const std::optional<array>& a_min, const std::optional<array>& a_max,
           StreamOrDevice s = {});
array isclose(const array& a, const array& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false,
              StreamOrDevice s = {});
array allclose(const array& a, const array& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false,
               StreamOrDevice s = {});
array array_equal(const array& a, const array& b, bool equal_nan, StreamOrDevice s = {});
// NaN -> `nan`, +inf -> posinf (default: the dtype's largest value), -inf -> neginf (default: its lowest).
array nan_to_num(const array& a, float nan = 0.0f, const std::optional<float> posinf = std::nullopt,
                 const std::optional<float> neginf = std::nullopt, StreamOrDevice s = {});
inline array array_equal(const array& a, const array& b, StreamOrDevice s = {}) {
  return array_equal(a, b, false, s);
}

// ---- operators (element-wise; == returns an array, as in MLX) ----
array operator-(const array& a);
array operator!(const array& a);
array operator~(const array& a);
#define KILN_BINARY_OPERATOR(OP, FN)                          \
  array operator OP(const array& a, const array& b);          \
  template <detail::ScalarOperand T>                          \
  array operator OP(T a, const array& b) {                    \
    return FN(array(a), b);                                   \
  }                                                           \
  template <detail::ScalarOperand T>                          \
  array operator OP(const array& a, T b) {                    \
    return FN(a, array(b));                                   \
  }
KILN_BINARY_OPERATOR(+, add)
KILN_BINARY_OPERATOR(-, subtract)
KILN_BINARY_OPERATOR(*, multiply)
KILN_BINARY_OPERATOR(/, divide)
KILN_BINARY_OPERATOR(%, remainder)
KILN_BINARY_OPERATOR(==, equal)
KILN_BINARY_OPERATOR(!=, not_equal)
KILN_BINARY_OPERATOR(<, less)
KILN_BINARY_OPERATOR(<=, less_equal)
KILN_BINARY_OPERATOR(>, greater)
KILN_BINARY_OPERATOR(>=, greater_equal)
KILN_BINARY_OPERATOR(&&, logical_and)
KILN_BINARY_OPERATOR(||, logical_or)
KILN_BINARY_OPERATOR(&, bitwise_and)
KILN_BINARY_OPERATOR(|, bitwise_or)
KILN_BINARY_OPERATOR(^, bitwise_xor)
KILN_BINARY_OPERATOR(<<, left_shift)
KILN_BINARY_OPERATOR(>>, right_shift)
#undef KILN_BINARY_OPERATOR

}  // namespace kiln
