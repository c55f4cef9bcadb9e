// Helpers the evaluator's graph rewrite passes share (core/row_patterns.h, core/concat_products.h,
// core/slice_pushdown.h): which node still computes an array, and how many arrays hold a node's output (a
// node may leave the order only when nothing outside the rewrite reads it).
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "kiln/primitive.h"

namespace kiln::detail::graph_rewrite {

// The node that still has to compute `a` (null for evaluated arrays and leaves).
inline Node* producer(const array& a) { return !a.is_available() && a.has_primitive() ? a.node().get() : nullptr; }

// The ids of the arrays being evaluated (an output of the evaluation must keep its node).
inline std::unordered_set<uintptr_t> ids_of(const std::vector<array>& outputs) {
  std::unordered_set<uintptr_t> ids;
  for (const array& o : outputs) {
    if (o.valid()) ids.insert(o.id());
  }
  return ids;
}

// For a node with one live output that is not being evaluated: how many arrays hold that output (graph
// inputs of other nodes, arrays the caller keeps), and its id. False otherwise.
inline bool output_holders(const Node* n, const std::unordered_set<uintptr_t>& outputs, long& holders,
                           uintptr_t& id) {
  if (n->outputs.size() != 1) return false;
  holders = n->outputs[0].use_count();
  std::shared_ptr<ArrayDesc> d = n->outputs[0].lock();
  if (!d) return false;
  id = reinterpret_cast<uintptr_t>(d.get());
  return !outputs.count(id);
}

// Whether n's single output is held by one array only (the reader a pass is rewriting) and is not being
// evaluated: then n may leave the order once that reader no longer reads it.
inline bool read_once(const Node* n, const std::unordered_set<uintptr_t>& outputs) {
  long holders = 0;
  uintptr_t id = 0;
  return n->specs.size() == 1 && output_holders(n, outputs, holders, id) && holders == 1;
}

}  // namespace kiln::detail::graph_rewrite
