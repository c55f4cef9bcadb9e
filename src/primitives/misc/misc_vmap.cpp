// Batching rules of the misc family (vmap_rules.h). Depends passes its first inputs through: they keep
// their batch axes. CustomKernel and Load are declared without rules.
#include "kiln/ops/misc.h"
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

}  // namespace

void register_vmap_misc(RuleTable& t) {
  t.add("Depends", depends_rule);
  t.none("CustomKernel",
         "a custom kernel's source is opaque to kiln, so no batching rule can be derived for it (call it on "
         "batched inputs instead).");
  t.none("Load", "it takes no inputs (an imported file's constant), so it never depends on a mapped input.");
}

}  // namespace kiln::vmap_rules
