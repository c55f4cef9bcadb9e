// Type information and small helpers with MLX's names (mlx/utils.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/array.h"
#include "kiln/dtype.h"

namespace kiln {

// Limits of an inexact type. complex64 reports its component type, float32.
// Throws std::invalid_argument for a type that is not inexact.
struct finfo {
  explicit finfo(Dtype dtype);
  Dtype dtype;
  double min;  // the lowest finite value
  double max;
  double eps;  // the difference between 1 and the next representable value
};

// Limits of an integer (or bool) type. Throws std::invalid_argument for an inexact type.
struct iinfo {
  explicit iinfo(Dtype dtype);
  Dtype dtype;
  int64_t min;
  uint64_t max;
};

// The type of the arrays promoted with one another (promote_types, left to right).
inline Dtype result_type(const array& a, const array& b) { return promote_types(a.dtype(), b.dtype()); }
inline Dtype result_type(const array& a, const array& b, const array& c) {
  return promote_types(result_type(a, b), c.dtype());
}
// Throws std::invalid_argument for an empty list.
Dtype result_type(const std::vector<array>& arrays);

// `axis` in [0, ndim): negative axes count from the end. Throws std::invalid_argument when axis is
// outside [-ndim, ndim), the message starting with `msg_prefix`.
int normalize_axis_index(int axis, int ndim, const std::string& msg_prefix = "");

}  // namespace kiln
