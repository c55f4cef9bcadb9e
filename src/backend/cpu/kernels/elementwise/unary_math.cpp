// CPU kernels of the element-wise unary math primitives (Exp, Log, Sin, Sqrt, Sigmoid, Erf, ...). MLX
// evaluates them on inexact dtypes only (the rows in src/primitives/elementwise/unary_math.cpp reject the
// others). Values follow MLX's CPU backend: its own polynomials for exp/sin/cos/erf/erfinv, the C
// library for the rest.
#include "backend/cpu/kernels/elementwise/elementwise_common.h"  // first: it sets the kernels' float options

#include <cmath>

namespace kiln {

namespace {

using namespace ew;

// Each Op maps a float, a double or a complex64_t to the same type.
// kVec: the cpu::VUnary that computes the op's float32 values in vector form (cpu/vmath.h).
#define KILN_STD_UNARY_VEC(Name, fn, V)                  \
  struct Name {                                          \
    static constexpr cpu::VUnary kVec = cpu::VUnary::V;  \
    template <typename T>                                \
    static T apply(T x) {                                \
      return std::fn(x);                                 \
    }                                                    \
  };
KILN_STD_UNARY_VEC(TanOp, tan, Tan)
KILN_STD_UNARY_VEC(TanhOp, tanh, Tanh)
KILN_STD_UNARY_VEC(SinhOp, sinh, Sinh)
KILN_STD_UNARY_VEC(CoshOp, cosh, Cosh)
KILN_STD_UNARY_VEC(ArcSinOp, asin, ArcSin)
KILN_STD_UNARY_VEC(ArcCosOp, acos, ArcCos)
KILN_STD_UNARY_VEC(ArcTanOp, atan, ArcTan)
KILN_STD_UNARY_VEC(ArcSinhOp, asinh, ArcSinh)
KILN_STD_UNARY_VEC(ArcCoshOp, acosh, ArcCosh)
KILN_STD_UNARY_VEC(ArcTanhOp, atanh, ArcTanh)
KILN_STD_UNARY_VEC(SqrtOp, sqrt, Sqrt)  // correctly rounded, as the C library
KILN_STD_UNARY_VEC(LogOp, log, Log)
KILN_STD_UNARY_VEC(Log10Op, log10, Log10)
#undef KILN_STD_UNARY_VEC

struct RsqrtOp {
  static constexpr cpu::VUnary kVec = cpu::VUnary::Rsqrt;
  template <typename T>
  static T apply(T x) {
    return T(1) / std::sqrt(x);
  }
};

struct ExpOp {
  static constexpr cpu::VUnary kVec = cpu::VUnary::Exp;
  template <typename T>
  static T apply(T x) {
    if constexpr (detail::is_complex_v<T>) return std::exp(x);
    else return T(exp_f(static_cast<float>(x)));
  }
};

struct Expm1Op {
  static constexpr cpu::VUnary kVec = cpu::VUnary::Expm1;
  template <typename T>
  static T apply(T x) {
    // MLX's complex expm1 resolves to the real overload: expm1 of the real part, imaginary part 0.
    if constexpr (detail::is_complex_v<T>) return T(std::expm1(x.real()), 0.0f);
    else return std::expm1(x);
  }
};

struct Log2Op {
  static constexpr cpu::VUnary kVec = cpu::VUnary::Log2;
  template <typename T>
  static T apply(T x) {
    if constexpr (detail::is_complex_v<T>) {
      T l = std::log(x);
      const float ln2 = static_cast<float>(M_LN2);
      return T(l.real() / ln2, l.imag() / ln2);
    } else {
      return std::log2(x);
    }
  }
};

struct Log1pOp {
  static constexpr cpu::VUnary kVec = cpu::VUnary::Log1p;
  template <typename T>
  static T apply(T x) {
    if constexpr (detail::is_complex_v<T>) return log1p_c(x);
    else return std::log1p(x);
  }
};

struct SinOp {
  static constexpr cpu::VUnary kVec = cpu::VUnary::Sin;
  template <typename T>
  static T apply(T x) {
    if constexpr (detail::is_complex_v<T>) return std::sin(x);
    else return T(sincos_f<true>(x));
  }
};

struct CosOp {
  static constexpr cpu::VUnary kVec = cpu::VUnary::Cos;
  template <typename T>
  static T apply(T x) {
    if constexpr (detail::is_complex_v<T>) return std::cos(x);
    else return T(sincos_f<false>(x));
  }
};

// 1/(1 + e^|x|) mirrored for x >= 0, which never overflows to NaN.
struct SigmoidOp {
  static constexpr cpu::VUnary kVec = cpu::VUnary::Sigmoid;
  template <typename T>
  static T apply(T x) {
    if constexpr (detail::is_complex_v<T>) {
      // As in MLX: |x| drives the value and the lexicographic sign of x picks the branch.
      float y = 1.0f / (1.0f + exp_f(std::abs(x)));
      if (y != y) return T(y, y);  // NaN in both parts, as MLX
      return T(cgt(T(0), x) ? y : 1.0f - y, 0.0f);
    } else {
      T e = static_cast<T>(exp_f(static_cast<float>(std::fabs(x))));
      T y = T(1) / (T(1) + e);
      return x < T(0) ? y : T(1) - y;
    }
  }
};

struct ErfOp {
  static constexpr cpu::VUnary kVec = cpu::VUnary::Erf;
  template <typename T>
  static T apply(T x) {
    T r = T(erf_f(static_cast<float>(x)));
    return x > T(0) ? r : -r;
  }
};

struct ErfInvOp {
  template <typename T>
  static T apply(T x) {
    return T(erfinv_f(static_cast<float>(x)));
  }
};

template <typename Op, bool Complex = true>
void fp_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  unary_fp<Op, Complex>(in[0], out[0]);
}

template <typename Op>
void real_fp_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  unary_fp<Op, false>(in[0], out[0]);
}

// Log's state: base two 0, ten 1, e 2.
void log_cpu(const Node& n, const std::vector<array>& in, std::vector<array>& out) {
  switch (n.state.i(0)) {
    case 0: return unary_fp<Log2Op>(in[0], out[0]);
    case 1: return unary_fp<Log10Op>(in[0], out[0]);
    default: return unary_fp<LogOp>(in[0], out[0]);
  }
}

void sqrt_cpu(const Node& n, const std::vector<array>& in, std::vector<array>& out) {
  if (n.state.b(0)) unary_fp<RsqrtOp>(in[0], out[0]);
  else unary_fp<SqrtOp>(in[0], out[0]);
}

cpu::TileFn log_tile(const Node& n, const std::vector<Dtype>& in) {
  switch (n.state.i(0)) {
    case 0: return unary_fp_tile<Log2Op>(n, in);
    case 1: return unary_fp_tile<Log10Op>(n, in);
    default: return unary_fp_tile<LogOp>(n, in);
  }
}

cpu::TileFn sqrt_tile(const Node& n, const std::vector<Dtype>& in) {
  return n.state.b(0) ? unary_fp_tile<RsqrtOp>(n, in) : unary_fp_tile<SqrtOp>(n, in);
}

}  // namespace

namespace ew {

void register_cpu_unary_math_tiles(cpu::TileTable& table) {
  table.add({{"Exp", unary_fp_tile<ExpOp>}, {"Expm1", unary_fp_tile<Expm1Op>}, {"Log1p", unary_fp_tile<Log1pOp>},
             {"Sin", unary_fp_tile<SinOp>}, {"Cos", unary_fp_tile<CosOp>}, {"Tan", unary_fp_tile<TanOp>},
             {"Sinh", unary_fp_tile<SinhOp>}, {"Cosh", unary_fp_tile<CoshOp>}, {"Tanh", unary_fp_tile<TanhOp>},
             {"ArcSin", unary_fp_tile<ArcSinOp>}, {"ArcCos", unary_fp_tile<ArcCosOp>},
             {"ArcTan", unary_fp_tile<ArcTanOp>}, {"ArcSinh", unary_fp_tile<ArcSinhOp>},
             {"ArcCosh", unary_fp_tile<ArcCoshOp>}, {"ArcTanh", unary_fp_tile<ArcTanhOp>},
             {"Sigmoid", unary_fp_tile<SigmoidOp>}, {"Erf", unary_fp_tile<ErfOp, false>},
             {"ErfInv", unary_fp_tile<ErfInvOp, false>}, {"Log", log_tile}, {"Sqrt", sqrt_tile}});
}

void register_cpu_unary_math(detail::KernelTable& table) {
  table.add({{"Exp", fp_cpu<ExpOp>}, {"Expm1", fp_cpu<Expm1Op>}, {"Log1p", fp_cpu<Log1pOp>},
             {"Sin", fp_cpu<SinOp>}, {"Cos", fp_cpu<CosOp>}, {"Tan", fp_cpu<TanOp>}, {"Sinh", fp_cpu<SinhOp>},
             {"Cosh", fp_cpu<CoshOp>}, {"Tanh", fp_cpu<TanhOp>}, {"ArcSin", fp_cpu<ArcSinOp>},
             {"ArcCos", fp_cpu<ArcCosOp>}, {"ArcTan", fp_cpu<ArcTanOp>}, {"ArcSinh", fp_cpu<ArcSinhOp>},
             {"ArcCosh", fp_cpu<ArcCoshOp>}, {"ArcTanh", fp_cpu<ArcTanhOp>}, {"Sigmoid", fp_cpu<SigmoidOp>},
             {"Erf", fp_cpu<ErfOp, false>}, {"ErfInv", real_fp_cpu<ErfInvOp>}, {"Log", log_cpu},
             {"Sqrt", sqrt_cpu}});
}

}  // namespace ew

}  // namespace kiln
