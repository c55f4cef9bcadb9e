// median: a composition (no primitive of its own), with MLX's semantics: the reduced axes are moved
// to the back and flattened, sorted, and the middle element (the mean of the two middle ones for an
// even count) is taken. NaNs sort last, so they reach the result only when they fall on the middle.
#include <numeric>
#include <set>
#include <string>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/index.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"

namespace kiln {

array median(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  const int nd = static_cast<int>(a.ndim());
  std::set<int> chosen;
  for (int ax : axes) {
    chosen.insert(detail::check_axis(ax, nd, "median", "axis", "is out of bounds for array with"));
  }
  if (chosen.size() != axes.size()) throw std::invalid_argument("[median] Received duplicate axis.");
  const Dtype dtype = detail::at_least_float(a.dtype());
  std::vector<int> perm;
  for (int i = 0; i < nd; ++i) {
    if (!chosen.count(i)) perm.push_back(i);
  }
  const int kept = static_cast<int>(perm.size());
  perm.insert(perm.end(), chosen.begin(), chosen.end());
  array flat = flatten(transpose(a, perm, s), kept, nd == 0 ? 0 : nd - 1, s);
  const int n = flat.shape().back();
  if (n == 0) throw std::invalid_argument("[median] Cannot take median along empty axis.");
  array sorted = sort(flat, -1, s);
  Shape start(sorted.ndim(), 0), stop = sorted.shape();
  start.back() = n / 2;
  stop.back() = n / 2 + 1;
  array mid = astype(slice(sorted, start, stop, s), dtype, s);
  if (n % 2 == 0) {
    start.back() = n / 2 - 1;
    stop.back() = n / 2;
    mid = multiply(add(mid, astype(slice(sorted, start, stop, s), dtype, s), s), array(0.5, dtype), s);
  }
  mid = squeeze(mid, -1, s);
  if (keepdims) mid = expand_dims(mid, std::vector<int>(chosen.begin(), chosen.end()), s);
  return mid;
}

array median(const array& a, bool keepdims, StreamOrDevice s) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  return median(a, axes, keepdims, s);
}

array median(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return median(a, std::vector<int>{axis}, keepdims, s);
}

}  // namespace kiln
