// Rows of the misc family: graph utility primitives (Depends: n real inputs followed by m dependencies;
// n outputs that are the real inputs, evaluated after the dependencies), and the family's register_misc,
// which also registers CustomKernel (custom.cpp), Load (load.cpp) and Compiled (compiled.cpp). The kernels are in
// src/backend/cpu/kernels/misc/.
#include <stdexcept>

#include "kiln/ops/misc.h"
#include "primitives/common.h"
#include "primitives/families.h"

namespace kiln {

namespace {

// A file's Depends node: each output is the matching input (the count comes from the record).
void depends_check(const State&, const std::vector<ArraySpec>& in, const std::vector<ArraySpec>& out) {
  if (out.size() > in.size()) {
    throw std::invalid_argument("[Depends] " + std::to_string(out.size()) + " outputs need at least as many inputs, found " +
                                std::to_string(in.size()) + ".");
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] != in[i]) {
      throw std::invalid_argument("[Depends] Output " + std::to_string(i) + " must have the shape and dtype of input " +
                                  std::to_string(i) + ".");
    }
  }
}

}  // namespace

namespace primitives {
// The family's other rows, in registry order around Depends.
void register_custom();  // custom.cpp
void register_load();    // load.cpp
void register_compiled();  // compiled.cpp
void register_imported_call();  // imported_call.cpp

void register_misc() {
  register_custom();
  registry::define(detail::row("Depends", {1, -1}, {}, nullptr,
                               {.num_outputs = -1, .flags = kNoCSE, .shapeless = false, .check = depends_check}));
  register_load();
  // custom_function's node (include/kiln/autodiff.h): its inputs are the function's arguments followed
  // by the function's outputs, which it forwards; the user's derivative rules ride in Node::extra. Not in
  // MLX's serializer table: an export forwards the outputs instead (kNoOp, src/trace/simplify.cpp).
  registry::define(detail::row("CustomTransforms", {1, -1}, {}, nullptr,
                               {.num_outputs = -1, .flags = kNoCSE | kNotSerializable | kNoOp,
                                .shapeless = false}));
  register_compiled();
  register_imported_call();
}
}  // namespace primitives

std::vector<array> depends(const std::vector<array>& inputs, const std::vector<array>& dependencies) {
  if (inputs.empty()) {
    throw std::invalid_argument("[depends] Expected at least one input array but found none.");
  }
  static const PrimitiveDef& d = detail::def("Depends");
  std::vector<array> all = inputs;
  all.insert(all.end(), dependencies.begin(), dependencies.end());
  return make_arrays(d, {}, std::move(all), specs_of(inputs), to_stream({}));
}

}  // namespace kiln
