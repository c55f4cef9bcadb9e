// Helpers shared by the op builders of every family.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "kiln/array.h"
#include "kiln/primitive.h"

namespace kiln::detail {

// Axis in [-ndim, ndim) to [0, ndim); otherwise throws "[api] <noun> <axis> <verb> <ndim> dimensions.",
// the op's own MLX wording (e.g. "Invalid axis", "for array with").
int check_axis(int axis, int ndim, const char* api, const char* noun, const char* verb);
// check_axis with "[api] Axis a is out of bounds for array with n dimensions."
int normalize_axis(int axis, int ndim, const char* api);
// Sorted, deduplicated normalized axes; throws on duplicates.
std::vector<int> normalize_axes(const std::vector<int>& axes, int ndim, const char* api);
// NumPy broadcasting; throws "[broadcast_shapes] Shapes (a) and (b) cannot be broadcast."
Shape broadcast_shapes(const Shape& a, const Shape& b);
std::string shape_str(const Shape& s);
// MLX's at_least_float: integers and bool compute in float32, inexact types keep their dtype.
inline Dtype at_least_float(Dtype t) { return is_inexact(t) ? t : float32; }
// How many inputs a row of the primitive table takes: a fixed count, or {min, max} (max -1: any number).
struct Arity {
  int min, max;
  Arity(int n) : min(n), max(n) {}  // NOLINT: implicit, rows read `row("Abs", 1, ...)`
  Arity(int lo, int hi) : min(lo), max(hi) {}
};
// The members of a row that most primitives leave at PrimitiveDef's defaults.
struct RowOptions {
  int num_outputs = 1;
  unsigned flags = 0;
  NameFn display = nullptr;
  bool shapeless = true;
  CheckFn check = nullptr;
};
// A row of the primitive table (the one place the families assemble PrimitiveDef): name, arity, state
// schema and output rule, then whatever differs from the defaults. Kernels are registered by each
// backend (src/backend/cpu/kernels/<family>/), not here.
PrimitiveDef row(std::string name, Arity inputs, std::vector<Field> fields, InferFn infer, RowOptions opt = {});
// The primitive row named `name` (cached by the caller in a static).
const PrimitiveDef& def(const char* name);

}  // namespace kiln::detail
