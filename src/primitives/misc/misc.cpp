// Graph utility primitives: Depends (n real inputs followed by m dependencies; n outputs that are
// the real inputs, evaluated after the dependencies).
#include <stdexcept>

#include "kiln/ops/misc.h"
#include "primitives/common.h"
#include "primitives/families.h"

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
void register_misc() {
  registry::define(detail::row("Depends", {1, -1}, {}, nullptr, depends_cpu,
                               {.num_outputs = -1, .flags = kNoCSE, .shapeless = false, .check = depends_check}));
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
