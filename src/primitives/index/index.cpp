// Index primitives (Gather, GatherAxis, Scatter, ScatterAxis, MaskedScatter): registry rows, output
// rules (which also validate files) and the ops built on them. Kernels: backend/cpu/kernels/index/
// (gather.cpp and scatter.cpp).
#include <algorithm>
#include <numeric>
#include <set>
#include <sstream>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/index.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"

namespace kiln {

namespace {

using detail::shape_str;

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

bool is_index_dtype(Dtype t) { return is_integral(t); }

// Index arrays recorded in a node must share one shape and one integer dtype (the op broadcasts
// and casts them).
void check_index_arrays(const std::vector<ArraySpec>& idx, const char* api) {
  for (auto& x : idx) {
    if (x.dtype == bool_) fail(std::string("[") + api + "] Boolean indices not supported.");
    if (!is_index_dtype(x.dtype)) {
      fail(std::string("[") + api + "] Got indices with invalid dtype. Indices must be integral.");
    }
    if (x.shape != idx[0].shape || x.dtype != idx[0].dtype) {
      fail(std::string("[") + api + "] Index arrays must have one shape and dtype; found " + shape_str(idx[0].shape) +
           " " + dtype_name(idx[0].dtype) + " and " + shape_str(x.shape) + " " + dtype_name(x.dtype) + ".");
    }
  }
}

void check_axes(const std::vector<int32_t>& axes, size_t ndim, size_t n_idx, const char* api) {
  std::set<int> dims(axes.begin(), axes.end());
  if (dims.size() != axes.size()) fail(std::string("[") + api + "] Repeat axes not allowed in " + api + ".");
  if (!dims.empty() && (*dims.begin() < 0 || *dims.rbegin() >= static_cast<int>(ndim))) {
    fail(std::string("[") + api + "] Axes don't match array dimensions.");
  }
  if (n_idx != axes.size()) fail(std::string("[") + api + "] Number of index arrays does not match number of axes.");
}

std::vector<ArraySpec> gather_infer(const State& st, const std::vector<ArraySpec>& in) {
  const auto& axes = st.ints(0);
  const Shape& slice = st.ints(1);
  const ArraySpec& a = in[0];
  std::vector<ArraySpec> idx(in.begin() + 1, in.end());
  check_axes(axes, a.shape.size(), idx.size(), "gather");
  check_index_arrays(idx, "gather");
  if (slice.size() != a.shape.size()) {
    fail("[gather] Got slice_sizes with size " + std::to_string(slice.size()) + " for array with " +
         std::to_string(a.shape.size()) + " dimensions.");
  }
  Shape out = idx.empty() ? Shape{} : idx[0].shape;
  size_t a_size = shape_size(a.shape, "gather");
  if (a_size == 0) {
    int64_t total = 1;
    for (int v : slice) total *= v;
    if (shape_size(out, "gather") != 0 && total != 0) {
      fail("[gather] If the input is empty, either the indices must be empty or the total slice size must be 0.");
    }
  }
  for (size_t i = 0; i < slice.size(); ++i) {
    if (slice[i] < 0 || (a_size != 0 && slice[i] > a.shape[i])) {
      fail("[gather] Slice sizes must be in [0, a.shape(i)]. Got " + shape_str(slice) + " for array with shape " +
           shape_str(a.shape) + ".");
    }
  }
  out.insert(out.end(), slice.begin(), slice.end());
  shape_size(out, "gather");
  return {{out, a.dtype}};
}

std::vector<ArraySpec> gather_axis_infer(const State& st, const std::vector<ArraySpec>& in) {
  const ArraySpec& a = in[0];
  const ArraySpec& idx = in[1];
  const int axis = st.i(0);
  const int nd = static_cast<int>(a.shape.size());
  if (axis < 0 || axis >= nd) fail("[take_along_axis] Received invalid axis for array with " + std::to_string(nd) + " dimensions.");
  check_index_arrays({idx}, "take_along_axis");
  if (static_cast<int>(idx.shape.size()) != nd) {
    fail("[take_along_axis] Indices of dimension " + std::to_string(idx.shape.size()) +
         " does not match array of dimension " + std::to_string(nd) + ".");
  }
  for (int d = 0; d < nd; ++d) {
    if (d != axis && idx.shape[d] != a.shape[d]) {
      fail("[take_along_axis] Indices of shape " + shape_str(idx.shape) + " do not match array of shape " +
           shape_str(a.shape) + " outside axis " + std::to_string(axis) + ".");
    }
  }
  if (a.shape[axis] == 0 && shape_size(idx.shape, "take_along_axis") != 0) {
    fail("[take_along_axis] Cannot take along an axis of size 0.");
  }
  return {{idx.shape, a.dtype}};
}

std::vector<ArraySpec> scatter_infer(const State& st, const std::vector<ArraySpec>& in) {
  const int type = st.i(0);
  const auto& axes = st.ints(1);
  if (type < 0 || type > 4) fail("[scatter] Invalid reduce type " + std::to_string(type) + ".");
  if (in.size() < 2) fail("[scatter] Expected at least 2 inputs (array and updates).");
  const ArraySpec& a = in[0];
  const ArraySpec& upd = in.back();
  std::vector<ArraySpec> idx(in.begin() + 1, in.end() - 1);
  check_axes(axes, a.shape.size(), idx.size(), "scatter");
  check_index_arrays(idx, "scatter");
  Shape idx_shape = idx.empty() ? Shape{} : idx[0].shape;
  if (upd.shape.size() != a.shape.size() + idx_shape.size()) {
    fail("[scatter] Updates with " + std::to_string(upd.shape.size()) +
         " dimensions does not match the sum of the array (" + std::to_string(a.shape.size()) + ") and indices (" +
         std::to_string(idx_shape.size()) + ") dimensions.");
  }
  for (size_t i = 0; i < idx_shape.size(); ++i) {
    if (upd.shape[i] != idx_shape[i]) {
      fail("[scatter] Update shape " + shape_str(upd.shape) + " is not valid for broadcasted index shape " +
           shape_str(idx_shape) + ".");
    }
  }
  for (size_t i = 0; i < a.shape.size(); ++i) {
    if (upd.shape[i + idx_shape.size()] > a.shape[i]) {
      fail("[scatter] Updates with shape " + shape_str(upd.shape) + " are too large for array with shape " +
           shape_str(a.shape) + ".");
    }
  }
  if (upd.dtype != a.dtype) {
    fail("[scatter] Updates of type " + dtype_name(upd.dtype) + " do not match the array type " + dtype_name(a.dtype) + ".");
  }
  return {a};
}

std::vector<ArraySpec> scatter_axis_infer(const State& st, const std::vector<ArraySpec>& in) {
  const int type = st.i(0);
  const int axis = st.i(1);
  const ArraySpec& a = in[0];
  const ArraySpec& idx = in[1];
  const ArraySpec& upd = in[2];
  const int nd = static_cast<int>(a.shape.size());
  const char* api = type == 1 ? "put_along_axis" : "scatter_add_axis";
  if (type < 0 || type > 1) fail("[scatter_axis] Invalid reduce type " + std::to_string(type) + ".");
  if (axis < 0 || axis >= nd) fail(std::string("[") + api + "] Received invalid axis for array with " + std::to_string(nd) + " dimensions.");
  check_index_arrays({idx}, api);
  if (static_cast<int>(idx.shape.size()) != nd) {
    fail(std::string("[") + api + "] Indices of dimension " + std::to_string(idx.shape.size()) +
         " does not match array of dimension " + std::to_string(nd) + ".");
  }
  bool ok = upd.shape == idx.shape;
  for (int d = 0; d < nd && ok; ++d) ok = d == axis || a.shape[d] == idx.shape[d];
  if (!ok) {
    fail(std::string("[") + api + "] Array " + shape_str(a.shape) + ", indices " + shape_str(idx.shape) +
         " and updates " + shape_str(upd.shape) + " do not match outside axis " + std::to_string(axis) + ".");
  }
  if (upd.dtype != a.dtype) {
    fail(std::string("[") + api + "] Updates of type " + dtype_name(upd.dtype) + " do not match the array type " +
         dtype_name(a.dtype) + ".");
  }
  return {a};
}

std::vector<ArraySpec> masked_scatter_infer(const State&, const std::vector<ArraySpec>& in) {
  const ArraySpec& a = in[0];
  const ArraySpec& mask = in[1];
  const ArraySpec& vals = in[2];
  if (mask.dtype != bool_) fail("[masked_scatter] The mask has to be boolean.");
  if (a.shape.empty() || mask.shape != a.shape) {
    fail("[masked_scatter] Expected a batched array and a mask of the same shape; found " + shape_str(a.shape) +
         " and " + shape_str(mask.shape) + ".");
  }
  if (vals.dtype != a.dtype) {
    fail("[masked_scatter] Values of type " + dtype_name(vals.dtype) + " do not match the array type " +
         dtype_name(a.dtype) + ".");
  }
  if (vals.shape.empty() || vals.shape[0] != a.shape[0]) {
    fail("[masked_scatter] Values of shape " + shape_str(vals.shape) + " do not match the batch size " +
         std::to_string(a.shape[0]) + ".");
  }
  return {a};
}

std::string scatter_display(const State& st) {
  switch (st.i(0)) {
    case 0: return "Scatter Max";
    case 1: return "Scatter Min";
    case 2: return "Scatter Sum";
    case 3: return "Scatter Prod";
    default: return "Scatter";
  }
}

std::string scatter_axis_display(const State& st) { return st.i(0) == 0 ? "ScatterAxis Sum" : "ScatterAxis"; }

}  // namespace

namespace primitives {
void register_index() {
  registry::define(detail::row("Gather", {1, -1}, {{"axes", FieldType::IntVec}, {"slice_sizes", FieldType::ShapeF}},
                               gather_infer));
  registry::define(detail::row("GatherAxis", 2, {{"axis", FieldType::Int}}, gather_axis_infer));
  registry::define(detail::row("Scatter", {2, -1}, {{"type", FieldType::Int}, {"axes", FieldType::IntVec}},
                               scatter_infer, {.display = scatter_display, .shapeless = false}));
  registry::define(detail::row("ScatterAxis", 3, {{"type", FieldType::Int}, {"axis", FieldType::Int}},
                               scatter_axis_infer, {.display = scatter_axis_display}));
  registry::define(detail::row("MaskedScatter", 3, {}, masked_scatter_infer));
}
}  // namespace primitives

// ---------------------------------------------------------------------------------------------
// Ops

namespace {

Dtype result_type(const std::vector<array>& arrays) {
  Dtype t = arrays.empty() ? bool_ : arrays[0].dtype();
  for (auto& x : arrays) t = promote_types(t, x.dtype());
  return t;
}

}  // namespace

array gather(const array& a, const std::vector<array>& indices, const std::vector<int>& axes, const Shape& slice_sizes,
             StreamOrDevice s) {
  if (indices.size() > a.ndim()) {
    fail("[gather] Too many index arrays. Got " + std::to_string(indices.size()) + " index arrays for input with " +
         std::to_string(a.ndim()) + " dimensions.");
  }
  check_axes(axes, a.ndim(), indices.size(), "gather");
  for (auto& x : indices) {
    if (x.dtype() == bool_) fail("[Gather] Boolean indices not supported.");
  }
  if (slice_sizes.size() != a.ndim()) {
    fail("[gather] Got slice_sizes with size " + std::to_string(slice_sizes.size()) + " for array with " +
         std::to_string(a.ndim()) + " dimensions.");
  }
  Dtype dtype = result_type(indices);
  if (!indices.empty() && is_inexact(dtype)) {
    fail("[gather] Got indices with invalid dtype. Indices must be integral.");
  }
  std::vector<array> inputs = broadcast_arrays(indices, s);
  for (auto& idx : inputs) idx = astype(idx, dtype, s);
  inputs.insert(inputs.begin(), a);
  static const PrimitiveDef& d = detail::def("Gather");
  State st{std::vector<int32_t>(axes.begin(), axes.end()), std::vector<int32_t>(slice_sizes)};
  // The shape rule performs the remaining checks (slice sizes, empty inputs) with MLX's messages.
  return make_array(d, std::move(st), std::move(inputs), {}, to_stream(s));
}

array take(const array& a, const array& indices, int axis, StreamOrDevice s) {
  const int nd = static_cast<int>(a.ndim());
  if (axis + nd < 0 || axis >= nd) {
    fail("[take] Received invalid axis " + std::to_string(axis) + " for array with " + std::to_string(nd) +
         " dimensions.");
  }
  if (a.size() == 0 && indices.size() != 0) {
    fail("[take] Cannot do a non-empty take from an array with zero elements.");
  }
  axis = axis < 0 ? axis + nd : axis;
  Shape slice_sizes = a.shape();
  slice_sizes[axis] = 1;
  array out = gather(a, indices, axis, slice_sizes, s);
  const int ind = static_cast<int>(indices.ndim());
  if (axis != 0) {
    // Gather puts the index dims first; move them to where `axis` was.
    std::vector<int> perm(out.ndim());
    std::iota(perm.begin(), perm.begin() + axis, ind);
    std::iota(perm.begin() + axis, perm.begin() + axis + ind, 0);
    std::iota(perm.begin() + axis + ind, perm.end(), ind + axis);
    out = transpose(out, perm, s);
  }
  return squeeze(out, ind + axis, s);
}

array take(const array& a, const array& indices, StreamOrDevice s) { return take(flatten(a, s), indices, 0, s); }

array take(const array& a, int index, int axis, StreamOrDevice s) {
  const int nd = static_cast<int>(a.ndim());
  if (axis + nd < 0 || axis >= nd) {
    fail("[take] Received invalid axis " + std::to_string(axis) + " for array with " + std::to_string(nd) +
         " dimensions.");
  }
  if (a.size() == 0) fail("[take] Cannot do a non-empty take from an array with zero elements.");
  axis = axis < 0 ? axis + nd : axis;
  Shape starts(a.ndim(), 0);
  Shape stops = a.shape();
  starts[axis] = index;
  stops[axis] = index + 1;
  return squeeze(slice(a, std::move(starts), std::move(stops), s), axis, s);
}

array take(const array& a, int index, StreamOrDevice s) { return take(flatten(a, s), index, 0, s); }

array take_along_axis(const array& a, const array& indices, int axis, StreamOrDevice s) {
  const int nd = static_cast<int>(a.ndim());
  if (axis + nd < 0 || axis >= nd) {
    fail("[take_along_axis] Received invalid axis for array with " + std::to_string(nd) + " dimensions.");
  }
  if (static_cast<int>(indices.ndim()) != nd) {
    fail("[take_along_axis] Indices of dimension " + std::to_string(indices.ndim()) +
         " does not match array of dimension " + std::to_string(nd) + ".");
  }
  check_index_arrays({{indices.shape(), indices.dtype()}}, "take_along_axis");
  axis = axis < 0 ? axis + nd : axis;
  auto inputs = broadcast_arrays({a, indices}, std::vector<int>{axis - nd}, s);
  static const PrimitiveDef& d = detail::def("GatherAxis");
  return make_array(d, State{int32_t(axis)}, std::move(inputs), {}, to_stream(s));
}

namespace {

array scatter_axis(const array& a, const array& indices, const array& values, int axis, int type, StreamOrDevice s) {
  const std::string prefix = type == 1 ? "[put_along_axis]" : "[scatter_add_axis]";
  const int nd = static_cast<int>(a.ndim());
  if (axis + nd < 0 || axis >= nd) {
    fail(prefix + " Received invalid axis for array with " + std::to_string(nd) + " dimensions.");
  }
  if (static_cast<int>(indices.ndim()) != nd) {
    fail(prefix + " Indices of dimension " + std::to_string(indices.ndim()) + " does not match array of dimension " +
         std::to_string(nd) + ".");
  }
  check_index_arrays({{indices.shape(), indices.dtype()}}, prefix.substr(1, prefix.size() - 2).c_str());
  if (a.size() == 0) return a;
  array upd = astype(values, a.dtype(), s);
  // Leading dims beyond the indices' rank must be singletons; drop them.
  if (upd.ndim() > indices.ndim()) {
    std::vector<int> sq(upd.ndim() - indices.ndim());
    std::iota(sq.begin(), sq.end(), 0);
    upd = squeeze(upd, sq, s);
  }
  auto inputs = broadcast_arrays({indices, upd}, s);
  inputs.insert(inputs.begin(), a);
  axis = axis < 0 ? axis + nd : axis;
  inputs = broadcast_arrays(inputs, std::vector<int>{axis - nd}, s);
  static const PrimitiveDef& d = detail::def("ScatterAxis");
  return make_array(d, State{int32_t(type), int32_t(axis)}, std::move(inputs), {}, to_stream(s));
}

array scatter_op(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes,
                 int type, StreamOrDevice s) {
  if (indices.size() > a.ndim()) {
    fail("[scatter] Too many index arrays. Got " + std::to_string(indices.size()) + " index arrays for input with " +
         std::to_string(a.ndim()) + " dimensions.");
  }
  for (auto& x : indices) {
    if (x.dtype() == bool_) fail("[scatter] Boolean indices not supported.");
  }
  check_axes(axes, a.ndim(), indices.size(), "scatter");
  std::vector<array> inputs = broadcast_arrays(indices, s);
  Shape idx_shape = inputs.empty() ? Shape{} : inputs[0].shape();
  const size_t in_nd = idx_shape.size();
  if (updates.ndim() != a.ndim() + in_nd) {
    fail("[scatter] Updates with " + std::to_string(updates.ndim()) +
         " dimensions does not match the sum of the array (" + std::to_string(a.ndim()) + ") and indices (" +
         std::to_string(in_nd) + ") dimensions.");
  }
  for (size_t i = 0; i < in_nd; ++i) {
    if (updates.shape()[i] != idx_shape[i]) {
      fail("[scatter] Update shape " + shape_str(updates.shape()) + " is not valid for broadcasted index shape " +
           shape_str(idx_shape) + ".");
    }
  }
  for (size_t i = 0; i < a.ndim(); ++i) {
    if (updates.shape()[i + in_nd] > a.shape()[i]) {
      fail("[scatter] Updates with shape " + shape_str(updates.shape()) + " are too large for array with shape " +
           shape_str(a.shape()) + ".");
    }
  }
  Dtype dtype = result_type(indices);
  if (!indices.empty() && is_inexact(dtype)) {
    fail("[scatter] Got indices with invalid dtype. Indices must be integral.");
  }
  for (auto& idx : inputs) idx = astype(idx, dtype, s);
  inputs.insert(inputs.begin(), a);
  inputs.push_back(astype(updates, a.dtype(), s));
  static const PrimitiveDef& d = detail::def("Scatter");
  return make_array(d, State{int32_t(type), std::vector<int32_t>(axes.begin(), axes.end())}, std::move(inputs),
                    {{a.shape(), a.dtype()}}, to_stream(s));
}

}  // namespace

array put_along_axis(const array& a, const array& indices, const array& values, int axis, StreamOrDevice s) {
  return scatter_axis(a, indices, values, axis, 1, s);
}
array scatter_add_axis(const array& a, const array& indices, const array& values, int axis, StreamOrDevice s) {
  return scatter_axis(a, indices, values, axis, 0, s);
}

array scatter(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes,
              StreamOrDevice s) {
  return scatter_op(a, indices, updates, axes, 4, s);
}
array scatter_add(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s) {
  return scatter_op(a, indices, updates, axes, 2, s);
}
array scatter_prod(const array& a, const std::vector<array>& indices, const array& updates,
                   const std::vector<int>& axes, StreamOrDevice s) {
  return scatter_op(a, indices, updates, axes, 3, s);
}
array scatter_max(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s) {
  return scatter_op(a, indices, updates, axes, 0, s);
}
array scatter_min(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s) {
  return scatter_op(a, indices, updates, axes, 1, s);
}

array masked_scatter(const array& a, const array& mask, const array& value, StreamOrDevice s) {
  if (mask.dtype() != bool_) fail("[masked_scatter] The mask has to be boolean.");
  if (mask.ndim() > a.ndim()) fail("[masked_scatter] The mask cannot have more dimensions than the target.");
  const int unmasked = static_cast<int>(a.ndim() - mask.ndim());
  if (static_cast<int>(value.ndim()) > unmasked + 1) {
    fail("[masked_scatter] Value array shape must be broadcastable with the last " + std::to_string(unmasked) +
         " dimensions of the input.");
  }
  if (!std::equal(mask.shape().begin(), mask.shape().end(), a.shape().begin())) {
    std::ostringstream msg;
    msg << "[masked_scatter] The boolean mask should have the same shape as the "
        << "beginning of the indexed array but the mask has shape " << mask.shape() << " and the array has shape "
        << a.shape();
    fail(msg.str());
  }
  array m = mask;
  array v = astype(value, a.dtype(), s);
  if (unmasked > 0) {
    Shape ms = mask.shape();
    ms.resize(a.ndim(), 1);
    m = broadcast_to(reshape(mask, ms, s), a.shape(), s);
  }
  // Values become (count, trailing dims of a): a leading count dim is added when missing and the
  // trailing dims are broadcast.
  auto tail = [&](Shape vs) {
    for (int i = 1; i < unmasked + 1; ++i) vs[i] = a.shape()[a.ndim() - unmasked - 1 + i];
    return vs;
  };
  if (static_cast<int>(value.ndim()) < unmasked + 1) {
    Shape vs(unmasked + 1 - value.ndim(), 1);
    vs.insert(vs.end(), value.shape().begin(), value.shape().end());
    v = reshape(v, vs, s);
    vs[0] = static_cast<int32_t>(mask.size());
    v = broadcast_to(v, tail(vs), s);
  } else if (!std::equal(value.shape().begin() + 1, value.shape().end(), a.shape().end() - unmasked)) {
    v = broadcast_to(v, tail(value.shape()), s);
  }
  array ea = expand_dims(a, 0, s);
  m = expand_dims(m, 0, s);
  v = expand_dims(v, 0, s);
  static const PrimitiveDef& d = detail::def("MaskedScatter");
  return squeeze(make_array(d, {}, {ea, m, v}, {{ea.shape(), ea.dtype()}}, to_stream(s)), 0, s);
}

}  // namespace kiln
