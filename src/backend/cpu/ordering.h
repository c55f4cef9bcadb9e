// MLX's ordering of values in the CPU kernels (sort, partition, searchsorted, max/min reductions,
// arg-reductions, scans and scatter): complex numbers compare lexicographically, real part first;
// 16-bit floats compare through float. NaN is the callers' business, except in nan_last_less.
#pragma once

#include <cmath>

#include "core/dispatch.h"

namespace kiln::cpu {

// a < b in MLX's order (no NaN handling: a comparison with NaN is false, as the built-in one).
template <typename T>
inline bool ordered_less(const T& a, const T& b) {
  if constexpr (detail::is_complex_v<T>) {
    return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
  } else {
    return static_cast<detail::acc_t<T>>(a) < static_cast<detail::acc_t<T>>(b);
  }
}

// a > b in MLX's order.
template <typename T>
inline bool ordered_greater(const T& a, const T& b) {
  return ordered_less(b, a);
}

// Whether v is NaN: a complex value when either part is.
template <typename T>
inline bool is_nan_value(T v) {
  if constexpr (detail::is_complex_v<T>) return std::isnan(v.real()) || std::isnan(v.imag());
  else if constexpr (detail::is_float_v<T>) return std::isnan(static_cast<float>(static_cast<detail::acc_t<T>>(v)));
  else return false;
}

// The order of sort and searchsorted: ordered_less with every NaN after every number.
template <typename T>
inline bool nan_last_less(T a, T b) {
  if constexpr (detail::is_float_v<T> || detail::is_complex_v<T>) {
    if (is_nan_value(a)) return false;
    if (is_nan_value(b)) return true;
  }
  return ordered_less(a, b);
}

}  // namespace kiln::cpu
