// What the shape family's rows and their CPU kernels (backend/cpu/kernels/shape/) both read from a
// node's state: Pad's per-axis amounts (joining.cpp) and the checked windows of the slices (slicing.cpp).
#pragma once

#include <cstddef>
#include <vector>

#include "kiln/primitive.h"

namespace kiln::shape_detail {

// Per-dimension low and high padding from the (axes, low, high) state; axes may be negative.
void pad_amounts(const State& st, int nd, Shape& low, Shape& high);

// Every element of a `region`-shaped window starting at `start` with `strides` lies inside `shape`.
void check_region(const Shape& shape, const Shape& start, const Shape& strides, const Shape& region,
                  const char* api);

inline const Shape& shp(const State& st, size_t i) { return st.get<std::vector<int32_t>>(i); }

}  // namespace kiln::shape_detail
