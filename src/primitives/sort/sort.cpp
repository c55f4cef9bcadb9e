// Sort primitives' rows (Sort, ArgSort, Partition, ArgPartition; SearchSorted from search_sorted.cpp) and
// the ops sort, argsort, partition, argpartition and topk. The CPU kernels are in
// src/backend/cpu/kernels/sort/.
#include "primitives/sort/sort.h"

#include "kiln/ops/index.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"

namespace kiln {

namespace {

using sort_detail::norm_axis;

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

// ---- output rules (validate files: the axis may be negative for Sort/ArgSort at 0.30.1) ----
int check_axis(int axis, const ArraySpec& a, const char* api) {
  return detail::check_axis(axis, static_cast<int>(a.shape.size()), api, "Received invalid axis", "for array with");
}

std::vector<ArraySpec> sort_infer(const State& st, const std::vector<ArraySpec>& in) {
  check_axis(st.i(0), in[0], "sort");
  return {in[0]};
}
std::vector<ArraySpec> argsort_infer(const State& st, const std::vector<ArraySpec>& in) {
  check_axis(st.i(0), in[0], "argsort");
  return {{in[0].shape, uint32}};
}
void check_kth(int kth, int axis, const ArraySpec& a, const char* api) {
  const int n = a.shape[axis];
  if (n > 0 && (kth < -n || kth >= n)) {
    fail(std::string("[") + api + "] Received invalid kth " + std::to_string(kth) + " along axis " +
         std::to_string(axis) + " for array with shape: " + detail::shape_str(a.shape));
  }
}
std::vector<ArraySpec> partition_infer(const State& st, const std::vector<ArraySpec>& in) {
  check_kth(st.i(0), check_axis(st.i(1), in[0], "partition"), in[0], "partition");
  return {in[0]};
}
std::vector<ArraySpec> argpartition_infer(const State& st, const std::vector<ArraySpec>& in) {
  check_kth(st.i(0), check_axis(st.i(1), in[0], "argpartition"), in[0], "argpartition");
  return {{in[0].shape, uint32}};
}

}  // namespace

namespace primitives {
void register_search_sorted();  // search_sorted.cpp

void register_sort() {
  register_search_sorted();
  registry::define(detail::row("Sort", 1, {{"axis", FieldType::Int}}, sort_infer));
  registry::define(detail::row("ArgSort", 1, {{"axis", FieldType::Int}}, argsort_infer));
  registry::define(detail::row("Partition", 1, {{"kth", FieldType::Int}, {"axis", FieldType::Int}},
                               partition_infer));
  registry::define(detail::row("ArgPartition", 1, {{"kth", FieldType::Int}, {"axis", FieldType::Int}},
                               argpartition_infer));
}
}  // namespace primitives

// ---------------------------------------------------------------------------------------------
// Ops

namespace {

void check_op_axis(const array& a, int axis, const char* api) {
  const int nd = static_cast<int>(a.ndim());
  if (axis + nd < 0 || axis >= nd) {
    fail(std::string("[") + api + "] Received invalid axis " + std::to_string(axis) + " for array with " +
         std::to_string(nd) + " dimensions.");
  }
}

array flat(const array& a, StreamOrDevice s) { return reshape(a, {static_cast<int32_t>(a.size())}, s); }

// Partition and ArgPartition record the normalized kth and axis.
array partition_op(const array& a, int kth, int axis, bool arg, StreamOrDevice s) {
  const char* api = arg ? "argpartition" : "partition";
  check_op_axis(a, axis, api);
  const int ax = norm_axis(axis, static_cast<int>(a.ndim()));
  const int n = a.shape()[ax];
  const int k = kth < 0 ? kth + n : kth;
  if (k < 0 || k >= n) {
    // MLX's message (partition has no space before "along").
    fail(std::string("[") + api + "] Received invalid kth " + std::to_string(kth) + (arg ? " along" : "along") +
         " axis " + std::to_string(axis) + " for array with shape: " + detail::shape_str(a.shape()));
  }
  static const PrimitiveDef& dp = detail::def("Partition");
  static const PrimitiveDef& da = detail::def("ArgPartition");
  return make_array(arg ? da : dp, State{int32_t(k), int32_t(ax)}, {a}, {{a.shape(), arg ? uint32 : a.dtype()}},
                    to_stream(s));
}

}  // namespace

array sort(const array& a, StreamOrDevice s) { return sort(flat(a, s), 0, s); }

array sort(const array& a, int axis, StreamOrDevice s) {
  check_op_axis(a, axis, "sort");
  static const PrimitiveDef& d = detail::def("Sort");
  return make_array(d, State{int32_t(axis)}, {a}, {{a.shape(), a.dtype()}}, to_stream(s));
}

array argsort(const array& a, StreamOrDevice s) { return argsort(flat(a, s), 0, s); }

array argsort(const array& a, int axis, StreamOrDevice s) {
  check_op_axis(a, axis, "argsort");
  static const PrimitiveDef& d = detail::def("ArgSort");
  return make_array(d, State{int32_t(axis)}, {a}, {{a.shape(), uint32}}, to_stream(s));
}

array partition(const array& a, int kth, StreamOrDevice s) { return partition(flat(a, s), kth, 0, s); }
array partition(const array& a, int kth, int axis, StreamOrDevice s) { return partition_op(a, kth, axis, false, s); }
array argpartition(const array& a, int kth, StreamOrDevice s) { return argpartition(flat(a, s), kth, 0, s); }
array argpartition(const array& a, int kth, int axis, StreamOrDevice s) { return partition_op(a, kth, axis, true, s); }

array topk(const array& a, int k, StreamOrDevice s) { return topk(flat(a, s), k, 0, s); }

array topk(const array& a, int k, int axis, StreamOrDevice s) {
  const int nd = static_cast<int>(a.ndim());
  const int ax = norm_axis(axis, nd);
  if (ax < 0 || ax >= nd) {
    fail("[topk] Received invalid axis " + std::to_string(axis) + " for array with " + std::to_string(nd) +
         " dimensions.");
  }
  if (k < 0 || k > a.shape()[ax]) {
    fail("[topk] Received invalid k=" + std::to_string(k) + " along axis " + std::to_string(axis) +
         " for array with shape: " + detail::shape_str(a.shape()));
  }
  if (k == a.shape()[ax]) return a;
  array p = partition(a, -k, ax, s);
  Shape starts(a.ndim(), 0);
  starts[ax] = a.shape()[ax] - k;
  return slice(p, starts, a.shape(), s);
}

}  // namespace kiln
