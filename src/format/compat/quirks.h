// Reproducing the numbers of one MLX CPU backend, bugs included, for files that ask for it
// (ImportOptions::writer_cpu_quirks). kiln's own kernels always compute the documented semantics; a
// quirk is a mark on a replayed node that makes its kernel read its operands the way that MLX did
// (the marks themselves: primitives/quantized/quirks.h).
#pragma once

#include <string>
#include <vector>

#include "kiln/array.h"
#include "kiln/primitive.h"

namespace kiln::quirks {

// Marks the outputs of a replayed node written by MLX `version` (major, minor, patch) on a stream of
// `device_type` with the quirks that MLX's CPU backend had for it. Returns whether any applied.
bool mark(const std::vector<array>& outputs, int major, int minor, int patch, int device_type);

}  // namespace kiln::quirks
