// Tracing state consulted by op builders. While a function is traced for a shapeless export, ops
// record shape-generic graphs, as MLX does: broadcasting emits multi-input Broadcast / BroadcastAxes
// nodes (the extra inputs are the other operands) and element counts become NumberOfElements nodes
// instead of scalar constants.
#pragma once

namespace kiln::detail {

// True while tracing a function for export (shapeless or not).
bool in_tracing();
// True while tracing a function for a shapeless export.
bool in_shapeless_trace();

// RAII: marks this thread as tracing for the guard's lifetime (nests).
class TraceGuard {
 public:
  explicit TraceGuard(bool shapeless);
  ~TraceGuard();
  TraceGuard(const TraceGuard&) = delete;
  TraceGuard& operator=(const TraceGuard&) = delete;

 private:
  bool prev_tracing_;
  bool prev_shapeless_;
};

}  // namespace kiln::detail
