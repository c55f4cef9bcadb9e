// Export callback events (spec 4.8): the record as a sequence of dictionaries instead of bytes.
#pragma once

#include <unordered_set>

#include "format/record.h"

namespace kiln::format {

// The names A, B, ..., Z, AA, AB, ... (bijective base 26) for the 1-based `n`.
std::string callback_name(uint64_t n);

// Sends inputs, keyword_inputs, outputs, constants (those not in `reported`, which is then
// updated) and one primitive event per tape node. Arguments keep every state value except the
// zero-byte placeholder, including Dtype and optional values (MLX 0.30.1 drops those). With
// `implied`, fields no layout stores but the release implies (DivMod's floor) are kept too, in schema
// order: converters need them, MLX's callbacks do not have them.
void emit_events(const Record& rec, const ExportCallback& callback, std::unordered_set<uint64_t>& reported,
                 bool implied = false);

}  // namespace kiln::format
