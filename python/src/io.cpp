// PLACEHOLDER (development scaffold, replaced before merge): the io bindings.
#include "bindings.h"

namespace kiln::py {
void init_io(nb::module_& m) {}
}  // namespace kiln::py
