// Trees of arrays as MLX's Python API takes them: lists, tuples and dicts nested in any way, with
// arrays (and other values) at the leaves. Used by eval, export (a function's inputs and outputs) and,
// next, the function transforms.
#pragma once

#include <functional>
#include <vector>

#include "convert.h"

namespace kiln::py {

// Calls `visit` on every leaf of `tree` in order (dict values in insertion order).
void tree_visit(nb::handle tree, const std::function<void(nb::handle)>& visit);

// The array leaves of `tree` in order. With `strict`, a leaf that is not an array raises ValueError
// naming `api` and the leaf's type; otherwise such leaves are skipped.
std::vector<array> tree_flatten(nb::handle tree, bool strict, const char* api);

// `tree` with its array leaves replaced, in order, by `leaves[index...]` (index advances).
nb::object tree_unflatten(nb::handle tree, const std::vector<array>& leaves, size_t& index);

}  // namespace kiln::py
