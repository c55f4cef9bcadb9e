// Dispatch of the vector math (vmath.h) by cpu::isa_level(), and its portable level: MLX's polynomials
// from elementwise_math.h and the C library, element by element, exactly what the element-wise
// kernels computed before the vector levels existed.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-math-errno", "no-trapping-math")  // as elementwise_common.h: loops vectorize
#endif

#include "backend/cpu/vmath.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernels/elementwise/elementwise_math.h"

namespace kiln::cpu {

namespace {

using vmath_detail::Table;

template <typename F>
void each(const float* in, float* out, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) out[i] = f(in[i]);
}
template <typename F>
void each2(const float* a, const float* b, float* out, size_t n, F f) {
  for (size_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
}

float sigmoid_scalar(float x) {
  float y = 1.0f / (1.0f + ew::exp_f(std::fabs(x)));
  return x < 0.0f ? y : 1.0f - y;
}
float erf_scalar(float x) {
  float r = ew::erf_f(x);
  return x > 0.0f ? r : -r;
}
float logaddexp_scalar(float x, float y) {
  float hi = x != x ? x : (x > y ? x : y);
  float lo = x != x ? x : (x < y ? x : y);
  const float inf = std::numeric_limits<float>::infinity();
  if (lo == -inf || hi == inf) return hi;
  return hi + std::log1p(ew::exp_f(lo - hi));
}

#define KILN_SCALAR_U(name, expr) \
  void name(const float* in, float* out, size_t n) { each(in, out, n, [](float x) { return expr; }); }
KILN_SCALAR_U(s_exp, ew::exp_f(x))
KILN_SCALAR_U(s_sin, ew::sincos_f<true>(x))
KILN_SCALAR_U(s_cos, ew::sincos_f<false>(x))
KILN_SCALAR_U(s_sigmoid, sigmoid_scalar(x))
KILN_SCALAR_U(s_erf, erf_scalar(x))
KILN_SCALAR_U(s_tan, std::tan(x))
KILN_SCALAR_U(s_tanh, std::tanh(x))
KILN_SCALAR_U(s_sinh, std::sinh(x))
KILN_SCALAR_U(s_cosh, std::cosh(x))
KILN_SCALAR_U(s_asin, std::asin(x))
KILN_SCALAR_U(s_acos, std::acos(x))
KILN_SCALAR_U(s_atan, std::atan(x))
KILN_SCALAR_U(s_asinh, std::asinh(x))
KILN_SCALAR_U(s_acosh, std::acosh(x))
KILN_SCALAR_U(s_atanh, std::atanh(x))
KILN_SCALAR_U(s_log, std::log(x))
KILN_SCALAR_U(s_log2, std::log2(x))
KILN_SCALAR_U(s_log10, std::log10(x))
KILN_SCALAR_U(s_log1p, std::log1p(x))
KILN_SCALAR_U(s_expm1, std::expm1(x))
KILN_SCALAR_U(s_sqrt, std::sqrt(x))
KILN_SCALAR_U(s_rsqrt, 1.0f / std::sqrt(x))
KILN_SCALAR_U(s_abs, std::fabs(x))
KILN_SCALAR_U(s_neg, -x)
KILN_SCALAR_U(s_square, x * x)
#undef KILN_SCALAR_U

void s_pow(const float* a, const float* b, float* out, size_t n) {
  each2(a, b, out, n, [](float x, float y) { return std::pow(x, y); });
}
void s_atan2(const float* a, const float* b, float* out, size_t n) {
  each2(a, b, out, n, [](float x, float y) { return std::atan2(x, y); });
}
void s_logaddexp(const float* a, const float* b, float* out, size_t n) {
  each2(a, b, out, n, logaddexp_scalar);
}
void s_add(const float* a, const float* b, float* out, size_t n) { each2(a, b, out, n, std::plus<float>()); }
void s_sub(const float* a, const float* b, float* out, size_t n) { each2(a, b, out, n, std::minus<float>()); }
void s_mul(const float* a, const float* b, float* out, size_t n) { each2(a, b, out, n, std::multiplies<float>()); }
void s_div(const float* a, const float* b, float* out, size_t n) { each2(a, b, out, n, std::divides<float>()); }
void s_max(const float* a, const float* b, float* out, size_t n) {
  each2(a, b, out, n, [](float x, float y) { return x != x ? x : (x > y ? x : y); });
}
void s_min(const float* a, const float* b, float* out, size_t n) {
  each2(a, b, out, n, [](float x, float y) { return x != x ? x : (x < y ? x : y); });
}

template <typename F>
void s_cmp(const float* a, const float* b, bool* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = F()(a[i], b[i]);
}
// The condition read as bytes (any nonzero byte is true, as the vector levels read it); the bits copied.
void s_select(const bool* c, const float* a, const float* b, float* out, size_t n) {
  const unsigned char* cb = reinterpret_cast<const unsigned char*>(c);
  for (size_t i = 0; i < n; ++i) std::memcpy(out + i, cb[i] ? a + i : b + i, sizeof(float));
}

constexpr Table kScalar = {
    {s_exp, s_sin, s_cos, s_sigmoid, s_erf, s_tan, s_tanh, s_sinh, s_cosh, s_asin, s_acos, s_atan, s_asinh,
     s_acosh, s_atanh, s_log, s_log2, s_log10, s_log1p, s_expm1, s_sqrt, s_rsqrt, s_abs, s_neg, s_square},
    {s_pow, s_atan2, s_logaddexp, s_add, s_sub, s_mul, s_div, s_max, s_min},
    {s_cmp<std::equal_to<float>>, s_cmp<std::not_equal_to<float>>, s_cmp<std::greater<float>>,
     s_cmp<std::greater_equal<float>>, s_cmp<std::less<float>>, s_cmp<std::less_equal<float>>},
    s_select};
static_assert(static_cast<int>(VUnary::kCount) == 25 && static_cast<int>(VBinary::kCount) == 9 &&
              static_cast<int>(VCompare::kCount) == 6);

const Table& table_for(Isa isa) {
  const Table* t = nullptr;
  if (isa >= Isa::avx512) t = vmath_detail::table_avx512();
  if (t == nullptr && isa >= Isa::avx2) t = vmath_detail::table_avx2();
  return t != nullptr ? *t : kScalar;
}

const Table& checked_table(Isa isa) {
  if (isa > isa_detected())
    throw std::invalid_argument(std::string("vmath: ISA level ") + isa_name(isa) + " requested, this CPU has at most " +
                                isa_name(isa_detected()));
  return table_for(isa);
}

const Table& current() {
  static const Table& t = table_for(isa_level());
  return t;
}

}  // namespace

// In double precision and rounded once: within half an ULP and a hair, closer than SLEEF's bound,
// for the lanes past its range (sinh/cosh near overflow, asinh/acosh/log1p of huge values); a NaN
// input comes back as the C library's float function returns it (the same quiet NaN).
float vmath_detail::libm_unary(VUnary f, float x) {
  const double d = x;
  switch (f) {
    case VUnary::Tan: return static_cast<float>(std::tan(d));
    case VUnary::Tanh: return static_cast<float>(std::tanh(d));
    case VUnary::Sinh: return static_cast<float>(std::sinh(d));
    case VUnary::Cosh: return static_cast<float>(std::cosh(d));
    case VUnary::ArcSin: return static_cast<float>(std::asin(d));
    case VUnary::ArcCos: return static_cast<float>(std::acos(d));
    case VUnary::ArcTan: return static_cast<float>(std::atan(d));
    case VUnary::ArcSinh: return static_cast<float>(std::asinh(d));
    case VUnary::ArcCosh: return static_cast<float>(std::acosh(d));
    case VUnary::ArcTanh: return static_cast<float>(std::atanh(d));
    case VUnary::Log: return static_cast<float>(std::log(d));
    case VUnary::Log2: return static_cast<float>(std::log2(d));
    case VUnary::Log10: return static_cast<float>(std::log10(d));
    case VUnary::Log1p: return static_cast<float>(std::log1p(d));
    case VUnary::Expm1: return static_cast<float>(std::expm1(d));
    default: {
      float y = 0.0f;
      kScalar.unary[static_cast<int>(f)](&x, &y, 1);
      return y;
    }
  }
}
float vmath_detail::libm_binary(VBinary f, float a, float b) {
  float y = 0.0f;
  kScalar.binary[static_cast<int>(f)](&a, &b, &y, 1);
  return y;
}

const char* vunary_name(VUnary f) {
  static const char* const names[] = {"exp",   "sin",   "cos",    "sigmoid", "erf",     "tan",     "tanh",
                                      "sinh",  "cosh",  "arcsin", "arccos",  "arctan",  "arcsinh", "arccosh",
                                      "arctanh", "log", "log2",   "log10",   "log1p",   "expm1",   "sqrt",
                                      "rsqrt", "abs",  "negative", "square"};
  return names[static_cast<int>(f)];
}
const char* vbinary_name(VBinary f) {
  static const char* const names[] = {"power",    "arctan2",  "logaddexp", "add",    "subtract",
                                      "multiply", "divide",   "maximum",   "minimum"};
  return names[static_cast<int>(f)];
}
const char* vcompare_name(VCompare f) {
  static const char* const names[] = {"equal", "not_equal", "greater", "greater_equal", "less", "less_equal"};
  return names[static_cast<int>(f)];
}

void vunary(VUnary f, const float* in, float* out, size_t n) { current().unary[static_cast<int>(f)](in, out, n); }
void vbinary(VBinary f, const float* a, const float* b, float* out, size_t n) {
  current().binary[static_cast<int>(f)](a, b, out, n);
}
void vcompare(VCompare f, const float* a, const float* b, bool* out, size_t n) {
  current().compare[static_cast<int>(f)](a, b, out, n);
}
void vselect(const bool* c, const float* a, const float* b, float* out, size_t n) { current().select(c, a, b, out, n); }
void vcompare_at(Isa isa, VCompare f, const float* a, const float* b, bool* out, size_t n) {
  checked_table(isa).compare[static_cast<int>(f)](a, b, out, n);
}
void vselect_at(Isa isa, const bool* c, const float* a, const float* b, float* out, size_t n) {
  checked_table(isa).select(c, a, b, out, n);
}
void vunary_at(Isa isa, VUnary f, const float* in, float* out, size_t n) {
  checked_table(isa).unary[static_cast<int>(f)](in, out, n);
}
void vbinary_at(Isa isa, VBinary f, const float* a, const float* b, float* out, size_t n) {
  checked_table(isa).binary[static_cast<int>(f)](a, b, out, n);
}

void vexp(const float* in, float* out, size_t n) { vunary(VUnary::Exp, in, out, n); }
void vsin(const float* in, float* out, size_t n) { vunary(VUnary::Sin, in, out, n); }
void vcos(const float* in, float* out, size_t n) { vunary(VUnary::Cos, in, out, n); }
void vsigmoid(const float* in, float* out, size_t n) { vunary(VUnary::Sigmoid, in, out, n); }
void verf(const float* in, float* out, size_t n) { vunary(VUnary::Erf, in, out, n); }
void vtanh(const float* in, float* out, size_t n) { vunary(VUnary::Tanh, in, out, n); }
void vlog(const float* in, float* out, size_t n) { vunary(VUnary::Log, in, out, n); }
void vlog1p(const float* in, float* out, size_t n) { vunary(VUnary::Log1p, in, out, n); }
void vexpm1(const float* in, float* out, size_t n) { vunary(VUnary::Expm1, in, out, n); }
void vpow(const float* a, const float* b, float* out, size_t n) { vbinary(VBinary::Power, a, b, out, n); }
void vatan2(const float* a, const float* b, float* out, size_t n) { vbinary(VBinary::ArcTan2, a, b, out, n); }
void vlogaddexp(const float* a, const float* b, float* out, size_t n) { vbinary(VBinary::LogAddExp, a, b, out, n); }

}  // namespace kiln::cpu
