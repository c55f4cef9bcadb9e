// Internal declarations shared by the reduction family's files (reduce*.cpp, softmax.cpp, scan.cpp).
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "kiln/primitive.h"

namespace kiln::reduce {

// State codes (format spec 3.2).
enum ReduceType : int32_t { And = 0, Or = 1, Sum = 2, Prod = 3, Min = 4, Max = 5 };
enum ArgReduceType : int32_t { ArgMin = 0, ArgMax = 1 };
enum ScanType : int32_t { ScanMax = 0, ScanMin = 1, ScanSum = 2, ScanProd = 3, ScanLogAddExp = 4 };

// Output type of Sum and Prod for elements of type T: small integers widen to (u)int32, bool to int32,
// other types keep theirs. The rule's one home: the kernels instantiate it, sum_dtype applies it to a Dtype.
template <typename T>
using SumOut = std::conditional_t<
    std::is_same_v<T, bool>, int32_t,
    std::conditional_t<std::is_integral_v<T>,
                       std::conditional_t<(sizeof(T) <= 4),
                                          std::conditional_t<std::is_signed_v<T>, int32_t, uint32_t>,
                                          T>,
                       T>>;
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

// Input offset of the row-major index `o` over the kept dims k[0..nk) (reduce_cpu.cpp, arg_reduce_cpu.cpp).
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
