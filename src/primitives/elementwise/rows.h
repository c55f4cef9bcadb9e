// The element-wise rows (this folder: unary, unary math, binary, comparison and ternary rows, and the
// op builders): the infer rules they share and the registration of the sub-families. Their CPU
// kernels are in src/backend/cpu/kernels/elementwise/.
#pragma once

#include <string>
#include <vector>

#include "kiln/ops/elementwise.h"
#include "kiln/primitive.h"
#include "primitives/common.h"

namespace kiln::ew {

// ---------------------------------------------------------------------------------------------
// Infer rules

std::vector<ArraySpec> same_infer(const State&, const std::vector<ArraySpec>& in);
std::vector<ArraySpec> bool_unary_infer(const State&, const std::vector<ArraySpec>& in);
// Unary ops evaluated on inexact types only (Exp, Sin, ...): output like the input.
std::vector<ArraySpec> inexact_unary_infer(const State&, const std::vector<ArraySpec>& in);
// Erf, ErfInv: real floating types only.
std::vector<ArraySpec> float_unary_infer(const State&, const std::vector<ArraySpec>& in);
// Binary ops: both inputs must have one dtype (the op builders cast them); the shape is their
// broadcast. Returns that shape with the inputs' dtype.
ArraySpec binary_spec(const char* name, const std::vector<ArraySpec>& in);

// Throws "[name] <what> but found <dtype>." when `ok` is false.
void check_dtype(bool ok, const char* name, const char* what, Dtype found);

// ---------------------------------------------------------------------------------------------
// Registration of the sub-families (called from register_elementwise in unary.cpp, and
// register_binary).
void register_unary_math();
void register_binary();
void register_binary_compare();
void register_ternary();

}  // namespace kiln::ew
