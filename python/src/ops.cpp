// PLACEHOLDER (development scaffold, replaced before merge): the ops bindings.
#include "bindings.h"

namespace kiln::py {
void init_ops(nb::module_& m) {}
}  // namespace kiln::py
