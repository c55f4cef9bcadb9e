// The outputs of a node whose CPU kernel evaluates a graph of its own (Compiled's fused group, an
// ImportedCall's planned program): each output takes over its result's buffer.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/array.h"

namespace kiln::cpu {

// `r`: the graph's evaluated results; `out`: the node's outputs. Throws std::invalid_argument, naming
// `row` and `what` (the graph, e.g. "fused group"), when their count, shapes or dtypes differ.
inline void take_results(const char* row, const char* what, const std::vector<array>& r, std::vector<array>& out) {
  if (r.size() != out.size()) {
    throw std::invalid_argument(std::string("[") + row + "] The " + what + " gives " + std::to_string(r.size()) +
                                " outputs, the node has " + std::to_string(out.size()) + ".");
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (r[i].shape() != out[i].shape() || r[i].dtype() != out[i].dtype()) {
      throw std::invalid_argument(std::string("[") + row + "] Output " + std::to_string(i) + " of the " + what +
                                  " does not have the node's shape and dtype.");
    }
    out[i].set_view(r[i], r[i].strides(), r[i].offset());
  }
}

}  // namespace kiln::cpu
