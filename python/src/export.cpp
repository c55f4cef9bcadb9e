// PLACEHOLDER (development scaffold, replaced before merge): the export bindings.
#include "bindings.h"

namespace kiln::py {
void init_export(nb::module_& m) {}
}  // namespace kiln::py
