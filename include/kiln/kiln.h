// kiln: the umbrella header. Code written for mlx::core compiles with `namespace mx = kiln;`.
#pragma once

#include "kiln/array.h"
#include "kiln/dtype.h"
#include "kiln/ops.h"
#include "kiln/primitive.h"
