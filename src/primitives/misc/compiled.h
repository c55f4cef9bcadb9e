// The Compiled primitive: a group of element-wise nodes that compile (kiln/compile.h) fused into one
// graph node, as MLX's compile does (src/transforms/compile_fuse.cpp finds the groups). The node's
// inputs are the group's external inputs (the compiled function's inputs, captured constants, results
// of nodes outside the group); its outputs are the group's last node and the members that are also the
// function's outputs, all of one shape. The group itself rides in Node::extra as a CompiledTape.
//
// Everything else is derived from the tape: the CPU kernel runs it (a lazy graph of the members' rows,
// evaluated with the element-wise fusion of the evaluator), the derivative and batching rules apply
// to it, and the tracer writes its members instead of the node (src/trace/trace.cpp), so a record
// never holds a Compiled node (MLX cannot read one either). kiln-internal in files: kNotSerializable.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/primitive.h"

namespace kiln::detail {

struct CompiledTape {
  struct Step {
    const PrimitiveDef* def = nullptr;
    State state;
    // Per input: >= 0, the step (an earlier index) whose output it is; < 0, the node's input ~arg.
    std::vector<int> args;
    ArraySpec spec;  // the step's output at the traced shapes
  };
  std::vector<Step> steps;
  std::vector<int> outputs;  // the steps that are the node's outputs, in order
  // Whether the compile was shapeless: the steps' shapes then follow the inputs (each row's rule).
  bool shapeless = false;

  // The group as a lazy graph over `inputs` (the node's inputs), on `stream`: the node's outputs.
  std::vector<array> run(const std::vector<array>& inputs, const Stream& stream) const;
  // Every step's output shape and dtype for inputs of `inputs`' specs (the traced ones; shapeless: each
  // step's rule), and the node's outputs' among them.
  std::vector<ArraySpec> step_specs(const std::vector<ArraySpec>& inputs) const;
  std::vector<ArraySpec> output_specs(const std::vector<ArraySpec>& inputs) const;
  // MLX's lib_name: the same for the same steps, states, wiring and dtypes, whatever the shapes (a
  // Broadcast step's target shape is left out); with `shapes`, the broadcasts' shapes too.
  std::string name(bool shapes = false) const;
  // The node's state: lib_name, the output count, and name(true) (so equal states are equivalent nodes).
  State state() const;
};

const PrimitiveDef& compiled_def();
// The node's tape; throws std::invalid_argument when the node carries none (a Compiled node built
// elsewhere than by compile).
const CompiledTape& compiled_tape(const Node& node);

}  // namespace kiln::detail
