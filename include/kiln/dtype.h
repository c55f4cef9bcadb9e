// kiln: data types. Codes, sizes and promotion follow MLX (see the format spec, 1.5 and Appendix A).
#pragma once

#include <complex>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <type_traits>

namespace kiln {

// IEEE binary16, stored as bits; arithmetic goes through float.
struct float16_t {
  uint16_t bits = 0;
  float16_t() = default;
  float16_t(float f) : bits(from_float(f)) {}
  float16_t(double d) : float16_t(static_cast<float>(d)) {}
  template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
  float16_t(T v) : float16_t(static_cast<float>(v)) {}
  operator float() const { return to_float(bits); }
  static float16_t from_bits(uint16_t b) {
    float16_t h;
    h.bits = b;
    return h;
  }
  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) {  // inf or nan
      return static_cast<uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
    }
    if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
    if (ax < 0x38800000u) {  // subnormal half or zero: round via float addition trick
      float a;
      std::memcpy(&a, &ax, 4);
      a += 0.5f;  // 2^-1 shifts the mantissa so the low bits hold the half subnormal
      uint32_t r;
      std::memcpy(&r, &a, 4);
      return static_cast<uint16_t>(sign | (r - 0x3f000000u));
    }
    uint32_t mant_odd = (ax >> 13) & 1u;
    ax += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
    return static_cast<uint16_t>(sign | (ax >> 13));
  }
  static float to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t out;
    if (exp == 0x1f) {
      out = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
      if (mant == 0) {
        out = sign;
      } else {  // subnormal: value = mant * 2^-24
        float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
        std::memcpy(&out, &v, 4);
        out |= sign;
      }
    } else {
      out = sign | ((exp + 112u) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &out, 4);
    return f;
  }
};

// bfloat16: the top 16 bits of a binary32, rounded to nearest even.
struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  bfloat16_t(float f) : bits(from_float(f)) {}
  bfloat16_t(double d) : bfloat16_t(static_cast<float>(d)) {}
  template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
  bfloat16_t(T v) : bfloat16_t(static_cast<float>(v)) {}
  operator float() const {
    uint32_t x = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
  }
  static bfloat16_t from_bits(uint16_t b) {
    bfloat16_t h;
    h.bits = b;
    return h;
  }
  static uint16_t from_float(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
    x += 0x7fffu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
  }
};

// complex64's element type, as MLX's: a std::complex<float> that also converts to float (its real
// part; doctest::Approx and float-typed code take it so) and is made from any value that converts to
// float (as the real part).
struct complex64_t : std::complex<float> {
  constexpr complex64_t() = default;
  constexpr complex64_t(float re, float im) : std::complex<float>(re, im) {}
  constexpr complex64_t(const std::complex<float>& c) : std::complex<float>(c) {}
  template <typename T>
    requires(!std::is_same_v<std::remove_cvref_t<T>, complex64_t> &&
             !std::is_same_v<std::remove_cvref_t<T>, std::complex<float>> && std::is_convertible_v<T, float>)
  constexpr complex64_t(T x) : std::complex<float>(static_cast<float>(x)) {}
  constexpr operator float() const { return real(); }
};

struct Dtype {
  enum class Val : int32_t {
    bool_ = 0,
    uint8 = 1,
    uint16 = 2,
    uint32 = 3,
    uint64 = 4,
    int8 = 5,
    int16 = 6,
    int32 = 7,
    int64 = 8,
    float16 = 9,
    float32 = 10,
    float64 = 11,
    bfloat16 = 12,
    complex64 = 13,
  };
  enum class Kind { b, u, i, f, V, c };
  enum class Category {
    complexfloating,
    floating,
    inexact,
    signedinteger,
    unsignedinteger,
    integer,
    number,
    generic
  };
  static constexpr int num_types = 14;

  Val val;
  uint8_t size;
  constexpr Dtype(Val v, uint8_t s) : val(v), size(s) {}
  constexpr operator Val() const { return val; }
  constexpr int code() const { return static_cast<int>(val); }
};

inline constexpr Dtype bool_{Dtype::Val::bool_, 1};
inline constexpr Dtype uint8{Dtype::Val::uint8, 1};
inline constexpr Dtype uint16{Dtype::Val::uint16, 2};
inline constexpr Dtype uint32{Dtype::Val::uint32, 4};
inline constexpr Dtype uint64{Dtype::Val::uint64, 8};
inline constexpr Dtype int8{Dtype::Val::int8, 1};
inline constexpr Dtype int16{Dtype::Val::int16, 2};
inline constexpr Dtype int32{Dtype::Val::int32, 4};
inline constexpr Dtype int64{Dtype::Val::int64, 8};
inline constexpr Dtype float16{Dtype::Val::float16, 2};
inline constexpr Dtype float32{Dtype::Val::float32, 4};
inline constexpr Dtype float64{Dtype::Val::float64, 8};
inline constexpr Dtype bfloat16{Dtype::Val::bfloat16, 2};
inline constexpr Dtype complex64{Dtype::Val::complex64, 8};

inline constexpr Dtype::Category complexfloating = Dtype::Category::complexfloating;
inline constexpr Dtype::Category floating = Dtype::Category::floating;
inline constexpr Dtype::Category inexact = Dtype::Category::inexact;
inline constexpr Dtype::Category signedinteger = Dtype::Category::signedinteger;
inline constexpr Dtype::Category unsignedinteger = Dtype::Category::unsignedinteger;
inline constexpr Dtype::Category integer = Dtype::Category::integer;
inline constexpr Dtype::Category number = Dtype::Category::number;
inline constexpr Dtype::Category generic = Dtype::Category::generic;

inline constexpr bool operator==(Dtype a, Dtype b) { return a.val == b.val; }
inline constexpr bool operator!=(Dtype a, Dtype b) { return a.val != b.val; }

// The dtype with MLX numeric code `code`; throws std::invalid_argument for codes outside 0..13.
Dtype dtype_from_code(int code);
inline constexpr uint8_t size_of(Dtype t) { return t.size; }
Dtype::Kind kind(Dtype t);
// MLX's name for kind().
inline Dtype::Kind kindof(Dtype t) { return kind(t); }
Dtype promote_types(Dtype a, Dtype b);
bool issubdtype(Dtype a, Dtype b);
bool issubdtype(Dtype a, Dtype::Category c);
bool issubdtype(Dtype::Category a, Dtype b);
bool issubdtype(Dtype::Category a, Dtype::Category b);
// Name as MLX prints it: "float32", "bool", ...
std::string dtype_name(Dtype t);
// Parse a name written by dtype_name; throws std::invalid_argument naming the bad text.
Dtype dtype_from_name(const std::string& name);
std::ostream& operator<<(std::ostream& os, Dtype t);

inline bool is_floating_point(Dtype t) {
  return t == float16 || t == float32 || t == float64 || t == bfloat16;
}
inline bool is_complex(Dtype t) { return t == complex64; }
inline bool is_inexact(Dtype t) { return is_floating_point(t) || is_complex(t); }
inline bool is_integral(Dtype t) { return !is_inexact(t) && t != bool_; }
inline bool is_unsigned(Dtype t) {
  return t == uint8 || t == uint16 || t == uint32 || t == uint64;
}

template <typename T>
struct TypeToDtype;
template <> struct TypeToDtype<bool> { static constexpr Dtype value = bool_; };
template <> struct TypeToDtype<uint8_t> { static constexpr Dtype value = uint8; };
template <> struct TypeToDtype<uint16_t> { static constexpr Dtype value = uint16; };
template <> struct TypeToDtype<uint32_t> { static constexpr Dtype value = uint32; };
template <> struct TypeToDtype<uint64_t> { static constexpr Dtype value = uint64; };
template <> struct TypeToDtype<int8_t> { static constexpr Dtype value = int8; };
template <> struct TypeToDtype<int16_t> { static constexpr Dtype value = int16; };
template <> struct TypeToDtype<int32_t> { static constexpr Dtype value = int32; };
template <> struct TypeToDtype<int64_t> { static constexpr Dtype value = int64; };
template <> struct TypeToDtype<float16_t> { static constexpr Dtype value = float16; };
template <> struct TypeToDtype<float> { static constexpr Dtype value = float32; };
template <> struct TypeToDtype<double> { static constexpr Dtype value = float32; };  // as MLX: Python floats are float32
template <> struct TypeToDtype<bfloat16_t> { static constexpr Dtype value = bfloat16; };
template <> struct TypeToDtype<complex64_t> { static constexpr Dtype value = complex64; };
template <> struct TypeToDtype<std::complex<float>> { static constexpr Dtype value = complex64; };
#if defined(__LP64__) && !defined(__APPLE__)
template <> struct TypeToDtype<long long> { static constexpr Dtype value = int64; };
template <> struct TypeToDtype<unsigned long long> { static constexpr Dtype value = uint64; };
#endif
template <typename T>
inline constexpr Dtype dtype_of = TypeToDtype<std::remove_cv_t<T>>::value;
// The dtype whose storage matches T exactly (double is float64 here, unlike dtype_of).
template <typename T>
inline constexpr Dtype storage_dtype_of = std::is_same_v<std::remove_cv_t<T>, double> ? float64 : dtype_of<T>;

}  // namespace kiln
