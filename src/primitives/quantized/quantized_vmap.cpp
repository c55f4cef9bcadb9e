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

}  // namespace

void register_vmap_quantized(RuleTable& t) {
  t.add("Quantize", quantize);
  t.add("QuantizedMatmul", quantized_matmul);
  t.none("GatherQMM", "GatherQMM::vmap NYI (MLX 0.30.1 has no batching rule for it, nor kiln yet).");
}

}  // namespace kiln::vmap_rules
