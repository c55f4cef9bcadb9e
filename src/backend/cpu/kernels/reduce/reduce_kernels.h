// Internal declarations shared by the reduction family's CPU kernels (this folder): the kernels that
// register_cpu_reduce (reduce.cpp) adds, and the iteration plan of the strided reductions.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/primitive.h"
#include "primitives/reduce/reduce.h"

namespace kiln::reduce {

// CPU kernels (reduce.cpp, arg_reduce.cpp, softmax.cpp, scan.cpp).
void reduce_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out);
void arg_reduce_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out);
void softmax_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out);
void logsumexp_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out);
void scan_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out);

// Strides-aware iteration plan for reducing some axes of an array: the dimensions of size > 1, split into
// kept and reduced ones, each list merged where memory is contiguous. `kept` stays in the original axis
// order (so the row-major output follows it); `red` is ordered by decreasing stride.
struct Dim {
  int64_t n;
  int64_t stride;
};
struct ReducePlan {
  std::vector<Dim> kept;
  std::vector<Dim> red;
  int64_t out_size = 1;
  int64_t red_size = 1;
};
ReducePlan make_plan(const Shape& shape, const Strides& strides, const std::vector<int>& axes);

// Input offset of the row-major index `o` over the kept dims k[0..nk) (reduce.cpp, arg_reduce.cpp).
inline int64_t kept_offset(int64_t o, const Dim* k, int nk) {
  int64_t off = 0;
  for (int d = nk - 1; d >= 0; --d) {
    off += (o % k[d].n) * k[d].stride;
    o /= k[d].n;
  }
  return off;
}

// Block length for kernels that sweep an axis over a block of `inner` contiguous lanes, `outer` times:
// at most `max_chunk` (the block's accumulators stay in cache), at least 256 (long contiguous runs per row), and
// small enough that there are a few blocks per thread when `outer` alone cannot feed the threads.
int64_t column_chunk(int64_t inner, int64_t outer, int64_t max_chunk);

}  // namespace kiln::reduce
