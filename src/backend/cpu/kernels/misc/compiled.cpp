// CPU kernel of Compiled (src/primitives/misc/compiled.h): the fused group's members as a lazy graph on
// the node's inputs, evaluated (the evaluator runs element-wise groups as one loop, core/fusion.h);
// each output then takes over its result's buffer.
#include <stdexcept>
#include <string>

#include "core/kernels.h"
#include "primitives/misc/compiled.h"

namespace kiln {

namespace {

void compiled_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const detail::CompiledTape& tape = detail::compiled_tape(node);
  std::vector<array> r = tape.run(in, node.stream);
  if (r.size() != out.size()) {
    throw std::invalid_argument("[Compiled] The fused group gives " + std::to_string(r.size()) +
                                " outputs, the node has " + std::to_string(out.size()) + ".");
  }
  eval(r);
  for (size_t i = 0; i < out.size(); ++i) {
    if (r[i].shape() != out[i].shape() || r[i].dtype() != out[i].dtype()) {
      throw std::invalid_argument("[Compiled] Output " + std::to_string(i) +
                                  " of the fused group does not have the node's shape and dtype.");
    }
    out[i].set_view(r[i], r[i].strides(), r[i].offset());
  }
}

}  // namespace

namespace cpu {
void register_cpu_compiled(detail::KernelTable& table) { table.add("Compiled", compiled_cpu); }
}  // namespace cpu

}  // namespace kiln
