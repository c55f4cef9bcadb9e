// Shared by the fused-primitive rows (fast_*.cpp): the arity check and the sub-family definitions.
#pragma once

#include <string>
#include <vector>

#include "kiln/array.h"
#include "kiln/primitive.h"

namespace kiln::fastk {

// Throws "[api] Expected lo..hi inputs but got n." (a malformed file).
void check_arity(const char* api, const std::vector<ArraySpec>& in, size_t lo, size_t hi);

// Definitions of the sub-families (called from register_fast()).
void define_norms();
void define_rope();
void define_sdpa();

}  // namespace kiln::fastk
