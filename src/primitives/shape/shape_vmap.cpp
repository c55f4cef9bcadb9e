// Batching rules of the shape family (vmap_rules.h): the batch axis goes to the front and the state's
// axes and extents grow by one leading entry (the batch dimension, taken whole).
#include <algorithm>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/index.h"
#include "kiln/ops/shape.h"
#include "primitives/vmap_rules.h"

namespace kiln::vmap_rules {

namespace {

std::vector<int32_t> lead(const std::vector<int32_t>& v, int32_t first) {
  std::vector<int32_t> out{first};
  out.insert(out.end(), v.begin(), v.end());
  return out;
}

Result one(const Args& a, std::vector<array> outs) {
  Result r{std::move(outs), {}};
  r.axes.assign(r.outputs.size(), 0);
  return r;
}

Result same_axis(const Args& a) { return {rebuild(a, a.state(), a.inputs), {a.axes[0]}}; }

Result reshape_rule(const Args& a) { return one(a, {reshape(a.front(0), with_batch(a.node.specs[0].shape, a.size))}); }

Result transpose_rule(const Args& a) {
  std::vector<int> perm{0};
  for (int p : a.state().ints(0)) perm.push_back(p + 1);
  return one(a, {transpose(a.front(0), perm)});
}

// Rows whose state field `field` holds axes (or one axis) of the unbatched array.
template <size_t field>
Result axes_plus_one(const Args& a) {
  State st = a.state();
  if (std::holds_alternative<int32_t>(st.values[field])) {
    st.values[field] = st.i(field) + 1;
  } else {
    st.values[field] = plus_one(st.ints(field));
  }
  std::vector<array> ins = a.inputs;
  ins[0] = a.front(0);
  return one(a, rebuild(a, st, ins));
}

Result flatten_rule(const Args& a) {
  State st = a.state();
  st.values[0] = st.i(0) + 1;
  st.values[1] = st.i(1) + 1;
  return one(a, rebuild(a, st, {a.front(0)}));
}

// Broadcast and BroadcastAxes: the other inputs only give the output's shape, which every example shares.
Result broadcast_rule(const Args& a) {
  const Shape& out = a.node.specs[0].shape;
  return one(a, {broadcast_to(align_front(a.front(0), static_cast<int>(out.size())), with_batch(out, a.size))});
}

// The strides address the row-major copy of each example; example b starts b * (its size) later.
Result as_strided_rule(const Args& a) {
  State st = a.state();
  const array x = contiguous(a.front(0));
  int64_t n = 1;
  for (size_t i = 1; i < x.ndim(); ++i) n *= x.shape(static_cast<int>(i));
  st.values[0] = std::vector<int32_t>(with_batch(st.ints(0), a.size));
  std::vector<int64_t> strides = st.get<std::vector<int64_t>>(1);
  strides.insert(strides.begin(), n);
  st.values[1] = strides;
  return one(a, rebuild(a, st, {x}));
}

State slice_state(const Args& a) {
  State st = a.state();
  st.values[0] = lead(st.ints(0), 0);
  st.values[1] = lead(st.ints(1), a.size);
  st.values[2] = lead(st.ints(2), 1);
  return st;
}

Result slice_rule(const Args& a) { return one(a, rebuild(a, slice_state(a), {a.front(0)})); }

Result slice_update_rule(const Args& a) { return one(a, rebuild(a, slice_state(a), {a.front(0), a.front(1)})); }

// Each example's start, one column per sliced axis, read as signed and clamped so the window fits (as
// the kernels do): one (B,) int32 array per sliced axis, for windows of `window` in arrays of `shape`.
std::vector<array> example_starts(const Args& a, size_t start_input, const Shape& shape, const Shape& window) {
  const auto& axes = a.state().ints(0);
  const int n = static_cast<int>(axes.size());
  array st = astype(a.front(start_input), int64);
  st = broadcast_to(reshape(st, {a.size, st.ndim() == 1 ? 1 : static_cast<int>(st.shape(1))}), {a.size, n});
  std::vector<array> out;
  for (int j = 0; j < n; ++j) {
    const int64_t hi = std::max<int64_t>(shape[axes[j]] - window[axes[j]], 0);
    array col = reshape(slice(st, {0, j}, {a.size, j + 1}), {a.size});
    out.push_back(astype(minimum(maximum(col, array(int64_t{0})), array(hi)), int32));
  }
  return out;
}

// A mapped start: the windows are gathered (each example's array at its own start), with arange(B)
// selecting the example.
Result dynamic_slice_rule(const Args& a) {
  State st = a.state();
  const Shape& window = st.ints(1);
  if (!a.mapped(1)) {
    st.values[0] = plus_one(st.ints(0));
    st.values[1] = lead(st.ints(1), a.size);
    return one(a, rebuild(a, st, {a.front(0), a.inputs[1]}));
  }
  const Shape& shape = a.node.inputs[0].shape();
  std::vector<array> idx{astype(arange(a.size), int32)};
  for (array& s : example_starts(a, 1, shape, window)) idx.push_back(s);
  std::vector<int> axes{0};
  for (int ax : st.ints(0)) axes.push_back(ax + 1);
  Shape sizes = lead(window, 1);
  return one(a, {squeeze(gather(a.front(0), idx, axes, sizes), 1)});
}

// A mapped start: each example's update scattered at its own start (arange(B) selecting the example).
Result dynamic_slice_update_rule(const Args& a) {
  State st = a.state();
  if (!a.mapped(2)) {
    st.values[0] = plus_one(st.ints(0));
    return one(a, rebuild(a, st, {a.front(0), a.front(1), a.inputs[2]}));
  }
  const Shape& shape = a.node.inputs[0].shape();
  const Shape& window = a.node.inputs[1].shape();
  std::vector<array> idx{astype(arange(a.size), int32)};
  for (array& s : example_starts(a, 2, shape, window)) idx.push_back(s);
  std::vector<int> axes{0};
  for (int ax : st.ints(0)) axes.push_back(ax + 1);
  return one(a, {scatter(a.front(0), idx, expand_dims(a.front(1), 1), axes)});
}

Result split_rule(const Args& a) {
  State st = a.state();
  st.values[1] = st.i(1) + 1;
  return one(a, rebuild(a, st, {a.front(0)}));
}

Result concatenate_rule(const Args& a) {
  State st = a.state();
  st.values[0] = st.i(0) + 1;
  std::vector<array> ins;
  for (size_t i = 0; i < a.inputs.size(); ++i) ins.push_back(a.front(i));
  return one(a, rebuild(a, st, ins));
}

// A mapped pad value: the array padded with any value, then each example's value written where the
// padding is (a mask padded the same way says where the original elements are).
Result pad_rule(const Args& a) {
  State st = a.state();
  st.values[0] = plus_one(st.ints(0));
  const array x = a.front(0);
  if (!a.mapped(1)) return one(a, rebuild(a, st, {x, a.inputs[1]}));
  const std::vector<int> axes(st.ints(0).begin(), st.ints(0).end());
  array padded = pad(x, axes, st.ints(1), st.ints(2), zeros({}, x.dtype()));
  array mask = pad(ones(x.shape(), bool_), axes, st.ints(1), st.ints(2), array(false));
  const array v = align_front(reshape(a.front(1), {a.size}), static_cast<int>(padded.ndim()) - 1);
  return one(a, {where(mask, padded, v)});
}

}  // namespace

void register_vmap_shape(RuleTable& t) {
  t.add({{"Reshape", reshape_rule},
         {"Transpose", transpose_rule},
         {"ExpandDims", axes_plus_one<0>},
         {"Squeeze", axes_plus_one<0>},
         {"Flatten", flatten_rule},
         {"Unflatten", axes_plus_one<0>},
         {"Broadcast", broadcast_rule},
         {"BroadcastAxes", broadcast_rule},
         {"AsStrided", as_strided_rule},
         {"Contiguous", same_axis},
         {"Full", same_axis},
         {"Slice", slice_rule},
         {"SliceUpdate", slice_update_rule},
         {"DynamicSlice", dynamic_slice_rule},
         {"DynamicSliceUpdate", dynamic_slice_update_rule},
         {"Split", split_rule},
         {"Concatenate", concatenate_rule},
         {"Pad", pad_rule}});
  t.none("Arange", "it takes no inputs, so it never depends on a mapped input.");
}

}  // namespace kiln::vmap_rules
