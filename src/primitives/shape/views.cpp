// Shape primitives that re-describe their input without moving data: Reshape, Transpose, ExpandDims,
// Squeeze, Flatten and Unflatten (broadcasts are in broadcast.cpp, AsStrided and Contiguous in
// strided.cpp). Their CPU kernels are in backend/cpu/kernels/shape/views.cpp.
#include <algorithm>
#include <numeric>
#include <set>

#include "kiln/ops/shape.h"
#include "primitives/common.h"
#include "primitives/shape/shape_internal.h"

namespace kiln {

namespace {

using detail::shape_str;

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }


// ---- Reshape (also serves Flatten and Unflatten, whose outputs are reshapes) ----

// The shape a reshape of `in_size` elements to `shape` produces, with the -1 entry resolved.
Shape resolve_reshape(size_t in_size, Shape shape) {
  int infer_idx = -1;
  uint64_t size = 1;
  bool negative = false, overflow = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_idx >= 0) fail("[reshape] Reshape can only infer one dimension.");
      infer_idx = static_cast<int>(i);
    } else if (shape[i] < 0) {
      negative = true;
    } else if (shape[i] > 0 && size > (uint64_t(1) << 62) / static_cast<uint64_t>(shape[i])) {
      overflow = true;
    } else {
      size *= static_cast<uint64_t>(shape[i]);
    }
  }
  if (infer_idx >= 0 && !negative && !overflow) {
    if (size == 0) fail("[reshape] Cannot infer the shape of an empty array");
    uint64_t d = in_size / size;
    if (d <= static_cast<uint64_t>(INT32_MAX)) shape[infer_idx] = static_cast<int32_t>(d);
    size *= d;
  }
  if (negative || overflow || size != in_size) {
    fail("[reshape] Cannot reshape array of size " + std::to_string(in_size) + " into shape " + shape_str(shape) + ".");
  }
  return shape;
}

std::vector<ArraySpec> reshape_infer(const State& st, const std::vector<ArraySpec>& in) {
  size_t n = shape_size(in[0].shape, "reshape");
  return {{resolve_reshape(n, st.get<std::vector<int32_t>>(0)), in[0].dtype}};
}

// ---- Transpose ----

Shape transpose_shape(const Shape& in, const std::vector<int32_t>& axes, const char* api) {
  const int nd = static_cast<int>(in.size());
  if (static_cast<int>(axes.size()) != nd) {
    fail(std::string("[") + api + "] Recived " + std::to_string(axes.size()) + " axes for array with " +
         std::to_string(nd) + " dimensions.");
  }
  std::vector<char> seen(nd, 0);
  Shape out(nd);
  for (int i = 0; i < nd; ++i) {
    int ax = axes[i];
    if (ax < 0 || ax >= nd) {
      fail(std::string("[") + api + "] Invalid axis (" + std::to_string(ax) + ") for array with " +
           std::to_string(nd) + " dimensions.");
    }
    if (seen[ax]) fail(std::string("[") + api + "] Repeat axes not allowed.");
    seen[ax] = 1;
    out[i] = in[ax];
  }
  return out;
}

std::vector<ArraySpec> transpose_infer(const State& st, const std::vector<ArraySpec>& in) {
  return {{transpose_shape(in[0].shape, st.ints(0), "transpose"), in[0].dtype}};
}

// ---- ExpandDims and Squeeze ----

// Inserting a 1 at each axis in turn (MLX's rule); axes are positions in the growing shape.
std::vector<ArraySpec> expand_dims_infer(const State& st, const std::vector<ArraySpec>& in) {
  Shape s = in[0].shape;
  for (int ax : st.ints(0)) {
    if (ax < 0 || ax > static_cast<int>(s.size())) {
      fail("[expand_dims] Invalid axis " + std::to_string(ax) + " for output array with " +
           std::to_string(in[0].shape.size()) + " dimensions.");
    }
    s.insert(s.begin() + ax, 1);
  }
  return {{s, in[0].dtype}};
}

std::vector<ArraySpec> squeeze_infer(const State& st, const std::vector<ArraySpec>& in) {
  const auto& axes = st.ints(0);
  const Shape& s = in[0].shape;
  Shape out;
  size_t j = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (j < axes.size() && static_cast<int>(i) == axes[j]) {
      if (s[i] != 1) {
        fail("[squeeze] Cannot squeeze axis " + std::to_string(i) + " with size " + std::to_string(s[i]) +
             " which is not equal to 1.");
      }
      ++j;
    } else {
      out.push_back(s[i]);
    }
  }
  if (j != axes.size()) {
    fail("[squeeze] Invalid axes " + shape_str(axes) + " for array with " + std::to_string(s.size()) + " dimensions.");
  }
  return {{out, in[0].dtype}};
}

// ---- Flatten and Unflatten ----

std::vector<ArraySpec> flatten_infer(const State& st, const std::vector<ArraySpec>& in) {
  const int start = st.i(0), end = st.i(1);
  const Shape& s = in[0].shape;
  if (start < 0 || end < start || end >= static_cast<int>(s.size())) {
    fail("[flatten] Invalid axes " + std::to_string(start) + " and " + std::to_string(end) + " for array with " +
         std::to_string(s.size()) + " dimensions.");
  }
  Shape out(s.begin(), s.begin() + start);
  int64_t flat = 1;
  for (int ax = start; ax <= end; ++ax) flat *= s[ax];
  if (flat > INT32_MAX) fail("[flatten] The flattened dimension is too large.");
  out.push_back(static_cast<int32_t>(flat));
  out.insert(out.end(), s.begin() + end + 1, s.end());
  return {{out, in[0].dtype}};
}

std::vector<ArraySpec> unflatten_infer(const State& st, const std::vector<ArraySpec>& in) {
  const int axis = st.i(0);
  const Shape& shape = st.get<std::vector<int32_t>>(1);
  const Shape& s = in[0].shape;
  if (axis < 0 || axis >= static_cast<int>(s.size())) {
    fail("[unflatten] Invalid axes " + std::to_string(axis) + " for array with " + std::to_string(s.size()) +
         " dimensions.");
  }
  if (shape.empty()) fail("[unflatten] Shape to unflatten to cannot be empty.");
  if (shape_size(shape, "unflatten") != static_cast<size_t>(s[axis])) {
    fail("[Unflatten] Cannot unflatten axis " + std::to_string(axis) + " with size " + std::to_string(s[axis]) +
         " into shape " + shape_str(shape) + ".");
  }
  Shape out(s.begin(), s.begin() + axis);
  out.insert(out.end(), shape.begin(), shape.end());
  out.insert(out.end(), s.begin() + axis + 1, s.end());
  return {{out, in[0].dtype}};
}

const PrimitiveDef& def_of(const char* name) { return detail::def(name); }

}  // namespace

namespace primitives {
void register_shape_views() {
  const Field ints{"axes", FieldType::IntVec};
  registry::define(detail::row("Reshape", 1, {{"shape", FieldType::ShapeF}}, reshape_infer));
  registry::define(detail::row("Transpose", 1, {ints}, transpose_infer));
  registry::define(detail::row("ExpandDims", 1, {ints}, expand_dims_infer));
  registry::define(detail::row("Squeeze", 1, {ints}, squeeze_infer));
  registry::define(detail::row("Flatten", 1, {{"start_axis", FieldType::Int}, {"end_axis", FieldType::Int}},
                               flatten_infer));
  registry::define(detail::row("Unflatten", 1, {{"axis", FieldType::Int}, {"shape", FieldType::ShapeF}},
                               unflatten_infer));
}
}  // namespace primitives

// ---- ops ----

array reshape(const array& a, Shape shape, StreamOrDevice s) {
  if (a.shape() == shape) return a;
  Shape out = resolve_reshape(a.size(), shape);
  static const PrimitiveDef& d = def_of("Reshape");
  return make_array(d, State{std::vector<int32_t>(std::move(shape))}, {a}, {{out, a.dtype()}}, to_stream(s));
}

array flatten(const array& a, int start_axis, int end_axis, StreamOrDevice s) {
  const int nd = static_cast<int>(a.ndim());
  int start = std::max(0, start_axis + (start_axis < 0 ? nd : 0));
  int end = std::min(nd - 1, end_axis + (end_axis < 0 ? nd : 0));
  if (nd == 0) return reshape(a, {1}, s);
  if (end < start) fail("[flatten] start_axis must be less than or equal to end_axis");
  if (start >= nd) {
    fail("[flatten] Invalid start_axis " + std::to_string(start_axis) + " for array with " + std::to_string(nd) +
         " dimensions.");
  }
  if (end < 0) {
    fail("[flatten] Invalid end_axis " + std::to_string(end_axis) + " for array with " + std::to_string(nd) +
         " dimensions.");
  }
  if (start == end) return a;
  static const PrimitiveDef& d = def_of("Flatten");
  return make_array(d, State{int32_t(start), int32_t(end)}, {a}, {}, to_stream(s));
}

array flatten(const array& a, StreamOrDevice s) { return flatten(a, 0, static_cast<int>(a.ndim()) - 1, s); }

array unflatten(const array& a, int axis, Shape shape, StreamOrDevice s) {
  if (shape.empty()) fail("[unflatten] Shape to unflatten to cannot be empty.");
  const int nd = static_cast<int>(a.ndim());
  const int ax = axis < 0 ? axis + nd : axis;
  if (ax < 0 || ax >= nd) {
    fail("[unflatten] Invalid axes " + std::to_string(ax) + " for array with " + std::to_string(nd) +
         " dimensions.");
  }
  int infer_idx = -1;
  int64_t size = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer_idx >= 0) fail("[Unflatten] Can only infer one dimension.");
      infer_idx = static_cast<int>(i);
    } else {
      size = shape[i] < 0 ? -1 : std::min<int64_t>(size * shape[i], int64_t(1) << 40);
    }
  }
  if (infer_idx >= 0 && size == 0) fail("[unflatten] Cannot infer the shape of an empty array.");
  if (infer_idx >= 0 && size > 0) {
    shape[infer_idx] = static_cast<int32_t>(a.shape(ax) / size);
    size *= shape[infer_idx];
  }
  if (size != a.shape(ax)) {
    fail("[Unflatten] Cannot unflatten axis " + std::to_string(axis) + " with size " + std::to_string(a.shape(ax)) +
         " into shape " + shape_str(shape) + ".");
  }
  if (shape.size() == 1) return a;
  static const PrimitiveDef& d = def_of("Unflatten");
  return make_array(d, State{int32_t(ax), std::vector<int32_t>(std::move(shape))}, {a}, {}, to_stream(s));
}

namespace {
array squeeze_impl(const array& a, std::vector<int> axes, StreamOrDevice s) {
  const int nd = static_cast<int>(a.ndim());
  for (auto& ax : axes) {
    int n = ax < 0 ? ax + nd : ax;
    if (n < 0 || n >= nd) {
      fail("[squeeze] Invalid axes " + std::to_string(ax) + " for array with " + std::to_string(nd) +
           " dimensions.");
    }
    if (a.shape(n) != 1) {
      fail("[squeeze] Cannot squeeze axis " + std::to_string(ax) + " with size " + std::to_string(a.shape(n)) +
           " which is not equal to 1.");
    }
    ax = n;
  }
  static const PrimitiveDef& d = def_of("Squeeze");
  return make_array(d, State{std::vector<int32_t>(axes.begin(), axes.end())}, {a}, {}, to_stream(s));
}

array expand_dims_impl(const array& a, std::vector<int> axes, StreamOrDevice s) {
  const int out_nd = static_cast<int>(a.ndim() + axes.size());
  for (auto& ax : axes) {
    int n = ax < 0 ? ax + out_nd : ax;
    if (n < 0 || n >= out_nd) {
      fail("[expand_dims] Invalid axis " + std::to_string(ax) + " for output array with " +
           std::to_string(a.ndim()) + " dimensions.");
    }
    ax = n;
  }
  static const PrimitiveDef& d = def_of("ExpandDims");
  return make_array(d, State{std::vector<int32_t>(axes.begin(), axes.end())}, {a}, {}, to_stream(s));
}
}  // namespace

array squeeze(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  if (axes.empty()) return a;
  std::set<int> unique;
  for (int ax : axes) unique.insert(ax < 0 ? ax + static_cast<int>(a.ndim()) : ax);
  if (unique.size() != axes.size()) fail("[squeeze] Received duplicate axes.");
  return squeeze_impl(a, std::vector<int>(unique.begin(), unique.end()), s);
}

array squeeze(const array& a, int axis, StreamOrDevice s) { return squeeze_impl(a, {axis}, s); }

array squeeze(const array& a, StreamOrDevice s) {
  std::vector<int> axes;
  for (int i = 0; i < static_cast<int>(a.ndim()); ++i) {
    if (a.shape(i) == 1) axes.push_back(i);
  }
  return squeeze_impl(a, std::move(axes), s);
}

array expand_dims(const array& a, const std::vector<int>& axes, StreamOrDevice s) {
  if (axes.empty()) return a;
  if (std::set<int>(axes.begin(), axes.end()).size() != axes.size()) fail("[expand_dims] Received duplicate axes.");
  const int out_nd = static_cast<int>(a.ndim() + axes.size());
  std::set<int> unique;
  for (int ax : axes) unique.insert(ax < 0 ? ax + out_nd : ax);
  if (unique.size() != axes.size()) fail("[expand_dims] Received duplicate axes.");
  return expand_dims_impl(a, std::vector<int>(unique.begin(), unique.end()), s);
}

array expand_dims(const array& a, int axis, StreamOrDevice s) { return expand_dims_impl(a, {axis}, s); }

array transpose(const array& a, std::vector<int> axes, StreamOrDevice s) {
  const int nd = static_cast<int>(a.ndim());
  for (auto& ax : axes) ax = ax < 0 ? ax + nd : ax;
  Shape out = transpose_shape(a.shape(), std::vector<int32_t>(axes.begin(), axes.end()), "transpose");
  static const PrimitiveDef& d = def_of("Transpose");
  return make_array(d, State{std::vector<int32_t>(axes.begin(), axes.end())}, {a}, {{out, a.dtype()}},
                    to_stream(s));
}

array transpose(const array& a, StreamOrDevice s) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.rbegin(), axes.rend(), 0);
  return transpose(a, std::move(axes), s);
}

namespace {
// std::out_of_range, as MLX's swapaxes and moveaxis.
int check_axis(const array& a, int ax, const char* api) {
  const int nd = static_cast<int>(a.ndim());
  if (ax < -nd || ax >= nd) {
    throw std::out_of_range(std::string("[") + api + "] Invalid axis " + std::to_string(ax) + " for array with " +
                            std::to_string(nd) + " dimensions.");
  }
  return ax < 0 ? ax + nd : ax;
}
}  // namespace

array swapaxes(const array& a, int axis1, int axis2, StreamOrDevice s) {
  axis1 = check_axis(a, axis1, "swapaxes");
  axis2 = check_axis(a, axis2, "swapaxes");
  std::vector<int> order(a.ndim());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[axis1], order[axis2]);
  return transpose(a, std::move(order), s);
}

array moveaxis(const array& a, int source, int destination, StreamOrDevice s) {
  source = check_axis(a, source, "moveaxis");
  destination = check_axis(a, destination, "moveaxis");
  if (source == destination) return a;
  std::vector<int> order(a.ndim());
  std::iota(order.begin(), order.end(), 0);
  order.erase(order.begin() + source);
  order.insert(order.begin() + destination, source);
  return transpose(a, std::move(order), s);
}

array atleast_1d(const array& a, StreamOrDevice s) { return a.ndim() == 0 ? reshape(a, {1}, s) : a; }

array atleast_2d(const array& a, StreamOrDevice s) {
  switch (a.ndim()) {
    case 0: return reshape(a, {1, 1}, s);
    case 1: return reshape(a, {1, a.shape(0)}, s);
    default: return a;
  }
}

array atleast_3d(const array& a, StreamOrDevice s) {
  switch (a.ndim()) {
    case 0: return reshape(a, {1, 1, 1}, s);
    case 1: return reshape(a, {1, a.shape(0), 1}, s);
    case 2: return reshape(a, {a.shape(0), a.shape(1), 1}, s);
    default: return a;
  }
}

namespace {
template <typename F>
std::vector<array> each(const std::vector<array>& arrays, F f) {
  std::vector<array> out;
  out.reserve(arrays.size());
  for (auto& a : arrays) out.push_back(f(a));
  return out;
}
}  // namespace

std::vector<array> atleast_1d(const std::vector<array>& a, StreamOrDevice s) {
  return each(a, [&](const array& x) { return atleast_1d(x, s); });
}
std::vector<array> atleast_2d(const std::vector<array>& a, StreamOrDevice s) {
  return each(a, [&](const array& x) { return atleast_2d(x, s); });
}
std::vector<array> atleast_3d(const std::vector<array>& a, StreamOrDevice s) {
  return each(a, [&](const array& x) { return atleast_3d(x, s); });
}

}  // namespace kiln
