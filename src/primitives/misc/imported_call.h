// The ImportedCall primitive: one call of an imported function (kiln::import_function) as a single
// graph node, whose kernel runs the call's record as a planned program (core/program.h): planned once
// per record and input signature, with no graph of the record's nodes built or planned per call. Its
// inputs are the call's inputs, its outputs the function's; the call itself rides in Node::extra as an
// ImportedCallBody (src/trace/import.cpp makes them).
//
// Everything else sees the record's own nodes: the derivative and batching rules and the tracer expand
// the node into the call's graph (the record replayed on the node's inputs), so an export never holds an
// ImportedCall node and MLX never meets one. kiln-internal: kNotSerializable, kNoCSE.
#pragma once

#include <vector>

#include "kiln/primitive.h"

namespace kiln::detail {

struct ImportedCallBody {
  virtual ~ImportedCallBody() = default;
  // The call as a lazy graph of the record's nodes on `inputs` (the node's inputs): the node's outputs.
  virtual std::vector<array> expand(const std::vector<array>& inputs) const = 0;
  // The node's outputs from its evaluated inputs, through the planned program.
  virtual std::vector<array> run(const std::vector<array>& inputs) const = 0;
};

const PrimitiveDef& imported_call_def();
// The node's call; throws std::invalid_argument when the node carries none.
const ImportedCallBody& imported_call_body(const Node& node);

}  // namespace kiln::detail
