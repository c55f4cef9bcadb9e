// Comparison, logical and bitwise binary primitives (Equal, NotEqual, Greater, GreaterEqual, Less,
// LessEqual, LogicalAnd, LogicalOr, BitwiseBinary) and their ops.
#include "backend/cpu/kernels/elementwise/elementwise_common.h"  // first: it sets the kernels' float options

#include "kiln/ops/shape.h"

namespace kiln {

namespace {

using namespace ew;

// Comparisons. float16/bfloat16 compare as floats; complex orders lexicographically, as in MLX.
#define KILN_COMPARE(Name, Display, OP, CPLX)            \
  struct Name {                                          \
    static constexpr const char* name = Display;         \
    template <typename T>                                \
    static bool apply(T x, T y) {                        \
      if constexpr (detail::is_half_v<T>) {                      \
        return static_cast<float>(x) OP static_cast<float>(y); \
      } else if constexpr (detail::is_complex_v<T>) {            \
        return CPLX;                                     \
      } else {                                           \
        return x OP y;                                   \
      }                                                  \
    }                                                    \
  };
KILN_COMPARE(EqualOp, "Equal", ==, x == y)
KILN_COMPARE(NotEqualOp, "NotEqual", !=, x != y)
KILN_COMPARE(GreaterOp, "Greater", >, cgt(x, y))
KILN_COMPARE(GreaterEqualOp, "GreaterEqual", >=, cge(x, y))
KILN_COMPARE(LessOp, "Less", <, cgt(y, x))
KILN_COMPARE(LessEqualOp, "LessEqual", <=, cge(y, x))
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
  static constexpr const char* name = "LogicalAnd";
  template <typename T>
  static bool apply(T x, T y) {
    return truthy(x) && truthy(y);
  }
};

struct LogicalOrOp {
  static constexpr const char* name = "LogicalOr";
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

template <typename Op>
std::vector<ArraySpec> compare_infer(const State&, const std::vector<ArraySpec>& in) {
  return {{binary_spec(Op::name, in).shape, bool_}};
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

const char* bitwise_display(int op) {
  static const char* names[] = {"BitwiseAnd", "BitwiseOr", "BitwiseXor", "LeftShift", "RightShift"};
  return op >= 0 && op < 5 ? names[op] : "BitwiseBinary";
}

std::vector<ArraySpec> bitwise_infer(const State& st, const std::vector<ArraySpec>& in) {
  int op = st.i(0);
  if (op < 0 || op > 4) {
    throw std::invalid_argument("[BitwiseBinary] Invalid op code " + std::to_string(op) + " (expected 0 to 4).");
  }
  ArraySpec o = binary_spec(bitwise_display(op), in);
  check_dtype(is_integral(o.dtype) || o.dtype == bool_, bitwise_display(op), "Expected integer or boolean inputs",
              o.dtype);
  return {o};
}

// ---- op builders ----

std::pair<array, array> prepare(const array& a, const array& b, Dtype t, StreamOrDevice s) {
  auto bs = broadcast_arrays({astype(a, t, s), astype(b, t, s)}, s);
  return {bs[0], bs[1]};
}

array compare_op(const char* prim, const array& a, const array& b, StreamOrDevice s, State st = {}) {
  auto [x, y] = prepare(a, b, promote_types(a.dtype(), b.dtype()), s);
  const PrimitiveDef& d = detail::def(prim);
  return make_array(d, std::move(st), {x, y}, {{x.shape(), bool_}}, to_stream(s));
}

array logical_op(const char* prim, const array& a, const array& b, StreamOrDevice s) {
  auto [x, y] = prepare(a, b, bool_, s);
  const PrimitiveDef& d = detail::def(prim);
  return make_array(d, {}, {x, y}, {{x.shape(), bool_}}, to_stream(s));
}

array bitwise_op(const array& a, const array& b, int op, const char* api, StreamOrDevice s, Dtype t) {
  if (!(is_integral(t) || t == bool_)) {
    throw std::invalid_argument(std::string("[") + api + "] Only allowed on integer or boolean types but got types " +
                                dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()) + ".");
  }
  auto [x, y] = prepare(a, b, t, s);
  static const PrimitiveDef& d = detail::def("BitwiseBinary");
  return make_array(d, State{int32_t{op}}, {x, y}, {{x.shape(), t}}, to_stream(s));
}

// Shifts of booleans compute in uint8.
Dtype shift_type(const array& a, const array& b) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  return t == bool_ ? uint8 : t;
}

}  // namespace

namespace ew {
void register_binary_compare() {
  const unsigned B = kBinary | kElementwise;
  auto row = [&](const char* name, InferFn infer, CpuFn cpu) {
    registry::define(detail::row(name, 2, {}, infer, cpu, {.flags = B}));
  };
  registry::define(detail::row("Equal", 2, {{"equal_nan", FieldType::Bool}},
                               compare_infer<EqualOp>, equal_cpu,
                               {.flags = B,
                                .display = [](const State& s) -> std::string {
                                  return s.b(0) ? "NaNEqual" : "Equal";
                                }}));
  row("NotEqual", compare_infer<NotEqualOp>, compare_cpu<NotEqualOp>);
  row("Greater", compare_infer<GreaterOp>, compare_cpu<GreaterOp>);
  row("GreaterEqual", compare_infer<GreaterEqualOp>, compare_cpu<GreaterEqualOp>);
  row("Less", compare_infer<LessOp>, compare_cpu<LessOp>);
  row("LessEqual", compare_infer<LessEqualOp>, compare_cpu<LessEqualOp>);
  row("LogicalAnd", compare_infer<LogicalAndOp>, compare_cpu<LogicalAndOp>);
  row("LogicalOr", compare_infer<LogicalOrOp>, compare_cpu<LogicalOrOp>);
  registry::define(detail::row("BitwiseBinary", 2, {{"op", FieldType::Int}},
                               bitwise_infer, bitwise_cpu,
                               {.flags = B,
                                .display = [](const State& s) -> std::string { return bitwise_display(s.i(0)); }}));
}
}  // namespace ew

array equal(const array& a, const array& b, StreamOrDevice s) { return compare_op("Equal", a, b, s, State{false}); }
array not_equal(const array& a, const array& b, StreamOrDevice s) { return compare_op("NotEqual", a, b, s); }
array greater(const array& a, const array& b, StreamOrDevice s) { return compare_op("Greater", a, b, s); }
array greater_equal(const array& a, const array& b, StreamOrDevice s) {
  return compare_op("GreaterEqual", a, b, s);
}
array less(const array& a, const array& b, StreamOrDevice s) { return compare_op("Less", a, b, s); }
array less_equal(const array& a, const array& b, StreamOrDevice s) { return compare_op("LessEqual", a, b, s); }
array logical_and(const array& a, const array& b, StreamOrDevice s) { return logical_op("LogicalAnd", a, b, s); }
array logical_or(const array& a, const array& b, StreamOrDevice s) { return logical_op("LogicalOr", a, b, s); }

array bitwise_and(const array& a, const array& b, StreamOrDevice s) {
  return bitwise_op(a, b, 0, "bitwise_and", s, promote_types(a.dtype(), b.dtype()));
}
array bitwise_or(const array& a, const array& b, StreamOrDevice s) {
  return bitwise_op(a, b, 1, "bitwise_or", s, promote_types(a.dtype(), b.dtype()));
}
array bitwise_xor(const array& a, const array& b, StreamOrDevice s) {
  return bitwise_op(a, b, 2, "bitwise_xor", s, promote_types(a.dtype(), b.dtype()));
}
array left_shift(const array& a, const array& b, StreamOrDevice s) {
  return bitwise_op(a, b, 3, "left_shift", s, shift_type(a, b));
}
array right_shift(const array& a, const array& b, StreamOrDevice s) {
  return bitwise_op(a, b, 4, "right_shift", s, shift_type(a, b));
}

array operator==(const array& a, const array& b) { return equal(a, b); }
array operator!=(const array& a, const array& b) { return not_equal(a, b); }
array operator<(const array& a, const array& b) { return less(a, b); }
array operator<=(const array& a, const array& b) { return less_equal(a, b); }
array operator>(const array& a, const array& b) { return greater(a, b); }
array operator>=(const array& a, const array& b) { return greater_equal(a, b); }
array operator&&(const array& a, const array& b) { return logical_and(a, b); }
array operator||(const array& a, const array& b) { return logical_or(a, b); }
array operator&(const array& a, const array& b) { return bitwise_and(a, b); }
array operator|(const array& a, const array& b) { return bitwise_or(a, b); }
array operator^(const array& a, const array& b) { return bitwise_xor(a, b); }
array operator<<(const array& a, const array& b) { return left_shift(a, b); }
array operator>>(const array& a, const array& b) { return right_shift(a, b); }

}  // namespace kiln
