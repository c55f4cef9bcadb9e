// kiln: vectorizing map (MLX's vmap, mlx/transforms.h of v0.30.1). vmap(fun) returns a function that
// applies `fun` to every slice of its inputs along their mapped axes at once: `fun` is called once on
// unbatched placeholders to build its graph, then each node of that graph is rebuilt on the batched
// inputs with its row's batching rule (src/primitives/vmap_rules.h). Imported functions are batched
// like any other (their call replays the file's tape into primitive nodes). The result is a lazy graph:
// it can be evaluated, exported, or batched again (nested vmap).
//
// Axes: an input's in_axis is the axis of its batch dimension, -1 meaning "not mapped" (the input is
// shared by every example); an output's out_axis is where its batch dimension goes. Empty in_axes /
// out_axes mean 0 for every input / output.
#pragma once

#include <functional>
#include <vector>

#include "kiln/array.h"

namespace kiln {

std::function<array(const array&)> vmap(const std::function<array(const array&)>& fun, int in_axis = 0,
                                        int out_axis = 0);

std::function<array(const array&, const array&)> vmap(const std::function<array(const array&, const array&)>& fun,
                                                      int in_axis_a = 0, int in_axis_b = 0, int out_axis = 0);

std::function<std::vector<array>(const std::vector<array>&)> vmap(
    const std::function<std::vector<array>(const std::vector<array>&)>& fun, const std::vector<int>& in_axes = {},
    const std::vector<int>& out_axes = {});

}  // namespace kiln
