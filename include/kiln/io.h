// kiln I/O: NumPy .npy files, with MLX's conventions (bfloat16 as '<V2', complex64 as '<c8', bool
// as '|b1'). Loading is eager and validates every header field; a malformed or truncated file throws
// std::runtime_error (std::invalid_argument for a valid header naming an unsupported dtype), with a
// message that starts with "[load]" and says what was expected and what was found.
#pragma once

#include <cstddef>
#include <istream>
#include <ostream>
#include <string>

#include "kiln/array.h"

namespace kiln {

// Write `a` (evaluated first) as a version 1.0 .npy file (2.0 when the header needs it), in logical
// row-major order whatever its strides. As MLX does, ".npy" is appended to `file` when missing.
void save(std::string file, array a);
void save(std::ostream& out, array a);

// Read a .npy file: versions 1.0, 2.0 and 3.0, little- or big-endian descriptors, C or Fortran order.
// The result is evaluated and row-contiguous.
array load(std::string file, StreamOrDevice s = {});
array load(std::istream& in, StreamOrDevice s = {});
// From .npy bytes held in memory.
array load_npy(const void* data, size_t nbytes);

}  // namespace kiln
