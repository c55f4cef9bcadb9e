// Shape rows (src/primitives/shape/): views and reshapes to the recorded shapes, broadcasts, joins,
// slices and slice updates, pads, strided views, creation. Index tensors that depend only on the
// recorded shapes are computed here and stored as initializers.
#include <climits>
#include <cstdint>

#include "kiln/ops.h"
#include "onnx/lower/common.h"

namespace kiln::onnx_export {

namespace {

void reshape_to_output(Context& c) { c.op_to(0, "Reshape", {c.in.at(0).name, c.ints(dims(c.out.at(0).shape))}); }

// The broadcast of two shape vectors of one length (Where, not Max, so that a 0 against a 1 gives 0).
std::string broadcast_shapes(Context& c, const std::string& a, const std::string& b) {
  return c.op("Where", {c.op("Equal", {a, c.ints({1}, true)}), b, a});
}

// The target shape of a Broadcast / BroadcastAxes: the recorded one, or in a shapeless function the
// broadcast of every input's run-time shape, with BroadcastAxes' ignored trailing axes taken from
// input 0.
std::string broadcast_target(Context& c, int ignored) {
  if (!c.shapeless() || c.in.size() == 1) return c.ints(dims(c.out.at(0).shape));
  const int nd = c.out.at(0).ndim();
  const int keep = nd - ignored;
  auto shape_of = [&](const Tensor& t) {
    std::string s = c.op("Shape", {t.name});
    const int pad = nd - t.ndim();
    if (pad > 0) s = c.op("Concat", {c.ints(std::vector<int64_t>(pad, 1)), s}, {{"axis", 0}});
    return s;
  };
  std::string target;
  for (size_t k = 0; k < c.in.size(); ++k) {
    std::string s = shape_of(c.in[k]);
    if (ignored > 0) s = c.op("Slice", {s, c.ints({0}), c.ints({keep})});
    target = k == 0 ? s : broadcast_shapes(c, target, s);
  }
  if (ignored > 0) {
    std::string own = c.op("Slice", {c.op("Shape", {c.in[0].name}), c.ints({-ignored}), c.ints({INT64_MAX})});
    target = c.op("Concat", {target, own}, {{"axis", 0}});
  }
  return target;
}

void broadcast_with(Context& c, int ignored) {
  // ONNX Runtime's Expand has no bfloat16 kernel: through float32, exact both ways.
  const Dtype t = c.in.at(0).dtype == bfloat16 ? float32 : c.in.at(0).dtype;
  std::string x = t == c.in[0].dtype ? c.in[0].name : c.cast(c.in[0].name, t);
  store(c, 0, c.op("Expand", {x, broadcast_target(c, ignored)}), t);
}

void broadcast(Context& c) { broadcast_with(c, 0); }

void concatenate(Context& c) {
  std::vector<std::string> xs;
  for (auto& t : c.in) xs.push_back(t.name);
  c.op_to(0, "Concat", xs, {{"axis", static_cast<int64_t>(c.int_arg(0))}});
}

void split(Context& c) {
  const int ax = static_cast<int>(axis(c.int_arg(1), c.in.at(0).ndim()));
  std::vector<int64_t> sizes;
  for (auto& o : c.out) sizes.push_back(o.shape.at(ax));
  std::vector<std::string> outs;
  for (auto& o : c.out) outs.push_back(o.name);
  c.node("Split", {c.in[0].name, c.ints(sizes)}, outs, {{"axis", static_cast<int64_t>(ax)}});
}

// ONNX Slice's (starts, ends, steps) for MLX's normalized start, stop and strides: a negative stride
// that runs past the front ends at INT64_MIN (ONNX reads -1 as "the last element").
void slice_params(const std::vector<int32_t>& start, const std::vector<int32_t>& stop,
                  const std::vector<int32_t>& strides, std::vector<int64_t>& s, std::vector<int64_t>& e,
                  std::vector<int64_t>& st) {
  for (size_t d = 0; d < start.size(); ++d) {
    s.push_back(start[d]);
    int64_t end = stop[d];
    if (strides[d] < 0 && end < 0) end = INT64_MIN;
    e.push_back(end);
    st.push_back(strides[d]);
  }
}

void slice(Context& c) {
  std::vector<int64_t> s, e, st, axes;
  slice_params(c.ints_arg(0), c.ints_arg(1), c.ints_arg(2), s, e, st);
  for (size_t d = 0; d < s.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  c.op_to(0, "Slice", {c.in[0].name, c.ints(s), c.ints(e), c.ints(axes), c.ints(st)});
}

// An int64 tensor of shape (window..., ndim) holding, for each element of a window of `shape` at
// `start` with `strides`, its index in the full array (ScatterND's indices).
array window_indices(const Shape& shape, const std::vector<int64_t>& start, const std::vector<int64_t>& strides) {
  const int nd = static_cast<int>(shape.size());
  size_t n = 1;
  for (auto d : shape) n *= static_cast<size_t>(d);
  std::vector<int64_t> v(n * nd);
  std::vector<int64_t> pos(nd, 0);
  for (size_t i = 0; i < n; ++i) {
    for (int d = 0; d < nd; ++d) v[i * nd + d] = start[d] + pos[d] * strides[d];
    for (int d = nd - 1; d >= 0; --d) {
      if (++pos[d] < shape[d]) break;
      pos[d] = 0;
    }
  }
  Shape out = shape;
  out.push_back(nd);
  return array(v.data(), out, int64);
}

void slice_update(Context& c) {
  const Tensor& src = c.in.at(0);
  const Tensor& upd = c.in.at(1);
  const auto& start = c.ints_arg(0);
  const auto& stop = c.ints_arg(1);
  const auto& strides = c.ints_arg(2);
  Shape window;
  std::vector<int64_t> s, st;
  for (int d = 0; d < src.ndim(); ++d) {
    const int64_t step = strides[d];
    const int64_t len = step > 0 ? (stop[d] - start[d] + step - 1) / step : (start[d] - stop[d] - step - 1) / -step;
    window.push_back(static_cast<int32_t>(std::max<int64_t>(len, 0)));
    s.push_back(start[d]);
    st.push_back(step);
  }
  size_t n = 1;
  for (auto d : window) n *= static_cast<size_t>(d);
  if (n == 0) {
    c.set_output(0, src.name);
    return;
  }
  std::string u = c.op("Expand", {upd.name, c.ints(dims(window))});
  c.op_to(0, "ScatterND", {src.name, c.constant(window_indices(window, s, st)), u});
}

void dynamic_slice(Context& c) {
  const Tensor& a = c.in.at(0);
  const auto& axes = c.ints_arg(0);
  const auto& size = c.ints_arg(1);
  std::string start = c.op("Reshape", {c.cast(c.in.at(1).name, int64), c.ints({-1})});
  std::vector<int64_t> ax, sz;
  std::vector<Dims> sizes;
  for (auto x : axes) {
    ax.push_back(axis(x, a.ndim()));
    sz.push_back(size.at(axis(x, a.ndim())));
    sizes.push_back(dim_of(c, a, static_cast<int>(ax.back())));
  }
  // MLX clamps the start so that the window fits.
  const Dims limit = dims_op(c, "Sub", cat_dims(c, sizes), fixed_dims(sz));
  start = c.op("Max", {c.op("Min", {start, value_of(c, limit)}), c.ints(std::vector<int64_t>(ax.size(), 0))});
  std::string end = c.op("Add", {start, c.ints(sz)});
  c.op_to(0, "Slice", {a.name, start, end, c.ints(ax)});
}

// The int64 positions (W..., nd) of a window of sizes `window` (nd of them) from 0, each element's index
// along every axis: a constant when the sizes are known, built with Range at run time otherwise.
std::string grid_indices(Context& c, const Dims& window, int nd) {
  if (window.is_known()) {
    Shape w(window.known.begin(), window.known.end());
    return c.constant(window_indices(w, std::vector<int64_t>(nd, 0), std::vector<int64_t>(nd, 1)));
  }
  const Dims full = cat_dims(c, {window, fixed_dims({1})});
  std::vector<std::string> cols;
  for (int d = 0; d < nd; ++d) {
    std::vector<int64_t> at(nd + 1, 1);
    at[d] = -1;
    std::string r = c.op("Range", {c.ints({0}, true), c.op("Squeeze", {c.op("Gather", {window.value, c.ints({d})},
                                                                           {{"axis", int64_t(0)}}), c.ints({0})}),
                                   c.ints({1}, true)});
    cols.push_back(c.op("Expand", {c.op("Reshape", {r, c.ints(at)}), value_of(c, full)}));
  }
  return cols.size() == 1 ? cols[0] : c.op("Concat", cols, {{"axis", int64_t(-1)}});
}

void dynamic_slice_update(Context& c) {
  const Tensor& src = c.in.at(0);
  const Tensor& upd = c.in.at(1);
  const auto& axes = c.ints_arg(0);
  const int nd = src.ndim();
  // The update's window (upd broadcast to src's rank), its indices from 0, then shifted by the start.
  const Dims window = cat_dims(c, {fixed_dims(std::vector<int64_t>(nd - std::min(nd, upd.ndim()), 1)), dims_of(c, upd)});
  std::string u = reshape_to(c, upd.name, window);
  std::string start = c.op("Reshape", {c.cast(c.in.at(2).name, int64), c.ints({-1})});
  std::vector<Dims> src_sizes, win_sizes;
  for (auto x : axes) {
    const int d = static_cast<int>(axis(x, nd));
    src_sizes.push_back(dim_of(c, src, d));
    win_sizes.push_back(window.is_known() ? fixed_dims({window.known[d]})
                                          : Dims{{}, c.op("Gather", {window.value, c.ints({d})}, {{"axis", int64_t(0)}})});
  }
  const Dims limit = dims_op(c, "Sub", cat_dims(c, src_sizes), cat_dims(c, win_sizes));
  start = c.op("Max", {c.op("Min", {start, value_of(c, limit)}), c.ints(std::vector<int64_t>(axes.size(), 0))});
  std::vector<int64_t> zeros(nd, 0);
  // offsets[d] = start[j] for d = axes[j], else 0: a ScatterElements into a zero vector.
  std::vector<int64_t> where;
  for (auto x : axes) where.push_back(axis(x, nd));
  std::string offsets = c.op("ScatterElements", {c.ints(zeros), c.ints(where), start}, {{"axis", 0}});
  std::string idx = c.op("Add", {grid_indices(c, window, nd), offsets});
  c.op_to(0, "ScatterND", {src.name, idx, u});
}

void pad(Context& c) {
  const Tensor& a = c.in.at(0);
  const auto& axes = c.ints_arg(0);
  const auto& lo = c.ints_arg(1);
  const auto& hi = c.ints_arg(2);
  std::vector<int64_t> pads(2 * a.ndim(), 0);
  for (size_t j = 0; j < axes.size(); ++j) {
    const int64_t d = axis(axes[j], a.ndim());
    pads[d] = lo.at(j);
    pads[a.ndim() + d] = hi.at(j);
  }
  std::string value = c.in.at(1).name;
  if (!c.in[1].shape.empty()) value = c.op("Reshape", {value, c.ints({}, false)});
  c.op_to(0, "Pad", {a.name, c.ints(pads), value}, {{"mode", "constant"}});
}

void as_strided(Context& c) {
  const Shape& shape = c.ints_arg(0);
  const auto& strides = c.arg<std::vector<int64_t>>(1);
  const auto offset = static_cast<int64_t>(c.arg<uint64_t>(2));
  size_t n = 1;
  for (auto d : shape) n *= static_cast<size_t>(d);
  std::vector<int64_t> v(n, offset);
  std::vector<int64_t> pos(shape.size(), 0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t d = 0; d < shape.size(); ++d) v[i] += pos[d] * strides[d];
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (++pos[d] < shape[d]) break;
      pos[d] = 0;
    }
  }
  std::string flat = c.op("Reshape", {c.in.at(0).name, c.ints({-1})});
  c.op_to(0, "Gather", {flat, c.constant(array(v.data(), shape, int64))}, {{"axis", 0}});
}

}  // namespace

void register_shape_onnx(LoweringTable& table) {
  table.add({
      {"Reshape",
       [](Context& c) {
         // Shapeless: the requested shape (its one -1 resolved by Reshape at run time).
         if (!c.shapeless()) return reshape_to_output(c);
         c.op_to(0, "Reshape", {c.in.at(0).name, c.ints(dims(c.ints_arg(0)))});
       }},
      {"Flatten",
       [](Context& c) {
         const Tensor& x = c.in.at(0);
         const int b = c.int_arg(0), e = c.int_arg(1);
         const Dims shape = cat_dims(c, {dims_of(c, x, 0, b), prod_dims(c, dims_of(c, x, b, e + 1)), dims_of(c, x, e + 1)});
         c.set_output(0, reshape_to(c, x.name, shape));
       }},
      {"Unflatten",
       [](Context& c) {
         const Tensor& x = c.in.at(0);
         const int ax = c.int_arg(0);
         const Shape& parts = c.ints_arg(1);
         const Dims shape = cat_dims(c, {dims_of(c, x, 0, ax), fixed_dims(dims(parts)), dims_of(c, x, ax + 1)});
         c.set_output(0, reshape_to(c, x.name, shape));
       }},
      {"ExpandDims",
       [](Context& c) {
         const auto& ax = c.ints_arg(0);
         c.op_to(0, "Unsqueeze", {c.in.at(0).name, c.ints(std::vector<int64_t>(ax.begin(), ax.end()))});
       }},
      {"Squeeze",
       [](Context& c) {
         const auto& ax = c.ints_arg(0);
         c.op_to(0, "Squeeze", {c.in.at(0).name, c.ints(std::vector<int64_t>(ax.begin(), ax.end()))});
       }},
      {"Transpose",
       [](Context& c) {
         const auto& p = c.ints_arg(0);
         c.op_to(0, "Transpose", {c.in.at(0).name}, {{"perm", std::vector<int64_t>(p.begin(), p.end())}});
       }},
      {"Broadcast", broadcast},
      {"BroadcastAxes", [](Context& c) { broadcast_with(c, static_cast<int>(c.ints_arg(0).size())); }},
      {"Contiguous", [](Context& c) { c.set_output(0, c.in.at(0).name); }},
      {"Concatenate", concatenate},
      {"Split", split},
      {"Slice", slice},
      {"SliceUpdate", slice_update},
      {"DynamicSlice", dynamic_slice},
      {"DynamicSliceUpdate", dynamic_slice_update},
      {"Pad", pad},
      {"AsStrided", as_strided},
      {"Full",
       [](Context& c) {
         // Its input is the fill value already broadcast to the output's shape (a shapeless trace
         // records it so): the recorded shape where it is fixed, the input's own otherwise.
         if (!c.shapeless()) return broadcast_with(c, 0);
         store(c, 0, c.in.at(0).name, c.in.at(0).dtype);
       }},
      {"Arange",
       [](Context& c) {
         // The values kiln's own arange computes, so that they are MLX's to the bit.
         array a = arange(c.arg<double>(0), c.arg<double>(1), c.arg<double>(2), c.out.at(0).dtype);
         c.set_output(0, c.constant(a));
       }},
  });
  // SliceUpdate and Arange read only their state (positions and values fixed by it, as MLX's replay
  // keeps them).
  table.polymorphic({"Reshape", "ExpandDims", "Squeeze", "Transpose", "Broadcast", "BroadcastAxes", "Contiguous",
                     "Concatenate", "Flatten", "Unflatten", "Full", "Arange", "SliceUpdate", "DynamicSlice",
                     "DynamicSliceUpdate"});
}

}  // namespace kiln::onnx_export
