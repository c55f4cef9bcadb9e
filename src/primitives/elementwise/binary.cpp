// Rows of the element-wise arithmetic binary primitives (Add, Subtract, Multiply, Divide, Remainder,
// DivMod, Power, Maximum, Minimum, ArcTan2, LogAddExp) and their ops. Op builders promote both inputs
// to one dtype and broadcast them, as MLX does; comparisons, logical and bitwise ops are in
// binary_compare.cpp. The kernels are in src/backend/cpu/kernels/elementwise/binary.cpp.
#include <stdexcept>
#include <string>

#include "kiln/ops/shape.h"
#include "primitives/elementwise/rows.h"

namespace kiln {

namespace ew {

ArraySpec binary_spec(const char* name, const std::vector<ArraySpec>& in) {
  if (in[0].dtype != in[1].dtype) {
    throw std::invalid_argument(std::string("[") + name + "] Inputs must have the same dtype but found " +
                                dtype_name(in[0].dtype) + " and " + dtype_name(in[1].dtype) + ".");
  }
  return {detail::broadcast_shapes(in[0].shape, in[1].shape), in[0].dtype};
}

}  // namespace ew

namespace {

using namespace ew;
using detail::at_least_float;

// Shared rules take the op's name as a template argument, so that each reports its own "[name]".
constexpr char kAdd[] = "Add", kSubtract[] = "Subtract", kMultiply[] = "Multiply", kDivide[] = "Divide",
               kRemainder[] = "Remainder", kPower[] = "Power", kMaximum[] = "Maximum", kMinimum[] = "Minimum",
               kArcTan2[] = "ArcTan2", kLogAddExp[] = "LogAddExp", kFloorDivide[] = "FloorDivide";

template <const char* Name>
std::vector<ArraySpec> arith_infer(const State&, const std::vector<ArraySpec>& in) {
  return {binary_spec(Name, in)};
}

template <const char* Name>
std::vector<ArraySpec> float_arith_infer(const State&, const std::vector<ArraySpec>& in) {
  ArraySpec o = binary_spec(Name, in);
  check_dtype(is_inexact(o.dtype), Name, "Expected floating point or complex inputs", o.dtype);
  return {o};
}

std::vector<ArraySpec> divmod_infer(const State&, const std::vector<ArraySpec>& in) {
  ArraySpec o = binary_spec("DivMod", in);
  if (o.dtype == complex64) throw std::invalid_argument("[divmod] Complex type not supported.");
  return {o, o};
}

// ---- op builders ----

std::pair<array, array> prepare(const array& a, const array& b, Dtype t, StreamOrDevice s) {
  auto bs = broadcast_arrays({astype(a, t, s), astype(b, t, s)}, s);
  return {bs[0], bs[1]};
}

array binary_op(const char* prim, const array& a, const array& b, Dtype t, StreamOrDevice s) {
  auto [x, y] = prepare(a, b, t, s);
  const PrimitiveDef& d = detail::def(prim);
  return make_array(d, {}, {x, y}, {{x.shape(), t}}, to_stream(s));
}

}  // namespace

namespace ew {
void register_binary() {
  const unsigned B = kBinary | kElementwise;
  auto row = [&](const char* name, InferFn infer, int outs = 1) {
    registry::define(detail::row(name, 2, {}, infer, {.num_outputs = outs, .flags = B}));
  };
  row(kAdd, arith_infer<kAdd>);
  row(kSubtract, arith_infer<kSubtract>);
  row(kMultiply, arith_infer<kMultiply>);
  row(kDivide, arith_infer<kDivide>);
  row(kRemainder, arith_infer<kRemainder>);
  row(kPower, arith_infer<kPower>);
  row(kMaximum, arith_infer<kMaximum>);
  row(kMinimum, arith_infer<kMinimum>);
  row(kArcTan2, float_arith_infer<kArcTan2>);
  row(kLogAddExp, float_arith_infer<kLogAddExp>);
  registry::define(detail::row("DivMod", 2, {{"floor", FieldType::Bool}}, divmod_infer,
                               {.num_outputs = 2, .flags = B}));
  row(kFloorDivide, arith_infer<kFloorDivide>);
  ew::register_binary_compare();
  ew::register_ternary();
}
}  // namespace ew

array add(const array& a, const array& b, StreamOrDevice s) {
  return binary_op("Add", a, b, promote_types(a.dtype(), b.dtype()), s);
}
array subtract(const array& a, const array& b, StreamOrDevice s) {
  return binary_op("Subtract", a, b, promote_types(a.dtype(), b.dtype()), s);
}
array multiply(const array& a, const array& b, StreamOrDevice s) {
  return binary_op("Multiply", a, b, promote_types(a.dtype(), b.dtype()), s);
}
array divide(const array& a, const array& b, StreamOrDevice s) {
  return binary_op("Divide", a, b, at_least_float(promote_types(a.dtype(), b.dtype())), s);
}
array floor_divide(const array& a, const array& b, StreamOrDevice s) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (is_inexact(t)) return floor(divide(a, b, s), s);
  return binary_op("Divide", a, b, t, s);
}
array remainder(const array& a, const array& b, StreamOrDevice s) {
  return binary_op("Remainder", a, b, promote_types(a.dtype(), b.dtype()), s);
}
// kiln's divmod builds the C-style node of MLX 0.30.1, the release whose layout kiln writes by default
// (exports for 0.32.2 on refuse it; files from those releases carry the flooring node).
std::vector<array> divmod(const array& a, const array& b, StreamOrDevice s) {
  Dtype t = promote_types(a.dtype(), b.dtype());
  if (t == complex64) throw std::invalid_argument("[divmod] Complex type not supported.");
  auto [x, y] = prepare(a, b, t, s);
  static const PrimitiveDef& d = detail::def("DivMod");
  return make_arrays(d, State{false}, {x, y}, {{x.shape(), t}, {x.shape(), t}}, to_stream(s));
}
array power(const array& a, const array& b, StreamOrDevice s) {
  return binary_op("Power", a, b, promote_types(a.dtype(), b.dtype()), s);
}
array maximum(const array& a, const array& b, StreamOrDevice s) {
  return binary_op("Maximum", a, b, promote_types(a.dtype(), b.dtype()), s);
}
array minimum(const array& a, const array& b, StreamOrDevice s) {
  return binary_op("Minimum", a, b, promote_types(a.dtype(), b.dtype()), s);
}
array arctan2(const array& a, const array& b, StreamOrDevice s) {
  return binary_op("ArcTan2", a, b, at_least_float(promote_types(a.dtype(), b.dtype())), s);
}
array logaddexp(const array& a, const array& b, StreamOrDevice s) {
  return binary_op("LogAddExp", a, b, at_least_float(promote_types(a.dtype(), b.dtype())), s);
}

array operator+(const array& a, const array& b) { return add(a, b); }
array operator-(const array& a, const array& b) { return subtract(a, b); }
array operator*(const array& a, const array& b) { return multiply(a, b); }
array operator/(const array& a, const array& b) { return divide(a, b); }
array operator%(const array& a, const array& b) { return remainder(a, b); }

}  // namespace kiln

