// CPU kernel of CustomKernel: it cannot run GPU source, so it throws, naming the kernel. The row is in
// src/primitives/misc/custom.cpp.
#include <stdexcept>
#include <string>

#include "core/kernels.h"
#include "kiln/primitive.h"

namespace kiln {

namespace {

// Field order of MLX's CustomKernel::state() (format spec 3.4, #115).
enum CK { kName, kSource, kGx, kGy, kGz, kTx, kTy, kTz, kShapeInfos, kRowContig, kInit, kScalars, kPrecomp, kShmem };

void custom_cpu(const Node& node, const std::vector<array>&, std::vector<array>&) {
  throw std::runtime_error("[CustomKernel] Cannot run custom kernel '" + node.state.get<std::string>(kName) +
                           "' on the CPU: its " + (node.state.b(kPrecomp) ? "precompiled " : "") +
                           "GPU source needs a Metal or CUDA device, which kiln does not have.");
}

}  // namespace

namespace cpu {
void register_cpu_custom(detail::KernelTable& table) { table.add("CustomKernel", custom_cpu); }
}  // namespace cpu

}  // namespace kiln
