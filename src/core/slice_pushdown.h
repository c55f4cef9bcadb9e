// Slices moved ahead of row-wise work: before a graph runs, a Slice of an array that only the Slice reads,
// computed by an operation that works row by row along the sliced axes, becomes that operation on sliced
// inputs, and the move repeats up the chain. Only the rows that are kept are computed.
//
// The case it is for: a prompt's prefill that returns the logits of its last position (what generation
// needs: mlx-lm's `model.lm_head(h[:, -1:, :])`, or `model(x)[:, -1, :]`). The last layer's final norm,
// residual sums and MLP (three products of the hidden size by the intermediate size) run for every position
// of the prompt although one is read. Moved up, the slice takes the MLP, the attention's output product
// and, through the attention's softmax and RoPE, its query row and query product down to one row: ~11%
// of the 4-bit llama prefill's arithmetic. It stops at what every position needs (the keys and values,
// the norm they read). llama.cpp skips the rows after the last layer's attention.
//
// The operations a slice moves through, and which inputs it slices:
//   element-wise rows (kElementwise, one output): every input along the sliced axes where it has the
//     output's extent (an input broadcast along an axis, extent 1 or absent, is left whole there);
//   RMSNorm and LayerNorm, when the last axis is not sliced: the normalized input;
//   Matmul, when its last axis is not sliced: A along its rows (second to last); along a batch axis,
//     each operand that has the output's extent there;
//   QuantizedMatmul, when the last axis is not sliced and x has the output's rank: x;
//   Flatten and Unflatten (how a product of a 3-D by a 2-D array folds its rows, in MLX and kiln), when
//     the kept part of the merged axes is one range of the merged axis (the cut is on the only merged
//     axis longer than 1, or on the first axis after merged axes of extent 1 with whole axes after it);
//   Transpose (each cut axis where the permutation took it from) and Reshape (when the cut axes and every
//     axis before them keep their extents);
//   Softmax, when the last axis is not sliced;
//   RoPE, when the rotated (last) axis is not sliced: positions run along axis -2 from its offset input, so
//     a cut there (step 1) adds its start to the offset; a per-batch offset is sliced with the batch axis.
// Equal slices of one array made by the pass are one node, so an array read by several moved slices (the
// residual stream, a gate read by its sigmoid and its product) is still read once and the move goes on.
// The producer must be read by the Slice alone: not an output of the evaluation, not held by the caller,
// not read elsewhere. Element-wise ops and norms give the same bits on the kept rows; a product over fewer
// rows may run another kernel (the skinny one instead of the blocked one), whose sums are ordered
// differently: the values agree within float32 rounding, as between MLX's own kernels.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/primitive.h"

namespace kiln::detail {

// Moves the slices found in `order` (a topological order; `outputs` are the arrays being evaluated) and
// inserts the new slices into it, dropping the producers they replace. Returns the number of moves. Does
// nothing when the graph rewrite passes are off (KILN_PATTERNS=0 or set_row_patterns_enabled(false)).
size_t push_slices_up(std::vector<std::shared_ptr<Node>>& order, const std::vector<array>& outputs);

// Moves made since the program started.
uint64_t slice_pushdowns();

}  // namespace kiln::detail
