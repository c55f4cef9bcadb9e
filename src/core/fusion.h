// Element-wise fusion: the evaluator's plan of which nodes run together (src/core/fusion.cpp), and the
// description of one fused group that a backend's group runner executes (the CPU's:
// src/backend/cpu/fusion.cpp, registered in its kernel table).
//
// A group is a set of single-output element-wise nodes (rows flagged kElementwise: unary, binary,
// ternary, AsType) of one output shape, connected through their inputs. The runner evaluates the
// group as one loop over the output, tile by tile, calling each member's own kernel on tile-sized
// arrays, so the arithmetic is the unfused kernels' and the intermediates never get full buffers.
// A member's output is still written to its own buffer when something outside the group needs it:
// it is an output of eval(), the user holds it, or a node outside the group reads it.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "kiln/primitive.h"

namespace kiln::detail {
class KernelTable;
}

namespace kiln::detail::fusion {

struct Group {
  Shape shape;      // every member's output shape
  size_t size = 0;  // elements of `shape` (> 0)
  struct Member {
    std::shared_ptr<Node> node;
    KernelFn kernel = nullptr;
    // Per input: >= 0, the member (an earlier index) whose output it is; < 0, external input ~arg.
    std::vector<int> args;
    // The array to write (its buffer is allocated by the runner, or donated, see `donor`); invalid
    // when the output is internal to the group.
    array out;
    // An external input whose buffer `out` takes over (-1: none): set by prepare_run.
    int donor = -1;
  };
  std::vector<Member> members;  // in topological order
  // External inputs: evaluated before the group runs; their shapes broadcast to `shape`. They point
  // into the members' nodes' inputs (the group holds the nodes).
  std::vector<const array*> externals;
  // The backend's runner (group_runner of the members' kernel table).
  void (*runner)(Group& group) = nullptr;
  // A batch group (batch_siblings): nodes of one row that read the same first input, run as one kernel
  // call by the row's BatchRule (the runner). Its members' shapes differ (`shape` and `size` are unused),
  // every input is external and every output written; it donates nothing and is not counted as fusion.
  bool batch = false;
};

// A backend's runner of fused groups: writes every member's `out`. A backend without one runs every
// node alone. Set when the backend's kernel table is built (src/backend/backends.cpp).
using GroupRunner = void (*)(Group& group);
void set_group_runner(const KernelTable& kernels, GroupRunner runner);
GroupRunner group_runner(const KernelTable& kernels);

// One step of a run plan: a single node, or a group (then `node` is null).
struct Step {
  std::shared_ptr<Node> node;
  std::unique_ptr<Group> group;
};

// The plan for a topological order: nodes that stay alone keep their order; a group runs once every
// node it reads has run and before any node that reads one of its outputs.
std::vector<Step> plan(std::vector<std::shared_ptr<Node>>& order);

// Merges the plan's single-node steps that a backend can run as one call (KernelTable::batch: nodes of
// one row reading the same first input, which BatchRule::joins accepts) into batch groups, each at its
// first member's place. A later member moves up only when its other inputs are evaluated or computed by
// earlier steps. Does nothing when switched off (KILN_BATCH=0, set_batching). Returns the nodes batched.
size_t batch_siblings(std::vector<Step>& steps);
bool batching_enabled();
void set_batching(bool on);
// Batch groups run since the process started (tests), and the evaluator's count of one more.
uint64_t batch_runs();
void count_batch_run();

// Whether input `slot` of `node` is read for its shape only: the extra inputs of Broadcast and
// BroadcastAxes (shapeless graphs name the other operands there). Such a read neither closes a group
// nor makes an output needed, and the input need not be evaluated when the node runs.
bool shape_only(const Node& node, size_t slot);

// Just before a group runs (its external inputs evaluated). choose_donor picks an output that takes
// over the buffer of an external input nothing else reads (row-contiguous, the output's shape and byte
// size, allocated by kiln: not a constant, file data or a view), and returns whether it found one; at
// most one output per group is donated (the runner writes it last). allocate_outputs gives every
// other written output a fresh buffer.
bool choose_donor(Group& group);
void allocate_outputs(Group& group);

// Whether fusion is on: the environment variable KILN_FUSION=0 turns it off (then every node runs
// alone, exactly as without this pass); set_enabled overrides it (tests).
bool enabled();
void set_enabled(bool on);

// The fewest output elements a node must have to be fused (default 2^17: below that the unfused
// kernels are faster, see fusion.cpp). set_min_elements(n) sets it from the next eval on (tests use
// small arrays); 0 restores the default.
size_t min_elements();
void set_min_elements(size_t n);

// What the last eval() on this thread did.
struct Stats {
  size_t groups = 0;        // groups run by a group runner
  size_t fused_nodes = 0;   // nodes in those groups
  size_t internal = 0;      // member outputs that were never written to a buffer
  size_t donated = 0;       // outputs that took over an input's buffer
};
Stats last_stats();
// The evaluator's side: the counters of the eval() in progress on this thread, zeroed by reset_stats
// and made last_stats() by publish_stats.
Stats& stats();
void reset_stats();
void publish_stats();

}  // namespace kiln::detail::fusion
