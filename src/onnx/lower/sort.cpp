// Sorting rows (src/primitives/sort/): Sort / ArgSort as a full ascending TopK (ties keep the lower
// index first, as a stable sort does), Partition / ArgPartition as the same full sort (a sorted array is
// a valid partition), SearchSorted by counting.
#include "onnx/lower/common.h"

namespace kiln::onnx_export {

namespace {

// The dtype TopK is computed in (order-preserving and exact): half types in float32, small and
// unsigned integers and bool in int64.
Dtype sort_type(Dtype t) {
  if (is_half(t)) return float32;
  if (t == bool_ || t == int8 || t == int16 || t == uint8 || t == uint16 || t == uint32) return int64;
  return t;
}

void sort_like(Context& c, int axis_arg, bool indices) {
  no_complex(c);
  const Tensor& x = c.in.at(0);
  if (x.dtype == uint64) c.refuse("sorting uint64 (ONNX Runtime's TopK has no uint64 kernel, and int64 misorders it)");
  const int64_t ax = axis(c.int_arg(axis_arg), x.ndim());
  const Dtype t = sort_type(x.dtype);
  std::string v = x.dtype == t ? x.name : c.cast(x.name, t);
  const std::string vals = c.fresh(), idx = c.fresh();
  c.node("TopK", {v, value_of(c, dim_of(c, x, static_cast<int>(ax)))}, {vals, idx},
         {{"axis", ax}, {"largest", 0}, {"sorted", 1}});
  if (indices) {
    store(c, 0, idx, int64);
  } else {
    store(c, 0, vals, t);
  }
}

void search_sorted(Context& c) {
  no_complex(c);
  // The count of a's elements below v (left) or not above it (right), a sorted along its last axis.
  const bool right = c.bool_arg(0);
  const Tensor& a = c.in.at(0);
  const Tensor& v = c.in.at(1);
  if (a.ndim() != 1) c.refuse("SearchSorted over a batch of sorted rows");
  const Dtype t = sort_type(a.dtype);
  auto x = cast_all(c, {a, v}, t);
  std::string vv = c.op("Unsqueeze", {x[1], c.ints({-1})});
  std::string cmp = c.op(right ? "LessOrEqual" : "Less", {x[0], vv});
  std::string n = c.op("ReduceSum", {c.cast(cmp, int64), c.ints({-1})}, {{"keepdims", 0}});
  store(c, 0, n, int64);
}

}  // namespace

void register_sort_onnx(LoweringTable& table) {
  table.add({{"Sort", [](Context& c) { sort_like(c, 0, false); }},
             {"ArgSort", [](Context& c) { sort_like(c, 0, true); }},
             {"Partition", [](Context& c) { sort_like(c, 1, false); }},
             {"ArgPartition", [](Context& c) { sort_like(c, 1, true); }},
             {"SearchSorted", search_sorted}});
  table.polymorphic({"Sort", "ArgSort", "Partition", "ArgPartition", "SearchSorted"});
}

}  // namespace kiln::onnx_export
