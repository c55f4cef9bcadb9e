// CPU kernels of the comparison, logical and bitwise binary primitives (Equal, NotEqual, Greater,
// GreaterEqual, Less, LessEqual, LogicalAnd, LogicalOr, BitwiseBinary); the rows and op builders are in
// src/primitives/elementwise/binary_compare.cpp.
#include "backend/cpu/kernels/elementwise/elementwise_common.h"  // first: it sets the kernels' float options

namespace kiln {

namespace {

using namespace ew;

// Comparisons. float16/bfloat16 compare as floats; complex orders lexicographically, as in MLX.
#define KILN_COMPARE(Name, OP, CPLX, V)                         \
  struct Name {                                                 \
    static constexpr cpu::VCompare kTileF32 = cpu::VCompare::V; \
    template <typename T>                                       \
    static bool apply(T x, T y) {                               \
      if constexpr (detail::is_half_v<T>) {                     \
        return static_cast<float>(x) OP static_cast<float>(y);  \
      } else if constexpr (detail::is_complex_v<T>) {           \
        return CPLX;                                            \
      } else {                                                  \
        return x OP y;                                          \
      }                                                         \
    }                                                           \
  };
// kTileF32: the vector comparison of float32 values (cpu/vmath.h), for the tile function.
KILN_COMPARE(EqualOp, ==, x == y, Equal)
KILN_COMPARE(NotEqualOp, !=, x != y, NotEqual)
KILN_COMPARE(GreaterOp, >, cgt(x, y), Greater)
KILN_COMPARE(GreaterEqualOp, >=, cge(x, y), GreaterEqual)
KILN_COMPARE(LessOp, <, cgt(y, x), Less)
KILN_COMPARE(LessEqualOp, <=, cge(y, x), LessEqual)
#undef KILN_COMPARE

// Equal with equal_nan: NaN equals NaN (for complex, MLX tests the real parts for NaN).
struct NaNEqualOp {
  template <typename T>
  static bool apply(T x, T y) {
    if constexpr (detail::is_complex_v<T>) {
      return x == y || (std::isnan(x.real()) && std::isnan(y.real()));
    } else if constexpr (detail::is_float_v<T>) {
      using A = detail::acc_t<T>;
      A a = static_cast<A>(x), b = static_cast<A>(y);
      return a == b || (a != a && b != b);
    } else {
      return x == y;
    }
  }
};

template <typename T>
inline bool truthy(T v) {
  if constexpr (detail::is_half_v<T>) return static_cast<float>(v) != 0.0f;
  else return v != T(0);
}

struct LogicalAndOp {
  template <typename T>
  static bool apply(T x, T y) {
    return truthy(x) && truthy(y);
  }
};

struct LogicalOrOp {
  template <typename T>
  static bool apply(T x, T y) {
    return truthy(x) || truthy(y);
  }
};

template <typename Op>
void compare_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  detail::dispatch_all(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    binary_run<T, bool>(in[0], in[1], out[0], [](T x, T y) { return Op::apply(x, y); });
  });
}

void equal_cpu(const Node& n, const std::vector<array>& in, std::vector<array>& out) {
  if (n.state.b(0)) compare_cpu<NaNEqualOp>(n, in, out);
  else compare_cpu<EqualOp>(n, in, out);
}

// Bitwise ops. Shifts behave as on x86, where MLX runs: operands narrower than 32 bits are shifted
// as int, and the count is taken modulo the (promoted) width.
template <int Code, typename T>
inline T bitwise(T x, T y) {
  using W = std::conditional_t<(sizeof(T) < 4), int32_t, T>;
  constexpr int mask = sizeof(W) * 8 - 1;
  W a = static_cast<W>(x), b = static_cast<W>(y);
  W r;
  if constexpr (Code == 0) r = a & b;
  else if constexpr (Code == 1) r = a | b;
  else if constexpr (Code == 2) r = a ^ b;
  else if constexpr (Code == 3) r = static_cast<W>(a << (b & mask));
  else r = static_cast<W>(a >> (b & mask));
  if constexpr (std::is_same_v<T, bool>) return r != 0;
  else return static_cast<T>(r);
}

template <int Code>
void bitwise_run(const std::vector<array>& in, array& out) {
  detail::dispatch_all(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      binary_run<T, T>(in[0], in[1], out, [](T x, T y) { return bitwise<Code>(x, y); });
    }
  });
}

void bitwise_cpu(const Node& n, const std::vector<array>& in, std::vector<array>& out) {
  switch (n.state.i(0)) {
    case 0: return bitwise_run<0>(in, out[0]);
    case 1: return bitwise_run<1>(in, out[0]);
    case 2: return bitwise_run<2>(in, out[0]);
    case 3: return bitwise_run<3>(in, out[0]);
    default: return bitwise_run<4>(in, out[0]);
  }
}

// Tile functions: Op::apply over the input dtype, as binary_run does on row-major operands (float32
// comparisons through the vector math).
template <typename Op, typename T>
cpu::TileFn compare_tile_fn() {
  if constexpr (std::is_same_v<T, float> && requires { Op::kTileF32; }) return &vcompare_tile<Op::kTileF32>;
  else return &tile_apply2<Op, T, bool>;
}

template <typename Op>
cpu::TileFn compare_tile(const Node& node, const std::vector<Dtype>& in) {
  if (in[1] != in[0] || node.specs[0].dtype != bool_) return nullptr;
  return tile_by_dtype(in[0], [](auto tag) -> cpu::TileFn { return compare_tile_fn<Op, decltype(tag)>(); });
}

cpu::TileFn equal_tile(const Node& n, const std::vector<Dtype>& in) {
  return n.state.b(0) ? compare_tile<NaNEqualOp>(n, in) : compare_tile<EqualOp>(n, in);
}

template <int Code>
struct BitwiseOp {
  template <typename T>
  static T apply(T x, T y) {
    return bitwise<Code>(x, y);
  }
};

template <int Code>
cpu::TileFn bitwise_code_tile(const Node& node, const std::vector<Dtype>& in) {
  if (in[1] != in[0] || node.specs[0].dtype != in[0]) return nullptr;
  return tile_by_dtype(in[0], [](auto tag) -> cpu::TileFn {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) return &tile_apply2<BitwiseOp<Code>, T>;
    else return nullptr;
  });
}

cpu::TileFn bitwise_tile(const Node& n, const std::vector<Dtype>& in) {
  switch (n.state.i(0)) {
    case 0: return bitwise_code_tile<0>(n, in);
    case 1: return bitwise_code_tile<1>(n, in);
    case 2: return bitwise_code_tile<2>(n, in);
    case 3: return bitwise_code_tile<3>(n, in);
    default: return bitwise_code_tile<4>(n, in);
  }
}

}  // namespace

namespace ew {
void register_cpu_binary_compare(detail::KernelTable& table) {
  table.add({{"Equal", equal_cpu}, {"NotEqual", compare_cpu<NotEqualOp>}, {"Greater", compare_cpu<GreaterOp>},
             {"GreaterEqual", compare_cpu<GreaterEqualOp>}, {"Less", compare_cpu<LessOp>},
             {"LessEqual", compare_cpu<LessEqualOp>}, {"LogicalAnd", compare_cpu<LogicalAndOp>},
             {"LogicalOr", compare_cpu<LogicalOrOp>}, {"BitwiseBinary", bitwise_cpu}});
}

void register_cpu_binary_compare_tiles(cpu::TileTable& table) {
  table.add({{"Equal", equal_tile}, {"NotEqual", compare_tile<NotEqualOp>}, {"Greater", compare_tile<GreaterOp>},
             {"GreaterEqual", compare_tile<GreaterEqualOp>}, {"Less", compare_tile<LessOp>},
             {"LessEqual", compare_tile<LessEqualOp>}, {"LogicalAnd", compare_tile<LogicalAndOp>},
             {"LogicalOr", compare_tile<LogicalOrOp>}, {"BitwiseBinary", bitwise_tile}});
}
}  // namespace ew

}  // namespace kiln
