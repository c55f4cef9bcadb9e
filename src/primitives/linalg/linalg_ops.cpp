// kiln::linalg ops: validation and graph construction for the decompositions (whose kernels are in
// backend/cpu/kernels/linalg/linalg.cpp) and the composite ops built from them (norm, pinv, cholesky_inv,
// lu, solve, cross). The graphs match MLX's node for node, so traced functions export the same tapes.
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "kiln/linalg.h"
#include "kiln/ops/elementwise.h"
#include "kiln/ops/index.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
#include "primitives/common.h"

namespace kiln::linalg {

using detail::at_least_float;

namespace {

void check_cpu_stream(const StreamOrDevice& s, const std::string& prefix) {
  if (to_stream(s).device == Device::gpu) {
    throw std::invalid_argument(prefix +
                                " This op is not yet supported on the GPU. Explicitly pass a CPU stream to run it.");
  }
}

void check_float(Dtype t, const std::string& prefix) {
  if (t != float32 && t != float64) {
    std::ostringstream os;
    os << prefix << " Arrays must have type float32 or float64. Received array with type " << t << ".";
    throw std::invalid_argument(os.str());
  }
}

void check_float_or_complex(Dtype t, const std::string& prefix) {
  if (t != float32 && t != float64 && t != complex64) {
    std::ostringstream os;
    os << prefix << " Arrays must have type float32, float64 or complex64. Received array with type " << t << ".";
    throw std::invalid_argument(os.str());
  }
}

void check_ndim(const array& a, const std::string& prefix, const char* what = "Arrays must") {
  if (a.ndim() < 2) {
    std::ostringstream os;
    os << prefix << " " << what << " have >= 2 dimensions. Received array with " << a.ndim() << " dimensions.";
    throw std::invalid_argument(os.str());
  }
}

array l2_norm(const array& a, const std::vector<int>& axis, bool keepdims, StreamOrDevice s) {
  if (a.dtype() == complex64) return sqrt(sum(multiply(abs(a, s), abs(a, s), s), axis, keepdims, s), s);
  return sqrt(sum(square(a, s), axis, keepdims, s), s);
}

array vector_norm(const array& a, double ord, const std::vector<int>& axis, bool keepdims, StreamOrDevice s) {
  const Dtype t = at_least_float(a.dtype());
  const double inf = std::numeric_limits<double>::infinity();
  if (ord == 0.0) return astype(sum(not_equal(a, array(0), s), axis, keepdims, s), t, s);
  if (ord == 1.0) return astype(sum(abs(a, s), axis, keepdims, s), t, s);
  if (ord == 2.0) return l2_norm(a, axis, keepdims, s);
  if (ord == inf) return astype(max(abs(a, s), axis, keepdims, s), t, s);
  if (ord == -inf) return astype(min(abs(a, s), axis, keepdims, s), t, s);
  return power(sum(power(abs(a, s), array(ord, t), s), axis, keepdims, s), array(1.0 / ord, t), s);
}

// `a` with the two norm axes moved last (row axis, then column axis).
array as_matrices(const array& a, int row, int col, StreamOrDevice s) {
  return row > col ? moveaxis(moveaxis(a, row, -1, s), col, -1, s) : moveaxis(moveaxis(a, col, -1, s), row, -2, s);
}

array keep_matrix_dims(array r, int row, int col, bool keepdims, StreamOrDevice s) {
  if (!keepdims) return r;
  return expand_dims(r, row < col ? std::vector<int>{row, col} : std::vector<int>{col, row}, s);
}

array matrix_norm(const array& a, double ord, const std::vector<int>& axis, bool keepdims, StreamOrDevice s) {
  const Dtype t = at_least_float(a.dtype());
  const double inf = std::numeric_limits<double>::infinity();
  int row = axis[0], col = axis[1];
  // Reducing one axis first shifts the other when it lies after it (and dims are not kept).
  if (ord == 1.0 || ord == -1.0) {
    col -= (!keepdims && col > row && col > 0);
    array colsum = sum(abs(a, s), row, keepdims, s);
    return astype(ord == 1.0 ? max(colsum, col, keepdims, s) : min(colsum, col, keepdims, s), t, s);
  }
  if (ord == inf || ord == -inf) {
    row -= (!keepdims && row > col && row > 0);
    array rowsum = sum(abs(a, s), col, keepdims, s);
    return astype(ord == inf ? max(rowsum, row, keepdims, s) : min(rowsum, row, keepdims, s), t, s);
  }
  if (ord == 2.0 || ord == -2.0) {
    const int nd = static_cast<int>(a.ndim());
    row = row < 0 ? row + nd : row;
    col = col < 0 ? col + nd : col;
    array sv = svd(as_matrices(a, row, col, s), false, s).at(0);
    sv = ord == 2.0 ? max(sv, -1, false, s) : min(sv, -1, false, s);
    return astype(keep_matrix_dims(sv, row, col, keepdims, s), t, s);
  }
  std::ostringstream os;
  os << "[linalg::norm] Invalid ord " << ord << " for matrix norm.";
  throw std::invalid_argument(os.str());
}

array matrix_norm(const array& a, const std::string& ord, const std::vector<int>& axis, bool keepdims,
                  StreamOrDevice s) {
  if (ord == "f" || ord == "fro") return l2_norm(a, axis, keepdims, s);
  if (ord == "nuc") {
    const int nd = static_cast<int>(a.ndim());
    const int row = axis[0] < 0 ? axis[0] + nd : axis[0];
    const int col = axis[1] < 0 ? axis[1] + nd : axis[1];
    array r = sum(svd(as_matrices(a, row, col, s), false, s).at(0), -1, false, s);
    return keep_matrix_dims(r, row, col, keepdims, s);
  }
  throw std::invalid_argument("[linalg::norm] Invalid ord value '" + ord + "' for matrix norm.");
}

std::vector<int> all_axes(const array& a, const std::optional<std::vector<int>>& axis) {
  if (axis) return *axis;
  std::vector<int> ax(a.ndim());
  std::iota(ax.begin(), ax.end(), 0);
  return ax;
}

void validate_eig(const array& a, const StreamOrDevice& s, const std::string& fname) {
  check_cpu_stream(s, fname);
  check_float_or_complex(a.dtype(), fname);
  check_ndim(a, fname);
  if (a.shape(-1) != a.shape(-2)) throw std::invalid_argument(fname + " Only defined for square matrices.");
}

void validate_uplo(const std::string& uplo, const std::string& fname) {
  if (uplo != "L" && uplo != "U") {
    throw std::invalid_argument(fname + " UPLO must be 'L' or 'U' but found '" + uplo + "'.");
  }
}

void validate_lu(const array& a, const StreamOrDevice& s, const std::string& fname) {
  check_cpu_stream(s, fname);
  check_float(a.dtype(), fname);
  check_ndim(a, fname);
}

std::vector<array> luf(const array& a, StreamOrDevice s) {
  const int M = a.shape(-2), N = a.shape(-1);
  Shape piv(a.shape().begin(), a.shape().end() - 2);
  piv.push_back(std::min(M, N));
  Shape rows(a.shape().begin(), a.shape().end() - 1);
  static const PrimitiveDef& d = detail::def("LUF");
  return make_arrays(d, {}, {astype(a, a.dtype(), s)}, {{a.shape(), a.dtype()}, {piv, uint32}, {rows, uint32}},
                     to_stream(s));
}

void validate_solve(const array& a, const array& b, const StreamOrDevice& s, const std::string& fname) {
  check_cpu_stream(s, fname);
  if (a.ndim() < 2) {
    std::ostringstream os;
    os << fname << " First input must have >= 2 dimensions. Received array with " << a.ndim() << " dimensions.";
    throw std::invalid_argument(os.str());
  }
  if (b.ndim() < 1) {
    std::ostringstream os;
    os << fname << " Second input must have >= 1 dimensions. Received array with " << b.ndim() << " dimensions.";
    throw std::invalid_argument(os.str());
  }
  if (a.shape(-1) != a.shape(-2)) {
    std::ostringstream os;
    os << fname << " First input must be a square matrix. Received array with shape " << a.shape() << ".";
    throw std::invalid_argument(os.str());
  }
  const int last = b.ndim() > 1 ? -2 : -1;
  if (a.shape(-1) != b.shape(last)) {
    std::ostringstream os;
    os << fname << " Last dimension of first input with shape " << a.shape()
       << " must match second to last dimension of second input with shape " << b.shape() << ".";
    throw std::invalid_argument(os.str());
  }
  const Dtype t = promote_types(a.dtype(), b.dtype());
  if (t != float32 && t != float64) {
    std::ostringstream os;
    os << fname << " Input arrays must promote to float32 or float64.  Received arrays with type " << a.dtype()
       << " and " << b.dtype() << ".";
    throw std::invalid_argument(os.str());
  }
}

array inv_impl(const array& a, bool tri, bool upper, StreamOrDevice s) {
  check_cpu_stream(s, "[linalg::inv]");
  check_float(a.dtype(), "[linalg::inv]");
  check_ndim(a, "[linalg::inv]");
  if (a.shape(-1) != a.shape(-2)) {
    throw std::invalid_argument("[linalg::inv] Inverses are only defined for square matrices.");
  }
  static const PrimitiveDef& d = detail::def("Inverse");
  return make_array(d, State{tri, upper}, {a}, {{a.shape(), a.dtype()}}, to_stream(s));
}

}  // namespace

array norm(const array& a, const std::optional<std::vector<int>>& axis, bool keepdims, StreamOrDevice s) {
  if (!axis) return norm(flatten(a, s), std::vector<int>{0}, keepdims, s);
  if (axis->size() > 2) throw std::invalid_argument("[linalg::norm] Received too many axes for norm.");
  return l2_norm(a, *axis, keepdims, s);
}

array norm(const array& a, const double ord, const std::optional<std::vector<int>>& axis, bool keepdims,
           StreamOrDevice s) {
  std::vector<int> ax = all_axes(a, axis);
  if (ax.size() == 1) return vector_norm(a, ord, ax, keepdims, s);
  if (ax.size() == 2) return matrix_norm(a, ord, ax, keepdims, s);
  throw std::invalid_argument("[linalg::norm] Received too many axes for norm.");
}

array norm(const array& a, const std::string& ord, const std::optional<std::vector<int>>& axis, bool keepdims,
           StreamOrDevice s) {
  std::vector<int> ax = all_axes(a, axis);
  if (ax.size() != 2) {
    std::ostringstream os;
    os << "[linalg::norm] Norm '" << ord << "' only supported for matrices, but received " << ax.size()
       << " axis/axes.";
    throw std::invalid_argument(os.str());
  }
  return matrix_norm(a, ord, ax, keepdims, s);
}

std::pair<array, array> qr(const array& a, StreamOrDevice s) {
  check_cpu_stream(s, "[linalg::qr]");
  check_float(a.dtype(), "[linalg::qr]");
  check_ndim(a, "[linalg::qr]");
  const int k = std::min(a.shape(-2), a.shape(-1));
  Shape q = a.shape(), r = a.shape();
  q.back() = k;
  r[r.size() - 2] = k;
  static const PrimitiveDef& d = detail::def("QRF");
  auto out = make_arrays(d, {}, {astype(a, a.dtype(), s)}, {{q, a.dtype()}, {r, a.dtype()}}, to_stream(s));
  return {out[0], out[1]};
}

std::vector<array> svd(const array& a, bool compute_uv, StreamOrDevice s) {
  check_cpu_stream(s, "[linalg::svd]");
  check_float_or_complex(a.dtype(), "[linalg::svd]");
  check_ndim(a, "[linalg::svd]", "Input array must");
  static const PrimitiveDef& d = detail::def("SVD");
  State st{compute_uv};
  return make_arrays(d, st, {a}, d.infer(st, {{a.shape(), a.dtype()}}), to_stream(s));
}

array inv(const array& a, StreamOrDevice s) { return inv_impl(a, /*tri=*/false, /*upper=*/true, s); }

array tri_inv(const array& a, bool upper, StreamOrDevice s) { return inv_impl(a, /*tri=*/true, upper, s); }

array cholesky(const array& a, bool upper, StreamOrDevice s) {
  check_cpu_stream(s, "[linalg::cholesky]");
  check_float(a.dtype(), "[linalg::cholesky]");
  check_ndim(a, "[linalg::cholesky]");
  if (a.shape(-1) != a.shape(-2)) {
    throw std::invalid_argument(
        "[linalg::cholesky] Cholesky decomposition is only defined for square matrices.");
  }
  static const PrimitiveDef& d = detail::def("Cholesky");
  return make_array(d, State{upper}, {a}, {{a.shape(), a.dtype()}}, to_stream(s));
}

array pinv(const array& a, StreamOrDevice s) {
  check_cpu_stream(s, "[linalg::pinv]");
  check_float(a.dtype(), "[linalg::pinv]");
  check_ndim(a, "[linalg::pinv]");
  const int m = a.shape(-2), n = a.shape(-1), k = std::min(m, n);
  auto usv = svd(a, true, s);
  array U = usv[0], S = usv[1], V = usv[2];
  // Keep the first k columns of U and rows of Vᵀ, then A⁺ = V diag(1/S) Uᵀ with small S dropped.
  Shape start(a.ndim(), 0), stop = a.shape();
  const size_t i = a.ndim() - 2, j = a.ndim() - 1;
  stop[i] = m;
  stop[j] = k;
  U = swapaxes(slice(U, start, stop, s), -1, -2, s);
  stop[i] = k;
  stop[j] = n;
  V = swapaxes(slice(V, start, stop, s), -1, -2, s);
  S = expand_dims(S, -2, s);
  const double eps = a.dtype() == float64 ? std::numeric_limits<double>::epsilon()
                                          : static_cast<double>(std::numeric_limits<float>::epsilon());
  const double rcond = 10. * std::max(m, n) * eps;
  array cutoff = multiply(array(rcond, a.dtype()), max(S, -1, true, s), s);
  array rS = where(greater(S, cutoff, s), reciprocal(S, s), array(0.0f, a.dtype()), s);
  return matmul(multiply(V, rS, s), U, s);
}

array cholesky_inv(const array& L, bool upper, StreamOrDevice s) {
  check_cpu_stream(s, "[linalg::cholesky_inv]");
  check_float(L.dtype(), "[linalg::cholesky_inv]");
  check_ndim(L, "[linalg::cholesky_inv]");
  if (L.shape(-1) != L.shape(-2)) {
    throw std::invalid_argument("[linalg::cholesky_inv] Cholesky inverse is only defined for square matrices.");
  }
  array Li = tri_inv(L, upper, s);
  return upper ? matmul(Li, swapaxes(Li, -1, -2, s), s) : matmul(swapaxes(Li, -1, -2, s), Li, s);
}

std::vector<array> lu(const array& a, StreamOrDevice s) {
  validate_lu(a, s, "[linalg::lu]");
  auto out = luf(a, s);
  array L = tril(out[0], -1, s), U = triu(out[0], 0, s);
  const int M = a.shape(-2), N = a.shape(-1), K = std::min(M, N);
  if (N != K) {
    Shape stop = L.shape();
    stop.back() = K;
    L = slice(L, Shape(L.ndim(), 0), stop, s);
  } else if (M != K) {
    Shape stop = U.shape();
    stop[U.ndim() - 2] = K;
    U = slice(U, Shape(U.ndim(), 0), stop, s);
  }
  L = add(L, eye(M, K, s), s);
  return {out[2], L, U};
}

std::pair<array, array> lu_factor(const array& a, StreamOrDevice s) {
  validate_lu(a, s, "[linalg::lu_factor]");
  auto out = luf(a, s);
  return {out[0], out[1]};
}

array solve(const array& a, const array& b, StreamOrDevice s) {
  validate_solve(a, b, s, "[linalg::solve]");
  auto plu = lu(a, s);
  // A = (L U)[P], so L U x = b[argsort(P)].
  array perm = argsort(plu[0], -1, s);
  int axis = -1;
  if (b.ndim() >= 2) {
    perm = expand_dims(perm, -1, s);
    axis = -2;
  }
  array pb = take_along_axis(b, perm, axis, s);
  array y = solve_triangular(plu[1], pb, /*upper=*/false, s);
  return solve_triangular(plu[2], y, /*upper=*/true, s);
}

array solve_triangular(const array& a, const array& b, bool upper, StreamOrDevice s) {
  validate_solve(a, b, s, "[linalg::solve_triangular]");
  return matmul(tri_inv(a, upper, s), b, s);
}

array cross(const array& a, const array& b, int axis, StreamOrDevice s) {
  auto check_axis = [axis](const array& x) {
    detail::check_axis(axis, static_cast<int>(x.ndim()), "linalg::cross", "axis", "invalid for array with");
    if (x.shape(axis) < 2 || x.shape(axis) > 3) {
      throw std::invalid_argument("[linalg::cross] The specified axis must have size 2 or 3.");
    }
  };
  check_axis(a);
  check_axis(b);
  const bool a2 = a.shape(axis) == 2, b2 = b.shape(axis) == 2;
  const Dtype t = promote_types(a.dtype(), b.dtype());
  Shape sa = a.shape(), sb = b.shape();
  sa[axis < 0 ? axis + a.ndim() : axis] = 3;
  sb[axis < 0 ? axis + b.ndim() : axis] = 3;
  Shape shape = detail::broadcast_shapes(sa, sb);
  if (axis < 0) axis += static_cast<int>(shape.size());
  shape[axis] = a2 ? 2 : 3;
  array x = broadcast_to(astype(a, t, s), shape, s);
  shape[axis] = b2 ? 2 : 3;
  array y = broadcast_to(astype(b, t, s), shape, s);
  auto xs = split(x, a2 ? 2 : 3, axis, s);
  auto ys = split(y, b2 ? 2 : 3, axis, s);
  // A missing third component is zero, which removes terms from the general formula.
  std::vector<array> parts;
  if (a2 && b2) {
    array z = zeros_like(xs[0], s);
    parts = {z, z};
  } else if (b2) {
    parts = {negative(multiply(xs[2], ys[1], s), s), multiply(xs[2], ys[0], s)};
  } else if (a2) {
    parts = {multiply(xs[1], ys[2], s), negative(multiply(xs[0], ys[2], s), s)};
  } else {
    parts = {subtract(multiply(xs[1], ys[2], s), multiply(xs[2], ys[1], s), s),
             subtract(multiply(xs[2], ys[0], s), multiply(xs[0], ys[2], s), s)};
  }
  parts.push_back(subtract(multiply(xs[0], ys[1], s), multiply(xs[1], ys[0], s), s));
  return concatenate(parts, axis, s);
}

std::pair<array, array> eig(const array& a, StreamOrDevice s) {
  validate_eig(a, s, "[linalg::eig]");
  Shape vals(a.shape().begin(), a.shape().end() - 1);
  static const PrimitiveDef& d = detail::def("Eig");
  auto out = make_arrays(d, State{true}, {a}, {{vals, complex64}, {a.shape(), complex64}}, to_stream(s));
  return {out[0], out[1]};
}

array eigvals(const array& a, StreamOrDevice s) {
  validate_eig(a, s, "[linalg::eigvals]");
  Shape vals(a.shape().begin(), a.shape().end() - 1);
  static const PrimitiveDef& d = detail::def("Eig");
  return make_array(d, State{false}, {a}, {{vals, complex64}}, to_stream(s));
}

array eigvalsh(const array& a, std::string UPLO, StreamOrDevice s) {
  validate_eig(a, s, "[linalg::eigvalsh]");
  validate_uplo(UPLO, "[linalg::eigvalsh]");
  Shape vals(a.shape().begin(), a.shape().end() - 1);
  const Dtype vt = a.dtype() == complex64 ? float32 : a.dtype();
  static const PrimitiveDef& d = detail::def("Eigh");
  return make_array(d, State{std::move(UPLO), false}, {a}, {{vals, vt}}, to_stream(s));
}

std::pair<array, array> eigh(const array& a, std::string UPLO, StreamOrDevice s) {
  validate_eig(a, s, "[linalg::eigh]");
  validate_uplo(UPLO, "[linalg::eigh]");
  Shape vals(a.shape().begin(), a.shape().end() - 1);
  const Dtype vt = a.dtype() == complex64 ? float32 : a.dtype();
  static const PrimitiveDef& d = detail::def("Eigh");
  auto out = make_arrays(d, State{std::move(UPLO), true}, {a}, {{vals, vt}, {a.shape(), a.dtype()}}, to_stream(s));
  return {out[0], out[1]};
}

}  // namespace kiln::linalg
