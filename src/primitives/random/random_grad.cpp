// Derivative rules of the random rows (autodiff_rules.h): random bits are not differentiable.
#include "primitives/autodiff_rules.h"

namespace kiln::primitives {
void register_random_grad(detail::autodiff::RuleTable& t) {
  t.none("RandomBits", "integer bits of a key; MLX 0.30.1's RandomBits has no vjp or jvp");
}
}  // namespace kiln::primitives
