// The shape family: views (views.cpp, broadcast.cpp, strided.cpp), slicing (slicing.cpp), joining and
// padding (joining.cpp) and creation (creation.cpp), and the gather/scatter compositions of diagonal.cpp.
// This file registers their rows as one family; their CPU kernels are in backend/cpu/kernels/shape/.
#include "primitives/families.h"
#include "primitives/shape/shape_internal.h"

namespace kiln::primitives {

void register_shape() {
  register_shape_views();
  register_broadcast();
  register_strided();
  register_slicing();
  register_joining();
  register_creation();
}

}  // namespace kiln::primitives
