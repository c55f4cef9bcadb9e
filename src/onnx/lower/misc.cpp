// Miscellaneous rows (src/primitives/misc/): Depends passes its real inputs through; custom kernels
// and transforms are refused.
#include "onnx/lower/common.h"

namespace kiln::onnx_export {

void register_misc_onnx(LoweringTable& table) {
  table.add("Depends", [](Context& c) {
    // The first n inputs are the outputs; the rest only order evaluation, which a dataflow graph does
    // not need.
    for (size_t k = 0; k < c.out.size(); ++k) c.set_output(k, c.in.at(k).name);
  });
  table.refuse("CustomKernel", "a Metal or CUDA kernel's source has no ONNX equivalent");
  table.refuse("CustomTransforms",
               "a custom function's transforms are not part of a file's graph (MLX cannot serialize them)");
  table.refuse("Compiled",
               "compile's fused group is never in a record: the tracer writes its members (they are lowered one by one)");
  table.refuse("ImportedCall",
               "an imported function's call node is never in a record: the tracer writes the call's nodes");
  table.refuse("Load", "kiln's lazy file-constant node is not part of a file's tape (constants are initializers)");
}

}  // namespace kiln::onnx_export
