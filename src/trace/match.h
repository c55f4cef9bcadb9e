// Matching a call to a stored signature (spec 4.3); used by import calls and by the exporter's
// duplicate-signature check.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kiln/export.h"

namespace kiln::detail {

using SortedKwargs = std::vector<std::pair<std::string, array>>;
SortedKwargs sort_kwargs(const Kwargs& kwargs);

// MLX's rule: same input count; every stored keyword name present in the call; args compared with
// stored inputs 0.., then the call's keyword values in key order with the following stored inputs;
// equal dtype and rank, and equal shape unless shapeless.
bool signature_matches(const std::vector<std::string>& stored_keys, const std::vector<ArraySpec>& stored,
                       const Args& args, const SortedKwargs& kwargs, bool shapeless);

// The "[import_function::call] No imported function found ..." message.
std::string no_match_message(const std::vector<const FunctionInfo*>& functions, const Args& args,
                             const SortedKwargs& kwargs);

}  // namespace kiln::detail
