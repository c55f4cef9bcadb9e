// The CPU kernels, one entry per primitive family: the same names as src/primitives/families.h and the
// folders beside this file (kernels/<family>/). Each family's kernel files define
// register_cpu_<family>(KernelTable&), which adds one kernel per row of that family. A family named
// here and not built fails to link.
#pragma once

#include "core/kernels.h"

namespace kiln::cpu {

#define KILN_CPU_KERNEL_FAMILIES(X) \
  X(elementwise)                   \
  X(reduce)                        \
  X(shape)                         \
  X(index)                         \
  X(sort)                          \
  X(linalg)                        \
  X(conv)                          \
  X(fft)                           \
  X(quantized)                     \
  X(random)                        \
  X(fast)                          \
  X(misc)

#define KILN_DECLARE_CPU_FAMILY(f) void register_cpu_##f(detail::KernelTable& table);
KILN_CPU_KERNEL_FAMILIES(KILN_DECLARE_CPU_FAMILY)
#undef KILN_DECLARE_CPU_FAMILY

inline void register_cpu_kernels(detail::KernelTable& table) {
#define KILN_CALL_CPU_FAMILY(f) register_cpu_##f(table);
  KILN_CPU_KERNEL_FAMILIES(KILN_CALL_CPU_FAMILY)
#undef KILN_CALL_CPU_FAMILY
}

}  // namespace kiln::cpu
