// The evaluator's pieces that other runners of planned graphs share (core/program.h): the topological
// order, the run plan, running one node or one fused group, and the profiler's per-step accounting.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kiln/array.h"
#include "kiln/primitive.h"
#include "core/fusion.h"

namespace kiln::detail {

// The unevaluated nodes `outputs` depend on, inputs before readers. Arrays with neither data nor a node
// (placeholders) are leaves: while tracing, reaching one throws (the traced function evaluates its
// inputs) unless `placeholders_are_inputs` (a program's planning, where they stand for its inputs).
std::vector<std::shared_ptr<Node>> topo_order(const std::vector<array>& outputs, bool placeholders_are_inputs = false);

// Graph rewrite passes (core/row_patterns.h), then element-wise fusion planning and sibling batches
// (core/fusion.h).
std::vector<fusion::Step> plan_run(std::vector<std::shared_ptr<Node>>& order, const std::vector<array>& outputs);

// Runs one node: its kernel writes the live descriptors of node->outputs (fresh arrays for the others),
// which then drop the node. Its inputs must be evaluated.
void run_node(const std::shared_ptr<Node>& node);
// The kernel of `node` on its stream's device; throws, naming the primitive, where it has none.
KernelFn kernel_of(const Node& node);
// The end of run_node, for callers that hold the kernel and the outputs (a planned program): `kernel`
// writes `outs` from node.inputs, then each output must have data and drops its node (not a tracer's).
void run_kernel(const Node& node, KernelFn kernel, std::vector<array>& outs);
// Runs one fused group (a group of one member that donates nothing runs as its node alone), writing
// every member's `out`. Updates fusion::stats().
void run_group(fusion::Group& g);

// The profiler (kiln/profile.h). A step's row gets its own time: the time of profiled steps nested in
// it (a kernel that runs a planned graph, or evaluates one) is theirs, not counted twice.
bool profiling_on();
// A group's row: its one member's primitive, or "fused".
const std::string& profile_name(const fusion::Group& g);
class ProfileTimer {
 public:
  ProfileTimer();  // starts only when profiling is on
  void stop(const std::string& name, int64_t nodes);
 private:
  bool on_;
  std::chrono::steady_clock::time_point t0_;
  double nested0_ = 0;
};

}  // namespace kiln::detail
