// Derivative rules of the fft rows (autodiff_rules.h). None yet: the row(s) of this family are listed in
// tests/unit/test_autodiff_coverage.cpp's table of rows without rules, and differentiating them raises
// "[vjp] Not implemented for <name> in kiln yet."
#include "primitives/autodiff_rules.h"

namespace kiln::primitives {
void register_fft_grad(detail::autodiff::RuleTable&) {}
}  // namespace kiln::primitives
