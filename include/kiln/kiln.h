// kiln: the umbrella header. Code written for mlx::core compiles with `namespace mx = kiln;`.
#pragma once

#include "kiln/array.h"
#include "kiln/dtype.h"
#include "kiln/ops.h"
#include "kiln/primitive.h"
// Family headers, present as their families land.
#if __has_include("kiln/linalg.h")
#include "kiln/linalg.h"
#endif
#if __has_include("kiln/fft.h")
#include "kiln/fft.h"
#endif
#if __has_include("kiln/fast.h")
#include "kiln/fast.h"
#endif
#if __has_include("kiln/random.h")
#include "kiln/random.h"
#endif
#if __has_include("kiln/io.h")
#include "kiln/io.h"
#endif
#if __has_include("kiln/export.h")
#include "kiln/export.h"
#endif
