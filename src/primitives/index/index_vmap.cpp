// Batching rules of the index family (vmap_rules.h).
//
// Gather and Scatter take the batch as one more indexed axis: when both the array and an index are
// mapped, the array's batch axis goes first and an index arange(B) (broadcast over the index shape)
// selects each example's own slice along it, of slice size 1. When only the array is mapped, its batch
// axis is sliced whole; when only indices are mapped, they carry the batch themselves.
#include "kiln/ops/elementwise.h"
#include "kiln/ops/shape.h"
#include "primitives/vmap_rules.h"

namespace kiln::vmap_rules {

namespace {

// arange(size) of `dtype`, shaped (size, 1, ..., 1) and broadcast to `shape` (batch first).
array batch_index(int size, Dtype dtype, const Shape& shape) {
  Shape s(shape.size(), 1);
  s[0] = size;
  return broadcast_to(reshape(astype(arange(size), dtype), s), shape);
}

Result gather_rule(const Args& a) {
  const size_t n = a.inputs.size() - 1;
  const Shape idx_shape = n > 0 ? a.node.inputs[1].shape() : Shape{};
  const int idx_nd = static_cast<int>(idx_shape.size());
  bool idx_mapped = false;
  for (size_t i = 1; i <= n; ++i) idx_mapped = idx_mapped || a.mapped(i);
  const auto& axes = a.state().ints(0);
  const Shape& slice = a.state().ints(1);

  if (!idx_mapped) {
    // Every example reads the same positions: slice the whole batch axis.
    State st{plus_one(axes), std::vector<int32_t>(with_batch(slice, a.size))};
    std::vector<array> ins = a.inputs;
    ins[0] = a.front(0);
    return {rebuild(a, st, ins), {idx_nd}};
  }
  const Shape bidx = with_batch(idx_shape, a.size);
  std::vector<array> idx;
  for (size_t i = 1; i <= n; ++i) idx.push_back(broadcast_to(a.front(i), bidx));
  if (!a.mapped(0)) {
    std::vector<array> ins{a.inputs[0]};
    ins.insert(ins.end(), idx.begin(), idx.end());
    return {rebuild(a, a.state(), ins), {0}};
  }
  std::vector<array> ins{a.front(0), batch_index(a.size, idx[0].dtype(), bidx)};
  ins.insert(ins.end(), idx.begin(), idx.end());
  std::vector<int32_t> axes2{0};
  for (int ax : axes) axes2.push_back(ax + 1);
  Shape slice2{1};
  slice2.insert(slice2.end(), slice.begin(), slice.end());
  array out = rebuild(a, State{axes2, std::vector<int32_t>(slice2)}, ins)[0];
  return {{squeeze(out, 1 + idx_nd)}, {0}};
}

Result scatter_rule(const Args& a) {
  const size_t n = a.inputs.size() - 2;
  const Shape idx_shape = n > 0 ? a.node.inputs[1].shape() : Shape{};
  const int idx_nd = static_cast<int>(idx_shape.size());
  const Shape bidx = with_batch(idx_shape, a.size);
  // The index set gains arange(B) on the array's (front) batch axis; each example writes its own slab.
  std::vector<array> idx;
  for (size_t i = 1; i <= n; ++i) idx.push_back(broadcast_to(a.front(i), bidx));
  const Dtype idx_type = n > 0 ? idx[0].dtype() : int32;
  std::vector<array> ins{a.front(0), batch_index(a.size, idx_type, bidx)};
  ins.insert(ins.end(), idx.begin(), idx.end());
  ins.push_back(expand_dims(a.front(n + 1), 1 + idx_nd));
  std::vector<int32_t> axes2{0};
  for (int ax : a.state().ints(1)) axes2.push_back(ax + 1);
  return {rebuild(a, State{a.state().i(0), axes2}, ins), {0}};
}

// GatherAxis, ScatterAxis: every input batched at the front, the axis one further.
template <size_t field>
Result along_axis_rule(const Args& a) {
  State st = a.state();
  st.values[field] = st.i(field) + 1;
  std::vector<array> ins;
  for (size_t i = 0; i < a.inputs.size(); ++i) ins.push_back(a.front(i));
  return {rebuild(a, st, ins), {0}};
}

// MaskedScatter already treats axis 0 as rows that each consume their own values: the batch is merged
// into it.
Result masked_scatter_rule(const Args& a) {
  std::vector<array> ins;
  for (size_t i = 0; i < 3; ++i) {
    array x = a.front(i);
    Shape s(x.shape().begin() + 1, x.shape().end());
    s[0] *= a.size;
    ins.push_back(reshape(x, s));
  }
  array out = rebuild(a, a.state(), ins)[0];
  return {{reshape(out, with_batch(a.node.specs[0].shape, a.size))}, {0}};
}

}  // namespace

void register_vmap_index(RuleTable& t) {
  t.add({{"Gather", gather_rule},
         {"GatherAxis", along_axis_rule<0>},
         {"Scatter", scatter_rule},
         {"ScatterAxis", along_axis_rule<1>},
         {"MaskedScatter", masked_scatter_rule}});
}

}  // namespace kiln::vmap_rules
