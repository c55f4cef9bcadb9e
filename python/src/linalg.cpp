// PLACEHOLDER (development scaffold, replaced before merge): the linalg bindings.
#include "bindings.h"

namespace kiln::py {
void init_linalg(nb::module_& m) {}
}  // namespace kiln::py
