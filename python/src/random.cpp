// PLACEHOLDER (development scaffold, replaced before merge): the random bindings.
#include "bindings.h"

namespace kiln::py {
void init_random(nb::module_& m) {}
}  // namespace kiln::py
