// kiln ops: matrix products and related transforms. Names, signatures and defaults follow mlx/ops.h
// (MLX 0.30.1). The decompositions (qr, svd, inv, ...) are in kiln/linalg.h, namespace kiln::linalg.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/array.h"

namespace kiln {

// Matrix product with NumPy semantics: 1-D operands are promoted to matrices and the inserted dim is
// removed again; batch dims broadcast. Inputs must promote to an inexact type.
array matmul(const array& a, const array& b, StreamOrDevice s = {});

// alpha · (a @ b) + beta · c, with c broadcast to the product's shape.
array addmm(array c, array a, array b, const float& alpha = 1.f, const float& beta = 1.f, StreamOrDevice s = {});

// Matrix product with block masks (block_size 32 or 64): mask_out zeroes (bool) or scales (float)
// output tiles; mask_lhs / mask_rhs do the same to the operands' tiles before the product.
array block_masked_mm(array a, array b, int block_size, std::optional<array> mask_out = std::nullopt,
                      std::optional<array> mask_lhs = std::nullopt, std::optional<array> mask_rhs = std::nullopt,
                      StreamOrDevice s = {});

// out[i] = a[lhs_indices[i]] @ b[rhs_indices[i]], the indices addressing the flattened batch dims.
array gather_mm(array a, array b, std::optional<array> lhs_indices = std::nullopt,
                std::optional<array> rhs_indices = std::nullopt, bool sorted_indices = false, StreamOrDevice s = {});

// Walsh–Hadamard transform along the last axis, scaled by `scale` (default 1/sqrt(n)). The size must be
// m·2^k with m in {1, 12, 20, 28}.
array hadamard_transform(const array& a, std::optional<float> scale = std::nullopt, StreamOrDevice s = {});

array tensordot(const array& a, const array& b, const int axis = 2, StreamOrDevice s = {});
array tensordot(const array& a, const array& b, const std::vector<int>& axes_a, const std::vector<int>& axes_b,
                StreamOrDevice s = {});
array outer(const array& a, const array& b, StreamOrDevice s = {});
array inner(const array& a, const array& b, StreamOrDevice s = {});
array kron(const array& a, const array& b, StreamOrDevice s = {});

// The diagonal of the (axis1, axis2) matrices, offset above (> 0) or below (< 0) the main one, as a
// new last axis. diag: the diagonal of a matrix, or a matrix with a vector on its k-th diagonal.
array diagonal(const array& a, int offset = 0, int axis1 = 0, int axis2 = 1, StreamOrDevice s = {});
array diag(const array& a, int k = 0, StreamOrDevice s = {});
// Sum of the diagonal (as diagonal), in `dtype` (default: a's dtype; the sum widens small integers).
array trace(const array& a, int offset, int axis1, int axis2, Dtype dtype, StreamOrDevice s = {});
array trace(const array& a, int offset, int axis1, int axis2, StreamOrDevice s = {});
array trace(const array& a, StreamOrDevice s = {});

// Einstein summation, e.g. einsum("bij,bjk->bik", {a, b}); "..." broadcasts, implicit output (no "->")
// is the labels used once, sorted. Contractions run pairwise left to right through matmul.
array einsum(const std::string& subscripts, const std::vector<array>& operands, StreamOrDevice s = {});
// The contraction order einsum's subscripts get under MLX's greedy planner (pairs of positions into the
// shrinking operand list, the result appended at the end) and a summary of its scaling and FLOP counts.
std::pair<std::vector<std::vector<int>>, std::string> einsum_path(const std::string& subscripts,
                                                                  const std::vector<array>& operands);

}  // namespace kiln
