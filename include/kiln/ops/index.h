// kiln ops: indexing (take, gather, scatter, masked scatter) and sorting (sort, argsort, partition,
// topk). Names and signatures follow mlx/ops.h.
//
// Index conventions (as MLX): any integer index dtype; negative indices count from the end; index
// arrays broadcast against each other. Out-of-range indices, which MLX leaves undefined (it reads or
// writes outside the buffer), are clamped into range by gathers and dropped by scatters in kiln.
#pragma once

#include <vector>

#include "kiln/array.h"

namespace kiln {

// ---- gather and take ----
array gather(const array& a, const std::vector<array>& indices, const std::vector<int>& axes,
             const Shape& slice_sizes, StreamOrDevice s = {});
inline array gather(const array& a, const array& indices, int axis, const Shape& slice_sizes,
                    StreamOrDevice s = {}) {
  return gather(a, {indices}, std::vector<int>{axis}, slice_sizes, s);
}

// Slices of `a` at `indices` along `axis`; the output has indices' dims in place of `axis`.
array take(const array& a, const array& indices, int axis, StreamOrDevice s = {});
array take(const array& a, int index, int axis, StreamOrDevice s = {});
// Entries of the flattened `a`.
array take(const array& a, const array& indices, StreamOrDevice s = {});
array take(const array& a, int index, StreamOrDevice s = {});

array take_along_axis(const array& a, const array& indices, int axis, StreamOrDevice s = {});
array put_along_axis(const array& a, const array& indices, const array& values, int axis, StreamOrDevice s = {});
array scatter_add_axis(const array& a, const array& indices, const array& values, int axis,
                       StreamOrDevice s = {});

// ---- scatter: updates have shape idx_shape + a window of rank(a) dims ----
array scatter(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes,
              StreamOrDevice s = {});
inline array scatter(const array& a, const array& indices, const array& updates, int axis, StreamOrDevice s = {}) {
  return scatter(a, {indices}, updates, std::vector<int>{axis}, s);
}
array scatter_add(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s = {});
inline array scatter_add(const array& a, const array& indices, const array& updates, int axis,
                         StreamOrDevice s = {}) {
  return scatter_add(a, {indices}, updates, std::vector<int>{axis}, s);
}
array scatter_prod(const array& a, const std::vector<array>& indices, const array& updates,
                   const std::vector<int>& axes, StreamOrDevice s = {});
inline array scatter_prod(const array& a, const array& indices, const array& updates, int axis,
                          StreamOrDevice s = {}) {
  return scatter_prod(a, {indices}, updates, std::vector<int>{axis}, s);
}
array scatter_max(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s = {});
inline array scatter_max(const array& a, const array& indices, const array& updates, int axis,
                         StreamOrDevice s = {}) {
  return scatter_max(a, {indices}, updates, std::vector<int>{axis}, s);
}
array scatter_min(const array& a, const std::vector<array>& indices, const array& updates,
                  const std::vector<int>& axes, StreamOrDevice s = {});
inline array scatter_min(const array& a, const array& indices, const array& updates, int axis,
                         StreamOrDevice s = {}) {
  return scatter_min(a, {indices}, updates, std::vector<int>{axis}, s);
}

// Writes the values of `src`, in order, where the boolean `mask` (a prefix of a's shape) is true.
array masked_scatter(const array& a, const array& mask, const array& src, StreamOrDevice s = {});

// ---- sorting (stable; NaN sorts last) ----
array sort(const array& a, StreamOrDevice s = {});
array sort(const array& a, int axis, StreamOrDevice s = {});
array argsort(const array& a, StreamOrDevice s = {});
array argsort(const array& a, int axis, StreamOrDevice s = {});
array partition(const array& a, int kth, StreamOrDevice s = {});
array partition(const array& a, int kth, int axis, StreamOrDevice s = {});
array argpartition(const array& a, int kth, StreamOrDevice s = {});
array argpartition(const array& a, int kth, int axis, StreamOrDevice s = {});
// Indices (uint32, values' shape) where `values` would go in the sorted 1-D `sorted_sequence`: the first
// position not less than the value ("left") or greater than it ("right"). MLX 0.32.1's op; its
// SearchSorted node can be written for MLX 0.32.1 and later only.
array searchsorted(const array& sorted_sequence, const array& values, const std::string& side = "left",
                   StreamOrDevice s = {});
array topk(const array& a, int k, StreamOrDevice s = {});
array topk(const array& a, int k, int axis, StreamOrDevice s = {});

}  // namespace kiln
