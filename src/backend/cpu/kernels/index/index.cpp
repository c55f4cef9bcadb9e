// The index family's CPU kernels (gather.cpp, scatter.cpp), one per row of primitives/index/index.cpp.
#include "backend/cpu/kernels/families.h"
#include "backend/cpu/kernels/index/index_kernels.h"

namespace kiln::cpu {

void register_cpu_index(detail::KernelTable& table) {
  table.add({{"Gather", index_detail::gather_cpu}, {"GatherAxis", index_detail::gather_axis_cpu},
             {"Scatter", index_detail::scatter_cpu}, {"ScatterAxis", index_detail::scatter_axis_cpu},
             {"MaskedScatter", index_detail::masked_scatter_cpu}});
}

}  // namespace kiln::cpu
