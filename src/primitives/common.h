// Helpers shared by the op builders of every family.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "kiln/array.h"
#include "kiln/primitive.h"

namespace kiln::detail {

// Axis in [-ndim, ndim) to [0, ndim); throws "[api] Axis a is out of bounds for array with n dimensions."
int normalize_axis(int axis, int ndim, const char* api);
// Sorted, deduplicated normalized axes; throws on duplicates.
std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* api);
// NumPy broadcasting; throws "[broadcast_shapes] Shapes (a) and (b) cannot be broadcast."
Shape broadcast_shapes(const Shape& a, const Shape& b);
std::string shape_str(const Shape& s);
// The primitive row named `name` (cached by the caller in a static).
const PrimitiveDef& def(const char* name);

}  // namespace kiln::detail
