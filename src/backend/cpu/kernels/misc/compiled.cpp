// CPU kernel of Compiled (src/primitives/misc/compiled.h): the fused group's members as a lazy graph on
// the node's inputs, evaluated (the evaluator runs element-wise groups as one loop, core/fusion.h);
// each output then takes over its result's buffer.
#include "backend/cpu/kernels/misc/results.h"
#include "core/kernels.h"
#include "primitives/misc/compiled.h"

namespace kiln {

namespace {

void compiled_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  const detail::CompiledTape& tape = detail::compiled_tape(node);
  std::vector<array> r = tape.run(in, node.stream);
  eval(r);
  cpu::take_results("Compiled", "fused group", r, out);
}

}  // namespace

namespace cpu {
void register_cpu_compiled(detail::KernelTable& table) { table.add("Compiled", compiled_cpu); }
}  // namespace cpu

}  // namespace kiln
