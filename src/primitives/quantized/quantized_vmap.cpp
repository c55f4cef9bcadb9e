// Batching rules of the quantized family (vmap_rules.h). Quantize works on groups of the last axis, so
// leading axes are batch axes. QuantizedMatmul broadcasts x's leading axes over a 2-D weight; with a
// mapped weight (or weights with batch axes) every operand is batched in front.
#include "kiln/ops/shape.h"
#include "primitives/vmap_rules.h"

namespace kiln::vmap_rules {

namespace {

Result quantize(const Args& a) { return leading_batch(a); }

Result quantized_matmul(const Args& a) {
  bool params_mapped = false;
  for (size_t i = 1; i < a.inputs.size(); ++i) params_mapped = params_mapped || a.mapped(i);
  const int w_rank = static_cast<int>(a.node.inputs[1].ndim());
  if (!params_mapped && w_rank == 2) return leading_batch(a, {0});
  if (w_rank > 2) return leading_batch(a);
  // A mapped 2-D weight: x's leading axes and rows become the rows of one (B, rows, K) product per example.
  array x = a.front(0);
  const Shape xs = x.shape();
  int rows = 1;
  for (size_t d = 1; d + 1 < xs.size(); ++d) rows *= xs[d];
  std::vector<array> ins{reshape(x, {a.size, rows, xs.back()})};
  for (size_t i = 1; i < a.inputs.size(); ++i) ins.push_back(a.front(i));
  array y = rebuild(a, a.state(), ins)[0];
  Shape o = a.node.specs[0].shape;
  o.insert(o.begin(), a.size);
  return {{reshape(y, o)}, {0}};
}

// GatherQMM(x, w, scales, [biases], lhs_indices, rhs_indices): as GatherMM (linalg_vmap.cpp), x's and the
// quantized operand's batch axes are folded with the examples' and the indices offset per example; the
// quantized operand's parts (w, scales, biases) are batched together.
Result gather_qmm_rule(const Args& a) {
  const size_t n = a.inputs.size(), li = n - 2, ri = n - 1;
  Shape ishape = a.node.inputs[li].shape();
  ishape.insert(ishape.begin(), a.size);
  bool w_mapped = false;
  for (size_t i = 1; i < li; ++i) w_mapped = w_mapped || a.mapped(i);
  std::vector<array> ins{fold_gathered(a.front_or_same(0), a.mapped(0), a.size)};
  for (size_t i = 1; i < li; ++i) ins.push_back(fold_gathered(w_mapped ? a.front(i) : a.inputs[i], w_mapped, a.size));
  const int cx = ins[0].shape(0) / (a.mapped(0) ? a.size : 1);
  const int cw = ins[1].shape(0) / (w_mapped ? a.size : 1);
  ins.push_back(offset_indices(broadcast_to(a.front(li), ishape), a.mapped(0), a.size, cx));
  ins.push_back(offset_indices(broadcast_to(a.front(ri), ishape), w_mapped, a.size, cw));
  State st = a.state();
  st.values[4] = false;  // the offsets keep each example's order, not the order across examples
  st.values[5] = false;
  return {rebuild(a, st, ins), {0}};
}

}  // namespace

void register_vmap_quantized(RuleTable& t) {
  t.add("Quantize", quantize);
  t.add("QuantizedMatmul", quantized_matmul);
  t.add("GatherQMM", gather_qmm_rule);
}

}  // namespace kiln::vmap_rules
