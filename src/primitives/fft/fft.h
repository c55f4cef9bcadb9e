// Internal declarations shared by the FFT row and ops (src/primitives/fft/fft.cpp) and its CPU kernel
// (src/backend/cpu/kernels/fft/fft.cpp): the state's field positions and the validation of a node.
#pragma once

#include <cstddef>

#include "kiln/primitive.h"

namespace kiln::fft_detail {

enum : size_t { kAxes, kInverse, kReal };

// Throws std::invalid_argument "[FFT] ..." when the state, the input and the output do not fit together.
void check_fft(const State& st, const ArraySpec& in, const ArraySpec& out);

}  // namespace kiln::fft_detail
