// Batching rules of the sort family (vmap_rules.h): the rows act along one axis, so the batch axis stays
// where it is and the sorted axis is renumbered around it.
#include "kiln/ops/elementwise.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
#include "primitives/vmap_rules.h"

namespace kiln::vmap_rules {

namespace {

template <size_t field>
Result along_axis(const Args& a) {
  const int k = a.axes[0];
  State st = a.state();
  st.values[field] = around(st.i(field), k);
  return {rebuild(a, st, {a.inputs[0]}), {k}};
}

// A shared sequence: the values keep their batch axis (the output has their shape). A mapped sequence
// (each example its own 1-D sequence): the position is the count of the example's elements that come
// before the value in the sort order (NaN after every number), a comparison reduced over the sequence.
Result search_sorted(const Args& a) {
  if (!a.mapped(0)) return {rebuild(a, a.state(), a.inputs), {a.axes[1]}};
  if (is_complex(a.inputs[0].dtype())) {
    unsupported(a, "a mapped sorted sequence of complex values is not supported in kiln yet");
  }
  const bool right = a.state().b(0);
  array v = expand_dims(a.front(1), -1);
  array s = align_front(a.front(0), static_cast<int>(v.ndim()) - 1);
  array before = right ? logical_or(less_equal(s, v), isnan(v))
                       : logical_or(less(s, v), logical_and(isnan(v), logical_not(isnan(s))));
  return {{astype(sum(before, -1), uint32)}, {0}};
}

}  // namespace

void register_vmap_sort(RuleTable& t) {
  t.add({{"Sort", along_axis<0>},
         {"ArgSort", along_axis<0>},
         {"Partition", along_axis<1>},
         {"ArgPartition", along_axis<1>},
         {"SearchSorted", search_sorted}});
}

}  // namespace kiln::vmap_rules
