// Shared by the quantized primitives' rows and ops (quantized.cpp, quantized_matmul.cpp): parameter
// validation and the sub-family definitions.
#pragma once

#include "kiln/ops/quantized.h"

namespace kiln::quant {

// Throws MLX's messages for unsupported (group_size, bits) pairs of `mode`; `api` tags the message.
void validate_params(const char* api, QuantizationMode mode, int group_size, int bits);
// The mode for a state code (0..3); throws "[api] Invalid quantization mode code c." otherwise.
QuantizationMode mode_from_code(const char* api, int code);

void define_quantize();
void define_qmm();

}  // namespace kiln::quant
