// PLACEHOLDER (development scaffold, replaced before merge): the fft bindings.
#include "bindings.h"

namespace kiln::py {
void init_fft(nb::module_& m) {}
}  // namespace kiln::py
