// CPU kernel of ImportedCall (src/primitives/misc/imported_call.h): the call's planned program run on
// the node's inputs; each output then takes over its result's buffer.
#include "backend/cpu/kernels/misc/results.h"
#include "core/kernels.h"
#include "primitives/misc/imported_call.h"

namespace kiln {

namespace {

void imported_call_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  cpu::take_results("ImportedCall", "call", detail::imported_call_body(node).run(in), out);
}

}  // namespace

namespace cpu {
void register_cpu_imported_call(detail::KernelTable& table) { table.add("ImportedCall", imported_call_cpu); }
}  // namespace cpu

}  // namespace kiln
