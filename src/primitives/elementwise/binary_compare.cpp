// Rows of the comparison, logical and bitwise binary primitives (Equal, NotEqual, Greater, GreaterEqual,
// Less, LessEqual, LogicalAnd, LogicalOr, BitwiseBinary) and their ops. The kernels are in
// src/backend/cpu/kernels/elementwise/binary_compare.cpp.
#include <stdexcept>
#include <string>

#include "kiln/ops/shape.h"
#include "primitives/elementwise/rows.h"

namespace kiln {

namespace {

using namespace ew;

// Shared rules take the op's name as a template argument, so that each reports its own "[name]".
constexpr char kEqual[] = "Equal", kNotEqual[] = "NotEqual", kGreater[] = "Greater",
               kGreaterEqual[] = "GreaterEqual", kLess[] = "Less", kLessEqual[] = "LessEqual",
               kLogicalAnd[] = "LogicalAnd", kLogicalOr[] = "LogicalOr";

template <const char* Name>
std::vector<ArraySpec> compare_infer(const State&, const std::vector<ArraySpec>& in) {
  return {{binary_spec(Name, in).shape, bool_}};
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
  auto row = [&](const char* name, InferFn infer) {
    registry::define(detail::row(name, 2, {}, infer, {.flags = B}));
  };
  registry::define(detail::row(kEqual, 2, {{"equal_nan", FieldType::Bool}},
                               compare_infer<kEqual>,
                               {.flags = B,
                                .display = [](const State& s) -> std::string {
                                  return s.b(0) ? "NaNEqual" : "Equal";
                                }}));
  row(kNotEqual, compare_infer<kNotEqual>);
  row(kGreater, compare_infer<kGreater>);
  row(kGreaterEqual, compare_infer<kGreaterEqual>);
  row(kLess, compare_infer<kLess>);
  row(kLessEqual, compare_infer<kLessEqual>);
  row(kLogicalAnd, compare_infer<kLogicalAnd>);
  row(kLogicalOr, compare_infer<kLogicalOr>);
  registry::define(detail::row("BitwiseBinary", 2, {{"op", FieldType::Int}},
                               bitwise_infer,
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

