// Row patterns: before a graph runs, the decomposed forms of RMSNorm, LayerNorm and Softmax that MLX
// writes on the CPU (and that kiln's own ops build) are replaced by one node of the fused primitive
// (RMSNorm, LayerNorm, Softmax), so each runs as one pass over its rows instead of 10-20 element-wise
// and reduction nodes with full-size intermediates.
//
// Recognized (operands of Add/Multiply in either order, every Broadcast optional):
//   RMSNorm:   x · rsqrt(mean(x²) + eps) [· w]          also x / sqrt(...)
//   LayerNorm: (x - mean(x)) · rsqrt(mean((x - mean(x))²) + eps) [· w] [+ b]
//   Softmax:   exp(x - max(x)) / sum(exp(x - max(x)))
//   RoPE:      MLX's fallback of fast.rope (not traditional) on 4-D x: concatenate([x1·cos − x2·sin,
//              x1·sin + x2·cos (, x[..., dims:])], -1) with x1, x2 the halves of x[..., :dims] and
//              theta = expand_dims((arange(T) + offset) · scale, 1) · exp(arange(0, -dims/2, -1) · c)
//              (row_patterns.cpp tells the details); base = exp(c · dims/2) as the float that gives c again
// with mean written as sum · (1/n) or sum / n over the last axis (kept as a size-1 axis), x², as Square
// or x · x, eps and 1/n constants, w and b scalars or vectors of the last axis's size with x's dtype.
// Only float32 graphs are rewritten (the decomposed 16-bit forms round every intermediate; the fused
// kernels do not, so they would not reproduce them).
//
// A pattern is rewritten only when none of its intermediates is needed elsewhere: each is referenced only
// by nodes of the same pattern (not by other nodes, not an output of the evaluation, not held by the
// caller). The last node of the pattern keeps its outputs (so arrays that refer to it see the result);
// it becomes the fused node, and the other nodes leave the order.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/primitive.h"

namespace kiln::detail {

// Rewrites the patterns found in `order` (a topological order of the nodes to run; `outputs` are the
// arrays being evaluated) and removes the nodes they no longer need. Returns the number rewritten.
// Does nothing when disabled (KILN_PATTERNS=0, or set_row_patterns_enabled(false)).
size_t rewrite_row_patterns(std::vector<std::shared_ptr<Node>>& order, const std::vector<array>& outputs);

// Enables or disables the pass for this process (tests); the default comes from KILN_PATTERNS.
void set_row_patterns_enabled(bool on);
bool row_patterns_enabled();

// Patterns rewritten since the program started, by kind.
struct RowPatternCounts {
  uint64_t rms_norm = 0, layer_norm = 0, softmax = 0, rope = 0;
};
RowPatternCounts row_pattern_counts();

}  // namespace kiln::detail
