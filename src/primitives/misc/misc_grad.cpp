// Derivative rules of the misc rows (autodiff_rules.h): Depends forwards its real inputs (the
// dependencies get zeros); a custom kernel and a file's constant have none.
#include "kiln/ops.h"
#include "primitives/autodiff_rules.h"

namespace kiln {

namespace {

using detail::autodiff::Application;
using detail::autodiff::RuleTable;
using detail::autodiff::tangent_of;
using detail::autodiff::zeros_of;
using Arrays = std::vector<array>;
using Ints = std::vector<int>;

Arrays depends_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  Arrays out;
  for (int i : argnums) {
    out.push_back(i < static_cast<int>(app.outputs.size()) ? cot[i] : zeros_of(app.inputs[i], app.s()));
  }
  return out;
}
Arrays depends_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  Arrays out;
  for (size_t i = 0; i < app.outputs.size(); ++i) {
    array t = tangent_of(tan, argnums, static_cast<int>(i));
    out.push_back(t.valid() ? t : zeros_of(app.outputs[i], app.s()));
  }
  return out;
}

}  // namespace

namespace primitives {
void register_misc_grad(RuleTable& t) {
  t.add("Depends", depends_vjp, depends_jvp);
  t.none("CustomKernel", "user kernel source; MLX 0.30.1's CustomKernel has no vjp or jvp");
  t.none("Load", "a file's constant (no inputs); kiln only, MLX has no such primitive");
}
}  // namespace primitives

}  // namespace kiln
