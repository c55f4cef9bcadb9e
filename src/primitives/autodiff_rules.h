// The derivative rules of the primitives: one entry per row, in a table keyed by the row
// (PrimitiveDef::index), filled per family by register_<family>_grad(table) in
// src/primitives/<family>/<family>_grad.cpp (one per family of families.h). The machinery that walks a
// graph and applies them (vjp, jvp, grad, ...) is stage 6, src/transforms/autodiff.cpp.
//
// A row is in one of three states:
//   - it has rules: `vjp` (reverse mode) and/or `jvp` (forward mode), built with kiln's ops, so a
//     derivative is a lazy graph of rows like any other (evaluated, differentiated again, exported);
//     or a `fallback`: the primitive written with other rows, which the machinery differentiates
//     where the row has no direct rule (the fast rows' jvp, the VJP rows' own derivatives);
//   - it is declared not differentiable (`none`), with the reason: the machinery raises MLX's error
//     text "[Primitive::vjp] Not implemented for <name>." when its derivative is needed;
//   - it has no entry: "[vjp] Not implemented for <name> in kiln yet." (tests/unit/test_autodiff*.cpp
//     lists those rows explicitly and fails when that list goes stale).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/array.h"
#include "kiln/primitive.h"
#include "primitives/families.h"

namespace kiln::detail::autodiff {

// One application of a primitive, as a rule sees it.
struct Application {
  const Node& node;
  const std::vector<array>& inputs;   // the primals
  const std::vector<array>& outputs;  // every output of the node, in order
  const State& state() const { return node.state; }
  StreamOrDevice s() const { return node.stream; }
  std::string name() const { return node.def->display_name(node.state); }
};

// Reverse mode: one cotangent per output (zeros where an output has none) in, one result per entry of
// `argnums` (input positions, increasing) out.
using VjpFn = std::vector<array> (*)(const Application& app, const std::vector<array>& cotangents,
                                     const std::vector<int>& argnums);
// Forward mode: one tangent per entry of `argnums` (the inputs that have tangents; the others are
// constant) in, one tangent per output out.
using JvpFn = std::vector<array> (*)(const Application& app, const std::vector<array>& tangents,
                                     const std::vector<int>& argnums);
// The primitive written with other rows: the node's outputs from its inputs.
using FallbackFn = std::vector<array> (*)(const Application& app, const std::vector<array>& inputs);

struct Rule {
  VjpFn vjp = nullptr;
  JvpFn jvp = nullptr;
  FallbackFn fallback = nullptr;
  const char* not_differentiable = nullptr;  // set by RuleTable::none: why (MLX's reason)
  bool declared = false;
};

class RuleTable {
 public:
  // The rules of the row named `primitive` (any of them may be null; a null rule falls back to
  // `fallback` where one is given). Throws std::logic_error for a name the registry lacks or a second
  // entry for a row.
  void add(const char* primitive, VjpFn vjp, JvpFn jvp, FallbackFn fallback = nullptr);
  // The row is not differentiable (MLX 0.30.1 has no vjp/jvp for it either); `why` says so.
  void none(const char* primitive, const char* why);
  // Null when the row has no entry.
  const Rule* find(const PrimitiveDef& def) const {
    return def.index < by_row_.size() && by_row_[def.index].declared ? &by_row_[def.index] : nullptr;
  }

 private:
  Rule& slot(const char* primitive);
  std::vector<Rule> by_row_;
};

// The table, built on first use from every family's register_<family>_grad.
const RuleTable& rules();

// The user's rules of a CustomTransforms node (custom_function), held in its Node::extra. `vmap` is
// kept for the batching transform.
struct CustomRules {
  size_t num_outputs = 0;
  std::function<std::vector<array>(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                   const std::vector<array>& outputs)>
      vjp;
  std::function<std::vector<array>(const std::vector<array>& primals, const std::vector<array>& tangents,
                                   const std::vector<int>& argnums)>
      jvp;
  std::function<std::pair<std::vector<array>, std::vector<int>>(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes)>
      vmap;
};

// ---- helpers the families' rules share ----

// `g` summed down to `shape` (undoing NumPy broadcasting: leading axes dropped, size-1 axes kept).
array unbroadcast(const array& g, const Shape& shape, StreamOrDevice s = {});
// Zeros of an array's shape and dtype.
array zeros_of(const array& a, StreamOrDevice s = {});
// The vjp of a rule that is zero for every input (piecewise-constant primitives: comparisons, Floor,
// ArgReduce, ...), and the matching jvp (zeros of every output).
std::vector<array> zero_vjp(const Application& app, const std::vector<array>& cotangents,
                            const std::vector<int>& argnums);
std::vector<array> zero_jvp(const Application& app, const std::vector<array>& tangents,
                            const std::vector<int>& argnums);
// The tangent of input `i` in a jvp call, or an empty array when that input has none.
array tangent_of(const std::vector<array>& tangents, const std::vector<int>& argnums, int i);
// Throws "[<api>] Cannot calculate <mode> with respect to <what>." (MLX's wording) when `argnums`
// holds an input position >= first.
void refuse_from(const std::vector<int>& argnums, int first, const char* api, const char* mode, const char* what);

}  // namespace kiln::detail::autodiff

namespace kiln::primitives {
#define KILN_DECLARE_GRAD(f) void register_##f##_grad(detail::autodiff::RuleTable& table);
KILN_FAMILIES(KILN_DECLARE_GRAD)
#undef KILN_DECLARE_GRAD
}  // namespace kiln::primitives
