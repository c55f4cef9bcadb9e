// Sort primitives (Sort, ArgSort, Partition, ArgPartition) and the ops sort, argsort, partition,
// argpartition and topk. Every row along the axis is sorted on its own (rows run in parallel) with a
// stable sort, or partitioned with nth_element. NaN sorts after every number, as MLX intends
// (MLX 0.30.1 leaves NaN order undefined for float16, bfloat16 and in complex argsort; kiln does not).
#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "backend/cpu/loops.h"
#include "backend/cpu/ordering.h"
#include "kiln/ops/index.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"

namespace kiln {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

// ---- comparison: NaN last; complex ordered by real then imaginary part (backend/cpu/ordering.h) ----
template <typename T>
struct NanLess {
  bool operator()(T a, T b) const { return cpu::nan_last_less(a, b); }
};

// (value, position) pairs for the arg variants: ties go to the lower position.
template <typename T>
struct PairLess {
  bool operator()(const std::pair<T, uint32_t>& x, const std::pair<T, uint32_t>& y) const {
    NanLess<T> lt;
    if (lt(x.first, y.first)) return true;
    if (lt(y.first, x.first)) return false;
    return x.second < y.second;
  }
};

// The geometry of rows along `axis` in a row-major array: pre * post rows of n elements; the row
// (p, q) starts at p * n * post + q and its elements are `post` apart.
struct Rows {
  int64_t pre = 1, n = 1, post = 1;
  Rows(const Shape& shape, int axis) {
    for (int d = 0; d < axis; ++d) pre *= shape[d];
    n = shape[axis];
    for (size_t d = axis + 1; d < shape.size(); ++d) post *= shape[d];
  }
};

int norm_axis(int axis, int ndim) { return axis < 0 ? axis + ndim : axis; }

// Calls fn(start, count) for blocks of up to kBlock adjacent rows: row b of a block starts at
// start + b and its elements are `post` apart. Rows along an inner axis are loaded a block at a
// time, so each read of the source touches `count` consecutive elements instead of one.
constexpr int64_t kBlock = 16;

template <typename Fn>
void for_row_blocks(const Rows& g, Fn&& fn) {
  const int64_t width = std::min<int64_t>(kBlock, g.post);
  const int64_t per_p = (g.post + width - 1) / width;
  const size_t units = static_cast<size_t>(g.pre * per_p);
  const size_t grain = std::max<int64_t>(1, static_cast<int64_t>(cpu::kGrainMedium) / std::max<int64_t>(1, g.n * width));
  cpu::parallel_for(units, grain, [&](size_t b, size_t e) {
    for (size_t u = b; u < e; ++u) {
      const int64_t p = static_cast<int64_t>(u) / per_p;
      const int64_t q0 = (static_cast<int64_t>(u) % per_p) * width;
      fn(p * g.n * g.post + q0, std::min(width, g.post - q0));
    }
  });
}

// Sort (partial = false) or partition at kth of every row of the contiguous `data`, in place.
template <typename T>
void sort_rows(T* data, const Rows& g, bool partial, int64_t kth) {
  auto work = [&](T* row) {
    if (partial) std::nth_element(row, row + kth, row + g.n, NanLess<T>{});
    else std::stable_sort(row, row + g.n, NanLess<T>{});
  };
  for_row_blocks(g, [&](int64_t s0, int64_t cnt) {
    if (g.post == 1) return work(data + s0);
    // unique_ptr rather than vector: vector<bool> has no contiguous storage.
    std::unique_ptr<T[]> buf(new T[cnt * g.n]);
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t b = 0; b < cnt; ++b) buf[b * g.n + j] = data[s0 + j * g.post + b];
    for (int64_t b = 0; b < cnt; ++b) work(buf.get() + b * g.n);
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t b = 0; b < cnt; ++b) data[s0 + j * g.post + b] = buf[b * g.n + j];
  });
}

void sort_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  array& o = out[0];
  cpu::copy_to_contiguous(in[0], o);
  if (o.size() == 0) return;
  const Rows g(o.shape(), norm_axis(node.state.i(0), static_cast<int>(o.ndim())));
  detail::dispatch_all(o.dtype(), [&](auto tag) { sort_rows(o.data<decltype(tag)>(), g, false, 0); });
}

void partition_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  array& o = out[0];
  cpu::copy_to_contiguous(in[0], o);
  if (o.size() == 0) return;
  const Rows g(o.shape(), norm_axis(node.state.i(1), static_cast<int>(o.ndim())));
  const int64_t kth = node.state.i(0) < 0 ? node.state.i(0) + g.n : node.state.i(0);
  detail::dispatch_all(o.dtype(), [&](auto tag) { sort_rows(o.data<decltype(tag)>(), g, true, kth); });
}

// ArgSort (full) and ArgPartition: sort (value, position) pairs of each row.
void arg_rows(const array& input, array& o, int axis, int64_t kth, bool full) {
  o.alloc();
  if (o.size() == 0) return;
  const array a = cpu::contiguous_copy(input);
  const Rows g(a.shape(), axis);
  if (kth < 0) kth += g.n;
  uint32_t* dst = o.data<uint32_t>();
  detail::dispatch_all(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using P = std::pair<T, uint32_t>;
    const T* src = a.data<T>();
    for_row_blocks(g, [&](int64_t s0, int64_t cnt) {
      std::vector<P> buf(static_cast<size_t>(cnt * g.n));
      for (int64_t j = 0; j < g.n; ++j)
        for (int64_t b = 0; b < cnt; ++b) buf[b * g.n + j] = {src[s0 + j * g.post + b], static_cast<uint32_t>(j)};
      for (int64_t b = 0; b < cnt; ++b) {
        auto first = buf.begin() + b * g.n, last = first + g.n;
        if (full) std::stable_sort(first, last, PairLess<T>{});
        else std::nth_element(first, first + kth, last, PairLess<T>{});
      }
      for (int64_t j = 0; j < g.n; ++j)
        for (int64_t b = 0; b < cnt; ++b) dst[s0 + j * g.post + b] = buf[b * g.n + j].second;
    });
  });
}

void argsort_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  arg_rows(in[0], out[0], norm_axis(node.state.i(0), static_cast<int>(in[0].ndim())), 0, true);
}

void argpartition_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  arg_rows(in[0], out[0], norm_axis(node.state.i(1), static_cast<int>(in[0].ndim())), node.state.i(0), false);
}

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
  registry::define(detail::row("Sort", 1, {{"axis", FieldType::Int}}, sort_infer, sort_cpu));
  registry::define(detail::row("ArgSort", 1, {{"axis", FieldType::Int}}, argsort_infer, argsort_cpu));
  registry::define(detail::row("Partition", 1, {{"kth", FieldType::Int}, {"axis", FieldType::Int}},
                               partition_infer, partition_cpu));
  registry::define(detail::row("ArgPartition", 1, {{"kth", FieldType::Int}, {"axis", FieldType::Int}},
                               argpartition_infer, argpartition_cpu));
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
