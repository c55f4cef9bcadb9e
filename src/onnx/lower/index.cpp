// Indexing rows (src/primitives/index/): Gather and Scatter in MLX's conventions (index arrays on
// `axes` plus a window) as GatherND / ScatterND over a full index tensor, the axis forms as
// GatherElements / ScatterElements, MaskedScatter through a running count of the mask.
#include "kiln/ops.h"
#include "onnx/lower/common.h"

namespace kiln::onnx_export {

namespace {

// An index array as int64 with MLX's negative indices wrapped by the size of axis `ax` of `a`.
std::string wrapped(Context& c, const Tensor& idx, const Tensor& a, int ax) {
  std::string i = idx.dtype == int64 ? idx.name : c.cast(idx.name, int64);
  if (is_unsigned_int(idx.dtype)) return i;
  std::string neg = c.op("Less", {i, c.scalar(0, int64)});
  return c.op("Where", {neg, c.op("Add", {i, scalar_of(c, dim_of(c, a, ax))}), i});
}

// Indices (I..., W..., ndim) into `a`: index array j on axes[j] plus the window position, the window
// position alone on the other axes. `idx` are the index tensors (shape I), `window` the window shape.
std::string full_indices(Context& c, const Tensor& a, const std::vector<Tensor>& idx, const std::vector<int32_t>& axes,
                         const Shape& window) {
  const int nd = a.ndim();
  if (static_cast<int>(window.size()) != nd) {
    c.refuse("a window of rank " + std::to_string(window.size()) + " for an array of rank " + std::to_string(nd));
  }
  const Dims ishape = idx.empty() ? fixed_dims({}) : dims_of(c, idx[0]);
  const std::string icol = value_of(c, cat_dims(c, {ishape, fixed_dims({1})}));
  std::vector<std::string> cols;
  for (int d = 0; d < nd; ++d) {
    int j = -1;
    for (size_t k = 0; k < axes.size(); ++k) {
      if (axis(axes[k], nd) == d) j = static_cast<int>(k);
    }
    if (j < 0) {
      cols.push_back(c.op("Expand", {c.ints({0}), icol}));
    } else {
      std::string i = c.op("Expand", {wrapped(c, idx[j], a, d), value_of(c, ishape)});
      cols.push_back(c.op("Unsqueeze", {i, c.ints({-1})}));
    }
  }
  std::string base = cols.size() == 1 ? cols[0] : c.op("Concat", cols, {{"axis", -1}});
  std::vector<int64_t> tail(window.size(), 1);
  tail.push_back(nd);
  base = reshape_to(c, base, cat_dims(c, {ishape, fixed_dims(tail)}));
  // The window's own positions (W..., ndim).
  size_t n = 1;
  for (auto w : window) n *= static_cast<size_t>(w);
  std::vector<int64_t> v(n * nd, 0), pos(window.size(), 0);
  for (size_t e = 0; e < n; ++e) {
    for (int d = 0; d < nd; ++d) v[e * nd + d] = pos[d];
    for (int d = static_cast<int>(window.size()) - 1; d >= 0; --d) {
      if (++pos[d] < window[d]) break;
      pos[d] = 0;
    }
  }
  Shape wshape = window;
  wshape.push_back(nd);
  return c.op("Add", {base, c.constant(array(v.data(), wshape, int64))});
}

void gather(Context& c) {
  const Tensor& a = c.in.at(0);
  const auto& axes = c.ints_arg(0);
  const Shape& sizes = c.ints_arg(1);
  std::vector<Tensor> idx(c.in.begin() + 1, c.in.end());
  if (!c.shapeless() && a.size() == 0) c.refuse("a Gather from an empty array");
  c.op_to(0, "GatherND", {a.name, full_indices(c, a, idx, axes, sizes)});
}

void scatter(Context& c) {
  const Tensor& a = c.in.at(0);
  const int type = c.int_arg(0);
  const auto& axes = c.ints_arg(1);
  std::vector<Tensor> idx(c.in.begin() + 1, c.in.end() - 1);
  const Tensor& upd = c.in.back();
  const size_t ni = idx.empty() ? 0 : idx[0].shape.size();
  Shape window(upd.shape.begin() + static_cast<long>(ni), upd.shape.end());
  static const char* red[] = {"max", "min", "add", "mul", "none"};
  if (type < 0 || type > 4) c.refuse("unknown scatter type " + std::to_string(type));
  if (type <= 1) c.need_opset(18, "ScatterND with max/min reduction");
  const Dtype t = type == 4 ? a.dtype : compute_type(a.dtype);
  auto x = cast_all(c, {a, upd}, t);
  std::string r = c.op("ScatterND", {x[0], full_indices(c, a, idx, axes, window), x[1]}, {{"reduction", red[type]}});
  store(c, 0, r, t);
}

void gather_axis(Context& c) {
  const Tensor& a = c.in.at(0);
  const int64_t ax = axis(c.int_arg(0), a.ndim());
  c.op_to(0, "GatherElements", {a.name, wrapped(c, c.in.at(1), a, static_cast<int>(ax))}, {{"axis", ax}});
}

void scatter_axis(Context& c) {
  const Tensor& a = c.in.at(0);
  const int type = c.int_arg(0);
  const int64_t ax = axis(c.int_arg(1), a.ndim());
  const Dtype t = type == 0 ? compute_type(a.dtype) : a.dtype;
  auto x = cast_all(c, {a, c.in.at(2)}, t);
  std::string idx = wrapped(c, c.in.at(1), a, static_cast<int>(ax));
  std::string upd = c.op("Expand", {x[1], value_of(c, dims_of(c, c.in[1]))});
  std::string r = c.op("ScatterElements", {x[0], idx, upd}, {{"axis", ax}, {"reduction", type == 0 ? "add" : "none"}});
  store(c, 0, r, t);
}

void masked_scatter(Context& c) {
  const Tensor& a = c.in.at(0);
  const std::string shape = value_of(c, dims_of(c, a));
  std::string mask = c.op("Expand", {c.in.at(1).name, shape});
  std::string flat = c.op("Reshape", {mask, c.ints({-1})});
  std::string pos = c.op("Sub", {c.op("CumSum", {c.cast(flat, int64), c.ints({0}, true)}), c.scalar(1, int64)});
  pos = c.op("Max", {pos, c.scalar(0, int64)});
  std::string values = c.op("Reshape", {c.in.at(2).name, c.ints({-1})});
  if (!c.shapeless() && c.in[2].size() == 0) {
    c.set_output(0, a.name);
    return;
  }
  if (c.shapeless()) {
    // The values' count is known at run time only: one padding element keeps the Gather in bounds
    // where the mask selects nothing and no values are given (the Where ignores what it picks there).
    values = c.op("Concat", {values, c.op("Expand", {c.scalar(0, a.dtype), c.ints({1})})}, {{"axis", int64_t(0)}});
  }
  std::string picked =
      c.op("Reshape", {c.op("Gather", {values, pos}, {{"axis", 0}}), shape}, {{"allowzero", int64_t(1)}});
  c.op_to(0, "Where", {mask, picked, a.name});
}

}  // namespace

void register_index_onnx(LoweringTable& table) {
  table.add({{"Gather", gather},
             {"GatherAxis", gather_axis},
             {"Scatter", scatter},
             {"ScatterAxis", scatter_axis},
             {"MaskedScatter", masked_scatter}});
  // Scatter has no shape rule for shapeless replay in MLX (the driver says so).
  table.polymorphic({"Gather", "GatherAxis", "ScatterAxis", "MaskedScatter"});
}

}  // namespace kiln::onnx_export
