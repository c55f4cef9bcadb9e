// Shared by the linalg rows and op builders (matmul.cpp, linalg_mm.cpp), and with the CPU Hadamard kernel
// (backend/cpu/kernels/linalg/linalg_mm.cpp): the checks of matrix-product operands and the split of a
// Hadamard size.
#pragma once

#include <string>
#include <utility>

#include "kiln/array.h"
#include "kiln/primitive.h"

namespace kiln::linalg_detail {

// The checks every product of (..., M, K) and (..., K, N) starts with (matmul.cpp, linalg_mm.cpp): both
// operands have at least 2 dims and the inner dims agree; MLX's messages behind `api`.
void check_product_dims(const char* api, const ArraySpec& a, const ArraySpec& b);
// "[api] Last dimension of first input with shape a must match second to last dimension of second ...".
std::string product_dims_message(const char* api, const Shape& a, const Shape& b);
// The start of the product ops (matmul, block_masked_mm, gather_mm, ...): neither operand is 0-D, a 1-D a
// becomes a row and a 1-D b a column, and the inner dims agree; MLX's messages behind `api`.
void expand_product_operands(const char* api, array& a, array& b, StreamOrDevice s);
// Squeezes from a product's output the dims expand_product_operands inserted (a_nd, b_nd: the ranks before).
array squeeze_inserted(array out, int a_nd, int b_nd, StreamOrDevice s);

// n = m · 2^k with m in {1, 12, 20, 28}; returns {2^k, m}.
std::pair<int, int> split_hadamard_size(int n);

}  // namespace kiln::linalg_detail
