// CPU kernels of the misc family: Depends (here), CustomKernel (custom.cpp), Load (load.cpp) and Compiled
// (compiled.cpp); the rows are in src/primitives/misc/.
#include <stdexcept>
#include <string>

#include "backend/cpu/kernels/families.h"
#include "kiln/primitive.h"

namespace kiln {

namespace {

void depends_cpu(const Node& node, const std::vector<array>& in, std::vector<array>& out) {
  // The output count comes from the record, so check it against the inputs before aliasing them.
  if (out.size() > in.size()) {
    throw std::invalid_argument("[Depends] " + std::to_string(out.size()) + " outputs need at least as many inputs, found " +
                                std::to_string(in.size()) + ".");
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].shape() != in[i].shape() || out[i].dtype() != in[i].dtype()) {
      throw std::invalid_argument("[Depends] Output " + std::to_string(i) + " must have the shape and dtype of input " +
                                  std::to_string(i) + ".");
    }
    out[i].set_view(in[i], in[i].strides(), in[i].offset());
  }
}

// CustomTransforms: the last outputs.size() inputs are the outputs (custom_function computed them).
void custom_transforms_cpu(const Node&, const std::vector<array>& in, std::vector<array>& out) {
  if (out.size() > in.size()) {
    throw std::invalid_argument("[CustomTransforms] " + std::to_string(out.size()) + " outputs need at least as many "
                                "inputs, found " + std::to_string(in.size()) + ".");
  }
  const size_t first = in.size() - out.size();
  for (size_t i = 0; i < out.size(); ++i) {
    const array& src = in[first + i];
    if (out[i].shape() != src.shape() || out[i].dtype() != src.dtype()) {
      throw std::invalid_argument("[CustomTransforms] Output " + std::to_string(i) +
                                  " must have the shape and dtype of the function's output.");
    }
    out[i].set_view(src, src.strides(), src.offset());
  }
}

}  // namespace

namespace cpu {
// The family's other kernel files.
void register_cpu_custom(detail::KernelTable& table);  // custom.cpp
void register_cpu_load(detail::KernelTable& table);    // load.cpp
void register_cpu_compiled(detail::KernelTable& table);  // compiled.cpp
void register_cpu_imported_call(detail::KernelTable& table);  // imported_call.cpp

void register_cpu_misc(detail::KernelTable& table) {
  register_cpu_custom(table);
  table.add("Depends", depends_cpu);
  table.add("CustomTransforms", custom_transforms_cpu);
  register_cpu_load(table);
  register_cpu_compiled(table);
  register_cpu_imported_call(table);
}
}  // namespace cpu

}  // namespace kiln
