// The vector math (src/backend/cpu/vmath.h) at every instruction-set level this CPU has:
//  - MLX's polynomials (exp, sin, cos, sigmoid, erf): every level gives the bits of the scalar
//    functions of elementwise_math.h, over a sweep of bit patterns and the special values;
//  - the C library's functions (SLEEF at the vector levels): the largest error in ULP against a
//    double-precision reference over a sweep stays within kUlpBound, as the C library's own does
//    (both are printed: docs/vmath.md has the table), and special values (±0, ±inf, NaN, domain
//    edges, denormals) give what the C library gives;
//  - the level choice (cpu::isa_level, KILN_CPU_ISA) and the kernels: contiguous, strided, broadcast
//    and 16-bit inputs of the element-wise ops give the vector math's values.
// The ctest entries isa.scalar and isa.avx2 (tests/CMakeLists.txt) rerun these and the element-wise
// suites with KILN_CPU_ISA set, so the kernels' lower levels run too.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/kernels/elementwise/elementwise_math.h"
#include "backend/cpu/vmath.h"
#include "unit/elementwise_test_util.h"

namespace {

namespace cpu = kiln::cpu;
namespace ew = kiln::ew;
using cpu::VBinary;
using cpu::VUnary;
using namespace ew_test;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Bound on the error of SLEEF's functions (the vector levels), in float ULPs of the exact result:
// SLEEF's own 1.0-ULP bound (its u10 functions), which the C library's float functions do not all
// meet (glibc's tanhf is off by up to 2.07 here). The measured maxima are printed and in docs/vmath.md.
constexpr double kUlpBound = 1.01;

// The levels with their own vector math code this CPU can run (avx512bf16 runs the AVX-512 code).
std::vector<cpu::Isa> levels() {
  std::vector<cpu::Isa> l;
  for (cpu::Isa i : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512}) {
    if (i <= cpu::isa_detected()) l.push_back(i);
  }
  return l;
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
bool same(float a, float b) { return bits(a) == bits(b) || (std::isnan(a) && std::isnan(b)); }

const std::vector<float>& specials() {
  static const std::vector<float> v = [] {
    std::vector<float> s = {0.0f, 1e-45f, 1e-40f, 1.1754942e-38f, FLT_MIN, 1e-30f, 1e-10f, 1e-7f, 1e-4f, 0.1f, 0.25f,
                            0.5f, 0.75f, 0.9999999f, 1.0f, 1.0000001f, 1.5f, 2.0f, 3.0f, 3.1415927f, 10.0f, 87.99999f,
                            88.0f, 88.00001f, 88.5f, 88.72283f, 88.7229f, 89.0f, 100.0f, 1e4f, 1e6f, 8388608.0f,
                            1e10f, 2147483648.0f, 4294967040.0f, 4294967296.0f, 5e18f, 9.2e18f, 9.3e18f, 1e30f,
                            3e38f, FLT_MAX, kInf};
    std::vector<float> out;
    for (float x : s) {
      out.push_back(x);
      out.push_back(-x);
    }
    out.push_back(kNaN);
    out.push_back(-kNaN);
    out.push_back(std::bit_cast<float>(0x7fa00001u));  // signalling-pattern NaN
    return out;
  }();
  return v;
}

// Every `step`-th bit pattern of both signs (every exponent, denormals included), the specials, and a
// dense stretch of [-lim, lim].
std::vector<float> sweep(uint32_t step, float lim, int dense) {
  std::vector<float> v = specials();
  for (uint32_t b = 0; b < 0x7f800000u; b += step) {
    v.push_back(std::bit_cast<float>(b));
    v.push_back(-std::bit_cast<float>(b));
  }
  for (int i = 0; i <= dense; ++i) v.push_back(-lim + 2.0f * lim * static_cast<float>(i) / static_cast<float>(dense));
  return v;
}

// ---- the instruction-set level ----

TEST(VmathIsa, LevelIsCappedByHardwareAndEnvironment) {
  EXPECT_EQ(cpu::parse_isa("scalar"), cpu::Isa::scalar);
  EXPECT_EQ(cpu::parse_isa("avx2"), cpu::Isa::avx2);
  EXPECT_EQ(cpu::parse_isa("avx512"), cpu::Isa::avx512);
  try {
    cpu::parse_isa("sse9");
    ADD_FAILURE() << "no exception for an unknown level";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("Expected scalar, avx2, avx512, avx512bf16 or amx but found 'sse9'"), std::string::npos)
        << e.what();
  }
  const cpu::Isa hw = cpu::isa_detected();
  cpu::Isa want = hw;
  if (const char* env = std::getenv("KILN_CPU_ISA"); env != nullptr && *env != '\0')
    want = std::min(hw, cpu::parse_isa(env));
  EXPECT_EQ(cpu::isa_level(), want);
  std::printf("[vmath] hardware level %s, running at %s\n", cpu::isa_name(hw), cpu::isa_name(cpu::isa_level()));
  float x = 1.0f, y = 0.0f;
  if (hw < cpu::Isa::avx512) {
    EXPECT_THROW(cpu::vunary_at(cpu::Isa::avx512, VUnary::Exp, &x, &y, 1), std::invalid_argument);
  }
}

// ---- MLX's polynomials: the same bits at every level ----

float scalar_poly(VUnary f, float x) {
  switch (f) {
    case VUnary::Exp: return ew::exp_f(x);
    case VUnary::Sin: return ew::sincos_f<true>(x);
    case VUnary::Cos: return ew::sincos_f<false>(x);
    case VUnary::Sigmoid: {
      float y = 1.0f / (1.0f + ew::exp_f(std::fabs(x)));
      return x < 0.0f ? y : 1.0f - y;
    }
    default: {
      float r = ew::erf_f(x);
      return x > 0.0f ? r : -r;
    }
  }
}

TEST(Vmath, PolynomialsGiveTheScalarBitsAtEveryLevel) {
  const std::vector<float> in = sweep(2039, 100.0f, 200000);
  std::vector<float> out(in.size());
  for (VUnary f : {VUnary::Exp, VUnary::Sin, VUnary::Cos, VUnary::Sigmoid, VUnary::Erf}) {
    for (cpu::Isa isa : levels()) {
      cpu::vunary_at(isa, f, in.data(), out.data(), in.size());
      int bad = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        float want = scalar_poly(f, in[i]);
        if (bits(out[i]) != bits(want) && !(std::isnan(want) && std::isnan(out[i])) && ++bad <= 5)
          ADD_FAILURE() << cpu::vunary_name(f) << " at " << cpu::isa_name(isa) << " of " << in[i] << " (0x" << std::hex
                        << bits(in[i]) << std::dec << "): got " << out[i] << " want " << want;
      }
      EXPECT_EQ(bad, 0) << cpu::vunary_name(f) << " at " << cpu::isa_name(isa) << " over " << in.size() << " inputs";
    }
  }
}

// The scalar code's fused multiply-add rounds once, as the instruction does: a·b + c whose exact value
// lies just below a float midpoint, so that a double sum would land on it and round to even the wrong way;
// the same mirrored; random triples against std::fma. And the four inputs of sin over every float where the
// double-rounded sum (before this was fixed) gave another value than the vector levels and pip MLX 0.30.1.
TEST(Vmath, ScalarFmaRoundsOnce) {
  const float a = 1.0f + 0x1p-20f, b = (1.0f - 0x1p-20f) * 0x1p-24f, c = 1.0f + 0x1p-23f;
  // exact: 1 + 2^-23 + 2^-24 - 2^-64, below the midpoint of 1 + 2^-23 and 1 + 2^-22
  EXPECT_EQ(bits(ew::fma_f(a, b, c)), bits(1.0f + 0x1p-23f));
  EXPECT_EQ(bits(ew::fma_f(-a, b, -c)), bits(-(1.0f + 0x1p-23f)));
  EXPECT_EQ(bits(ew::fma_f(a, b, c)), bits(std::fma(a, b, c)));
  // Infinities stay infinities (no rounding to odd of an infinite sum), overflow gives one, NaN stays NaN.
  EXPECT_EQ(ew::fma_f(2.0f, 3.0f, kInf), kInf);
  EXPECT_EQ(ew::fma_f(2.0f, 3.0f, -kInf), -kInf);
  EXPECT_EQ(ew::fma_f(-kInf, 3.0f, 1.0f), -kInf);
  EXPECT_EQ(ew::fma_f(1e30f, 1e30f, 1.0f), kInf);
  EXPECT_EQ(ew::fma_f(-1e30f, 1e30f, 1.0f), -kInf);
  EXPECT_TRUE(std::isnan(ew::fma_f(kInf, 0.0f, 1.0f)));
  EXPECT_TRUE(std::isnan(ew::fma_f(kNaN, 1.0f, 1.0f)));
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> any(0, 0xffffffffu);
  int bad = 0;
  for (int i = 0; i < 200000; ++i) {
    const float x = std::bit_cast<float>(any(rng)), y = std::bit_cast<float>(any(rng)), z = std::bit_cast<float>(any(rng));
    const float got = ew::fma_f(x, y, z), want = std::fma(x, y, z);
    if (bits(got) != bits(want) && !(std::isnan(got) && std::isnan(want)) && ++bad <= 5)
      ADD_FAILURE() << "fma_f(" << x << ", " << y << ", " << z << ") = " << got << ", std::fma " << want;
  }
  EXPECT_EQ(bad, 0);
  const std::pair<float, float> sin_mlx[] = {{0x1.800006p-10f, 0x1.7ffffep-10f}, {0x1.20001cp-7f, 0x1.1fff2ap-7f},
                                             {-0x1.800006p-10f, -0x1.7ffffep-10f}, {-0x1.20001cp-7f, -0x1.1fff2ap-7f}};
  for (auto [x, want] : sin_mlx) {
    for (cpu::Isa isa : levels()) {
      float got = 0.0f;
      cpu::vunary_at(isa, VUnary::Sin, &x, &got, 1);
      EXPECT_EQ(bits(got), bits(want)) << "sin(" << std::hexfloat << x << ") at " << cpu::isa_name(isa);
    }
  }
}

// sin and cos take a shorter conversion when every lane of a vector has |x|·4/π below 2^31 - 128, and the
// int64 emulation otherwise. Vectors that mix lanes on both sides of that bound (and NaN, infinities, the
// bound itself and its neighbours) give the scalar bits at every level, whichever way they go.
// (Every float was checked once outside the suite: both levels give the scalar code's bits.)
TEST(Vmath, SinCosGiveTheScalarBitsOnBothSidesOfTheShortConversion) {
  const float edge = 2147483520.0f / 1.27323954473516f;  // |x| where |x|·4/π reaches the bound
  std::vector<float> lanes;
  for (float c : {edge, 2147483648.0f / 1.27323954473516f, 1686629632.0f, 1e9f, 3e9f}) {
    float v = c;
    for (int k = 0; k < 64; ++k) v = std::nextafter(v, 0.0f);
    for (int k = 0; k < 128; ++k, v = std::nextafter(v, kInf)) lanes.push_back(v);
  }
  std::vector<float> in;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> small(-10.0f, 10.0f);
  std::uniform_int_distribution<size_t> pick(0, lanes.size() - 1);
  for (int v = 0; v < 4096; ++v) {
    for (int l = 0; l < 16; ++l) {
      const int kind = (v + l) % 7;
      float x = kind == 0 ? lanes[pick(rng)] : small(rng);
      if (v % 97 == 0 && l == 3) x = kNaN;
      if (v % 89 == 0 && l == 5) x = -kInf;
      if (v % 2 == 1) x = -x;
      in.push_back(x);
    }
  }
  for (float x : lanes) in.push_back(x), in.push_back(-x);  // whole vectors near the bound
  std::vector<float> out(in.size());
  for (VUnary f : {VUnary::Sin, VUnary::Cos}) {
    for (cpu::Isa isa : levels()) {
      cpu::vunary_at(isa, f, in.data(), out.data(), in.size());
      int bad = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        const float want = scalar_poly(f, in[i]);
        if (bits(out[i]) != bits(want) && !(std::isnan(want) && std::isnan(out[i])) && ++bad <= 5)
          ADD_FAILURE() << cpu::vunary_name(f) << " at " << cpu::isa_name(isa) << " of " << in[i] << ": got " << out[i]
                        << " want " << want;
      }
      EXPECT_EQ(bad, 0) << cpu::vunary_name(f) << " at " << cpu::isa_name(isa);
    }
  }
}

// Where exp's rounding step can go wrong: t = x · log2(e) next to a half-integer (floor(t + 0.5) with
// t + 0.5 rounded in float) and the lower end, where the power 2^n reaches 2^-127 (MLX's bit-built
// power is 0 there). 4096 consecutive floats around each such x, every level against the scalar bits.
// (Every float was checked once outside the suite: the vector exp at each level gives exp_f's bits.)
std::vector<float> exp_edges() {
  std::vector<float> x;
  auto around = [&x](float c) {
    float lo = c, hi = c;
    for (int k = 0; k < 2048; ++k) lo = std::nextafter(lo, -kInf), hi = std::nextafter(hi, kInf);
    for (float v = lo; v <= hi; v = std::nextafter(v, kInf)) x.push_back(v);
  };
  for (int k = -128; k <= 127; ++k) around(static_cast<float>((k + 0.5) / 1.4426950408889634));
  for (float c : {-88.0f, 88.0f, -87.68f, -87.3365f, 0.0f}) around(c);
  return x;
}

TEST(Vmath, ExpGivesTheScalarBitsAtItsRoundingEdges) {
  const std::vector<float> in = exp_edges();
  std::vector<float> out(in.size());
  for (cpu::Isa isa : levels()) {
    cpu::vunary_at(isa, VUnary::Exp, in.data(), out.data(), in.size());
    int bad = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const float want = ew::exp_f(in[i]);
      if (!same(out[i], want) && ++bad <= 5)
        ADD_FAILURE() << "exp at " << cpu::isa_name(isa) << " of " << in[i] << " (0x" << std::hex << bits(in[i])
                      << std::dec << "): got " << out[i] << " want " << want;
    }
    EXPECT_EQ(bad, 0) << cpu::isa_name(isa) << " over " << in.size() << " inputs";
  }
}

TEST(Vmath, EveryLengthAndAlignmentIsHandled) {
  // Tails (n not a multiple of the lanes) and unaligned starts; the elements past n are untouched.
  std::vector<float> in(80), out(80), want(80);
  for (size_t i = 0; i < in.size(); ++i) in[i] = -3.0f + 0.17f * static_cast<float>(i);
  for (cpu::Isa isa : levels()) {
    for (size_t start : {0u, 1u, 3u}) {
      for (size_t n = 0; n <= 40; ++n) {
        std::fill(out.begin(), out.end(), 12345.0f);
        cpu::vunary_at(isa, VUnary::Log1p, in.data() + start, out.data() + start, n);
        cpu::vunary_at(cpu::Isa::scalar, VUnary::Log1p, in.data() + start, want.data() + start, n);
        for (size_t i = 0; i < out.size(); ++i) {
          if (i < start || i >= start + n) {
            ASSERT_EQ(out[i], 12345.0f) << "wrote outside [" << start << ", " << start + n << ") at " << i;
          } else {
            ASSERT_TRUE(same(out[i], want[i]) || std::fabs(out[i] - want[i]) <= 2.5e-7f * std::fabs(want[i])) << i;
          }
        }
        std::fill(out.begin(), out.end(), 12345.0f);
        cpu::vbinary_at(isa, VBinary::Power, in.data() + start, in.data() + start + 1, out.data() + start, n);
        for (size_t i = 0; i < out.size(); ++i)
          if (i < start || i >= start + n) ASSERT_EQ(out[i], 12345.0f) << "pow wrote outside at " << i;
      }
    }
    // In place.
    std::vector<float> a = in, b(in.size());
    cpu::vunary_at(isa, VUnary::Exp, a.data(), b.data(), a.size());
    cpu::vunary_at(isa, VUnary::Exp, a.data(), a.data(), a.size());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(bits(a[i]), bits(b[i]));
  }
}

// ---- the C library's functions: error bounds and special values ----

// Error of `got` against the exact value `ref`, in ULPs of the float binade of ref (the float
// denormal spacing below 2^-126). A NaN or infinite result must match the rounded reference exactly.
double ulp_error(float got, double ref) {
  const float rf = static_cast<float>(ref);
  if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got) ? 0.0 : INFINITY;
  if (std::isinf(got) || std::isinf(rf)) {
    if (got == rf) return 0.0;
    // An overflow to inf next to FLT_MAX (or a finite result next to an inf reference) within an ULP.
    const double top = std::ldexp(1.0, 104);  // ULP of FLT_MAX
    double g = std::isinf(got) ? std::copysign(std::ldexp(1.0, 128), got) : got;
    return std::fabs(g - ref) / top;
  }
  int e = 0;
  std::frexp(ref, &e);
  const double u = std::ldexp(1.0, std::max(e - 24, -149));
  return std::fabs(static_cast<double>(got) - ref) / u;
}

struct LibmFn {
  VUnary f;
  std::function<double(double)> ref;
  std::function<float(float)> libm;
  float dense_lim;
  double bound = kUlpBound;
};

// tanh: SLEEF's 3.5-ULP function from |x| = 0.4 (1.50 ULP at most there) and a polynomial below (0.59
// ULP): within 1.51 ULP, where the C library's tanhf, which MLX calls, is off by up to 2.16.
constexpr double kTanhUlpBound = 1.51;

const std::vector<LibmFn>& libm_fns() {
  static const std::vector<LibmFn> v = {
      {VUnary::Tan, [](double x) { return std::tan(x); }, [](float x) { return std::tan(x); }, 10.0f},
      {VUnary::Tanh, [](double x) { return std::tanh(x); }, [](float x) { return std::tanh(x); }, 10.0f,
       kTanhUlpBound},
      {VUnary::Sinh, [](double x) { return std::sinh(x); }, [](float x) { return std::sinh(x); }, 90.0f},
      {VUnary::Cosh, [](double x) { return std::cosh(x); }, [](float x) { return std::cosh(x); }, 90.0f},
      {VUnary::ArcSin, [](double x) { return std::asin(x); }, [](float x) { return std::asin(x); }, 1.0f},
      {VUnary::ArcCos, [](double x) { return std::acos(x); }, [](float x) { return std::acos(x); }, 1.0f},
      {VUnary::ArcTan, [](double x) { return std::atan(x); }, [](float x) { return std::atan(x); }, 10.0f},
      {VUnary::ArcSinh, [](double x) { return std::asinh(x); }, [](float x) { return std::asinh(x); }, 10.0f},
      {VUnary::ArcCosh, [](double x) { return std::acosh(x); }, [](float x) { return std::acosh(x); }, 10.0f},
      {VUnary::ArcTanh, [](double x) { return std::atanh(x); }, [](float x) { return std::atanh(x); }, 1.0f},
      {VUnary::Log, [](double x) { return std::log(x); }, [](float x) { return std::log(x); }, 10.0f},
      {VUnary::Log2, [](double x) { return std::log2(x); }, [](float x) { return std::log2(x); }, 10.0f},
      {VUnary::Log10, [](double x) { return std::log10(x); }, [](float x) { return std::log10(x); }, 10.0f},
      {VUnary::Log1p, [](double x) { return std::log1p(x); }, [](float x) { return std::log1p(x); }, 2.0f},
      {VUnary::Expm1, [](double x) { return std::expm1(x); }, [](float x) { return std::expm1(x); }, 90.0f},
  };
  return v;
}

TEST(Vmath, LibraryFunctionsStayWithinTheUlpBound) {
  const std::vector<float> base = sweep(1021, 1.0f, 0);
  for (const LibmFn& fn : libm_fns()) {
    std::vector<float> in = base;
    for (int i = 0; i <= 300000; ++i)
      in.push_back(-fn.dense_lim + 2.0f * fn.dense_lim * static_cast<float>(i) / 300000.0f);
    std::vector<double> ref(in.size());
    double libm_max = 0.0;
    for (size_t i = 0; i < in.size(); ++i) {
      ref[i] = fn.ref(static_cast<double>(in[i]));
      libm_max = std::max(libm_max, ulp_error(fn.libm(in[i]), ref[i]));
    }
    std::vector<float> out(in.size());
    // The scalar level is the C library itself, bit for bit.
    cpu::vunary_at(cpu::Isa::scalar, fn.f, in.data(), out.data(), in.size());
    for (size_t i = 0; i < in.size(); ++i)
      ASSERT_TRUE(same(out[i], fn.libm(in[i]))) << cpu::vunary_name(fn.f) << " scalar of " << in[i];
    for (cpu::Isa isa : levels()) {
      if (isa == cpu::Isa::scalar) continue;  // checked above
      cpu::vunary_at(isa, fn.f, in.data(), out.data(), in.size());
      double worst = 0.0;
      float worst_x = 0.0f;
      for (size_t i = 0; i < in.size(); ++i) {
        double e = ulp_error(out[i], ref[i]);
        if (e > worst) {
          worst = e;
          worst_x = in[i];
        }
      }
      std::printf("[vmath] %-8s %-6s max %.3f ulp (at %.9g)   C library %.3f ulp   (%zu inputs)\n",
                  cpu::vunary_name(fn.f), cpu::isa_name(isa), worst, worst_x, libm_max, in.size());
      EXPECT_LE(worst, fn.bound) << cpu::vunary_name(fn.f) << " at " << cpu::isa_name(isa) << ": worst input "
                                  << worst_x;
    }
  }
}

// The IEEE operations (add, subtract, multiply, divide, sqrt, 1 / sqrt) and the exact ones (maximum,
// minimum, abs, negative, square) give the scalar level's bits at every level (NaN for NaN), over
// specials, a sweep of bit patterns and random pairs, any length (tails).
TEST(Vmath, ArithmeticGivesTheScalarBitsAtEveryLevel) {
  const std::vector<float> a = sweep(4093, 100.0f, 20001);
  std::vector<float> b(a.size());
  std::mt19937 rng(5);
  for (size_t i = 0; i < b.size(); ++i) b[i] = a[rng() % a.size()];
  for (size_t i = 0; i < 200; ++i) b[i] = specials()[i % specials().size()];
  std::vector<float> want(a.size()), got(a.size());
  for (VBinary f : {VBinary::Add, VBinary::Subtract, VBinary::Multiply, VBinary::Divide, VBinary::Maximum,
                    VBinary::Minimum}) {
    cpu::vbinary_at(cpu::Isa::scalar, f, a.data(), b.data(), want.data(), a.size());
    for (cpu::Isa isa : levels()) {
      for (size_t n : {a.size(), size_t(7), size_t(1), size_t(0)}) {
        std::fill(got.begin(), got.end(), 12345.0f);
        cpu::vbinary_at(isa, f, a.data(), b.data(), got.data(), n);
        for (size_t i = 0; i < n; ++i)
          ASSERT_TRUE(same(got[i], want[i])) << cpu::vbinary_name(f) << " at " << cpu::isa_name(isa) << " of " << a[i]
                                             << ", " << b[i];
        if (n < got.size()) EXPECT_EQ(got[n], 12345.0f) << "wrote past n";
      }
    }
  }
  // The scalar maximum and minimum are binary.cpp's rule: a NaN first operand wins, else the comparison.
  cpu::vbinary_at(cpu::Isa::scalar, VBinary::Maximum, a.data(), b.data(), want.data(), a.size());
  cpu::vbinary_at(cpu::Isa::scalar, VBinary::Minimum, a.data(), b.data(), got.data(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const float x = a[i], y = b[i];
    ASSERT_TRUE(same(want[i], x != x ? x : (x > y ? x : y))) << "maximum of " << x << ", " << y;
    ASSERT_TRUE(same(got[i], x != x ? x : (x < y ? x : y))) << "minimum of " << x << ", " << y;
  }
  for (VUnary f : {VUnary::Sqrt, VUnary::Rsqrt, VUnary::Abs, VUnary::Negative, VUnary::Square}) {
    cpu::vunary_at(cpu::Isa::scalar, f, a.data(), want.data(), a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      float r = 0.0f;
      switch (f) {
        case VUnary::Sqrt: r = std::sqrt(a[i]); break;
        case VUnary::Rsqrt: r = 1.0f / std::sqrt(a[i]); break;
        case VUnary::Abs: r = std::fabs(a[i]); break;
        case VUnary::Negative: r = -a[i]; break;
        default: r = a[i] * a[i]; break;
      }
      ASSERT_TRUE(same(want[i], r)) << cpu::vunary_name(f) << " scalar of " << a[i];
    }
    for (cpu::Isa isa : levels()) {
      cpu::vunary_at(isa, f, a.data(), got.data(), a.size());
      for (size_t i = 0; i < a.size(); ++i)
        ASSERT_TRUE(same(got[i], want[i])) << cpu::vunary_name(f) << " at " << cpu::isa_name(isa) << " of " << a[i];
    }
  }
}

// The comparisons give C++'s float comparisons as bools (NaN unequal to everything, itself included) and
// select copies the bits of the chosen operand (NaN payloads too), at every level and length, with
// nothing written past n, and for conditions stored as any nonzero byte.
TEST(Vmath, CompareAndSelectAtEveryLevel) {
  const std::vector<float> a = sweep(2053, 50.0f, 4001);
  std::vector<float> b(a.size());
  std::mt19937 rng(8);
  for (size_t i = 0; i < b.size(); ++i) b[i] = (rng() % 4 == 0) ? a[i] : a[rng() % a.size()];
  for (size_t i = 0; i < 100; ++i) b[i * 7] = specials()[i % specials().size()];
  using Cmp = bool (*)(float, float);
  const std::pair<cpu::VCompare, Cmp> cases[] = {
      {cpu::VCompare::Equal, [](float x, float y) { return x == y; }},
      {cpu::VCompare::NotEqual, [](float x, float y) { return x != y; }},
      {cpu::VCompare::Greater, [](float x, float y) { return x > y; }},
      {cpu::VCompare::GreaterEqual, [](float x, float y) { return x >= y; }},
      {cpu::VCompare::Less, [](float x, float y) { return x < y; }},
      {cpu::VCompare::LessEqual, [](float x, float y) { return x <= y; }}};
  std::vector<uint8_t> got(a.size() + 1);
  for (const auto& [f, ref] : cases) {
    for (cpu::Isa isa : levels()) {
      for (size_t n : {a.size(), size_t(33), size_t(16), size_t(9), size_t(1), size_t(0)}) {
        std::fill(got.begin(), got.end(), 0x77);
        cpu::vcompare_at(isa, f, a.data(), b.data(), reinterpret_cast<bool*>(got.data()), n);
        for (size_t i = 0; i < n; ++i)
          ASSERT_EQ(got[i], ref(a[i], b[i]) ? 1 : 0)
              << cpu::vcompare_name(f) << " at " << cpu::isa_name(isa) << " of " << a[i] << ", " << b[i];
        EXPECT_EQ(got[n], 0x77) << "wrote past n";
      }
    }
  }
  // Conditions stored as bytes 0, 1 and (as a loaded buffer might hold) 2 and 255.
  std::vector<uint8_t> cond(a.size());
  for (auto& c : cond) c = (rng() % 2) ? 0 : std::array<uint8_t, 3>{1, 2, 255}[rng() % 3];
  std::vector<float> out(a.size() + 1);
  for (cpu::Isa isa : levels()) {
    for (size_t n : {a.size(), size_t(17), size_t(8), size_t(1), size_t(0)}) {
      std::fill(out.begin(), out.end(), 12345.0f);
      cpu::vselect_at(isa, reinterpret_cast<const bool*>(cond.data()), a.data(), b.data(), out.data(), n);
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(bits(out[i]), bits(cond[i] ? a[i] : b[i])) << "select at " << cpu::isa_name(isa) << " element " << i;
      EXPECT_EQ(out[n], 12345.0f) << "wrote past n";
    }
  }
}

// tanh densely where its two pieces meet and where SLEEF's 3.5-ULP function is used: every 97th float
// of both signs below |x| = 4, at every vector level, within the bound; the polynomial piece (|x| < 0.4)
// within 0.6 ULP.
TEST(Vmath, TanhWithinItsBoundDensely) {
  std::vector<float> in;
  for (uint32_t b = 0; b < 0x40800000u; b += 97) {
    float x;
    std::memcpy(&x, &b, 4);
    in.push_back(x);
    in.push_back(-x);
  }
  for (float x : {0.39999998f, 0.4f, 0.40000004f, -0.4f, 9.0f, 9.1f}) in.push_back(x);
  std::vector<float> out(in.size());
  for (cpu::Isa isa : levels()) {
    if (isa == cpu::Isa::scalar) continue;
    cpu::vunary_at(isa, VUnary::Tanh, in.data(), out.data(), in.size());
    double worst = 0.0, worst_small = 0.0;
    for (size_t i = 0; i < in.size(); ++i) {
      const double e = ulp_error(out[i], std::tanh(static_cast<double>(in[i])));
      worst = std::max(worst, e);
      if (std::fabs(in[i]) < 0.4f) worst_small = std::max(worst_small, e);
    }
    std::printf("[vmath] tanh %-6s max %.3f ulp, below |x| = 0.4 %.3f ulp (%zu inputs)\n", cpu::isa_name(isa), worst,
                worst_small, in.size());
    EXPECT_LE(worst, kTanhUlpBound) << cpu::isa_name(isa);
    EXPECT_LE(worst_small, 0.6) << cpu::isa_name(isa);
  }
}

TEST(Vmath, LibraryFunctionsGiveTheCLibrarysSpecialValues) {
  // ±0, ±inf, NaN, denormals, the domain edges and outside the domain: the same class and sign as the
  // C library (NaN for NaN, the same infinity, the same signed zero, exact results where it has them).
  std::vector<float> in = specials();
  for (float x : {1.0f, -1.0f, 1.0000001f, 0.99999994f, -0.99999994f, -1.0000001f, 2.0f, -2.0f})
    in.push_back(x);
  std::vector<float> out(in.size());
  for (const LibmFn& fn : libm_fns()) {
    for (cpu::Isa isa : levels()) {
      cpu::vunary_at(isa, fn.f, in.data(), out.data(), in.size());
      for (size_t i = 0; i < in.size(); ++i) {
        float want = fn.libm(in[i]);
        const bool special = std::isnan(want) || std::isinf(want) || want == 0.0f || std::isnan(in[i]) ||
                             std::isinf(in[i]) || in[i] == 0.0f;
        if (isa == cpu::Isa::scalar || std::isnan(in[i])) {  // the C library's bits (NaN inputs: its payload)
          EXPECT_EQ(bits(out[i]), bits(want)) << cpu::vunary_name(fn.f) << " at " << cpu::isa_name(isa) << " of " << in[i];
        } else if (special) {
          EXPECT_TRUE(same(out[i], want)) << cpu::vunary_name(fn.f) << " at " << cpu::isa_name(isa) << " of " << in[i]
                                          << ": got " << out[i] << " want " << want;
        } else {
          EXPECT_LE(ulp_error(out[i], fn.ref(in[i])), kUlpBound)
              << cpu::vunary_name(fn.f) << " at " << cpu::isa_name(isa) << " of " << in[i] << ": got " << out[i];
        }
      }
    }
  }
}

// pow and atan2 over a grid of specials × specials (every pair: the C library's class and sign, and
// within the bound where finite), and random operands of every magnitude against double precision.
TEST(Vmath, PowerAndArcTan2MatchTheCLibrary) {
  std::vector<float> sp = specials();
  for (float x : {-8.0f, 1.0f / 3.0f, 7.0f, -7.0f, 0.5f, 2.5f, -2.5f, 31.0f, -31.0f, 1e-3f, 127.0f, -128.0f, 150.0f})
    sp.push_back(x);
  std::vector<float> a, b;
  for (float x : sp)
    for (float y : sp) {
      a.push_back(x);
      b.push_back(y);
    }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mant(0.5f, 1.0f);
  std::uniform_int_distribution<int> ex(-40, 40), ey(-6, 6), sign(0, 1);
  for (int i = 0; i < 400000; ++i) {
    a.push_back((sign(rng) ? -1.0f : 1.0f) * std::ldexp(mant(rng), ex(rng)));
    float y = (sign(rng) ? -1.0f : 1.0f) * std::ldexp(mant(rng), ey(rng));
    if (i % 4 == 0) y = std::round(y);  // integer exponents: negative bases give real results
    b.push_back(y);
  }
  std::vector<float> out(a.size());
  for (VBinary f : {VBinary::Power, VBinary::ArcTan2}) {
    for (cpu::Isa isa : levels()) {
      cpu::vbinary_at(isa, f, a.data(), b.data(), out.data(), a.size());
      double worst = 0.0, libm_max = 0.0;
      int bad = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        const bool pw = f == VBinary::Power;
        float want = pw ? std::pow(a[i], b[i]) : std::atan2(a[i], b[i]);
        double ref = pw ? std::pow(static_cast<double>(a[i]), static_cast<double>(b[i]))
                        : std::atan2(static_cast<double>(a[i]), static_cast<double>(b[i]));
        const bool special = std::isnan(want) || std::isinf(want) || want == 0.0f || std::isnan(a[i]) ||
                             std::isinf(a[i]) || a[i] == 0.0f || std::isnan(b[i]) || std::isinf(b[i]) || b[i] == 0.0f;
        if (isa == cpu::Isa::scalar) {
          if (bits(out[i]) != bits(want) && ++bad <= 8)
            ADD_FAILURE() << cpu::vbinary_name(f) << " scalar of (" << a[i] << ", " << b[i] << ")";
        } else if (special) {
          if (!same(out[i], want) && ++bad <= 8)
            ADD_FAILURE() << cpu::vbinary_name(f) << " at " << cpu::isa_name(isa) << " of (" << a[i] << ", " << b[i]
                          << "): got " << out[i] << " want " << want;
        } else {
          worst = std::max(worst, ulp_error(out[i], ref));
          libm_max = std::max(libm_max, ulp_error(want, ref));
        }
      }
      std::printf("[vmath] %-8s %-6s max %.3f ulp   C library %.3f ulp   (%zu inputs)\n", cpu::vbinary_name(f),
                  cpu::isa_name(isa), worst, libm_max, a.size());
      EXPECT_LE(worst, kUlpBound) << cpu::vbinary_name(f) << " at " << cpu::isa_name(isa);
      EXPECT_EQ(bad, 0);
    }
  }
}

TEST(Vmath, LogAddExpMatchesTheScalarKernel) {
  // MLX's exp (bit for bit) and SLEEF's log1p: within one ULP of max(|result|, 1) of the scalar path
  // (MLX's formula max + log1p(...) cancels when the result is near 0, for both paths alike: the
  // log1p term, at most ln 2, then sets the error); infinities and NaN exactly as it has them.
  std::vector<float> sp = specials();
  std::vector<float> a, b;
  for (float x : sp)
    for (float y : sp) {
      a.push_back(x);
      b.push_back(y);
    }
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-120.0f, 120.0f);
  for (int i = 0; i < 200000; ++i) {
    a.push_back(u(rng));
    b.push_back(i % 3 == 0 ? a.back() + u(rng) * 0.01f : u(rng));
  }
  std::vector<float> want(a.size()), out(a.size());
  cpu::vbinary_at(cpu::Isa::scalar, VBinary::LogAddExp, a.data(), b.data(), want.data(), a.size());
  for (cpu::Isa isa : levels()) {
    cpu::vbinary_at(isa, VBinary::LogAddExp, a.data(), b.data(), out.data(), a.size());
    double worst = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(want[i]) || std::isinf(want[i])) {
        ASSERT_TRUE(same(out[i], want[i])) << "(" << a[i] << ", " << b[i] << "): got " << out[i] << " want " << want[i];
      } else {
        const double scale = std::max(1.0, std::fabs(static_cast<double>(want[i])));
        int e = 0;
        std::frexp(scale, &e);
        worst = std::max(worst, std::fabs(static_cast<double>(out[i]) - want[i]) / std::ldexp(1.0, e - 24));
      }
    }
    EXPECT_LE(worst, 1.0) << cpu::isa_name(isa);
  }
}

// ---- the kernels use the vector math in every layout ----

std::vector<float> floats(const mx::array& y) {
  auto v = values(y);
  return std::vector<float>(v.begin(), v.end());
}

TEST(VmathKernels, UnaryOpsGiveTheVectorValuesInEveryLayoutAndDtype) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  struct K {
    const char* name;
    std::function<mx::array(const mx::array&)> op;
    VUnary f;
    float lo;  // inputs are shifted into the domain
  };
  const std::vector<K> ops = {
      {"exp", [](const mx::array& x) { return mx::exp(x); }, VUnary::Exp, -4.0f},
      {"sin", [](const mx::array& x) { return mx::sin(x); }, VUnary::Sin, -4.0f},
      {"sigmoid", [](const mx::array& x) { return mx::sigmoid(x); }, VUnary::Sigmoid, -4.0f},
      {"erf", [](const mx::array& x) { return mx::erf(x); }, VUnary::Erf, -4.0f},
      {"tanh", [](const mx::array& x) { return mx::tanh(x); }, VUnary::Tanh, -4.0f},
      {"log", [](const mx::array& x) { return mx::log(x); }, VUnary::Log, 0.0f},
      {"log2", [](const mx::array& x) { return mx::log2(x); }, VUnary::Log2, 0.0f},
      {"log1p", [](const mx::array& x) { return mx::log1p(x); }, VUnary::Log1p, -1.0f},
      {"expm1", [](const mx::array& x) { return mx::expm1(x); }, VUnary::Expm1, -4.0f},
      {"arccosh", [](const mx::array& x) { return mx::arccosh(x); }, VUnary::ArcCosh, 1.0f},
      {"arcsin", [](const mx::array& x) { return mx::arcsin(x); }, VUnary::ArcSin, -1.0f},
  };
  for (int trial = 0; trial < 4; ++trial) {
    const int r = 3 + trial * 7, c = 5 + trial * 13;  // odd sizes
    for (const K& k : ops) {
      std::vector<float> v(static_cast<size_t>(r) * c);
      for (float& x : v) x = k.lo == -4.0f ? u(rng) : k.lo + (u(rng) + 4.0f) * (k.lo == -1.0f ? 0.25f : 1.0f);
      if (k.f == VUnary::ArcSin) for (float& x : v) x = std::clamp(x, -1.0f, 1.0f);
      mx::array a(v.data(), {r, c});
      // Contiguous float32: exactly the vector math's values at the running level.
      std::vector<float> want(v.size());
      cpu::vunary(k.f, v.data(), want.data(), v.size());
      auto got = floats(k.op(a));
      for (size_t i = 0; i < v.size(); ++i) ASSERT_TRUE(same(got[i], want[i])) << k.name << " " << i;
      // Transposed and strided views: the same values, element by element.
      auto gt = floats(k.op(mx::transpose(a)));
      for (int i = 0; i < c; ++i)
        for (int j = 0; j < r; ++j) ASSERT_TRUE(same(gt[i * r + j], want[j * c + i])) << k.name << " transposed";
      auto gs = floats(k.op(mx::slice(a, {0, 1}, {r, c}, {2, 3})));
      size_t q = 0;
      for (int i = 0; i < r; i += 2)
        for (int j = 1; j < c; j += 3) ASSERT_TRUE(same(gs[q++], want[i * c + j])) << k.name << " sliced";
      auto gb = floats(k.op(mx::broadcast_to(mx::slice(a, {0, 0}, {1, c}), {4, c})));
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < c; ++j) ASSERT_TRUE(same(gb[i * c + j], want[j])) << k.name << " broadcast";
      // float16 / bfloat16, contiguous and transposed: the float results of the rounded inputs, rounded once.
      for (mx::Dtype t : {mx::float16, mx::bfloat16}) {
        mx::array h = mx::astype(a, t);
        auto hin = floats(h);
        std::vector<float> hw(hin.size());
        cpu::vunary(k.f, hin.data(), hw.data(), hin.size());
        auto want_h = floats(mx::astype(mx::array(hw.data(), {r, c}), t));
        auto gh = floats(k.op(h));
        auto ght = floats(k.op(mx::transpose(h)));
        for (size_t i = 0; i < hw.size(); ++i) ASSERT_TRUE(same(gh[i], want_h[i])) << k.name << " " << mx::dtype_name(t);
        for (int i = 0; i < c; ++i)
          for (int j = 0; j < r; ++j)
            ASSERT_TRUE(same(ght[i * r + j], want_h[j * c + i])) << k.name << " " << mx::dtype_name(t) << " transposed";
      }
    }
  }
}

TEST(VmathKernels, BinaryOpsGiveTheVectorValuesInEveryLayoutAndDtype) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.05f, 3.0f), s(-3.0f, 3.0f);
  struct K {
    const char* name;
    std::function<mx::array(const mx::array&, const mx::array&)> op;
    VBinary f;
  };
  const std::vector<K> ops = {
      {"power", [](const mx::array& x, const mx::array& y) { return mx::power(x, y); }, VBinary::Power},
      {"arctan2", [](const mx::array& x, const mx::array& y) { return mx::arctan2(x, y); }, VBinary::ArcTan2},
      {"logaddexp", [](const mx::array& x, const mx::array& y) { return mx::logaddexp(x, y); }, VBinary::LogAddExp},
  };
  for (int trial = 0; trial < 3; ++trial) {
    const int r = 4 + trial * 9, c = 3 + trial * 11;
    const size_t n = static_cast<size_t>(r) * c;
    std::vector<float> va(n), vb(n);
    for (float& x : va) x = u(rng);
    for (float& x : vb) x = s(rng);
    mx::array a(va.data(), {r, c}), b(vb.data(), {r, c});
    for (const K& k : ops) {
      std::vector<float> want(n);
      cpu::vbinary(k.f, va.data(), vb.data(), want.data(), n);
      auto got = floats(k.op(a, b));
      for (size_t i = 0; i < n; ++i) ASSERT_TRUE(same(got[i], want[i])) << k.name << " " << i;
      // Transposed operands (each layout of the inputs gives the same values).
      auto gt = floats(k.op(mx::transpose(a), mx::transpose(b)));
      for (int i = 0; i < c; ++i)
        for (int j = 0; j < r; ++j) ASSERT_TRUE(same(gt[i * r + j], want[j * c + i])) << k.name << " transposed";
      auto gmix = floats(k.op(mx::transpose(a), mx::contiguous(mx::transpose(b))));
      for (int i = 0; i < c; ++i)
        for (int j = 0; j < r; ++j) ASSERT_TRUE(same(gmix[i * r + j], want[j * c + i])) << k.name << " mixed";
      // A scalar operand on either side, and a broadcast row.
      const float e = vb[1];
      std::vector<float> eb(n, e), ws(n), wr(n);
      cpu::vbinary(k.f, va.data(), eb.data(), ws.data(), n);
      auto gsc = floats(k.op(a, mx::array(e)));
      for (size_t i = 0; i < n; ++i) ASSERT_TRUE(same(gsc[i], ws[i])) << k.name << " scalar b";
      cpu::vbinary(k.f, eb.data(), va.data(), ws.data(), n);
      auto gsa = floats(k.op(mx::array(e), a));
      for (size_t i = 0; i < n; ++i) ASSERT_TRUE(same(gsa[i], ws[i])) << k.name << " scalar a";
      std::vector<float> rowb(n);
      for (int i = 0; i < r; ++i)
        for (int j = 0; j < c; ++j) rowb[i * c + j] = vb[j];
      cpu::vbinary(k.f, va.data(), rowb.data(), wr.data(), n);
      auto grow = floats(k.op(a, mx::slice(b, {0, 0}, {1, c})));
      for (size_t i = 0; i < n; ++i) ASSERT_TRUE(same(grow[i], wr[i])) << k.name << " broadcast row";
      // 16-bit: the float results of the rounded operands, rounded once.
      for (mx::Dtype t : {mx::float16, mx::bfloat16}) {
        mx::array ha = mx::astype(a, t), hb = mx::astype(b, t);
        auto fa = floats(ha), fb = floats(hb);
        std::vector<float> hw(n);
        cpu::vbinary(k.f, fa.data(), fb.data(), hw.data(), n);
        auto want_h = floats(mx::astype(mx::array(hw.data(), {r, c}), t));
        auto gh = floats(k.op(ha, hb));
        for (size_t i = 0; i < n; ++i) ASSERT_TRUE(same(gh[i], want_h[i])) << k.name << " " << mx::dtype_name(t);
        auto ght = floats(k.op(mx::transpose(ha), mx::transpose(hb)));
        for (int i = 0; i < c; ++i)
          for (int j = 0; j < r; ++j)
            ASSERT_TRUE(same(ght[i * r + j], want_h[j * c + i])) << k.name << " " << mx::dtype_name(t) << " transposed";
      }
    }
  }
}

TEST(VmathKernels, Float64AndEmptyArraysKeepTheScalarPath) {
  // float64 stays with the C library (and MLX's float polynomials), element by element.
  std::vector<double> v = {0.5, 1.5, 2.25, 10.0, 1e-3};
  mx::array d(v.data(), {5}, mx::float64);
  auto lg = values(mx::log(d));
  auto pw = values(mx::power(d, mx::array(1.5, mx::float64)));
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(lg[i], std::log(v[i]));
    EXPECT_EQ(pw[i], std::pow(v[i], 1.5));
  }
  mx::array e(std::vector<float>{}.data(), {0, 3});
  EXPECT_EQ(values(mx::power(e, mx::array(2.0f))).size(), 0u);
  EXPECT_EQ(values(mx::tanh(mx::transpose(e))).size(), 0u);
}

}  // namespace
