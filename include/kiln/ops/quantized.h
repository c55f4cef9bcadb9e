// kiln ops: quantization and quantized matrix products. Names and signatures follow mlx/ops.h.
//
// Modes (the `mode` string): "affine" (group sizes 32, 64, 128; bits 2, 3, 4, 5, 6, 8; a scale and a
// bias per group, in the weight's dtype), "mxfp4" (group 32, 4-bit E2M1 codes, E8M0 uint8 scales),
// "mxfp8" (group 32, 8-bit E4M3 codes, E8M0 scales) and "nvfp4" (group 16, E2M1 codes, E4M3 scales).
// Codes are packed little-endian into uint32 words along the last axis, lowest bits first.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/array.h"

namespace kiln {

enum class QuantizationMode { Affine = 0, Mxfp4 = 1, Mxfp8 = 2, Nvfp4 = 3 };

std::string quantization_mode_to_string(QuantizationMode mode);
// Throws "[<tag>] Invalid quantization mode '<mode>'." for unknown names.
QuantizationMode string_to_quantization_mode(const std::string& mode, std::string_view tag = "");

/** Quantize a matrix along its last axis: {w_q, scales, biases} (affine) or {w_q, scales}. */
std::vector<array> quantize(const array& w, std::optional<int> group_size = std::nullopt,
                            std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                            StreamOrDevice s = {});

/** E4M3 float8 codes (uint8) of a real floating array: round to nearest even, magnitudes of 448 and
    above (infinities and NaN included) saturate to 448, as MLX's to_fp8. */
array to_fp8(array x, StreamOrDevice s = {});
/** The values of E4M3 float8 codes (uint8) in a real floating dtype (code 0x7F / 0xFF is NaN). */
array from_fp8(array x, Dtype dtype, StreamOrDevice s = {});

/** Dequantize a matrix produced by quantize(). */
array dequantize(const array& w, const array& scales, const std::optional<array>& biases = std::nullopt,
                 std::optional<int> group_size = std::nullopt, std::optional<int> bits = std::nullopt,
                 const std::string& mode = "affine", std::optional<Dtype> dtype = std::nullopt,
                 StreamOrDevice s = {});

/** x @ w.T (transpose) or x @ w with w quantized. */
array quantized_matmul(array x, array w, array scales, std::optional<array> biases = std::nullopt,
                       bool transpose = true, std::optional<int> group_size = std::nullopt,
                       std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                       StreamOrDevice s = {});

/** Quantized matmul where lhs_indices pick x's batch matrices and rhs_indices w's. */
array gather_qmm(const array& x, const array& w, const array& scales, const std::optional<array>& biases = std::nullopt,
                 std::optional<array> lhs_indices = std::nullopt, std::optional<array> rhs_indices = std::nullopt,
                 bool transpose = true, std::optional<int> group_size = std::nullopt,
                 std::optional<int> bits = std::nullopt, const std::string& mode = "affine",
                 bool sorted_indices = false, StreamOrDevice s = {});

}  // namespace kiln
