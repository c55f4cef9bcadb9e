// CPU kernels of the sort family: Sort, ArgSort, Partition, ArgPartition (this file) and SearchSorted
// (search_sorted.cpp). Every row along the axis is sorted on its own (rows run in parallel) with a
// stable sort, or partitioned with nth_element. NaN sorts after every number, as MLX intends
// (MLX 0.30.1 leaves NaN order undefined for float16, bfloat16 and in complex argsort; kiln does not).
#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include "backend/cpu/loops.h"
#include "backend/cpu/ordering.h"
#include "backend/cpu/kernels/families.h"
#include "primitives/sort/sort.h"

namespace kiln {

namespace {

using sort_detail::norm_axis;

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

}  // namespace

namespace cpu {
void search_sorted_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out);  // search_sorted.cpp

void register_cpu_sort(detail::KernelTable& table) {
  table.add({{"SearchSorted", search_sorted_cpu}, {"Sort", sort_cpu}, {"ArgSort", argsort_cpu},
             {"Partition", partition_cpu}, {"ArgPartition", argpartition_cpu}});
}
}  // namespace cpu

}  // namespace kiln
