// CPU kernel of ImportedCall (src/primitives/misc/imported_call.h): the call's planned program run on
// the node's inputs; each output then takes over its result's buffer.
#include <stdexcept>
#include <string>

#include "core/kernels.h"
#include "primitives/misc/imported_call.h"

namespace kiln {

namespace {

void imported_call_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  std::vector<array> r = detail::imported_call_body(node).run(in);
  if (r.size() != out.size()) {
    throw std::logic_error("[ImportedCall] The call gives " + std::to_string(r.size()) + " outputs, the node has " +
                           std::to_string(out.size()) + ".");
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (r[i].shape() != out[i].shape() || r[i].dtype() != out[i].dtype()) {
      throw std::logic_error("[ImportedCall] Output " + std::to_string(i) +
                             " of the call does not have the node's shape and dtype.");
    }
    out[i].set_view(r[i], r[i].strides(), r[i].offset());
  }
}

}  // namespace

namespace cpu {
void register_cpu_imported_call(detail::KernelTable& table) { table.add("ImportedCall", imported_call_cpu); }
}  // namespace cpu

}  // namespace kiln
