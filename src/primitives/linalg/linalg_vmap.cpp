// Batching rules of the linalg family (vmap_rules.h). Products broadcast their leading (batch) axes, so
// mapped operands get the batch axis in front, aligned to the other operands' rank; decompositions act
// on the last two axes and take any leading axes as batch axes; GatherMM folds the batch into the
// operands' gathered batch axis.
#include <algorithm>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/shape.h"
#include "primitives/vmap_rules.h"

namespace kiln::vmap_rules {

namespace {

// Every operand's unbatched rank is brought to the largest, mapped ones batched at the front.
Result aligned_product(const Args& a) {
  int rank = 0;
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    rank = std::max(rank, static_cast<int>(a.inputs[i].ndim()) - (a.mapped(i) ? 1 : 0));
  }
  std::vector<array> ins;
  for (size_t i = 0; i < a.inputs.size(); ++i) ins.push_back(a.mapped(i) ? align_front(a.front(i), rank) : a.inputs[i]);
  return {rebuild(a, a.state(), ins), {0}};
}

Result leading(const Args& a) { return leading_batch(a); }

// GatherMM(a, b, lhs_indices, rhs_indices): the indices pick matrices of a's and b's (flattened) batch
// axes. The batch is folded into those axes: example e's indices are offset by e times the number of
// matrices of its own operand.
Result gather_mm_rule(const Args& a) {
  Shape ishape = a.node.inputs[2].shape();
  ishape.insert(ishape.begin(), a.size);
  std::vector<array> ins;
  for (size_t i = 0; i < 2; ++i) ins.push_back(fold_gathered(a.front_or_same(i), a.mapped(i), a.size));
  for (size_t i = 0; i < 2; ++i) {
    const int count = ins[i].shape(0) / (a.mapped(i) ? a.size : 1);
    ins.push_back(offset_indices(broadcast_to(a.front(2 + i), ishape), a.mapped(i), a.size, count));
  }
  // Offsets keep each example's order but not the order across examples of an unmapped operand.
  return {rebuild(a, State{false, false}, ins), {0}};
}

}  // namespace

void register_vmap_linalg(RuleTable& t) {
  t.add({{"Matmul", aligned_product},
         {"AddMM", aligned_product},
         {"Hadamard", leading},
         {"QRF", leading},
         {"SVD", leading},
         {"Inverse", leading},
         {"Cholesky", leading},
         {"Eig", leading},
         {"Eigh", leading},
         {"LUF", leading},
         {"BlockMaskedMM", leading},
         {"GatherMM", gather_mm_rule}});
}

}  // namespace kiln::vmap_rules
