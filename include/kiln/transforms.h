// kiln: function transforms, with MLX's names (mlx/transforms.h). Automatic differentiation is in
// kiln/autodiff.h, batching in kiln/vmap.h; eval and async_eval are in kiln/array.h.
#pragma once

#include "kiln/autodiff.h"
#include "kiln/vmap.h"
