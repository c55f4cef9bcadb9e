// Products over a concatenation: before a graph runs, a Matmul whose operand is a Concatenate (seen
// through ExpandDims, Transpose and Broadcast views) becomes one product per concatenated part, so the
// concatenation is never written.
//
// The case it is for: a decode step exported with its KV cache passed in and out as plain arrays (the
// exported function is pure). Each layer concatenates the cache with the new token's keys and values
// (MLX's attention fallback then reads them through ExpandDims, Transpose and Broadcast), and so copies
// the whole cache every token: 4.2 MB for a 256-token cache of the benchmark's llama, 12% of its 4-bit
// decode step. Split, the products read the cache where it lies.
//
// Where the concatenated axis lands in the product decides the rewrite:
//   a free axis (A's rows, B's columns) or a batch axis: concatenate(A·B_i) along the output's axis
//     (for a batch axis the other operand is sliced along it too, unless it is 1 there);
//   the contraction axis: A_i·B_1 + A_2·B_2 + ..., the other operand sliced along its contraction
//     axis. The sum is taken in another order than one product's, so this is done for float32 only,
//     where the difference is float32 rounding (16-bit products would round each part).
// The views are replayed on each part (a Broadcast with the part's extent on that axis). The rewrite is
// made only when the Concatenate and each view are read by the chain alone (not an output of the
// evaluation, not held by the caller, not read elsewhere).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/primitive.h"

namespace kiln::detail {

// Rewrites the products found in `order` (a topological order; `outputs` are the arrays being evaluated)
// and inserts their parts' nodes into it. Returns the number of products rewritten. Does nothing when
// disabled (KILN_PATTERNS=0 or set_row_patterns_enabled(false), the switch of the graph rewrite passes).
size_t split_concat_products(std::vector<std::shared_ptr<Node>>& order, const std::vector<array>& outputs);

// Products split since the program started.
uint64_t concat_product_splits();

}  // namespace kiln::detail
