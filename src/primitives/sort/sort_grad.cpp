// Derivative rules of the sort rows (autodiff_rules.h): Sort and Partition permute their input, so
// the cotangent goes back through the permutation (argsort / argpartition of the input); the index
// outputs and SearchSorted are integer valued.
#include "kiln/ops.h"
#include "primitives/autodiff_rules.h"

namespace kiln {

namespace {

using detail::autodiff::Application;
using detail::autodiff::RuleTable;
using detail::autodiff::zero_jvp;
using detail::autodiff::zero_vjp;
using Arrays = std::vector<array>;
using Ints = std::vector<int>;

// Sort: state (axis); Partition: state (kth, axis).
int axis_of(const Application& app) {
  return app.node.def->name == "Sort" ? app.state().i(0) : app.state().i(1);
}
array permutation(const Application& app) {
  const array& x = app.inputs[0];
  if (app.node.def->name == "Sort") return argsort(x, app.state().i(0), app.s());
  return argpartition(x, app.state().i(0), app.state().i(1), app.s());
}

Arrays permute_vjp(const Application& app, const Arrays& cot, const Ints&) {
  return {put_along_axis(zeros_like(app.inputs[0], app.s()), permutation(app), cot[0], axis_of(app), app.s())};
}
Arrays permute_jvp(const Application& app, const Arrays& tan, const Ints&) {
  return {take_along_axis(tan[0], permutation(app), axis_of(app), app.s())};
}

}  // namespace

namespace primitives {
void register_sort_grad(RuleTable& t) {
  t.add("Sort", permute_vjp, permute_jvp);
  t.add("Partition", permute_vjp, permute_jvp);
  t.add("ArgSort", zero_vjp, zero_jvp);
  t.add("ArgPartition", zero_vjp, zero_jvp);
  t.none("SearchSorted", "integer positions; MLX 0.30.1's SearchSorted has no vjp or jvp");
}
}  // namespace primitives

}  // namespace kiln
