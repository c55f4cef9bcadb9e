// Indexing rows (src/primitives/index/): Gather and Scatter in MLX's conventions (index arrays on
// `axes` plus a window) as GatherND / ScatterND over a full index tensor, the axis forms as
// GatherElements / ScatterElements, MaskedScatter through a running count of the mask.
#include "kiln/ops.h"
#include "onnx/lower/common.h"

namespace kiln::onnx_export {

namespace {

std::vector<int64_t> dims(const Shape& s) { return std::vector<int64_t>(s.begin(), s.end()); }

// An index array as int64 with MLX's negative indices wrapped by the size of the axis.
std::string wrapped(Context& c, const Tensor& idx, int64_t size) {
  std::string i = idx.dtype == int64 ? idx.name : c.cast(idx.name, int64);
  if (is_unsigned_int(idx.dtype)) return i;
  std::string neg = c.op("Less", {i, c.scalar(0, int64)});
  return c.op("Where", {neg, c.op("Add", {i, c.scalar(static_cast<double>(size), int64)}), i});
}

// Indices (I..., W..., ndim) into `a`: index array j on axes[j] plus the window position, the window
// position alone on the other axes. `idx` are the index tensors (shape I), `window` the window shape.
std::string full_indices(Context& c, const Tensor& a, const std::vector<Tensor>& idx, const std::vector<int32_t>& axes,
                         const Shape& window) {
  const int nd = a.ndim();
  if (static_cast<int>(window.size()) != nd) {
    c.refuse("a window of rank " + std::to_string(window.size()) + " for an array of rank " + std::to_string(nd));
  }
  Shape ishape = idx.empty() ? Shape{} : idx[0].shape;
  std::vector<int64_t> icol = dims(ishape);
  icol.push_back(1);
  std::vector<std::string> cols;
  for (int d = 0; d < nd; ++d) {
    int j = -1;
    for (size_t k = 0; k < axes.size(); ++k) {
      if (axis(axes[k], nd) == d) j = static_cast<int>(k);
    }
    if (j < 0) {
      cols.push_back(c.op("Expand", {c.ints({0}), c.ints(icol)}));
    } else {
      std::string i = c.op("Expand", {wrapped(c, idx[j], a.shape[d]), c.ints(dims(ishape))});
      cols.push_back(c.op("Unsqueeze", {i, c.ints({-1})}));
    }
  }
  std::string base = cols.size() == 1 ? cols[0] : c.op("Concat", cols, {{"axis", -1}});
  std::vector<int64_t> bshape = dims(ishape);
  for (size_t k = 0; k < window.size(); ++k) bshape.push_back(1);
  bshape.push_back(nd);
  base = c.op("Reshape", {base, c.ints(bshape)});
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
  if (a.size() == 0) c.refuse("a Gather from an empty array");
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
  c.op_to(0, "GatherElements", {a.name, wrapped(c, c.in.at(1), a.shape[ax])}, {{"axis", ax}});
}

void scatter_axis(Context& c) {
  const Tensor& a = c.in.at(0);
  const int type = c.int_arg(0);
  const int64_t ax = axis(c.int_arg(1), a.ndim());
  const Dtype t = type == 0 ? compute_type(a.dtype) : a.dtype;
  auto x = cast_all(c, {a, c.in.at(2)}, t);
  std::string idx = wrapped(c, c.in.at(1), a.shape[ax]);
  std::string upd = c.op("Expand", {x[1], c.ints(dims(c.in[1].shape))});
  std::string r = c.op("ScatterElements", {x[0], idx, upd}, {{"axis", ax}, {"reduction", type == 0 ? "add" : "none"}});
  store(c, 0, r, t);
}

void masked_scatter(Context& c) {
  const Tensor& a = c.in.at(0);
  std::string mask = c.op("Expand", {c.in.at(1).name, c.ints(dims(a.shape))});
  std::string flat = c.op("Reshape", {mask, c.ints({-1})});
  std::string pos = c.op("Sub", {c.op("CumSum", {c.cast(flat, int64), c.ints({0}, true)}), c.scalar(1, int64)});
  pos = c.op("Max", {pos, c.scalar(0, int64)});
  std::string values = c.op("Reshape", {c.in.at(2).name, c.ints({-1})});
  if (c.in[2].size() == 0) {
    c.set_output(0, a.name);
    return;
  }
  std::string picked = c.op("Reshape", {c.op("Gather", {values, pos}, {{"axis", 0}}), c.ints(dims(a.shape))});
  c.op_to(0, "Where", {mask, picked, a.name});
}

}  // namespace

void register_index_onnx(LoweringTable& table) {
  table.add({{"Gather", gather},
             {"GatherAxis", gather_axis},
             {"Scatter", scatter},
             {"ScatterAxis", scatter_axis},
             {"MaskedScatter", masked_scatter}});
}

}  // namespace kiln::onnx_export
