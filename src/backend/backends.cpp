// The backends kiln is built with, and which one runs a device's nodes (core/kernels.h).
#include "backend/cpu/fusion.h"
#include "backend/cpu/kernels/families.h"
#include "core/kernels.h"

namespace kiln::detail {

namespace {

KernelTable build_cpu_table() {
  KernelTable table(Backend::cpu);
  cpu::register_cpu_kernels(table);
  cpu::install_fusion(table);  // fused element-wise groups (core/fusion.h)
  return table;
}

}  // namespace

const KernelTable& kernels_for(Device d) {
  static const KernelTable cpu_table = build_cpu_table();
  // No GPU backend yet: GPU-stream nodes (files written on a Mac) run on the CPU. A CUDA backend adds
  // its table here, chosen for Device::gpu.
  (void)d;
  return cpu_table;
}

}  // namespace kiln::detail
