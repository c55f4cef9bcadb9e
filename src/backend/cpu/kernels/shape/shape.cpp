// The shape family's CPU kernels, one file per file of rows in primitives/shape/ (views.cpp,
// broadcast.cpp, strided.cpp, slicing.cpp, joining.cpp, creation.cpp; copy.cpp holds the copy loops they
// share). This file adds them to the CPU table as one family.
#include "backend/cpu/kernels/families.h"
#include "backend/cpu/kernels/shape/shape_kernels.h"

namespace kiln::cpu {

void register_cpu_shape(detail::KernelTable& table) {
  register_cpu_views(table);
  register_cpu_broadcast(table);
  register_cpu_strided(table);
  register_cpu_slicing(table);
  register_cpu_joining(table);
  register_cpu_creation(table);
}

}  // namespace kiln::cpu
