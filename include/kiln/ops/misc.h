// kiln ops: graph utilities (MLX's depends).
#pragma once

#include <vector>

#include "kiln/array.h"

namespace kiln {

// Outputs equal to `inputs` that are computed only after `dependencies` (one Depends node).
std::vector<array> depends(const std::vector<array>& inputs, const std::vector<array>& dependencies);

}  // namespace kiln
