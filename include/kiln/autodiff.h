// kiln: automatic differentiation, with MLX's API (mlx/transforms.h of MLX 0.30.1): reverse mode (vjp,
// grad, value_and_grad), forward mode (jvp) and the custom rules (custom_function, custom_vjp,
// checkpoint). The function is called on the primals, which builds its lazy graph (an imported
// function's call replays its tape into primitive nodes, so imported functions are differentiated like
// any other); the graph is walked from the outputs to the primals and each node's rule, declared beside
// its row, builds the derivative with kiln's ops. Derivatives are lazy graphs themselves: they can be
// evaluated, differentiated again and exported.
#pragma once

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "kiln/array.h"

namespace kiln {

// Outputs of `fun` at `primals`, and the vector-Jacobian product of `cotangents` (one per output that
// is not a stop_gradient) with the Jacobian at the primals: one array per primal.
std::pair<std::vector<array>, std::vector<array>> vjp(
    const std::function<std::vector<array>(const std::vector<array>&)>& fun, const std::vector<array>& primals,
    const std::vector<array>& cotangents);
std::pair<array, array> vjp(const std::function<array(const array&)>& fun, const array& primal,
                            const array& cotangent);

// Outputs of `fun` at `primals`, and the Jacobian-vector product with `tangents` (one per primal, of its
// shape): one array per output.
std::pair<std::vector<array>, std::vector<array>> jvp(
    const std::function<std::vector<array>(const std::vector<array>&)>& fun, const std::vector<array>& primals,
    const std::vector<array>& tangents);
std::pair<array, array> jvp(const std::function<array(const array&)>& fun, const array& primal,
                            const array& tangent);

using ValueAndGradFn =
    std::function<std::pair<std::vector<array>, std::vector<array>>(const std::vector<array>&)>;
using SimpleValueAndGradFn = std::function<std::pair<array, std::vector<array>>(const std::vector<array>&)>;

// The value of `fun` and the gradient of its first output (a scalar) with respect to the inputs named
// by `argnums` (negative counts from the end; at least one, no repeats). The other outputs are
// returned, not differentiated.
ValueAndGradFn value_and_grad(const std::function<std::vector<array>(const std::vector<array>&)>& fun,
                              const std::vector<int>& argnums);
inline ValueAndGradFn value_and_grad(const std::function<std::vector<array>(const std::vector<array>&)>& fun,
                                     int argnum = 0) {
  return value_and_grad(fun, std::vector<int>{argnum});
}
inline std::function<std::pair<array, array>(const array&)> value_and_grad(
    const std::function<array(const array&)>& fun) {
  return [fun](const array& input) { return vjp(fun, input, array(1.0f)); };
}
SimpleValueAndGradFn value_and_grad(const std::function<array(const std::vector<array>&)>& fun,
                                    const std::vector<int>& argnums);
inline SimpleValueAndGradFn value_and_grad(const std::function<array(const std::vector<array>&)>& fun,
                                           int argnum = 0) {
  return value_and_grad(fun, std::vector<int>{argnum});
}

// The gradient of a scalar function with respect to the inputs named by `argnums`.
inline std::function<std::vector<array>(const std::vector<array>&)> grad(
    const std::function<array(const std::vector<array>&)>& fun, const std::vector<int>& argnums) {
  auto fn = value_and_grad(fun, argnums);
  return [fn](const std::vector<array>& inputs) { return fn(inputs).second; };
}
inline std::function<std::vector<array>(const std::vector<array>&)> grad(
    const std::function<array(const std::vector<array>&)>& fun, int argnum = 0) {
  return grad(fun, std::vector<int>{argnum});
}
inline std::function<array(const array&)> grad(const std::function<array(const array&)>& fun) {
  auto fn = value_and_grad(fun);
  return [fn](const array& input) { return fn(input).second; };
}

// A function that computes like `fun` but whose derivatives are the given rules: `fun_vjp(primals,
// cotangents, outputs)` returns one cotangent per primal; `fun_jvp(primals, tangents, argnums)` one
// tangent per output (`tangents` are those of the primals named by `argnums`); `fun_vmap(inputs, axes)`
// is kept for the batching transform. A missing rule is computed from `fun` itself. With no rule at
// all, returns `fun`.
using CustomVjpFn = std::function<std::vector<array>(const std::vector<array>& primals,
                                                     const std::vector<array>& cotangents,
                                                     const std::vector<array>& outputs)>;
using CustomJvpFn = std::function<std::vector<array>(const std::vector<array>& primals,
                                                     const std::vector<array>& tangents,
                                                     const std::vector<int>& argnums)>;
using CustomVmapFn = std::function<std::pair<std::vector<array>, std::vector<int>>(const std::vector<array>& inputs,
                                                                                   const std::vector<int>& axes)>;
std::function<std::vector<array>(const std::vector<array>&)> custom_function(
    std::function<std::vector<array>(const std::vector<array>&)> fun,
    std::optional<CustomVjpFn> fun_vjp = std::nullopt, std::optional<CustomJvpFn> fun_jvp = std::nullopt,
    std::optional<CustomVmapFn> fun_vmap = std::nullopt);

// `fun` whose vjp is `fun_vjp` (custom_function with only a vjp rule).
std::function<std::vector<array>(const std::vector<array>&)> custom_vjp(
    std::function<std::vector<array>(const std::vector<array>&)> fun, CustomVjpFn fun_vjp);

// `fun` that keeps none of its intermediates for reverse mode: its vjp calls `fun` again (after the
// outputs are computed) and differentiates that.
std::function<std::vector<array>(const std::vector<array>&)> checkpoint(
    std::function<std::vector<array>(const std::vector<array>&)> fun);

}  // namespace kiln
