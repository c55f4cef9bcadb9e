// Batching rules of the reduce family (vmap_rules.h). The rows keep their input's rank (reduced axes
// have size 1), so the batch axis stays where it is and the reduced axes are renumbered around it;
// last-axis rows (LogSumExp, Softmax) move a batch axis that sits last to the front.
#include "primitives/vmap_rules.h"

namespace kiln::vmap_rules {

namespace {

// Rows whose state is (type, axes).
Result reduce(const Args& a) {
  const int k = a.axes[0];
  State st = a.state();
  st.values[1] = around(st.ints(1), k);
  return {rebuild(a, st, {a.inputs[0]}), {k}};
}

// Rows whose state holds one axis at `field`.
template <size_t field>
Result one_axis(const Args& a) {
  const int k = a.axes[0];
  State st = a.state();
  st.values[field] = around(st.i(field), k);
  return {rebuild(a, st, {a.inputs[0]}), {k}};
}

Result last_axis(const Args& a) {
  const int k = a.axes[0];
  if (k == static_cast<int>(a.inputs[0].ndim()) - 1) return {rebuild(a, a.state(), {a.front(0)}), {0}};
  return {rebuild(a, a.state(), {a.inputs[0]}), {k}};
}

// The count of elements along the axes does not depend on the example: the output is not mapped.
Result number_of_elements(const Args& a) {
  State st = a.state();
  st.values[0] = around(st.ints(0), a.axes[0]);
  return {rebuild(a, st, {a.inputs[0]}), {-1}};
}

}  // namespace

void register_vmap_reduce(RuleTable& t) {
  t.add({{"Reduce", reduce},
         {"ArgReduce", one_axis<1>},
         {"LogSumExp", last_axis},
         {"Softmax", last_axis},
         {"NumberOfElements", number_of_elements},
         {"Scan", one_axis<1>}});
}

}  // namespace kiln::vmap_rules
