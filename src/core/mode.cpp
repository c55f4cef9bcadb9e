#include "core/mode.h"

namespace kiln::detail {

namespace {
thread_local bool t_tracing = false;
thread_local bool t_shapeless = false;
thread_local bool t_transform = false;
}  // namespace

bool in_tracing() { return t_tracing; }
bool in_shapeless_trace() { return t_shapeless; }
bool in_transform() { return t_transform; }

TransformGuard::TransformGuard() : prev_(t_transform) { t_transform = true; }
TransformGuard::~TransformGuard() { t_transform = prev_; }

TraceGuard::TraceGuard(bool shapeless) : prev_tracing_(t_tracing), prev_shapeless_(t_shapeless) {
  t_tracing = true;
  t_shapeless = shapeless;
}

TraceGuard::~TraceGuard() {
  t_tracing = prev_tracing_;
  t_shapeless = prev_shapeless_;
}

}  // namespace kiln::detail
