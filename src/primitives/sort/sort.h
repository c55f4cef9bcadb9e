// Internal declarations shared by the sort family's rows and op builders (src/primitives/sort/) and its
// CPU kernels (src/backend/cpu/kernels/sort/).
#pragma once

namespace kiln::sort_detail {

// A possibly negative axis of an array of `ndim` dimensions (already checked) to [0, ndim).
inline int norm_axis(int axis, int ndim) { return axis < 0 ? axis + ndim : axis; }

}  // namespace kiln::sort_detail
