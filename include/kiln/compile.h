// compile, with MLX's API (mlx/compile.h). A compiled function traces the function once per input
// signature (each input's dtype and shape; for a shapeless compile each input's dtype and rank),
// simplifies the traced tape (scalar constants merged, no-ops dropped, common subexpressions merged:
// the pass export_function runs), fuses groups of element-wise operations into one node each (a
// `Compiled` primitive, with MLX's rules: see src/transforms/compile_fuse.h), keeps the tape, and on
// later calls with that signature replays it on the new inputs instead of calling the function again.
// Replay builds the lazy graph the function would have, minus what simplification removed, with the
// fused groups as Compiled nodes (kiln/primitives.h); a Compiled node runs its group with the
// evaluator's element-wise fusion (src/core/fusion.cpp), is differentiated and batched through its
// members, and is written as its members when traced (export_function, nested compile).
//
// As in MLX: the function must be pure (it is not called again for a known signature, so side effects
// and Python-style control flow on values run once); arrays it captures that are evaluated when it is
// traced are kept as constants; it must not evaluate its inputs (eval or item on them throws); it must
// not capture one of the arrays it is called with ("[compile] Attempting to compile a function with
// uncaptured inputs is not allowed."). A shapeless compile replays on any shapes of the traced ranks,
// re-inferring each node's shape; a primitive that cannot infer shapes throws
// "[Primitive::output_shapes] X cannot infer output shapes." at the call.
#pragma once

#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/array.h"

namespace kiln {

enum class CompileMode {
  disabled,     // compile returns the function itself
  no_simplify,  // trace and replay, without simplification
  no_fuse,      // trace, simplify and replay, without Compiled nodes (the evaluator still fuses at eval for
                // every graph, compiled or not; KILN_FUSION=0 turns that off)
  enabled,
};

using CompiledFn = std::function<std::vector<array>(const std::vector<array>&)>;

// Throws std::invalid_argument for a null function unless compilation is disabled. Each call of
// compile on a std::function has its own cache of traces; compiling the same plain function (pointer)
// again shares that function's cache.
CompiledFn compile(CompiledFn fun, bool shapeless = false);
CompiledFn compile(std::vector<array> (*fun)(const std::vector<array>&), bool shapeless = false);
template <typename F>
  requires(!std::is_same_v<std::decay_t<F>, CompiledFn> && requires(F&& f) {
    static_cast<std::vector<array> (*)(const std::vector<array>&)>(+f);
  })
CompiledFn compile(F&& f, bool shapeless = false) {
  return compile(static_cast<std::vector<array> (*)(const std::vector<array>&)>(+f), shapeless);
}

// Globally turn compilation off (compile then returns functions unchanged) or back on. The
// environment variable MLX_DISABLE_COMPILE (any value) disables it at start-up; enable_compile
// overrides it. The mode is read when a compiled function is called.
void disable_compile();
void enable_compile();
void set_compile_mode(CompileMode mode);
CompileMode compile_mode();

namespace detail {
// Traces recorded by compiled functions since the program started (tests: retracing).
size_t compile_trace_count();
}  // namespace detail

}  // namespace kiln
