// Joining and padding: the Concatenate and Pad primitives, and the composites MLX builds from them and
// from the view primitives (stack, tile, repeat, roll, edge padding). CPU kernels:
// backend/cpu/kernels/shape/joining.cpp.
#include <algorithm>
#include <numeric>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"
#include "primitives/shape/shape_internal.h"
#include "primitives/shape/shape_state.h"

namespace kiln {

namespace {

using detail::shape_str;

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

// ---- Concatenate ----

std::vector<ArraySpec> concatenate_infer(const State& st, const std::vector<ArraySpec>& in) {
  const int ax = st.i(0);
  Shape shape = in[0].shape;
  if (ax < 0 || ax >= static_cast<int>(shape.size())) {
    fail("[concatenate] Axis " + std::to_string(ax) + " is out of bounds for array with " +
         std::to_string(shape.size()) + " dimensions.");
  }
  int64_t total = 0;
  for (auto& a : in) {
    if (a.dtype != in[0].dtype) fail("[concatenate] All the inputs must have one dtype.");
    if (a.shape.size() != shape.size()) {
      fail("[concatenate] All the input arrays must have the same number of dimensions. However, got arrays with "
           "dimensions " + std::to_string(shape.size()) + " and " + std::to_string(a.shape.size()) + ".");
    }
    for (size_t i = 0; i < shape.size(); ++i) {
      if (static_cast<int>(i) != ax && a.shape[i] != shape[i]) {
        std::string msg =
            "[concatenate] All the input array dimensions must match exactly except for the concatenation axis. "
            "However, the provided shapes are ";
        for (auto& b : in) msg += shape_str(b.shape) + ", ";
        fail(msg + "and the concatenation axis is " + std::to_string(ax) + ".");
      }
    }
    total += a.shape[ax];
  }
  if (total > INT32_MAX) fail("[concatenate] The output is too large.");
  shape[ax] = static_cast<int32_t>(total);
  return {{shape, in[0].dtype}};
}

}  // namespace

// ---- Pad ----

// Per-dimension low and high padding (shape_state.h): the Pad kernel reads the state with it too.
void shape_detail::pad_amounts(const State& st, int nd, Shape& low, Shape& high) {
  const auto& axes = st.ints(0);
  const Shape &lo = st.get<std::vector<int32_t>>(1), &hi = st.get<std::vector<int32_t>>(2);
  if (axes.size() != lo.size() || axes.size() != hi.size()) {
    fail("[pad] Invalid number of padding sizes passed to pad with axes of size " + std::to_string(axes.size()));
  }
  low.assign(nd, 0);
  high.assign(nd, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int ax = detail::normalize_axis(axes[i], nd, "pad");
    if (lo[i] < 0 || hi[i] < 0) fail("[pad] Padding sizes must be non-negative.");
    low[ax] += lo[i];
    high[ax] += hi[i];
  }
}

namespace {

using shape_detail::pad_amounts;

std::vector<ArraySpec> pad_infer(const State& st, const std::vector<ArraySpec>& in) {
  Shape low, high, out = in[0].shape;
  pad_amounts(st, static_cast<int>(out.size()), low, high);
  if (in[1].dtype != in[0].dtype) fail("[pad] The pad value must have the dtype of the array.");
  if (shape_size(in[1].shape, "pad") != 1) fail("[pad] The pad value must be a single value.");
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t d = int64_t(out[i]) + low[i] + high[i];
    if (d > INT32_MAX) fail("[pad] The padded array is too large.");
    out[i] = static_cast<int32_t>(d);
  }
  shape_size(out, "pad");
  return {{out, in[0].dtype}};
}

const PrimitiveDef& def_of(const char* name) { return detail::def(name); }

// MLX's edge padding: write the array into zeros, then copy each edge slice outwards, axis by axis.
array edge_pad(const array& a, const Shape& low, const Shape& high, const Shape& out_shape, StreamOrDevice s) {
  array out = zeros(out_shape, a.dtype(), s);
  Shape stops = a.shape();
  for (size_t i = 0; i < stops.size(); ++i) stops[i] += low[i];
  array padded = slice_update(out, a, low, stops, s);
  const int nd = static_cast<int>(a.ndim());
  for (int axis = 0; axis < nd; ++axis) {
    if (low[axis] > 0) {
      Shape starts(nd, 0), ends = out.shape();
      starts[axis] = low[axis];
      ends[axis] = low[axis] + 1;
      array edge = slice(padded, starts, ends, s);
      starts[axis] = 0;
      ends[axis] = low[axis];
      padded = slice_update(padded, edge, starts, ends, s);
    }
    if (high[axis] > 0) {
      Shape starts(nd, 0), ends = out.shape();
      starts[axis] = -high[axis] - 1;
      ends[axis] = -high[axis];
      array edge = slice(padded, starts, ends, s);
      starts[axis] = -high[axis];
      ends[axis] = out.shape(axis);
      padded = slice_update(padded, edge, starts, ends, s);
    }
  }
  return padded;
}

}  // namespace

namespace primitives {
void register_joining() {
  registry::define(detail::row("Concatenate", {1, -1}, {{"axis", FieldType::Int}}, concatenate_infer));
  registry::define(detail::row("Pad", 2,
                               {{"axes", FieldType::IntVec}, {"low_pad_size", FieldType::ShapeF},
                                {"high_pad_size", FieldType::ShapeF}},
                               pad_infer, {.shapeless = false}));
}
}  // namespace primitives

// ---- ops ----

array concatenate(std::vector<array> arrays, int axis, StreamOrDevice s) {
  if (arrays.empty()) fail("[concatenate] No arrays provided for concatenation");
  if (arrays.size() == 1) return arrays[0];
  const int ax = detail::normalize_axis(axis, static_cast<int>(arrays[0].ndim()), "concatenate");
  Shape shape = arrays[0].shape();
  for (auto& a : arrays) {
    if (a.ndim() != shape.size()) {
      fail("[concatenate] All the input arrays must have the same number of dimensions. However, got arrays with "
           "dimensions " + std::to_string(shape.size()) + " and " + std::to_string(a.ndim()) + ".");
    }
    for (size_t i = 0; i < shape.size(); ++i) {
      if (static_cast<int>(i) != ax && a.shape()[i] != shape[i]) {
        std::string msg =
            "[concatenate] All the input array dimensions must match exactly except for the concatenation axis. "
            "However, the provided shapes are ";
        for (auto& b : arrays) msg += shape_str(b.shape()) + ", ";
        fail(msg + "and the concatenation axis is " + std::to_string(axis) + ".");
      }
    }
  }
  Dtype t = arrays[0].dtype();
  for (auto& a : arrays) t = promote_types(t, a.dtype());
  for (auto& a : arrays) a = astype(a, t, s);
  static const PrimitiveDef& d = def_of("Concatenate");
  return make_array(d, State{int32_t(ax)}, std::move(arrays), {}, to_stream(s));
}

array concatenate(std::vector<array> arrays, StreamOrDevice s) {
  for (auto& a : arrays) a = flatten(a, s);
  return concatenate(std::move(arrays), 0, s);
}

array stack(const std::vector<array>& arrays, int axis, StreamOrDevice s) {
  if (arrays.empty()) fail("[stack] No arrays provided for stacking");
  for (auto& a : arrays) {
    if (a.shape() != arrays[0].shape()) fail("[stack] All arrays must have the same shape");
  }
  const int ax = detail::normalize_axis(axis, static_cast<int>(arrays[0].ndim()) + 1, "stack");
  std::vector<array> expanded;
  expanded.reserve(arrays.size());
  for (auto& a : arrays) expanded.push_back(expand_dims(a, ax, s));
  return concatenate(std::move(expanded), axis, s);
}

array stack(const std::vector<array>& arrays, StreamOrDevice s) { return stack(arrays, 0, s); }

array repeat(const array& arr, int repeats, int axis, StreamOrDevice s) {
  axis = detail::normalize_axis(axis, static_cast<int>(arr.ndim()), "repeat");
  if (repeats < 0) fail("[repeat] Number of repeats cannot be negative");
  // MLX returns an empty 1-D array here, whatever the input's rank.
  if (repeats == 0) return array(Shape{0}, arr.dtype());
  if (repeats == 1) return arr;
  Shape shape = arr.shape();
  shape.insert(shape.begin() + axis + 1, repeats);
  array out = broadcast_to(expand_dims(arr, axis + 1, s), shape, s);
  shape.erase(shape.begin() + axis + 1);
  shape[axis] *= repeats;
  return reshape(out, shape, s);
}

array repeat(const array& arr, int repeats, StreamOrDevice s) { return repeat(flatten(arr, s), repeats, 0, s); }

array tile(const array& arr, std::vector<int> reps, StreamOrDevice s) {
  for (int r : reps) {
    if (r < 0) fail("[tile] Repetitions must be non-negative but found " + std::to_string(r) + ".");
  }
  Shape shape = arr.shape();
  if (reps.size() < shape.size()) reps.insert(reps.begin(), shape.size() - reps.size(), 1);
  if (reps.size() > shape.size()) shape.insert(shape.begin(), reps.size() - shape.size(), 1);
  Shape expand, bcast, final_shape;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (reps[i] != 1) {
      expand.push_back(1);
      bcast.push_back(reps[i]);
    }
    expand.push_back(shape[i]);
    bcast.push_back(shape[i]);
    final_shape.push_back(reps[i] * shape[i]);
  }
  array x = reshape(arr, std::move(expand), s);
  x = broadcast_to(x, bcast, s);
  return reshape(x, std::move(final_shape), s);
}

array roll(const array& a, const Shape& shift, const std::vector<int>& axes, StreamOrDevice s) {
  if (axes.empty()) return a;
  if (shift.size() < axes.size()) {
    fail("[roll] At least one shift value per axis is required, " + std::to_string(shift.size()) +
         " provided for " + std::to_string(axes.size()) + " axes.");
  }
  const int nd = static_cast<int>(a.ndim());
  array result = a;
  for (size_t i = 0; i < axes.size(); ++i) {
    int ax = axes[i] < 0 ? axes[i] + nd : axes[i];
    if (ax < 0 || ax >= nd) {
      fail("[roll] Invalid axis " + std::to_string(axes[i]) + " for array with " + std::to_string(nd) +
           " dimensions.");
    }
    const int size = a.shape(ax);
    if (size == 0) continue;
    const int sh = shift[i];
    const int split_index = sh < 0 ? (-(sh % size)) : size - sh % size;
    auto parts = split(result, Shape{split_index}, ax, s);
    std::swap(parts[0], parts[1]);
    result = concatenate(parts, ax, s);
  }
  return result;
}

array roll(const array& a, int shift, StreamOrDevice s) {
  return reshape(roll(flatten(a, s), Shape{shift}, std::vector<int>{0}, s), a.shape(), s);
}

array roll(const array& a, const Shape& shift, StreamOrDevice s) {
  int64_t total = std::accumulate(shift.begin(), shift.end(), int64_t(0));
  return roll(a, static_cast<int>(total), s);
}

array roll(const array& a, int shift, int axis, StreamOrDevice s) {
  return roll(a, Shape{shift}, std::vector<int>{axis}, s);
}

array roll(const array& a, int shift, const std::vector<int>& axes, StreamOrDevice s) {
  return roll(a, Shape(axes.size(), shift), axes, s);
}

array roll(const array& a, const Shape& shift, int axis, StreamOrDevice s) {
  int64_t total = std::accumulate(shift.begin(), shift.end(), int64_t(0));
  return roll(a, Shape{static_cast<int32_t>(total)}, std::vector<int>{axis}, s);
}

array pad(const array& a, const std::vector<int>& axes, const Shape& low_pad_size, const Shape& high_pad_size,
          const array& pad_value, const std::string& mode, StreamOrDevice s) {
  if (axes.size() != low_pad_size.size() || axes.size() != high_pad_size.size()) {
    fail("[pad] Invalid number of padding sizes passed to pad with axes of size " + std::to_string(axes.size()));
  }
  const int nd = static_cast<int>(a.ndim());
  Shape out_shape = a.shape(), low(nd, 0), high(nd, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    if (low_pad_size[i] < 0) {
      fail("[pad] Invalid low padding size (" + std::to_string(low_pad_size[i]) + ") passed to pad for axis " +
           std::to_string(i) + ". Padding sizes must be non-negative");
    }
    if (high_pad_size[i] < 0) {
      fail("[pad] Invalid high padding size (" + std::to_string(high_pad_size[i]) + ") passed to pad for axis " +
           std::to_string(i) + ". Padding sizes must be non-negative");
    }
    int ax = detail::normalize_axis(axes[i], nd, "pad");
    out_shape[ax] += low_pad_size[i] + high_pad_size[i];
    low[ax] += low_pad_size[i];
    high[ax] += high_pad_size[i];
  }
  if (mode == "constant") {
    if (pad_value.size() != 1) fail("[pad] The pad value must be a single value.");
    static const PrimitiveDef& d = def_of("Pad");
    return make_array(d,
                      State{std::vector<int32_t>(axes.begin(), axes.end()), Shape(low_pad_size),
                            Shape(high_pad_size)},
                      {a, astype(pad_value, a.dtype(), s)}, {{out_shape, a.dtype()}}, to_stream(s));
  }
  if (mode == "edge") return edge_pad(a, low, high, out_shape, s);
  fail("[pad] Invalid padding mode (" + mode + ") passed to pad");
}

array pad(const array& a, const std::vector<std::pair<int, int>>& pad_width, const array& pad_value,
          const std::string& mode, StreamOrDevice s) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  Shape lows, highs;
  for (auto& p : pad_width) {
    lows.push_back(p.first);
    highs.push_back(p.second);
  }
  return pad(a, axes, lows, highs, pad_value, mode, s);
}

array pad(const array& a, const std::pair<int, int>& pad_width, const array& pad_value, const std::string& mode,
          StreamOrDevice s) {
  return pad(a, std::vector<std::pair<int, int>>(a.ndim(), pad_width), pad_value, mode, s);
}

array pad(const array& a, int pad_width, const array& pad_value, const std::string& mode, StreamOrDevice s) {
  return pad(a, std::vector<std::pair<int, int>>(a.ndim(), {pad_width, pad_width}), pad_value, mode, s);
}

}  // namespace kiln
