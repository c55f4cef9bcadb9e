// diagonal, diag and trace: compositions of gather / scatter, with MLX's argument checks and messages.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/index.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"

namespace kiln {

namespace {
// Normalized (axis1, axis2); throws with `api`'s messages.
std::pair<int, int> two_axes(const array& a, int axis1, int axis2, const char* api) {
  const int nd = static_cast<int>(a.ndim());
  const std::string tag = std::string("[") + api + "] ";
  if (nd < 2) {
    throw std::invalid_argument(tag + "Array must have at least two dimensions, but got " + std::to_string(nd) +
                                " dimensions.");
  }
  const int ax1 = axis1 < 0 ? axis1 + nd : axis1, ax2 = axis2 < 0 ? axis2 + nd : axis2;
  if (ax1 < 0 || ax1 >= nd) {
    throw std::out_of_range(tag + "Invalid axis1 " + std::to_string(axis1) + " for array with " +
                            std::to_string(nd) + " dimensions.");
  }
  if (ax2 < 0 || ax2 >= nd) {
    throw std::out_of_range(tag + "Invalid axis2 " + std::to_string(axis2) + " for array with " +
                            std::to_string(nd) + " dimensions.");
  }
  if (ax1 == ax2) throw std::invalid_argument(tag + "axis1 and axis2 cannot be the same axis");
  return {ax1, ax2};
}
}  // namespace

array diagonal(const array& a, int offset, int axis1, int axis2, StreamOrDevice s) {
  auto [ax1, ax2] = two_axes(a, axis1, axis2, "diagonal");
  const int r0 = std::max(-offset, 0), c0 = std::max(offset, 0);
  const int n = std::max(0, std::min(a.shape()[ax1] - r0, a.shape()[ax2] - c0));
  Shape sizes = a.shape();
  sizes[ax1] = 1;
  sizes[ax2] = 1;
  // One gathered slice per diagonal position: shape (n, ...a with ax1, ax2 of size 1...).
  array g = gather(a, {arange(r0, r0 + n, s), arange(c0, c0 + n, s)}, {ax1, ax2}, sizes, s);
  return moveaxis(squeeze(g, {ax1 + 1, ax2 + 1}, s), 0, -1, s);
}

array diag(const array& a, int k, StreamOrDevice s) {
  if (a.ndim() == 2) return diagonal(a, k, 0, 1, s);
  if (a.ndim() != 1) {
    throw std::invalid_argument("[diag] array must be 1-D or 2-D, got array with " + std::to_string(a.ndim()) +
                                " dimensions.");
  }
  const int m = static_cast<int>(a.size()), n = m + std::abs(k);
  const int r0 = std::max(0, -k), c0 = std::max(0, k);
  return scatter(zeros({n, n}, a.dtype(), s),
                 {arange(r0, r0 + m, 1.0, uint32, s), arange(c0, c0 + m, 1.0, uint32, s)},
                 reshape(a, {m, 1, 1}, s), {0, 1}, s);
}

array trace(const array& a, int offset, int axis1, int axis2, Dtype dtype, StreamOrDevice s) {
  two_axes(a, axis1, axis2, "trace");
  return sum(astype(diagonal(a, offset, axis1, axis2, s), dtype, s), -1, false, s);
}
array trace(const array& a, int offset, int axis1, int axis2, StreamOrDevice s) {
  return trace(a, offset, axis1, axis2, a.dtype(), s);
}
array trace(const array& a, StreamOrDevice s) { return trace(a, 0, 0, 1, s); }

}  // namespace kiln
