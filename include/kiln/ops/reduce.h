// kiln ops: reductions, arg-reductions, softmax / logsumexp, statistics and cumulative scans.
// Names, overloads and defaults follow mlx/ops.h (MLX 0.30.1).
#pragma once

#include <vector>

#include "kiln/array.h"

namespace kiln {

// ---- boolean reductions (output bool) ----
array all(const array& a, bool keepdims, StreamOrDevice s = {});
inline array all(const array& a, StreamOrDevice s = {}) { return all(a, false, s); }
array all(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array all(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

array any(const array& a, bool keepdims, StreamOrDevice s = {});
inline array any(const array& a, StreamOrDevice s = {}) { return any(a, false, s); }
array any(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array any(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

// ---- arithmetic reductions. Integers accumulate in (u)int32, or (u)int64 for 8-byte types; bool sums to int32 ----
array sum(const array& a, bool keepdims, StreamOrDevice s = {});
inline array sum(const array& a, StreamOrDevice s = {}) { return sum(a, false, s); }
array sum(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array sum(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

array prod(const array& a, bool keepdims, StreamOrDevice s = {});
inline array prod(const array& a, StreamOrDevice s = {}) { return prod(a, false, s); }
array prod(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array prod(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

array max(const array& a, bool keepdims, StreamOrDevice s = {});
inline array max(const array& a, StreamOrDevice s = {}) { return max(a, false, s); }
array max(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array max(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

array min(const array& a, bool keepdims, StreamOrDevice s = {});
inline array min(const array& a, StreamOrDevice s = {}) { return min(a, false, s); }
array min(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array min(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

// ---- index of the extreme value (uint32). Without an axis, of the flattened array ----
array argmin(const array& a, bool keepdims, StreamOrDevice s = {});
inline array argmin(const array& a, StreamOrDevice s = {}) { return argmin(a, false, s); }
array argmin(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

array argmax(const array& a, bool keepdims, StreamOrDevice s = {});
inline array argmax(const array& a, StreamOrDevice s = {}) { return argmax(a, false, s); }
array argmax(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

// ---- statistics (at least float) ----
array mean(const array& a, bool keepdims, StreamOrDevice s = {});
inline array mean(const array& a, StreamOrDevice s = {}) { return mean(a, false, s); }
array mean(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array mean(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

array var(const array& a, bool keepdims, int ddof = 0, StreamOrDevice s = {});
inline array var(const array& a, StreamOrDevice s = {}) { return var(a, false, 0, s); }
array var(const array& a, const std::vector<int>& axes, bool keepdims = false, int ddof = 0, StreamOrDevice s = {});
array var(const array& a, int axis, bool keepdims = false, int ddof = 0, StreamOrDevice s = {});

array std(const array& a, bool keepdims, int ddof = 0, StreamOrDevice s = {});
inline array std(const array& a, StreamOrDevice s = {}) { return std(a, false, 0, s); }
array std(const array& a, const std::vector<int>& axes, bool keepdims = false, int ddof = 0, StreamOrDevice s = {});
array std(const array& a, int axis, bool keepdims = false, int ddof = 0, StreamOrDevice s = {});

// The middle value (mean of the two middle values for an even count) along the axes; at least float.
array median(const array& a, bool keepdims, StreamOrDevice s = {});
inline array median(const array& a, StreamOrDevice s = {}) { return median(a, false, s); }
array median(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array median(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

// ---- log-sum-exp and softmax ----
array logsumexp(const array& a, bool keepdims, StreamOrDevice s = {});
inline array logsumexp(const array& a, StreamOrDevice s = {}) { return logsumexp(a, false, s); }
array logsumexp(const array& a, const std::vector<int>& axes, bool keepdims = false, StreamOrDevice s = {});
array logsumexp(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {});

array softmax(const array& a, const std::vector<int>& axes, bool precise = false, StreamOrDevice s = {});
array softmax(const array& a, bool precise = false, StreamOrDevice s = {});
inline array softmax(const array& a, int axis, bool precise = false, StreamOrDevice s = {}) {
  return softmax(a, std::vector<int>{axis}, precise, s);
}

// ---- cumulative scans. Without an axis, of the flattened array ----
array cumsum(const array& a, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
array cumsum(const array& a, int axis, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
array cumprod(const array& a, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
array cumprod(const array& a, int axis, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
array cummax(const array& a, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
array cummax(const array& a, int axis, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
array cummin(const array& a, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
array cummin(const array& a, int axis, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
array logcumsumexp(const array& a, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});
array logcumsumexp(const array& a, int axis, bool reverse = false, bool inclusive = true, StreamOrDevice s = {});

// The number of elements of `a` along `axes` (or its reciprocal) as a 0-d array of `dtype`. A constant,
// except under a shapeless trace, where it is a NumberOfElements node so the graph stays shape-generic.
array number_of_elements(const array& a, std::vector<int> axes, bool inverted, Dtype dtype = int32,
                         StreamOrDevice s = {});

}  // namespace kiln
