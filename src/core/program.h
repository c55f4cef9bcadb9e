// A planned program: a lazy graph whose run plan (the evaluator's graph passes and element-wise fusion,
// core/eval_internal.h) is made once, then run on new inputs again and again without building a graph,
// sorting it or planning it per run. An imported function's calls run this way (src/trace/import.cpp:
// the ImportedCall node), which takes the 0.4-0.6 ms of graph building and planning off each call of a
// 700-node decoder step.
//
// Each run writes fresh output arrays for every step (a result a caller still holds from an earlier run
// is never overwritten), feeds each step's node its inputs just before it runs and takes them back after,
// and drops an intermediate at its last reader, as eval does, so buffers return to the cache as early
// and fused groups donate the same inputs' buffers.
#pragma once

#include <memory>
#include <vector>

#include "kiln/array.h"
#include "kiln/primitive.h"
#include "core/fusion.h"

namespace kiln::detail {

class Program {
 public:
  // `inputs` are placeholders (arrays with neither data nor a node) where each run's inputs go; the
  // graph of `outputs` may read them and evaluated arrays (constants), nothing else that is not in the
  // graph. Plans the graph (nothing is evaluated) and keeps its nodes; throws std::invalid_argument when
  // the graph reads an array that is neither.
  Program(const std::vector<array>& inputs, std::vector<array> outputs);
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program();

  // The outputs' values for `in` (evaluated arrays with the placeholders' shapes and dtypes). One run at
  // a time: the caller serializes runs of one program.
  std::vector<array> run(const std::vector<array>& in);

  const std::vector<ArraySpec>& input_specs() const { return in_specs_; }
  const std::vector<ArraySpec>& output_specs() const { return out_specs_; }
  size_t steps() const { return steps_.size(); }
  // The cache lines a run prefetches (what plan_prefetch listed), for tests.
  size_t prefetch_lines() const { return lines_.size(); }

 private:
  // Where a value comes from: a run input, an intermediate's slot, or a fixed (evaluated) array.
  enum class From : uint8_t { Input, Slot, Fixed };
  struct Feed {
    Node* node;
    uint32_t input;  // node->inputs index
    From from;       // Input or Slot
    int index;
  };
  struct Step {
    std::shared_ptr<Node> node;            // a node alone, or
    std::unique_ptr<fusion::Group> group;  // a fused group
    std::vector<int> out_slots;            // per output (node) or member (group): its slot, -1 unread
    std::vector<bool> written;             // group: members whose output is written
    std::vector<Feed> feeds;               // inputs set before the step runs
    std::vector<int> release;              // slots read for the last time here
    KernelFn kernel = nullptr;             // node: its kernel, found when planned (null: none was)
    const std::string* name = nullptr;     // the profiler's row
    int64_t nodes = 1;
  };
  struct Output {
    From from;
    int index;
    array fixed;
  };

  void clear_feeds(const Step& s);
  void plan_prefetch();
  void prefetch(size_t step) const;

  std::vector<ArraySpec> in_specs_, out_specs_;
  std::vector<Step> steps_;
  std::vector<Output> outputs_;
  std::vector<array> slots_;
  std::vector<array> outs_;  // a node step's outputs while it runs
  // Per step, the cache lines its run reads that are the same from run to run: its node or group, the
  // nodes' input, spec and output lists, the constants' descriptors and their first bytes. A decode step
  // streams ~80 MB of weights through the caches between such reads, so each would otherwise be a
  // dependent miss to memory; they are prefetched a few steps ahead (kPrefetchAhead, program.cpp).
  std::vector<const void*> lines_;
  std::vector<uint32_t> lines_at_;  // step i's lines are lines_[lines_at_[i]] .. lines_[lines_at_[i + 1]]
};

// Whether imported functions' calls run as planned programs (default on; KILN_PROGRAMS=0 turns it off,
// then each call replays its record as a graph of nodes). set_programs_enabled overrides it (tests,
// benchmarks comparing both).
bool programs_enabled();
void set_programs_enabled(bool on);

// Whether planned programs prefetch their steps' fixed data ahead (default on; KILN_PROGRAM_PREFETCH=0
// turns it off). Results are the same either way; benchmarks compare both.
bool program_prefetch_enabled();
void set_program_prefetch(bool on);

}  // namespace kiln::detail
