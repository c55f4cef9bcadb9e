// kiln ops, with MLX's names and signatures.
#pragma once

#include "kiln/ops/elementwise.h"
#include "kiln/ops/shape.h"
