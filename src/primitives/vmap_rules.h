// Batching rules (vmap): one rule per row, in a table keyed by the row, filled by each family in
// src/primitives/<family>/<family>_vmap.cpp (register_vmap_<family>, one per name of KILN_FAMILIES).
// The machinery that walks a function's graph and calls these rules is src/transforms/vmap.cpp.
//
// A rule receives the unbatched node (its row, state, output specs and stream), the node's inputs
// rebuilt for the batch, and for each input the axis its batch dimension sits at (-1: not mapped, the
// input is the unbatched original). It returns the batched outputs, built with kiln's ops (so they are
// lazy graphs like any other), and the axis of each output's batch dimension (-1: not mapped).
//
// A row that cannot be batched is declared with `none(row, reason)`; calling vmap through it raises
// "[vmap] Primitive <name> cannot be batched: <reason>". A row with neither raises "[vmap] Primitive
// <name> has no batching rule in kiln."; the coverage test (tests/unit/test_vmap.cpp) fails on such rows.
#pragma once

#include <string>
#include <vector>

#include "kiln/primitive.h"
#include "primitives/families.h"

namespace kiln::vmap_rules {

struct Args {
  const Node& node;           // the unbatched node: row, state, specs (every output's), stream
  std::vector<array> inputs;  // batched inputs (or the unbatched original where axes[i] == -1)
  std::vector<int> axes;      // batch axis of each input, -1 where the input is not mapped
  int size = 0;               // the batch size
  const State& state() const { return node.state; }
  bool mapped(size_t i) const { return axes.at(i) >= 0; }
  // The input with its batch axis at 0; an unmapped input broadcast to (size, ...shape).
  array front(size_t i) const;
  // The input with its batch axis at 0; an unmapped input unchanged.
  array front_or_same(size_t i) const;
};

struct Result {
  std::vector<array> outputs;
  std::vector<int> axes;  // batch axis of each output (-1: not mapped)
};

using Rule = Result (*)(const Args&);

class RuleTable {
 public:
  // The batching rule of the row named `primitive`. Throws std::logic_error on an unknown name or a
  // second entry for a row.
  void add(const char* primitive, Rule rule);
  void add(std::initializer_list<std::pair<const char*, Rule>> entries) {
    for (auto& [name, rule] : entries) add(name, rule);
  }
  // Declares that the row has no batching rule, and why (the text of the error vmap raises).
  void none(const char* primitive, const char* reason);
  // Null when the row has no rule.
  Rule find(const PrimitiveDef& def) const;
  // Null when the row is not declared unbatchable.
  const std::string* reason(const PrimitiveDef& def) const;

 private:
  void slot(const PrimitiveDef& def);
  std::vector<Rule> rules_;
  std::vector<std::string> reasons_;
  std::vector<bool> taken_;
};

// The table, built on first use from every family's register_vmap_<family>.
const RuleTable& rules();

#define KILN_DECLARE_VMAP_FAMILY(f) void register_vmap_##f(RuleTable& table);
KILN_FAMILIES(KILN_DECLARE_VMAP_FAMILY)
#undef KILN_DECLARE_VMAP_FAMILY

// ---- helpers the family rules share ----

// `x` (batch axis at 0, unbatched rank `r` = x.ndim() - 1) reshaped to (B, 1, ..., 1, ...rest) with
// `rank` unbatched dimensions, so it broadcasts against unbatched operands of rank `rank`.
array align_front(const array& x, int rank);
// `s` with the batch size prepended.
Shape with_batch(const Shape& s, int size);
// Axes of a state shifted past a batch axis put in front.
std::vector<int32_t> plus_one(const std::vector<int32_t>& axes);
// Rows whose kernels treat leading axes as batch dimensions (decompositions, last-axis transforms):
// every input brought to the front (unmapped ones broadcast), the same state, every output spec with the
// batch size prepended; the outputs' batch axes are 0.
Result leading_batch(const Args& a);
// The same, for the inputs listed in `batch_inputs` only (the others passed through unchanged).
Result leading_batch(const Args& a, const std::vector<size_t>& batch_inputs);
// The node's row rebuilt with `state` on `inputs`, output shapes and dtypes from the row's rule (which
// also validates them), on the node's stream.
std::vector<array> rebuild(const Args& a, State state, std::vector<array> inputs);
// Gathered products (GatherMM, GatherQMM): `x` (an operand whose leading axes are gathered by `indices`)
// with its examples' leading axes flattened into one axis of size * count matrices when `mapped` (count
// of them each), and `indices` (batched in front, broadcast to `index_shape`) offset by e * count for
// example e, so each example picks its own matrices.
array fold_gathered(const array& x, bool mapped, int size);
array offset_indices(const array& indices, bool mapped, int size, int count);
// std::invalid_argument "[vmap] <what>" naming the row.
[[noreturn]] void unsupported(const Args& a, const std::string& what);

}  // namespace kiln::vmap_rules

namespace kiln::vmap_rules {
// An unbatched axis (non-negative, as rows store them) renumbered for an array whose batch axis is `batch`.
inline int around(int axis, int batch) { return axis >= batch ? axis + 1 : axis; }
inline std::vector<int32_t> around(const std::vector<int32_t>& axes, int batch) {
  std::vector<int32_t> out;
  for (int a : axes) out.push_back(around(a, batch));
  return out;
}
}  // namespace kiln::vmap_rules
