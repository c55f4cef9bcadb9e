// CPU kernel of Load: the constant's payload, read from its file on first use (load_payload,
// src/primitives/misc/load.cpp), becomes the output's buffer.
#include "backend/cpu/threading.h"
#include "core/kernels.h"
#include "primitives/misc/load.h"

namespace kiln {

namespace {

void load_cpu(const Node& node, const std::vector<array>&, std::vector<array>& out) {
  out[0].set_data(detail::load_payload(node, &cpu::parallel_for));
}

}  // namespace

namespace cpu {
void register_cpu_load(detail::KernelTable& table) { table.add("Load", load_cpu); }
}  // namespace cpu

}  // namespace kiln
