// kiln ops, with MLX's names and signatures. One header per family.
#pragma once

#include "kiln/ops/elementwise.h"
#include "kiln/ops/shape.h"
#if __has_include("kiln/ops/reduce.h")
#include "kiln/ops/reduce.h"
#endif
#if __has_include("kiln/ops/linalg.h")
#include "kiln/ops/linalg.h"
#endif
#if __has_include("kiln/ops/index.h")
#include "kiln/ops/index.h"
#endif
