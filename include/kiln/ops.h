// kiln ops, with MLX's names and signatures. One header per family.
#pragma once

#include "kiln/ops/conv.h"
#include "kiln/ops/elementwise.h"
#include "kiln/ops/index.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/misc.h"
#include "kiln/ops/quantized.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
