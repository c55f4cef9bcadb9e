// The shape family: views (shape_views.cpp), slicing (slicing.cpp), joining and padding (joining.cpp)
// and creation (creation.cpp). This file only registers them as one family.
#include "primitives/families.h"
#include "primitives/shape_internal.h"

namespace kiln::primitives {

void register_shape() {
  register_shape_views();
  register_slicing();
  register_joining();
  register_creation();
}

}  // namespace kiln::primitives
