// compile's fusion pass (MLX's rules): groups of element-wise entries of a traced record become one
// Compiled entry each (src/primitives/misc/compiled.h).
#pragma once

#include "format/record.h"

namespace kiln::detail {

// Rewrites `rec` (topologically ordered, simplified) in place. Going from the last entry back, each
// element-wise entry that is not a Broadcast roots a group, grown through its inputs while they are
// element-wise (unary, binary, ternary, AsType, Broadcast), on the root's stream, less than 11 steps from the root, read only by the
// group (a Broadcast read elsewhere too joins as a copy), and, where one is a function output, of the
// root's shape (it then becomes an extra output of the group). A group stops growing at 24 external
// arrays (inputs and outputs); a group of one entry is left alone. Ids of function outputs are kept.
void fuse_compiled(format::Record& rec, bool shapeless);

}  // namespace kiln::detail
