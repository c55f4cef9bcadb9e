// Derivative rules of the shape rows (autodiff_rules.h): views and reshapes move the cotangent back
// to the input's layout, broadcasts sum it, slices write it into zeros, joins split it.
#include <numeric>

#include "kiln/ops.h"
#include "primitives/autodiff_rules.h"
#include "primitives/shape/shape_state.h"

namespace kiln {

namespace {

using detail::autodiff::Application;
using detail::autodiff::refuse_from;
using detail::autodiff::RuleTable;
using detail::autodiff::tangent_of;
using detail::autodiff::unbroadcast;
using detail::autodiff::zero_jvp;
using detail::autodiff::zeros_of;
using shape_detail::shp;
using Arrays = std::vector<array>;
using Ints = std::vector<int>;

#define X app.inputs[0]
#define Y app.outputs[0]
#define S app.s()

// The tangent of input i, or zeros shaped like it.
array tangent_or_zeros(const Application& app, const Arrays& tan, const Ints& argnums, int i) {
  array t = tangent_of(tan, argnums, i);
  return t.valid() ? t : zeros_of(app.inputs[i], app.s());
}

// Every input after the first is a shape operand or an index: zeros for them.
Arrays first_only(const Application& app, const Ints& argnums, const array& g0) {
  Arrays out;
  for (int i : argnums) out.push_back(i == 0 ? g0 : zeros_of(app.inputs[i], app.s()));
  return out;
}

// Reshape, Flatten, Unflatten, Squeeze, ExpandDims: the values in one order, any shape.
Arrays reshape_vjp(const Application& app, const Arrays& cot, const Ints&) { return {reshape(cot[0], X.shape(), S)}; }
Arrays reshape_jvp(const Application& app, const Arrays& tan, const Ints&) { return {reshape(tan[0], Y.shape(), S)}; }

Arrays transpose_vjp(const Application& app, const Arrays& cot, const Ints&) {
  const auto& perm = app.state().ints(0);
  std::vector<int> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int>(i);
  return {transpose(cot[0], inv, S)};
}
Arrays transpose_jvp(const Application& app, const Arrays& tan, const Ints&) {
  const auto& perm = app.state().ints(0);
  return {transpose(tan[0], std::vector<int>(perm.begin(), perm.end()), S)};
}

Arrays broadcast_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  return first_only(app, argnums, unbroadcast(cot[0], X.shape(), S));
}
Arrays broadcast_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  array t = tangent_of(tan, argnums, 0);
  if (!t.valid()) return zero_jvp(app, tan, argnums);
  return {broadcast_to(t, Y.shape(), S)};
}

// Which input element each output element reads, as a flat index.
array strided_sources(const Application& app) {
  const auto& st = app.state();
  array idx = arange(0, static_cast<int>(X.size()), int32, S);
  array view = as_strided(idx, shp(st, 0), st.get<std::vector<int64_t>>(1), st.get<uint64_t>(2), S);
  return flatten(view, S);
}
Arrays as_strided_vjp(const Application& app, const Arrays& cot, const Ints&) {
  array flat = zeros({static_cast<int>(X.size())}, cot[0].dtype(), S);
  array g = scatter_add_axis(flat, strided_sources(app), flatten(cot[0], S), 0, S);
  return {reshape(g, X.shape(), S)};
}
Arrays as_strided_jvp(const Application& app, const Arrays& tan, const Ints&) {
  return {reshape(take(flatten(tan[0], S), strided_sources(app), 0, S), Y.shape(), S)};
}

Arrays identity_vjp(const Application&, const Arrays& cot, const Ints&) { return {cot[0]}; }
Arrays identity_jvp(const Application&, const Arrays& tan, const Ints&) { return {tan[0]}; }

Shape window(const State& st, size_t i) { return shp(st, i); }

Arrays slice_vjp(const Application& app, const Arrays& cot, const Ints&) {
  const auto& st = app.state();
  return {slice_update(zeros_like(X, S), cot[0], window(st, 0), window(st, 1), window(st, 2), S)};
}
Arrays slice_jvp(const Application& app, const Arrays& tan, const Ints&) {
  const auto& st = app.state();
  return {slice(tan[0], window(st, 0), window(st, 1), window(st, 2), S)};
}

// SliceUpdate(src, update): the window of src is overwritten.
Arrays slice_update_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  const auto& st = app.state();
  Arrays out;
  for (int i : argnums) {
    if (i == 0) {
      out.push_back(slice_update(cot[0], zeros_of(app.inputs[1], S), window(st, 0), window(st, 1), window(st, 2), S));
    } else {
      out.push_back(slice(cot[0], window(st, 0), window(st, 1), window(st, 2), S));
    }
  }
  return out;
}
Arrays slice_update_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  const auto& st = app.state();
  return {slice_update(tangent_or_zeros(app, tan, argnums, 0), tangent_or_zeros(app, tan, argnums, 1), window(st, 0),
                       window(st, 1), window(st, 2), S)};
}

std::vector<int> axes_of(const State& st) { return std::vector<int>(st.ints(0).begin(), st.ints(0).end()); }

// DynamicSlice(x, start)
Arrays dynamic_slice_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  for (int i : argnums) {
    if (i > 0) throw std::invalid_argument("[DynamicSlice::vjp] Not supported for start indices.");
  }
  return {slice_update(zeros_like(X, S), cot[0], app.inputs[1], axes_of(app.state()), S)};
}
Arrays dynamic_slice_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  return {slice(tangent_or_zeros(app, tan, argnums, 0), app.inputs[1], axes_of(app.state()), shp(app.state(), 1), S)};
}
// DynamicSliceUpdate(src, update, start)
Arrays dynamic_slice_update_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  const auto axes = axes_of(app.state());
  const array& start = app.inputs[2];
  Arrays out;
  for (int i : argnums) {
    if (i == 2) throw std::invalid_argument("[DynamicSliceUpdate::vjp] Not supported for start indices");
    if (i == 0) {
      out.push_back(slice_update(cot[0], zeros_of(app.inputs[1], S), start, axes, S));
    } else {
      out.push_back(slice(cot[0], start, axes, app.inputs[1].shape(), S));
    }
  }
  return out;
}
Arrays dynamic_slice_update_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  return {slice_update(tangent_or_zeros(app, tan, argnums, 0), tangent_or_zeros(app, tan, argnums, 1), app.inputs[2],
                       axes_of(app.state()), S)};
}

Arrays split_vjp(const Application& app, const Arrays& cot, const Ints&) {
  return {concatenate(cot, app.state().i(1), S)};
}
Arrays split_jvp(const Application& app, const Arrays& tan, const Ints&) {
  return split(tan[0], shp(app.state(), 0), app.state().i(1), S);
}

Arrays concatenate_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  const int axis = app.state().i(0);
  std::vector<int> offsets{0};
  for (auto& in : app.inputs) offsets.push_back(offsets.back() + in.shape(axis));
  Arrays out;
  for (int i : argnums) {
    Shape start(Y.ndim(), 0), stop = Y.shape();
    start[axis] = offsets[i];
    stop[axis] = offsets[i + 1];
    out.push_back(slice(cot[0], start, stop, S));
  }
  return out;
}
Arrays concatenate_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  Arrays parts;
  for (int i = 0; i < static_cast<int>(app.inputs.size()); ++i) parts.push_back(tangent_or_zeros(app, tan, argnums, i));
  return {concatenate(parts, app.state().i(0), S)};
}

// Pad(x, pad_value)
Arrays pad_vjp(const Application& app, const Arrays& cot, const Ints& argnums) {
  Shape low, high;
  shape_detail::pad_amounts(app.state(), static_cast<int>(X.ndim()), low, high);
  Shape stop = low;
  for (size_t d = 0; d < stop.size(); ++d) stop[d] += X.shape(static_cast<int>(d));
  array inner = slice(cot[0], low, stop, S);
  Arrays out;
  for (int i : argnums) {
    if (i == 0) {
      out.push_back(inner);
    } else {  // the padding value fills everything outside the input's window
      array g = subtract(sum(cot[0], false, S), sum(inner, false, S), S);
      out.push_back(reshape(astype(g, app.inputs[1].dtype(), S), app.inputs[1].shape(), S));
    }
  }
  return out;
}
Arrays pad_jvp(const Application& app, const Arrays& tan, const Ints& argnums) {
  const auto& st = app.state();
  return {pad(tangent_or_zeros(app, tan, argnums, 0), axes_of(st), shp(st, 1), shp(st, 2),
              tangent_or_zeros(app, tan, argnums, 1), "constant", S)};
}

#undef X
#undef Y
#undef S

}  // namespace

namespace primitives {
void register_shape_grad(RuleTable& t) {
  for (const char* r : {"Reshape", "Flatten", "Unflatten", "Squeeze", "ExpandDims"}) t.add(r, reshape_vjp, reshape_jvp);
  t.add("Transpose", transpose_vjp, transpose_jvp);
  t.add("Broadcast", broadcast_vjp, broadcast_jvp);
  t.add("BroadcastAxes", broadcast_vjp, broadcast_jvp);
  t.add("AsStrided", as_strided_vjp, as_strided_jvp);
  t.add("Contiguous", identity_vjp, identity_jvp);
  t.add("Full", identity_vjp, identity_jvp);
  t.none("Arange", "it has no inputs; MLX 0.30.1's Arange has no vjp or jvp");
  t.add("Slice", slice_vjp, slice_jvp);
  t.add("SliceUpdate", slice_update_vjp, slice_update_jvp);
  t.add("DynamicSlice", dynamic_slice_vjp, dynamic_slice_jvp);
  t.add("DynamicSliceUpdate", dynamic_slice_update_vjp, dynamic_slice_update_jvp);
  t.add("Split", split_vjp, split_jvp);
  t.add("Concatenate", concatenate_vjp, concatenate_jvp);
  t.add("Pad", pad_vjp, pad_jvp);
}
}  // namespace primitives

}  // namespace kiln
