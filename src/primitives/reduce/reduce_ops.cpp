// Op builders of the reduction family, with MLX 0.30.1's graphs: a keep-dims Reduce / ArgReduce node
// followed by a Squeeze when keepdims is false; reductions over size-1 axes only emit no Reduce node.
#include <cmath>
#include <numeric>
#include <set>
#include <sstream>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"
#include "primitives/reduce/reduce.h"
#include "core/mode.h"

namespace kiln {

namespace {

using namespace reduce;
using detail::at_least_float;

struct ReduceShape {
  Shape out_shape;
  std::vector<int> axes;  // normalized, ascending
  bool is_noop = true;    // every reduced axis has size 1
};

// MLX's messages ("Invalid axis ...", "Duplicate axes detected in reduction.") behind the API name, and
// MLX's exception types: std::out_of_range for an axis outside the array, invalid_argument for duplicates.
ReduceShape reduce_shape(const std::vector<int>& axes, const Shape& shape, const char* api) {
  const int ndim = static_cast<int>(shape.size());
  std::set<int> set;
  for (int ax : axes) {
    int a = ax < 0 ? ax + ndim : ax;
    if (a < 0 || a >= ndim) {
      std::ostringstream os;
      os << "[" << api << "] Invalid axis " << ax << " for array with " << ndim << " dimensions.";
      throw std::out_of_range(os.str());  // as MLX's reductions (mean and var check first: invalid_argument)
    }
    set.insert(a);
  }
  if (set.size() != axes.size()) {
    throw std::invalid_argument(std::string("[") + api + "] Duplicate axes detected in reduction.");
  }
  ReduceShape r;
  r.axes.assign(set.begin(), set.end());
  r.out_shape = shape;
  for (int a : r.axes) {
    if (shape[a] != 1) r.is_noop = false;
    r.out_shape[a] = 1;
  }
  return r;
}

std::vector<int> all_axes(const array& a) {
  std::vector<int> axes(a.ndim());
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

array reduce_node(const array& a, ReduceType type, const ReduceShape& r, Dtype t, StreamOrDevice s) {
  static const PrimitiveDef& d = detail::def("Reduce");
  return make_array(d, State{static_cast<int32_t>(type), std::vector<int32_t>(r.axes)}, {a}, {{r.out_shape, t}},
                    to_stream(s));
}

array finish(array out, const ReduceShape& r, bool keepdims, StreamOrDevice s) {
  return keepdims ? out : squeeze(out, r.axes, s);
}

array sum_like(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s, ReduceType type,
               const char* api) {
  if (axes.empty()) return a;
  ReduceShape r = reduce_shape(axes, a.shape(), api);
  Dtype t = sum_dtype(a.dtype());
  array out = r.is_noop ? (type == Sum ? astype(a, t, s) : a)  // MLX 0.30.1's prod keeps the dtype here
                        : reduce_node(a, type, r, t, s);
  return finish(out, r, keepdims, s);
}

array bool_reduce(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s, ReduceType type,
                  const char* api) {
  ReduceShape r = reduce_shape(axes, a.shape(), api);
  array out = r.is_noop ? astype(a, bool_, s) : reduce_node(a, type, r, bool_, s);
  return finish(out, r, keepdims, s);
}

array extreme(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s, ReduceType type,
              const char* api) {
  if (a.size() == 0) {
    throw std::invalid_argument(std::string("[") + api + "] Cannot " + api + " reduce zero size array.");
  }
  ReduceShape r = reduce_shape(axes, a.shape(), api);
  array out = r.is_noop ? a : reduce_node(a, type, r, a.dtype(), s);
  return finish(out, r, keepdims, s);
}

array arg_reduce(const array& a, int axis, bool keepdims, StreamOrDevice s, ArgReduceType type, const char* api) {
  if (a.size() == 0) {
    throw std::invalid_argument(std::string("[") + api + "] Cannot " + api + " reduce zero size array.");
  }
  ReduceShape r = reduce_shape({axis}, a.shape(), api);
  array out;
  if (r.is_noop) {
    out = zeros(r.out_shape, uint32, s);
  } else {
    static const PrimitiveDef& d = detail::def("ArgReduce");
    out = make_array(d, State{static_cast<int32_t>(type), static_cast<int32_t>(r.axes[0])}, {a},
                     {{r.out_shape, uint32}}, to_stream(s));
  }
  return keepdims ? out : squeeze(out, r.axes[0], s);
}

array arg_reduce_flat(const array& a, bool keepdims, StreamOrDevice s, ArgReduceType type, const char* api) {
  array result = arg_reduce(flatten(a, s), 0, true, s, type, api);
  if (keepdims && a.ndim() > 0) {
    std::vector<int> axes(a.ndim() - 1);
    std::iota(axes.begin(), axes.end(), 0);
    return expand_dims(result, axes, s);
  }
  // A 0-d input gives a 0-d index either way (MLX fails on keepdims here).
  return squeeze(result, s);
}

// True when `axes` reduce exactly the last axis (possibly with leading size-1 axes), which the
// single-axis LogSumExp and Softmax primitives handle.
bool reduces_last_axis(const array& a, const std::vector<int>& axes) {
  const int nd = static_cast<int>(a.ndim());
  if (axes.empty() || (axes.back() != nd - 1 && axes.back() != -1)) return false;
  for (int i = static_cast<int>(axes.size()) - 2; i >= 0; --i) {
    if (axes[i] + 1 != axes[i + 1] || a.shape(axes[i]) != 1) return false;
  }
  return true;
}

}  // namespace

// ---- all / any / sum / prod / max / min: each over all axes, a list of axes or one axis ----
#define KILN_REDUCTION(name, impl, type)                                                                 \
  array name(const array& a, bool keepdims, StreamOrDevice s) { return name(a, all_axes(a), keepdims, s); } \
  array name(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {           \
    return impl(a, axes, keepdims, s, type, #name);                                                      \
  }                                                                                                      \
  array name(const array& a, int axis, bool keepdims, StreamOrDevice s) {                                \
    return name(a, std::vector<int>{axis}, keepdims, s);                                                 \
  }
KILN_REDUCTION(all, bool_reduce, And)
KILN_REDUCTION(any, bool_reduce, Or)
KILN_REDUCTION(sum, sum_like, Sum)
KILN_REDUCTION(prod, sum_like, Prod)
KILN_REDUCTION(max, extreme, Max)
KILN_REDUCTION(min, extreme, Min)
#undef KILN_REDUCTION

// ---- argmin / argmax ----
array argmin(const array& a, bool keepdims, StreamOrDevice s) { return arg_reduce_flat(a, keepdims, s, ArgMin, "argmin"); }
array argmin(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return arg_reduce(a, axis, keepdims, s, ArgMin, "argmin");
}
array argmax(const array& a, bool keepdims, StreamOrDevice s) { return arg_reduce_flat(a, keepdims, s, ArgMax, "argmax"); }
array argmax(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return arg_reduce(a, axis, keepdims, s, ArgMax, "argmax");
}

// ---- number_of_elements / mean / var / std ----
array number_of_elements(const array& a, std::vector<int> axes, bool inverted, Dtype dtype, StreamOrDevice s) {
  const int nd = static_cast<int>(a.ndim());
  for (int& ax : axes) {
    if (ax < -nd || ax >= nd) {
      std::ostringstream os;
      os << "[number_of_elements] Can't get the shape for axis " << ax << " from an array with " << nd
         << " dimensions.";
      throw std::invalid_argument(os.str());
    }
    if (ax < 0) ax += nd;
  }
  if (!detail::in_shapeless_trace()) {
    double n = 1;
    for (int ax : axes) n *= a.shape()[ax];
    return array(inverted ? 1.0 / n : n, dtype);
  }
  // A shapeless graph must recompute the count from the replayed input's shape.
  static const PrimitiveDef& d = detail::def("NumberOfElements");
  return stop_gradient(
      make_array(d, State{std::vector<int32_t>(axes), inverted, dtype}, {a}, {{Shape{}, dtype}}, to_stream(s)), s);
}

namespace {
void check_axes_in_range(const array& a, const std::vector<int>& axes, const char* api) {
  const int nd = static_cast<int>(a.ndim());
  for (int ax : axes) detail::check_axis(ax, nd, api, "axis", "is out of bounds for array with");
  reduce_shape(axes, a.shape(), api);  // duplicates
}
}  // namespace

array mean(const array& a, bool keepdims, StreamOrDevice s) { return mean(a, all_axes(a), keepdims, s); }
array mean(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  check_axes_in_range(a, axes, "mean");
  Dtype dtype = at_least_float(a.dtype());
  array normalizer = number_of_elements(a, axes, true, dtype, s);
  return multiply(sum(a, axes, keepdims, s), normalizer, s);
}
array mean(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return mean(a, std::vector<int>{axis}, keepdims, s);
}

namespace {
array var_impl(const array& a, const std::vector<int>& axes, bool keepdims, int ddof, StreamOrDevice s,
               const char* api) {
  check_axes_in_range(a, axes, api);
  Dtype dtype = at_least_float(a.dtype());
  array mu = mean(a, axes, true, s);
  array v = sum(square(subtract(a, mu, s), s), axes, keepdims, s);
  if (ddof != 0) {
    array count = number_of_elements(a, axes, false, dtype, s);
    array normalizer = maximum(subtract(count, array(ddof, dtype), s), array(0, dtype), s);
    return divide(v, normalizer, s);
  }
  return multiply(v, number_of_elements(a, axes, true, dtype, s), s);
}
}  // namespace

array var(const array& a, bool keepdims, int ddof, StreamOrDevice s) { return var(a, all_axes(a), keepdims, ddof, s); }
array var(const array& a, const std::vector<int>& axes, bool keepdims, int ddof, StreamOrDevice s) {
  return var_impl(a, axes, keepdims, ddof, s, "var");
}
array var(const array& a, int axis, bool keepdims, int ddof, StreamOrDevice s) {
  return var(a, std::vector<int>{axis}, keepdims, ddof, s);
}
array std(const array& a, bool keepdims, int ddof, StreamOrDevice s) { return std(a, all_axes(a), keepdims, ddof, s); }
array std(const array& a, const std::vector<int>& axes, bool keepdims, int ddof, StreamOrDevice s) {
  return sqrt(var_impl(a, axes, keepdims, ddof, s, "std"), s);
}
array std(const array& a, int axis, bool keepdims, int ddof, StreamOrDevice s) {
  return std(a, std::vector<int>{axis}, keepdims, ddof, s);
}

// ---- logsumexp / softmax ----
array logsumexp(const array& a, bool keepdims, StreamOrDevice s) { return logsumexp(a, all_axes(a), keepdims, s); }
array logsumexp(const array& a, const std::vector<int>& axes, bool keepdims, StreamOrDevice s) {
  if (a.size() == 0) throw std::invalid_argument("[logsumexp] Received empty array.");
  if (a.ndim() == 0 && !axes.empty()) {
    throw std::invalid_argument("[logsumexp] Received non-empty axes for array with 0 dimensions.");
  }
  reduce_shape(axes, a.shape(), "logsumexp");
  if (!is_complex(a.dtype()) && reduces_last_axis(a, axes)) {
    Dtype dtype = at_least_float(a.dtype());
    Shape shape = a.shape();
    shape.back() = 1;
    static const PrimitiveDef& d = detail::def("LogSumExp");
    array out = make_array(d, State{}, {astype(a, dtype, s)}, {{shape, dtype}}, to_stream(s));
    return keepdims ? out : squeeze(out, -1, s);
  }
  // Any other axes: the same computation from element-wise ops; an infinite maximum is the answer itself.
  array maxval = stop_gradient(max(a, axes, true, s), s);
  array out = log(sum(exp(subtract(a, maxval, s), s), axes, keepdims, s), s);
  out = add(out, reshape(maxval, out.shape(), s), s);
  if (!keepdims) maxval = squeeze(maxval, axes, s);
  return where(isinf(maxval, s), maxval, out, s);
}
array logsumexp(const array& a, int axis, bool keepdims, StreamOrDevice s) {
  return logsumexp(a, std::vector<int>{axis}, keepdims, s);
}

array softmax(const array& a, const std::vector<int>& axes, bool precise, StreamOrDevice s) {
  if (a.size() == 0) return a;
  if (a.ndim() == 0 && !axes.empty()) {
    throw std::invalid_argument("[softmax] Received non-empty axes for array with 0 dimensions.");
  }
  reduce_shape(axes, a.shape(), "softmax");
  const bool cplx = is_complex(a.dtype());
  if (!cplx && reduces_last_axis(a, axes)) {
    Dtype dtype = at_least_float(a.dtype());
    static const PrimitiveDef& d = detail::def("Softmax");
    return make_array(d, State{precise}, {astype(a, dtype, s)}, {{a.shape(), dtype}}, to_stream(s));
  }
  // Other axes, as MLX 0.30.1 builds them: element-wise ops, cast back to the input dtype at the end.
  array in = (precise && !cplx) ? astype(a, float32, s) : a;
  array a_max = stop_gradient(max(in, axes, true, s), s);
  array ex = exp(subtract(in, a_max, s), s);
  return astype(divide(ex, sum(ex, axes, true, s), s), a.dtype(), s);
}
array softmax(const array& a, bool precise, StreamOrDevice s) { return softmax(a, all_axes(a), precise, s); }

}  // namespace kiln
