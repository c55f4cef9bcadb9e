// kiln.linalg: norms and decompositions, as mlx.core.linalg.
#include "ops_common.h"

namespace kiln::py {

void init_linalg(nb::module_& m) {
  namespace la = kiln::linalg;
  m.def(
      "norm",
      [](nb::handle a0, nb::handle ord, nb::handle axis, bool keepdims, nb::handle stream) {
        array a = arr(a0, "norm");
        auto axes = axes_arg(axis, "norm");
        if (ord.is_none()) return la::norm(a, axes, keepdims, S(stream));
        if (PyUnicode_Check(ord.ptr())) return la::norm(a, nb::cast<std::string>(ord), axes, keepdims, S(stream));
        if (PyLong_Check(ord.ptr()) || PyFloat_Check(ord.ptr())) {
          return la::norm(a, nb::cast<double>(ord), axes, keepdims, S(stream));
        }
        throw std::invalid_argument("[norm] Expected ord to be None, a number or a string, found " + py_type_name(ord) + ".");
      },
      "a"_a, "ord"_a.none() = nb::none(), "axis"_a.none() = nb::none(), "keepdims"_a = false, nb::kw_only(),
      KILN_STREAM, "Vector (one axis) or matrix (two axes) norm; ord is a number, inf, 'fro' or 'nuc'.");
  m.def(
      "qr",
      [](nb::handle a, nb::handle stream) {
        auto [q, r] = la::qr(arr(a, "qr"), S(stream));
        return nb::make_tuple(q, r);
      },
      "a"_a, nb::kw_only(), KILN_STREAM, "QR decomposition: (Q, R) with orthonormal Q and upper-triangular R.");
  m.def(
      "svd",
      [](nb::handle a, bool compute_uv, nb::handle stream) -> nb::object {
        auto v = la::svd(arr(a, "svd"), compute_uv, S(stream));
        if (!compute_uv) return nb::cast(v[0]);
        return arrays_tuple(v);
      },
      "a"_a, "compute_uv"_a = true, nb::kw_only(), KILN_STREAM,
      "Singular value decomposition: (U, S, Vt), or S alone when compute_uv is False.");
  m.def(
      "inv", [](nb::handle a, nb::handle stream) { return la::inv(arr(a, "inv"), S(stream)); }, "a"_a, nb::kw_only(),
      KILN_STREAM, "Inverse of a square matrix (batched over leading axes).");
  m.def(
      "tri_inv",
      [](nb::handle a, bool upper, nb::handle stream) { return la::tri_inv(arr(a, "tri_inv"), upper, S(stream)); },
      "a"_a, "upper"_a = false, nb::kw_only(), KILN_STREAM, "Inverse of a lower (or upper) triangular matrix.");
  m.def(
      "cholesky",
      [](nb::handle a, bool upper, nb::handle stream) { return la::cholesky(arr(a, "cholesky"), upper, S(stream)); },
      "a"_a, "upper"_a = false, nb::kw_only(), KILN_STREAM,
      "Cholesky factor L (a = L L^T), or U (a = U^T U) when upper.");
  m.def(
      "cholesky_inv",
      [](nb::handle L, bool upper, nb::handle stream) {
        return la::cholesky_inv(arr(L, "cholesky_inv"), upper, S(stream));
      },
      "L"_a, "upper"_a = false, nb::kw_only(), KILN_STREAM, "Inverse of a matrix from its Cholesky factor.");
  m.def(
      "pinv", [](nb::handle a, nb::handle stream) { return la::pinv(arr(a, "pinv"), S(stream)); }, "a"_a,
      nb::kw_only(), KILN_STREAM, "Moore-Penrose pseudo-inverse.");
  m.def(
      "lu", [](nb::handle a, nb::handle stream) { return arrays_tuple(la::lu(arr(a, "lu"), S(stream))); }, "a"_a,
      nb::kw_only(), KILN_STREAM, "LU decomposition with partial pivoting: (P, L, U) with a = L[P] @ U.");
  m.def(
      "lu_factor",
      [](nb::handle a, nb::handle stream) {
        auto [lu, piv] = la::lu_factor(arr(a, "lu_factor"), S(stream));
        return nb::make_tuple(lu, piv);
      },
      "a"_a, nb::kw_only(), KILN_STREAM, "The packed LU matrix and the pivots of LAPACK's getrf.");
  m.def(
      "solve",
      [](nb::handle a, nb::handle b, nb::handle stream) {
        return la::solve(arr(a, "solve"), arr(b, "solve"), S(stream));
      },
      "a"_a, "b"_a, nb::kw_only(), KILN_STREAM, "x with a @ x = b for a square a.");
  m.def(
      "solve_triangular",
      [](nb::handle a, nb::handle b, bool upper, nb::handle stream) {
        return la::solve_triangular(arr(a, "solve_triangular"), arr(b, "solve_triangular"), upper, S(stream));
      },
      "a"_a, "b"_a, nb::kw_only(), "upper"_a = false, KILN_STREAM, "x with a @ x = b for a triangular a.");
  m.def(
      "cross",
      [](nb::handle a, nb::handle b, int axis, nb::handle stream) {
        return la::cross(arr(a, "cross"), arr(b, "cross"), axis, S(stream));
      },
      "a"_a, "b"_a, "axis"_a = -1, nb::kw_only(), KILN_STREAM, "Cross product of 3-vectors along an axis.");
  m.def(
      "eig",
      [](nb::handle a, nb::handle stream) {
        auto [w, v] = la::eig(arr(a, "eig"), S(stream));
        return nb::make_tuple(w, v);
      },
      "a"_a, nb::kw_only(), KILN_STREAM, "Eigenvalues and eigenvectors (columns, complex64) of a square matrix.");
  m.def(
      "eigvals", [](nb::handle a, nb::handle stream) { return la::eigvals(arr(a, "eigvals"), S(stream)); }, "a"_a,
      nb::kw_only(), KILN_STREAM, "Eigenvalues (complex64) of a square matrix.");
  m.def(
      "eigh",
      [](nb::handle a, const std::string& UPLO, nb::handle stream) {
        auto [w, v] = la::eigh(arr(a, "eigh"), UPLO, S(stream));
        return nb::make_tuple(w, v);
      },
      "a"_a, "UPLO"_a = "L", nb::kw_only(), KILN_STREAM,
      "Ascending eigenvalues and orthonormal eigenvectors of a symmetric (Hermitian) matrix.");
  m.def(
      "eigvalsh",
      [](nb::handle a, const std::string& UPLO, nb::handle stream) {
        return la::eigvalsh(arr(a, "eigvalsh"), UPLO, S(stream));
      },
      "a"_a, "UPLO"_a = "L", nb::kw_only(), KILN_STREAM, "Ascending eigenvalues of a symmetric (Hermitian) matrix.");
}

}  // namespace kiln::py
