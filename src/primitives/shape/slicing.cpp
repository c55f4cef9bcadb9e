// Slicing primitives: Slice, SliceUpdate, DynamicSlice, DynamicSliceUpdate and Split. Slices and split
// pieces are views of the input; updates copy the source once and write the update region. CPU kernels:
// backend/cpu/kernels/shape/slicing.cpp.
#include <algorithm>
#include <set>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"
#include "primitives/shape/shape_internal.h"
#include "primitives/shape/shape_state.h"

namespace kiln {

namespace {

using detail::shape_str;

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

// MLX's normalisation of a static slice: `start` is clamped into the axis, `stop` is kept as given, and
// the stride becomes 1 where the output has one element. Returns whether any stride is negative.
bool normalize_slice(const Shape& shape, Shape& start, const Shape& stop, Shape& strides, Shape& out) {
  bool neg = false;
  out.assign(shape.size(), 0);
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t n = shape[i];
    int64_t s = start[i] < 0 ? start[i] + n : start[i];
    int64_t e = stop[i] < 0 ? stop[i] + n : stop[i];
    const int64_t k = strides[i];
    if (k == 0) fail("[slice] Slice strides cannot be zero.");
    if (k < 0) {
      neg = true;
      int64_t st = std::min(s, n - 1);
      int64_t ed = std::min(std::max<int64_t>(e, -1), st);
      start[i] = static_cast<int32_t>(st);
      out[i] = static_cast<int32_t>((st - ed - k - 1) / -k);
    } else {
      int64_t st = std::clamp<int64_t>(s, 0, n);
      int64_t ed = std::max(std::clamp<int64_t>(e, 0, n), st);
      start[i] = static_cast<int32_t>(st);
      out[i] = static_cast<int32_t>((ed - st + k - 1) / k);
    }
    if (out[i] == 1) strides[i] = 1;
  }
  return neg;
}

}  // namespace

// Every element of a `region`-shaped window starting at `start` with `strides` lies inside `shape`
// (shape_state.h: the slice kernels check their windows with it too).
void shape_detail::check_region(const Shape& shape, const Shape& start, const Shape& strides, const Shape& region,
                                const char* api) {
  if (start.size() != shape.size() || strides.size() != shape.size() || region.size() != shape.size()) {
    fail(std::string("[") + api + "] Invalid number of indices or strides for array with dimension " +
         std::to_string(shape.size()) + ".");
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    if (region[i] < 0) fail(std::string("[") + api + "] Negative slice size in " + shape_str(region) + ".");
  }
  if (shape_size(region, api) == 0) return;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t last = static_cast<int64_t>(start[i]) + static_cast<int64_t>(region[i] - 1) * strides[i];
    if (start[i] < 0 || start[i] >= shape[i] || last < 0 || last >= shape[i]) {
      fail(std::string("[") + api + "] The slice of shape " + shape_str(region) + " starting at " + shape_str(start) +
           " with strides " + shape_str(strides) + " is out of bounds for array of shape " + shape_str(shape) + ".");
    }
  }
}

namespace {

using shape_detail::check_region;
using shape_detail::shp;

// The output shape a recorded (already normalised) Slice state gives when every stride is taken as
// recorded. Where MLX forced a stride to 1 (one-element outputs) the true length is 1 instead; the
// state alone cannot tell, so files are validated with slice_check, which accepts both.
Shape slice_shape_from_state(const Shape& shape, const Shape& start, const Shape& stop, const Shape& strides) {
  if (start.size() != shape.size() || stop.size() != shape.size() || strides.size() != shape.size()) {
    fail("[slice] Invalid number of indices or strides for array with dimension " + std::to_string(shape.size()) +
         ".");
  }
  Shape out(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t n = shape[i], st = start[i], k = strides[i];
    const int64_t e = stop[i] < 0 ? stop[i] + n : stop[i];
    if (k == 0) fail("[slice] Slice strides cannot be zero.");
    if (k < 0) {
      int64_t ed = std::min(std::max<int64_t>(e, -1), st);
      out[i] = static_cast<int32_t>(std::max<int64_t>((st - ed - k - 1) / -k, 0));
    } else {
      int64_t ed = std::max(std::clamp<int64_t>(e, 0, n), st);
      out[i] = static_cast<int32_t>(std::max<int64_t>((ed - st + k - 1) / k, 0));
    }
  }
  return out;
}

std::vector<ArraySpec> slice_infer(const State& st, const std::vector<ArraySpec>& in) {
  Shape out = slice_shape_from_state(in[0].shape, shp(st, 0), shp(st, 1), shp(st, 2));
  check_region(in[0].shape, shp(st, 0), shp(st, 2), out, "slice");
  return {{out, in[0].dtype}};
}

// Validates a recorded Slice output. Per axis, a recorded stride k < 0 or k > 1 fixes the length; a
// stride of 1 is either a true unit stride or one MLX forced because the output has one element, so the
// recorded length may be the unit-stride length or 1 (the element at `start` must then exist).
void slice_check(const State& st, const std::vector<ArraySpec>& in, const std::vector<ArraySpec>& out) {
  const Shape &shape = in[0].shape, &start = shp(st, 0), &stop = shp(st, 1), &k = shp(st, 2);
  if (out.size() != 1 || out[0].dtype != in[0].dtype) fail("[slice] A slice has one output of its input's dtype.");
  const Shape& rec = out[0].shape;
  if (start.size() != shape.size() || stop.size() != shape.size() || k.size() != shape.size() ||
      rec.size() != shape.size()) {
    fail("[slice] Invalid number of indices or strides for array with dimension " + std::to_string(shape.size()) +
         ".");
  }
  Shape unit = slice_shape_from_state(shape, start, stop, k);
  for (size_t i = 0; i < shape.size(); ++i) {
    bool ok = rec[i] == unit[i];
    if (!ok && k[i] == 1) {
      const int64_t e = stop[i] < 0 ? int64_t(stop[i]) + shape[i] : stop[i];
      const int64_t m = std::max<int64_t>(std::clamp<int64_t>(e, 0, shape[i]) - start[i], 0);
      ok = rec[i] == m || (rec[i] == 1 && start[i] >= 0 && start[i] < shape[i]);
    }
    if (!ok) {
      fail("[slice] A slice of shape " + shape_str(rec) + " does not follow from start " + shape_str(start) +
           ", stop " + shape_str(stop) + " and strides " + shape_str(k) + " on an array of shape " +
           shape_str(shape) + ".");
    }
  }
  check_region(shape, start, k, rec, "slice");
}

std::vector<ArraySpec> slice_update_infer(const State& st, const std::vector<ArraySpec>& in) {
  if (in[1].dtype != in[0].dtype) fail("[slice_update] The update must have the dtype of the source array.");
  check_region(in[0].shape, shp(st, 0), shp(st, 2), in[1].shape, "slice_update");
  return {in[0]};
}

// ---- dynamic slices ----

// The start array of a dynamic slice: 0-d or 1-D, one integer per axis.
void check_start_array(const ArraySpec& start, size_t naxes, const char* api) {
  const std::string p = std::string("[") + api + "]";
  if (start.shape.size() > 1) {
    fail(p + " array of starting indices must be zero or one dimensional but has dimension " +
         std::to_string(start.shape.size()) + ".");
  }
  size_t n = shape_size(start.shape, api);
  if (n != naxes) {
    fail(p + " Number of starting indices " + std::to_string(n) + " does not match number of axes " +
         std::to_string(naxes) + ".");
  }
  if (!is_integral(start.dtype)) {
    fail(p + " Start indices must be integers, got type " + dtype_name(start.dtype) + ".");
  }
}

// Axes of a dynamic slice: in range (negative ones count from the end when `allow_negative`), no repeats.
std::vector<int32_t> check_axes(const std::vector<int32_t>& axes, int nd, bool allow_negative, const char* api) {
  const std::string p = std::string("[") + api + "]";
  std::vector<int32_t> out;
  std::set<int> seen;
  for (int ax : axes) {
    int n = (allow_negative && ax < 0) ? ax + nd : ax;
    if (n < 0 || n >= nd) {
      fail(p + " Invalid axis " + std::to_string(ax) + " for array with dimension " + std::to_string(nd) + ".");
    }
    out.push_back(n);
  }
  for (int ax : out) {
    if (!seen.insert(ax).second) fail(p + " Repeat axes not allowed.");
  }
  return out;
}

void check_start_spec(const ArraySpec& a, const ArraySpec& start, const std::vector<int32_t>& axes,
                      const char* api) {
  check_start_array(start, axes.size(), api);
  check_axes(axes, static_cast<int>(a.shape.size()), false, api);
}

std::vector<ArraySpec> dynamic_slice_infer(const State& st, const std::vector<ArraySpec>& in) {
  const auto& axes = st.ints(0);
  const Shape& size = shp(st, 1);
  check_start_spec(in[0], in[1], axes, "slice");
  const Shape& s = in[0].shape;
  if (size.size() != s.size()) {
    fail("[slice] Invalid slice size for array with " + std::to_string(s.size()) + " dimensions.");
  }
  for (size_t i = 0; i < s.size(); ++i) {
    if (size[i] < 0 || size[i] > s[i]) {
      fail("[slice] Invalid slice size " + shape_str(size) + " for array with shape " + shape_str(s) + ".");
    }
  }
  return {{size, in[0].dtype}};
}

std::vector<ArraySpec> dynamic_slice_update_infer(const State& st, const std::vector<ArraySpec>& in) {
  check_start_spec(in[0], in[2], st.ints(0), "slice_update");
  if (in[1].dtype != in[0].dtype) fail("[slice_update] The update must have the dtype of the source array.");
  const Shape &s = in[0].shape, &u = in[1].shape;
  bool ok = u.size() == s.size();
  for (size_t i = 0; ok && i < s.size(); ++i) ok = u[i] >= 0 && u[i] <= s[i];
  if (!ok) {
    fail("[slice_update] An update of shape " + shape_str(u) + " does not fit in an array of shape " + shape_str(s) +
         ".");
  }
  return {in[0]};
}

// ---- Split ----

std::vector<ArraySpec> split_infer(const State& st, const std::vector<ArraySpec>& in) {
  const Shape& idx = shp(st, 0);
  const int ax = st.i(1);
  const Shape& s = in[0].shape;
  if (ax < 0 || ax >= static_cast<int>(s.size())) {
    fail("[split] Invalid axis (" + std::to_string(ax) + ") passed to split for array with shape " + shape_str(s) +
         ".");
  }
  std::vector<ArraySpec> out;
  int prev = 0;
  for (size_t i = 0; i <= idx.size(); ++i) {
    int next = i < idx.size() ? idx[i] : s[ax];
    if (next < prev || next > s[ax]) {
      fail("[split] The split indices " + shape_str(idx) + " must be sorted and within the axis of size " +
           std::to_string(s[ax]) + ".");
    }
    Shape o = s;
    o[ax] = next - prev;
    out.push_back({o, in[0].dtype});
    prev = next;
  }
  return out;
}

const PrimitiveDef& def_of(const char* name) { return detail::def(name); }

std::vector<int32_t> to_i32(const std::vector<int>& v) { return std::vector<int32_t>(v.begin(), v.end()); }

// MLX's checks of a dynamic start, in MLX's order; returns the normalized axes.
std::vector<int> normalize_dynamic_inputs(const array& a, const array& start, const std::vector<int>& axes,
                                          const char* api) {
  const int nd = static_cast<int>(a.ndim());
  if (start.size() > a.ndim()) {
    fail(std::string("[") + api + "] Invalid number of starting positions for array with dimension " +
         std::to_string(nd) + ".");
  }
  check_start_array({start.shape(), start.dtype()}, axes.size(), api);
  auto norm = check_axes(to_i32(axes), nd, true, api);
  return std::vector<int>(norm.begin(), norm.end());
}

}  // namespace

namespace primitives {
void register_slicing() {
  const std::vector<Field> slice_fields{
      {"start", FieldType::ShapeF}, {"stop", FieldType::ShapeF}, {"strides", FieldType::ShapeF}};
  registry::define(detail::row("Slice", 1, slice_fields, slice_infer,
                               {.shapeless = false, .check = slice_check}));
  registry::define(detail::row("SliceUpdate", 2, slice_fields, slice_update_infer));
  registry::define(detail::row("DynamicSlice", 2, {{"axes", FieldType::IntVec}, {"slice_size", FieldType::ShapeF}},
                               dynamic_slice_infer));
  registry::define(detail::row("DynamicSliceUpdate", 3, {{"axes", FieldType::IntVec}},
                               dynamic_slice_update_infer));
  registry::define(detail::row("Split", 1, {{"indices", FieldType::ShapeF}, {"axis", FieldType::Int}},
                               split_infer, {.num_outputs = -1, .shapeless = false}));
}
}  // namespace primitives

// ---- ops ----

array slice(const array& a, Shape start, Shape stop, Shape strides, StreamOrDevice s) {
  if (start.size() != a.ndim() || stop.size() != a.ndim() || strides.size() != a.ndim()) {
    fail("[slice] Invalid number of indices or strides for array with dimension " + std::to_string(a.ndim()) + ".");
  }
  Shape out;
  bool neg = normalize_slice(a.shape(), start, stop, strides, out);
  if (!neg && out == a.shape()) return a;
  static const PrimitiveDef& d = def_of("Slice");
  return make_array(d, State{std::move(start), std::move(stop), std::move(strides)}, {a}, {{out, a.dtype()}},
                    to_stream(s));
}

array slice(const array& a, Shape start, Shape stop, StreamOrDevice s) {
  return slice(a, std::move(start), std::move(stop), Shape(a.ndim(), 1), s);
}

array slice(const array& a, const array& start, std::vector<int> axes, Shape slice_size, StreamOrDevice s) {
  axes = normalize_dynamic_inputs(a, start, std::move(axes), "slice");
  if (slice_size.size() != a.ndim()) {
    fail("[slice] Invalid slice size for array with " + std::to_string(a.ndim()) + " dimensions.");
  }
  for (size_t i = 0; i < a.ndim(); ++i) {
    if (slice_size[i] > a.shape()[i] || slice_size[i] < 0) {
      fail("[slice] Invalid slice size " + shape_str(slice_size) + " for array with shape " + shape_str(a.shape()) +
           ".");
    }
  }
  static const PrimitiveDef& d = def_of("DynamicSlice");
  Shape out = slice_size;
  return make_array(d, State{to_i32(axes), std::move(slice_size)}, {a, start}, {{out, a.dtype()}}, to_stream(s));
}

array slice_update(const array& src, const array& update, Shape start, Shape stop, Shape strides,
                   StreamOrDevice s) {
  if (start.size() != src.ndim() || stop.size() != src.ndim() || strides.size() != src.ndim()) {
    fail("[slice_update] Invalid number of indices or strides for array with dimension " +
         std::to_string(src.ndim()) + ".");
  }
  Shape upd_shape;
  bool neg = normalize_slice(src.shape(), start, stop, strides, upd_shape);
  array upd = broadcast_to(astype(update, src.dtype(), s), upd_shape, s);
  if (!neg && upd_shape == src.shape()) return upd;
  static const PrimitiveDef& d = def_of("SliceUpdate");
  return make_array(d, State{std::move(start), std::move(stop), std::move(strides)}, {src, upd},
                    {{src.shape(), src.dtype()}}, to_stream(s));
}

array slice_update(const array& src, const array& update, Shape start, Shape stop, StreamOrDevice s) {
  return slice_update(src, update, std::move(start), std::move(stop), Shape(src.ndim(), 1), s);
}

array slice_update(const array& src, const array& update, const array& start, std::vector<int> axes,
                   StreamOrDevice s) {
  axes = normalize_dynamic_inputs(src, start, std::move(axes), "slice_update");
  // Leading axes the update lacks take the source's sizes, except sliced ones, which take 1.
  Shape up = update.shape();
  const size_t diff = src.ndim() > update.ndim() ? src.ndim() - update.ndim() : 0;
  up.insert(up.begin(), src.shape().begin(), src.shape().begin() + diff);
  for (size_t d = diff; d < src.ndim() && d < up.size(); ++d) up[d] = std::min(up[d], src.shape()[d]);
  for (int ax : axes) {
    if (static_cast<size_t>(ax) < diff) up[ax] = 1;
  }
  array upd = broadcast_to(astype(update, src.dtype(), s), up, s);
  static const PrimitiveDef& d = def_of("DynamicSliceUpdate");
  return make_array(d, State{to_i32(axes)}, {src, upd, start}, {{src.shape(), src.dtype()}}, to_stream(s));
}

std::vector<array> split(const array& a, const Shape& indices, int axis, StreamOrDevice s) {
  const int nd = static_cast<int>(a.ndim());
  const int ax = axis < 0 ? axis + nd : axis;
  if (ax < 0 || ax >= nd) {
    fail("[split] Invalid axis (" + std::to_string(axis) + ") passed to split for array with shape " +
         shape_str(a.shape()) + ".");
  }
  if (indices.empty()) return {a};
  const int n = a.shape(ax);
  if (indices.size() < 10 && std::is_sorted(indices.begin(), indices.end()) && indices[0] > 0 &&
      indices.back() < n) {
    static const PrimitiveDef& d = def_of("Split");
    return make_arrays(d, State{indices, int32_t(ax)}, {a}, {}, to_stream(s));
  }
  // Anything else becomes one Slice per piece, as MLX builds it.
  std::vector<array> res;
  Shape start(nd, 0), stop = a.shape();
  for (size_t i = 0; i <= indices.size(); ++i) {
    stop[ax] = i < indices.size() ? indices[i] : n;
    res.push_back(slice(a, start, stop, s));
    start[ax] = stop[ax];
  }
  return res;
}

std::vector<array> split(const array& a, const Shape& indices, StreamOrDevice s) { return split(a, indices, 0, s); }

std::vector<array> split(const array& a, int num_splits, int axis, StreamOrDevice s) {
  const int nd = static_cast<int>(a.ndim());
  const int ax = axis < 0 ? axis + nd : axis;
  if (ax < 0 || ax >= nd) {
    fail("[split] Invalid axis " + std::to_string(axis) + " passed to split for array with shape " +
         shape_str(a.shape()) + ".");
  }
  if (num_splits <= 0) {
    fail("[split] The number of splits must be positive but found " + std::to_string(num_splits) + ".");
  }
  if (a.shape(ax) % num_splits) {
    fail("[split] Array split does not result in sub arrays with equal size: attempting " +
         std::to_string(num_splits) + " splits along axis " + std::to_string(axis) + " for shape " +
         shape_str(a.shape()) + ".");
  }
  const int size = a.shape(ax) / num_splits;
  Shape indices(num_splits - 1);
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int32_t>((i + 1) * size);
  return split(a, indices, axis, s);
}

std::vector<array> split(const array& a, int num_splits, StreamOrDevice s) { return split(a, num_splits, 0, s); }

}  // namespace kiln
