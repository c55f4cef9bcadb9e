// kiln::linalg: norms and decompositions, with MLX's names, signatures and defaults (mlx/linalg.h,
// MLX 0.30.1). The decompositions run on the CPU through LAPACK; as in MLX, passing a GPU stream is an
// error. Inputs are float32 or float64 (svd, eig, eigvals, eigh and eigvalsh also take complex64).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/array.h"

namespace kiln::linalg {

// Vector norms (one axis) and matrix norms (two axes); no axis means every axis (flattened for the
// default 2-norm).
array norm(const array& a, const double ord, const std::optional<std::vector<int>>& axis = std::nullopt,
           bool keepdims = false, StreamOrDevice s = {});
inline array norm(const array& a, const double ord, int axis, bool keepdims = false, StreamOrDevice s = {}) {
  return norm(a, ord, std::vector<int>{axis}, keepdims, s);
}
// ord "fro" / "f" (Frobenius) or "nuc" (nuclear), matrices only.
array norm(const array& a, const std::string& ord, const std::optional<std::vector<int>>& axis = std::nullopt,
           bool keepdims = false, StreamOrDevice s = {});
inline array norm(const array& a, const std::string& ord, int axis, bool keepdims = false, StreamOrDevice s = {}) {
  return norm(a, ord, std::vector<int>{axis}, keepdims, s);
}
array norm(const array& a, const std::optional<std::vector<int>>& axis = std::nullopt, bool keepdims = false,
           StreamOrDevice s = {});
inline array norm(const array& a, int axis, bool keepdims = false, StreamOrDevice s = {}) {
  return norm(a, std::vector<int>{axis}, keepdims, s);
}

// A = Q R with Q (..., M, K) orthonormal columns and R (..., K, N) upper triangular, K = min(M, N).
std::pair<array, array> qr(const array& a, StreamOrDevice s = {});

// A = U diag(S) Vᵀ: {U (M×M), S (min(M, N)), Vᵀ (N×N)}, or {S} without compute_uv.
std::vector<array> svd(const array& a, bool compute_uv, StreamOrDevice s = {});
inline std::vector<array> svd(const array& a, StreamOrDevice s = {}) { return svd(a, true, s); }

array inv(const array& a, StreamOrDevice s = {});
// Inverse of a triangular matrix (the other triangle is ignored and zero in the result).
array tri_inv(const array& a, bool upper = false, StreamOrDevice s = {});
// Cholesky factor L (A = L Lᵀ), or U (A = Uᵀ U) when `upper`; the other triangle is zero.
array cholesky(const array& a, bool upper = false, StreamOrDevice s = {});
// Moore–Penrose pseudo-inverse, through the SVD.
array pinv(const array& a, StreamOrDevice s = {});
// The inverse of A from its Cholesky factor.
array cholesky_inv(const array& a, bool upper = false, StreamOrDevice s = {});

// LU with partial pivoting: {P, L, U} with A = L[P] @ U (P holds row indices, uint32).
std::vector<array> lu(const array& a, StreamOrDevice s = {});
// The packed LU matrix and the 0-based pivots of LAPACK's getrf.
std::pair<array, array> lu_factor(const array& a, StreamOrDevice s = {});
array solve(const array& a, const array& b, StreamOrDevice s = {});
array solve_triangular(const array& a, const array& b, bool upper = false, StreamOrDevice s = {});

array cross(const array& a, const array& b, int axis = -1, StreamOrDevice s = {});

// Eigen-decomposition of a general square matrix: complex64 eigenvalues and eigenvectors (in columns).
std::pair<array, array> eig(const array& a, StreamOrDevice s = {});
array eigvals(const array& a, StreamOrDevice s = {});
// Symmetric / Hermitian matrices: ascending real eigenvalues, orthonormal eigenvectors in columns.
// UPLO picks the triangle that is read ("L" or "U").
array eigvalsh(const array& a, std::string UPLO = "L", StreamOrDevice s = {});
std::pair<array, array> eigh(const array& a, std::string UPLO = "L", StreamOrDevice s = {});

}  // namespace kiln::linalg
