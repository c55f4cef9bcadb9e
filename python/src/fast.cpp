// PLACEHOLDER (development scaffold, replaced before merge): the fast bindings.
#include "bindings.h"

namespace kiln::py {
void init_fast(nb::module_& m) {}
}  // namespace kiln::py
