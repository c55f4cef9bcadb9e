// A mark on a QuantizedMatmul or GatherQMM node that makes its kernel read the operands as MLX's CPU
// backend before 0.31 did (every fp mode read as mxfp4). Which files get the mark is a release fact:
// format/compat/quirks.h decides; the kernels only read it.
#pragma once

#include "kiln/primitive.h"

namespace kiln::quirks {

// MLX before 0.31 computes QuantizedMatmul and GatherQMM of every fp mode (mxfp8, nvfp4) on the CPU
// with its mxfp4 reader: group 32, 4-bit E2M1 codes, E8M0 scales, each read from the start of the
// weight and scale matrices. Fixed in MLX 0.31.0.
bool fp_qmm_read_as_mxfp4(const Node& node);
void mark_fp_qmm_read_as_mxfp4(Node& node);

}  // namespace kiln::quirks
