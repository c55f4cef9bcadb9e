// Kernel tables: each backend's implementations of the primitives, keyed by the primitive's row.
//
// A row (include/kiln/primitive.h) says what a primitive is on every device; a backend says how it runs
// there. Each backend owns one KernelTable, filled where its kernels are written (the CPU's:
// src/backend/cpu/kernels/<family>/, one per family of src/primitives/families.h), and the evaluator
// (src/core/eval.cpp) picks the table by the device of the node's stream (kernels_for). A row without
// a kernel on the chosen backend raises an error naming the primitive and the backend.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "kiln/primitive.h"

namespace kiln::detail {

namespace fusion {
struct Group;
}

enum class Backend { cpu, cuda };

// A row's rule for running several of its nodes that read the same first input as one kernel call
// (core/fusion.h, batch_siblings): the 4-bit decode's q, k and v projections of one normalized row, or its
// gate and up projections, stream their weights in one parallel job instead of three or two, each with a
// cold start and a wait for its slowest thread.
struct BatchRule {
  // Whether `b` may run in one call with `a` (both nodes of the row, both reading the same input 0; `b`'s
  // other inputs are evaluated or computed before `a` runs). Shapes, dtypes and states are known here.
  bool (*joins)(const Node& a, const Node& b) = nullptr;
  // Runs a batch group (fusion::Group::batch): its members are the nodes, their inputs set, every member's
  // `out` allocated. Writes every member's `out`.
  void (*run)(fusion::Group& group) = nullptr;
};
const char* backend_name(Backend b);

class KernelTable {
 public:
  explicit KernelTable(Backend backend) : backend_(backend) {}
  // Registers the kernel of the row named `primitive`. Throws std::logic_error when the registry has no
  // such row or the row already has a kernel here: a kernel table naming a primitive that does not
  // exist is a bug found at start-up, not at the first call.
  void add(const char* primitive, KernelFn fn);
  void add(const PrimitiveDef& def, KernelFn fn);
  // A family's kernels at once: {{"Abs", abs_kernel}, {"Negative", negative_kernel}, ...}.
  struct Entry {
    const char* primitive;
    KernelFn fn;
  };
  void add(std::initializer_list<Entry> entries) {
    for (const Entry& e : entries) add(e.primitive, e.fn);
  }
  // Null when this backend has no kernel for the row.
  KernelFn find(const PrimitiveDef& def) const {
    return def.index < by_row_.size() ? by_row_[def.index] : nullptr;
  }
  // The kernel, or std::invalid_argument "[eval] Primitive <display name> has no kernel on the <backend>
  // backend in kiln yet."
  KernelFn get(const PrimitiveDef& def, const State& state) const;
  Backend backend() const { return backend_; }
  // The rows that have a kernel here, in registry order.
  std::vector<const PrimitiveDef*> covered() const;
  // The row's batch rule (the row must have a kernel here; one rule per row), and null for none.
  void add_batch(const char* primitive, BatchRule rule);
  const BatchRule* batch(const PrimitiveDef& def) const {
    return def.index < batch_by_row_.size() && batch_by_row_[def.index].run ? &batch_by_row_[def.index] : nullptr;
  }

 private:
  Backend backend_;
  std::vector<KernelFn> by_row_;
  std::vector<BatchRule> batch_by_row_;
};

// The table that runs nodes recorded on device `d`, built on first use (src/backend/backends.cpp).
// Until kiln has a GPU backend, nodes recorded on a GPU stream (files written on a Mac) run on the CPU.
const KernelTable& kernels_for(Device d);

}  // namespace kiln::detail
