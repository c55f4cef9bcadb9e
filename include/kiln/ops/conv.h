// kiln ops: convolutions (channels-last, as MLX). Names, signatures and defaults follow mlx/ops.h.
// Input (N, spatial..., C_in), weight (C_out, kernel spatial..., C_in / groups), output
// (N, out spatial..., C_out). Transposed convolutions are ordinary convolutions with input dilation,
// a flipped kernel and adjusted padding.
#pragma once

#include <tuple>
#include <utility>
#include <vector>

#include "kiln/array.h"

namespace kiln {

/** General convolution with a filter, with separate low and high padding. A single-entry (or empty)
 * vector applies to every spatial dimension. */
array conv_general(array input, array weight, std::vector<int> stride = {}, std::vector<int> padding_lo = {},
                   std::vector<int> padding_hi = {}, std::vector<int> kernel_dilation = {},
                   std::vector<int> input_dilation = {}, int groups = 1, bool flip = false, StreamOrDevice s = {});

/** General convolution with symmetric padding. */
inline array conv_general(const array& input, const array& weight, std::vector<int> stride = {},
                          std::vector<int> padding = {}, std::vector<int> kernel_dilation = {},
                          std::vector<int> input_dilation = {}, int groups = 1, bool flip = false,
                          StreamOrDevice s = {}) {
  return conv_general(input, weight, std::move(stride), padding, padding, std::move(kernel_dilation),
                      std::move(input_dilation), groups, flip, s);
}

array conv1d(const array& input, const array& weight, int stride = 1, int padding = 0, int dilation = 1,
             int groups = 1, StreamOrDevice s = {});

array conv2d(const array& input, const array& weight, const std::pair<int, int>& stride = {1, 1},
             const std::pair<int, int>& padding = {0, 0}, const std::pair<int, int>& dilation = {1, 1},
             int groups = 1, StreamOrDevice s = {});

array conv3d(const array& input, const array& weight, const std::tuple<int, int, int>& stride = {1, 1, 1},
             const std::tuple<int, int, int>& padding = {0, 0, 0},
             const std::tuple<int, int, int>& dilation = {1, 1, 1}, int groups = 1, StreamOrDevice s = {});

array conv_transpose1d(const array& input, const array& weight, int stride = 1, int padding = 0, int dilation = 1,
                       int output_padding = 0, int groups = 1, StreamOrDevice s = {});

array conv_transpose2d(const array& input, const array& weight, const std::pair<int, int>& stride = {1, 1},
                       const std::pair<int, int>& padding = {0, 0}, const std::pair<int, int>& dilation = {1, 1},
                       const std::pair<int, int>& output_padding = {0, 0}, int groups = 1, StreamOrDevice s = {});

array conv_transpose3d(const array& input, const array& weight,
                       const std::tuple<int, int, int>& stride = {1, 1, 1},
                       const std::tuple<int, int, int>& padding = {0, 0, 0},
                       const std::tuple<int, int, int>& dilation = {1, 1, 1},
                       const std::tuple<int, int, int>& output_padding = {0, 0, 0}, int groups = 1,
                       StreamOrDevice s = {});

}  // namespace kiln
