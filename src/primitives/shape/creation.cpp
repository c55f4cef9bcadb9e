// Array creation: the Full and Arange primitives and the composites MLX builds from them (zeros, ones,
// *_like, linspace, eye, identity, tri, tril, triu, meshgrid). CPU kernels:
// backend/cpu/kernels/shape/creation.cpp.
#include <climits>
#include <cmath>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"
#include "primitives/shape/shape_internal.h"

namespace kiln {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

// ---- Full ----

std::vector<ArraySpec> full_infer(const State&, const std::vector<ArraySpec>& in) { return {in[0]}; }

// ---- Arange ----

int arange_length(double start, double stop, double step) {
  double n = std::ceil((stop - start) / step);
  if (std::isnan(n)) fail("[arange] Cannot compute length.");
  if (n > INT_MAX) fail("[arange] Maximum size exceeded.");
  // Negative lengths (down to -inf, from a file's state) are empty; converting them to int first
  // would be undefined behaviour (fuzz finding).
  return n <= 0 ? 0 : static_cast<int>(n);
}

// The dtype is not part of the state: the op (or the file record) gives it; float32 stands in here.
std::vector<ArraySpec> arange_infer(const State& st, const std::vector<ArraySpec>&) {
  const double start = st.get<double>(0), stop = st.get<double>(1), step = st.get<double>(2);
  if (!std::isfinite(start) || !std::isfinite(stop) || std::isnan(step)) fail("[arange] Cannot compute length.");
  return {{Shape{arange_length(start, stop, step)}, float32}};
}

const PrimitiveDef& def_of(const char* name) { return detail::def(name); }

}  // namespace

namespace primitives {
void register_creation() {
  registry::define(detail::row("Full", 1, {}, full_infer));
  registry::define(detail::row("Arange", 0,
                               {{"start", FieldType::Double}, {"stop", FieldType::Double}, {"step", FieldType::Double}},
                               arange_infer));
}
}  // namespace primitives

// ---- arange and linspace ----

array arange(double start, double stop, double step, Dtype dtype, StreamOrDevice s) {
  if (dtype == bool_) fail("[arange] bool not supported for arange.");
  if (std::isnan(start) || std::isnan(step) || std::isnan(stop)) fail("[arange] Cannot compute length.");
  if (std::isinf(start) || std::isinf(stop)) fail("[arange] Cannot compute length.");
  // An infinite step in the direction of stop gives just the start.
  if (std::isinf(step) && ((step > 0 && start < stop) || (step < 0 && start > stop))) {
    return array({start}, dtype);
  }
  int n = arange_length(start, stop, step);
  static const PrimitiveDef& d = def_of("Arange");
  return make_array(d, State{start, stop, step}, {}, {{Shape{n}, dtype}}, to_stream(s));
}
array arange(double start, double stop, double step, StreamOrDevice s) { return arange(start, stop, step, float32, s); }
array arange(double start, double stop, Dtype dtype, StreamOrDevice s) { return arange(start, stop, 1.0, dtype, s); }
array arange(double start, double stop, StreamOrDevice s) { return arange(start, stop, 1.0, float32, s); }
array arange(double stop, Dtype dtype, StreamOrDevice s) { return arange(0.0, stop, 1.0, dtype, s); }
array arange(double stop, StreamOrDevice s) { return arange(0.0, stop, 1.0, float32, s); }
array arange(int start, int stop, int step, StreamOrDevice s) {
  return arange(double(start), double(stop), double(step), int32, s);
}
array arange(int start, int stop, StreamOrDevice s) { return arange(double(start), double(stop), 1.0, int32, s); }
array arange(int stop, StreamOrDevice s) { return arange(0.0, double(stop), 1.0, int32, s); }

array linspace(double start, double stop, int num, Dtype dtype, StreamOrDevice s) {
  if (num < 0) fail("[linspace] number of samples, " + std::to_string(num) + ", must be non-negative.");
  if (num == 1) return astype(array({start}), dtype, s);
  array t = divide(arange(0.0, double(num), float32, s), array(num - 1, float32), s);
  array t_bar = subtract(array(1, float32), t, s);
  return astype(add(multiply(t_bar, array(start, float32), s), multiply(t, array(stop, float32), s), s), dtype, s);
}

// ---- full, zeros, ones ----

namespace {
array full_impl(const array& vals, Dtype dtype, StreamOrDevice s) {
  static const PrimitiveDef& d = def_of("Full");
  return make_array(d, {}, {astype(vals, dtype, s)}, {{vals.shape(), dtype}}, to_stream(s));
}
}  // namespace

array full(Shape shape, array vals, Dtype dtype, StreamOrDevice s) {
  for (auto d : shape) {
    if (d < 0) fail("[full] Negative dimensions not allowed.");
  }
  return full_impl(broadcast_to(vals, shape, s), dtype, s);
}

array full(Shape shape, array vals, StreamOrDevice s) {
  Dtype t = vals.dtype();
  return full(std::move(shape), std::move(vals), t, s);
}

array full_like(const array& a, array vals, Dtype dtype, StreamOrDevice s) {
  auto b = broadcast_arrays({a, std::move(vals)}, s);
  return full_impl(b[1], dtype, s);
}

array full_like(const array& a, array vals, StreamOrDevice s) { return full_like(a, std::move(vals), a.dtype(), s); }

array zeros(const Shape& shape, Dtype dtype, StreamOrDevice s) { return full(shape, array(0, dtype), s); }
array zeros_like(const array& a, StreamOrDevice s) { return full_like(a, 0, a.dtype(), s); }
array ones(const Shape& shape, Dtype dtype, StreamOrDevice s) { return full(shape, array(1, dtype), s); }
array ones_like(const array& a, StreamOrDevice s) { return full_like(a, 1, a.dtype(), s); }

// ---- eye, identity, tri, tril, triu ----

array eye(int n, int m, int k, Dtype dtype, StreamOrDevice s) {
  if (n <= 0 || m <= 0) fail("[eye] N and M must be positive integers.");
  array result = zeros({n, m}, dtype, s);
  if (k >= m || -k >= n) return result;
  const int len = k >= 0 ? std::min(n, m - k) : std::min(n + k, m);
  const int s1 = std::max(0, -k), s2 = std::max(0, k);
  array rows = arange(s1, len + s1, s), cols = arange(s2, len + s2, s);
  // MLX writes the diagonal with a Scatter (type None); without the index family, compare indices.
  if (const PrimitiveDef* sc = registry::find("Scatter")) {
    array ones_arr = ones({len, 1, 1}, dtype, s);
    return make_array(*sc, State{int32_t(4), std::vector<int32_t>{0, 1}}, {result, rows, cols, ones_arr},
                      {{Shape{n, m}, dtype}}, to_stream(s));
  }
  array l = expand_dims(arange(n, s), 1, s), r = expand_dims(arange(-k, m - k, s), 0, s);
  return astype(equal(l, r, s), dtype, s);
}

array identity(int n, Dtype dtype, StreamOrDevice s) { return eye(n, n, 0, dtype, s); }

array tri(int n, int m, int k, Dtype type, StreamOrDevice s) {
  array l = expand_dims(arange(n, s), 1, s);
  array r = expand_dims(arange(-k, m - k, s), 0, s);
  return astype(greater_equal(l, r, s), type, s);
}

array tril(array x, int k, StreamOrDevice s) {
  if (x.ndim() < 2) fail("[tril] array must be at least 2-D");
  array mask = tri(x.shape(-2), x.shape(-1), k, bool_, s);
  return where(mask, x, array(0, x.dtype()), s);
}

array triu(array x, int k, StreamOrDevice s) {
  if (x.ndim() < 2) fail("[triu] array must be at least 2-D");
  array mask = tri(x.shape(-2), x.shape(-1), k - 1, bool_, s);
  return where(mask, array(0, x.dtype()), x, s);
}

// ---- meshgrid ----

std::vector<array> meshgrid(const std::vector<array>& arrays, bool sparse, const std::string& indexing,
                            StreamOrDevice s) {
  if (indexing != "xy" && indexing != "ij") {
    fail("[meshgrid] Invalid indexing value. Valid values are 'xy' and 'ij'.");
  }
  const size_t nd = arrays.size();
  std::vector<array> out;
  for (size_t i = 0; i < nd; ++i) {
    Shape shape(nd, 1);
    shape[i] = -1;
    out.push_back(reshape(arrays[i], std::move(shape), s));
  }
  if (indexing == "xy" && nd > 1) {
    Shape shape(nd, 1);
    shape[1] = static_cast<int32_t>(arrays[0].size());
    out[0] = reshape(arrays[0], shape, s);
    shape[1] = 1;
    shape[0] = static_cast<int32_t>(arrays[1].size());
    out[1] = reshape(arrays[1], std::move(shape), s);
  }
  if (!sparse) out = broadcast_arrays(out, s);
  return out;
}

}  // namespace kiln
