// Internal declarations shared by the reduction family's files (reduce*.cpp, softmax.cpp, scan.cpp).
#pragma once

#include <vector>

#include "kiln/primitive.h"

namespace kiln::reduce {

// State codes (format spec 3.2).
enum ReduceType : int32_t { And = 0, Or = 1, Sum = 2, Prod = 3, Min = 4, Max = 5 };
enum ArgReduceType : int32_t { ArgMin = 0, ArgMax = 1 };
enum ScanType : int32_t { ScanMax = 0, ScanMin = 1, ScanSum = 2, ScanProd = 3, ScanLogAddExp = 4 };

// Output dtype of Sum and Prod: small integers widen to (u)int32, bool to int32.
Dtype sum_dtype(Dtype t);

// CPU kernels (reduce_cpu.cpp, arg_reduce_cpu.cpp, softmax.cpp).
void reduce_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out);
void arg_reduce_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out);
void softmax_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out);
void logsumexp_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out);

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

// Block length for kernels that sweep an axis over a block of `inner` contiguous lanes, `outer` times:
// at most `max_chunk` (the block's accumulators stay in cache), at least 256 (long contiguous runs per row), and
// small enough that there are a few blocks per thread when `outer` alone cannot feed the threads.
int64_t column_chunk(int64_t inner, int64_t outer, int64_t max_chunk);

}  // namespace kiln::reduce
