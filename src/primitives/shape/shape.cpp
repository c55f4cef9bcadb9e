// The shape family: views (shape_views.cpp, broadcast.cpp, strided.cpp), slicing (slicing.cpp),
// joining and padding (joining.cpp) and creation (creation.cpp). This file registers them as one family.
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
