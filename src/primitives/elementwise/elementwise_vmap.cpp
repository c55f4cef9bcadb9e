// Batching rules of the element-wise rows (vmap_rules.h). Unary rows keep the input's batch axis;
// rows of several inputs bring every mapped input's batch axis to the front, aligned to the output's
// rank, and broadcast each input to the batched output shape.
#include <algorithm>

#include "kiln/ops/shape.h"
#include "primitives/vmap_rules.h"

namespace kiln::vmap_rules {

namespace {

// The batch axis stays where it is: an element-wise map of one input.
Result unary(const Args& a) {
  Result r;
  r.outputs = rebuild(a, a.state(), {a.inputs[0]});
  r.axes = {a.axes[0]};
  return r;
}

// View reinterprets the last axis (its size changes with the itemsize): the batch axis goes first.
Result view(const Args& a) {
  Result r;
  r.outputs = rebuild(a, a.state(), {a.front(0)});
  r.axes = {0};
  return r;
}

Result nary(const Args& a) {
  Shape out = a.node.specs[0].shape;
  const int rank = static_cast<int>(out.size());
  out.insert(out.begin(), a.size);
  std::vector<array> ins;
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    ins.push_back(a.mapped(i) ? broadcast_to(align_front(a.front(i), rank), out) : broadcast_to(a.inputs[i], out));
  }
  Result r;
  r.outputs = rebuild(a, a.state(), std::move(ins));
  r.axes.assign(r.outputs.size(), 0);
  return r;
}

}  // namespace

void register_vmap_elementwise(RuleTable& t) {
  for (const char* name :
       {"AsType", "Copy", "StopGradient", "Abs", "Negative", "Sign", "Square", "Floor", "Ceil", "Round", "LogicalNot",
        "BitwiseInvert", "Conjugate", "Real", "Imag", "Exp", "Expm1", "Log1p", "Sin", "Cos", "Tan", "Sinh", "Cosh",
        "Tanh", "ArcSin", "ArcCos", "ArcTan", "ArcSinh", "ArcCosh", "ArcTanh", "Sigmoid", "Erf", "ErfInv", "Log",
        "Sqrt"}) {
    t.add(name, unary);
  }
  t.add("View", view);
  for (const char* name : {"Add", "Subtract", "Multiply", "Divide", "Remainder", "Power", "Maximum", "Minimum",
                           "ArcTan2", "LogAddExp", "DivMod", "FloorDivide", "Equal", "NotEqual", "Greater",
                           "GreaterEqual", "Less", "LessEqual", "LogicalAnd", "LogicalOr", "BitwiseBinary", "Select"}) {
    t.add(name, nary);
  }
}

}  // namespace kiln::vmap_rules
