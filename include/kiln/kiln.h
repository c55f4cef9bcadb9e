// kiln: the umbrella header. Code written for mlx::core compiles with `namespace mx = kiln;`.
#pragma once

#include <future>  // as mlx/mlx.h, which reaches it through its scheduler

#include "kiln/array.h"
#include "kiln/compile.h"
#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/export.h"
#include "kiln/fast.h"
#include "kiln/fft.h"
#include "kiln/io.h"
#include "kiln/linalg.h"
#include "kiln/memory.h"
#include "kiln/onnx.h"
#include "kiln/ops.h"
#include "kiln/primitive.h"
#include "kiln/primitives.h"
#include "kiln/profile.h"
#include "kiln/random.h"
#include "kiln/transforms.h"
#include "kiln/utils.h"
