// The CPU kernels: every primitive family of src/primitives/families.h has its CPU kernels in the folder
// of the same name beside this file (kernels/<family>/), whose files define
// register_cpu_<family>(KernelTable&), adding one kernel per row of that family. The list is the row
// families' own, so a family without CPU kernels fails to link.
#pragma once

#include "core/kernels.h"
#include "primitives/families.h"

namespace kiln::cpu {

#define KILN_DECLARE_CPU_FAMILY(f) void register_cpu_##f(detail::KernelTable& table);
KILN_FAMILIES(KILN_DECLARE_CPU_FAMILY)
#undef KILN_DECLARE_CPU_FAMILY

inline void register_cpu_kernels(detail::KernelTable& table) {
#define KILN_CALL_CPU_FAMILY(f) register_cpu_##f(table);
  KILN_FAMILIES(KILN_CALL_CPU_FAMILY)
#undef KILN_CALL_CPU_FAMILY
}

}  // namespace kiln::cpu
