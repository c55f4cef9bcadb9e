// PLACEHOLDER (development scaffold, replaced before merge): the array_methods bindings.
#include "bindings.h"

namespace kiln::py {
void init_array_methods(nb::class_<array>& cls) {}
}  // namespace kiln::py
