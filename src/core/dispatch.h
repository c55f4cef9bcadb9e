// Dtype dispatch and value conversion, used by core (array conversion, printing) and by every backend's
// kernels. Dispatch happens once per call, outside the element loop: the callable receives a value of
// the C++ element type as a tag.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kiln/dtype.h"

namespace kiln::detail {

template <typename T>
inline constexpr bool is_half_v = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;
template <typename T>
inline constexpr bool is_complex_v = std::is_same_v<T, complex64_t>;
template <typename T>
inline constexpr bool is_float_v = std::is_floating_point_v<T> || is_half_v<T>;

// The type arithmetic is done in: float for the 16-bit floats, the type itself otherwise.
template <typename T>
using acc_t = std::conditional_t<is_half_v<T>, float, T>;

// Floating to integer as an x86 CPU converts (NaN and out-of-range values give the minimum of a
// signed type), without the undefined behaviour of a plain static_cast.
template <typename To, typename From>
inline To float_to_int(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_signed_v<To>) {
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    constexpr double hi = -lo;  // 2^(bits-1)
    double d = static_cast<double>(v);
    if (!(d >= lo && d < hi)) {
      if constexpr (sizeof(To) >= 4) return std::numeric_limits<To>::min();
      // 8- and 16-bit targets go through int32 on x86 and wrap.
      return static_cast<To>(float_to_int<int32_t>(v));
    }
    return static_cast<To>(v);
  } else {
    double d = static_cast<double>(v);
    if (!(d > -1.0 && d < 18446744073709551616.0)) {
      if (d < 0 && d > -9223372036854775808.0) return static_cast<To>(static_cast<int64_t>(d));
      // x86 converts to uint64 as x < 2^63 ? cvt(x) : cvt(x - 2^63) ^ 2^63, so +inf and x >= 2^64 give 0
      // (as MLX: astype(inf, uint64) is 0) and NaN, -inf and x <= -2^63 give 2^63.
      if (sizeof(To) == 8 && d >= 18446744073709551616.0) return To(0);
      return sizeof(To) == 8 ? static_cast<To>(0x8000000000000000ull) : To(0);
    }
    if constexpr (sizeof(To) < 8) {
      return static_cast<To>(static_cast<uint64_t>(d));
    } else {
      return static_cast<To>(v);
    }
  }
}

template <typename To, typename From>
inline To cast_to(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_complex_v<From>) {
    if constexpr (std::is_same_v<To, bool>) return v != From(0);
    else return cast_to<To>(v.real());
  } else if constexpr (is_complex_v<To>) {
    return To(cast_to<float>(v), 0.0f);
  } else if constexpr (is_half_v<From>) {
    return cast_to<To>(static_cast<float>(v));
  } else if constexpr (is_half_v<To>) {
    if constexpr (std::is_same_v<From, double>) return To(static_cast<float>(v));
    else return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    return float_to_int<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <typename F>
decltype(auto) dispatch_all(Dtype t, F&& f) {
  switch (t.val) {
    case Dtype::Val::bool_: return f(bool{});
    case Dtype::Val::uint8: return f(uint8_t{});
    case Dtype::Val::uint16: return f(uint16_t{});
    case Dtype::Val::uint32: return f(uint32_t{});
    case Dtype::Val::uint64: return f(uint64_t{});
    case Dtype::Val::int8: return f(int8_t{});
    case Dtype::Val::int16: return f(int16_t{});
    case Dtype::Val::int32: return f(int32_t{});
    case Dtype::Val::int64: return f(int64_t{});
    case Dtype::Val::float16: return f(float16_t{});
    case Dtype::Val::float32: return f(float{});
    case Dtype::Val::float64: return f(double{});
    case Dtype::Val::bfloat16: return f(bfloat16_t{});
    case Dtype::Val::complex64: return f(complex64_t{});
  }
  throw std::logic_error("[dispatch] Unknown dtype code " + std::to_string(t.code()) + " (expected 0..13).");
}

// Real (non-complex) types only; complex throws with `api` in the message.
template <typename F>
decltype(auto) dispatch_real(Dtype t, const char* api, F&& f) {
  if (t == complex64) throw std::invalid_argument(std::string("[") + api + "] complex64 is not supported.");
  return dispatch_all(t, [&](auto tag) -> decltype(auto) {
    if constexpr (is_complex_v<decltype(tag)>) return f(float{});  // unreachable
    else return f(tag);
  });
}

// Floating types only (float16, bfloat16, float32, float64).
template <typename F>
decltype(auto) dispatch_float(Dtype t, const char* api, F&& f) {
  switch (t.val) {
    case Dtype::Val::float16: return f(float16_t{});
    case Dtype::Val::float32: return f(float{});
    case Dtype::Val::float64: return f(double{});
    case Dtype::Val::bfloat16: return f(bfloat16_t{});
    default:
      throw std::invalid_argument(std::string("[") + api + "] Expected a floating point dtype but found " +
                                  dtype_name(t) + ".");
  }
}

}  // namespace kiln::detail
