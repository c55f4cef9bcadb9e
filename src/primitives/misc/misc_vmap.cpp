// Batching rules of the misc family (vmap_rules.h). Depends passes its first inputs through: they keep
// their batch axes. CustomTransforms (custom_function) runs the user's batching rule, or vmap of the
// function itself when none was given, on its arguments. Compiled (compile's fused group) batches its
// members. CustomKernel and Load are declared without rules.
#include "kiln/ops/misc.h"
#include "kiln/vmap.h"
#include "primitives/autodiff_rules.h"
#include "primitives/misc/compiled.h"
#include "primitives/misc/imported_call.h"
#include "primitives/vmap_rules.h"

namespace kiln::vmap_rules {

namespace {

Result depends_rule(const Args& a) {
  const size_t n = a.node.specs.size();
  std::vector<array> ins(a.inputs.begin(), a.inputs.begin() + n);
  std::vector<array> deps(a.inputs.begin() + n, a.inputs.end());
  Result r{depends(ins, deps), {}};
  r.axes.assign(a.axes.begin(), a.axes.begin() + n);
  return r;
}

// CustomTransforms(args..., outputs...): the batching rule custom_function keeps in the node (the user's,
// or vmap of the function), on the arguments; the forwarded outputs are not used.
Result custom_rule(const Args& a) {
  const auto* rules = static_cast<const detail::autodiff::CustomRules*>(a.node.extra.get());
  if (!rules || !rules->vmap) {
    throw std::invalid_argument("[vmap] CustomTransforms: the node has no batching rule (it was not built by "
                                "custom_function).");
  }
  const size_t n = a.node.inputs.size() - rules->num_outputs;
  std::vector<array> ins(a.inputs.begin(), a.inputs.begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<int> axes(a.axes.begin(), a.axes.begin() + static_cast<std::ptrdiff_t>(n));
  auto [outs, out_axes] = rules->vmap(ins, axes);
  if (outs.size() != rules->num_outputs || out_axes.size() != outs.size()) {
    throw std::invalid_argument("[custom_function] The vmap rule returned " + std::to_string(outs.size()) +
                                " outputs and " + std::to_string(out_axes.size()) + " axes; the function has " +
                                std::to_string(rules->num_outputs) + " outputs.");
  }
  return {outs, out_axes};
}

// Compiled: vmap of the fused group's members (each by its own rule), every output at axis 0.
Result compiled_rule(const Args& a) {
  auto tape = std::static_pointer_cast<const detail::CompiledTape>(a.node.extra);
  detail::compiled_tape(a.node);  // throws for a node without a tape
  const Stream s = a.node.stream;
  auto members = [tape, s](const std::vector<array>& xs) { return tape->run(xs, s); };
  std::vector<int> out_axes(a.node.specs.size(), 0);
  return {vmap(members, a.axes, out_axes)(a.inputs), out_axes};
}

// ImportedCall: vmap of the call's graph (each of its record's nodes by its own rule), every output at
// axis 0.
Result imported_call_rule(const Args& a) {
  detail::imported_call_body(a.node);  // throws for a node without a call
  auto body = std::static_pointer_cast<const detail::ImportedCallBody>(a.node.extra);
  auto call = [body](const std::vector<array>& xs) { return body->expand(xs); };
  std::vector<int> out_axes(a.node.specs.size(), 0);
  return {vmap(call, a.axes, out_axes)(a.inputs), out_axes};
}

}  // namespace

void register_vmap_misc(RuleTable& t) {
  t.add("Depends", depends_rule);
  t.add("CustomTransforms", custom_rule);
  t.add("Compiled", compiled_rule);
  t.add("ImportedCall", imported_call_rule);
  t.none("CustomKernel",
         "a custom kernel's source is opaque to kiln, so no batching rule can be derived for it (call it on "
         "batched inputs instead).");
  t.none("Load", "it takes no inputs (an imported file's constant), so it never depends on a mapped input.");
}

}  // namespace kiln::vmap_rules
