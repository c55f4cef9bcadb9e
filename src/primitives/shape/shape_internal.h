// Private to the shape family: the registration of its sub-files (called by register_shape() in
// shape.cpp).
#pragma once

namespace kiln::primitives {
void register_shape_views();
void register_broadcast();
void register_strided();
void register_slicing();
void register_joining();
void register_creation();
}  // namespace kiln::primitives
