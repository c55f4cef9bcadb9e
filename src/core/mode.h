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

// True while a function transform (vjp, jvp, vmap) is calling the function it transforms: its outputs
// must stay lazy graphs (the Python binding of an imported function then leaves its outputs unevaluated).
bool in_transform();

// RAII: marks this thread as running a transform's call of its function (nests).
class TransformGuard {
 public:
  TransformGuard();
  ~TransformGuard();
  TransformGuard(const TransformGuard&) = delete;
  TransformGuard& operator=(const TransformGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace kiln::detail
