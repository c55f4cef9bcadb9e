// Reproducing the numbers of one MLX CPU backend, bugs included, for files that ask for it
// (ImportOptions::writer_cpu_quirks). kiln's own kernels always compute the documented semantics; a
// quirk is a mark on a replayed node that makes its kernel read its operands the way that MLX did.
#pragma once

#include <string>
#include <vector>

#include "kiln/array.h"
#include "kiln/primitive.h"

namespace kiln::quirks {

// MLX before 0.31 computes QuantizedMatmul and GatherQMM of every fp mode (mxfp8, nvfp4) on the CPU
// with its mxfp4 reader: group 32, 4-bit E2M1 codes, E8M0 scales, each read from the start of the
// weight and scale matrices. Fixed in MLX 0.31.0.
bool fp_qmm_read_as_mxfp4(const Node& node);

// Marks the outputs of a replayed node written by MLX `version` (major, minor, patch) on a stream of
// `device_type` with the quirks that MLX's CPU backend had for it. Returns whether any applied.
bool mark(const std::vector<array>& outputs, int major, int minor, int patch, int device_type);

}  // namespace kiln::quirks
