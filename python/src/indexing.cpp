// PLACEHOLDER (development scaffold, replaced before merge): the indexing bindings.
#include "bindings.h"

namespace kiln::py {
void init_indexing(nb::class_<array>& cls) {}
}  // namespace kiln::py
