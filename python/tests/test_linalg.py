"""kiln.linalg against MLX 0.30.1 (on MLX's CPU stream, where its decompositions run)."""

import numpy as np
import pytest

import kiln

mlx = pytest.importorskip("mlx.core")
from test_ops_elementwise import same  # noqa: E402

rng = np.random.default_rng(4)
A = rng.standard_normal((4, 4)).astype(np.float32)
SPD = (A @ A.T + 4 * np.eye(4)).astype(np.float32)
BATCH = rng.standard_normal((2, 3, 3)).astype(np.float32)
V = rng.standard_normal((3, 5)).astype(np.float32)
TOL = dict(rtol=1e-4, atol=1e-4)


def kl(name, *args, **kw):
    return getattr(kiln.linalg, name)(*[kiln.array(a) if isinstance(a, np.ndarray) else a for a in args], **kw)


def ml(name, *args, **kw):
    return getattr(mlx.linalg, name)(*[mlx.array(a) if isinstance(a, np.ndarray) else a for a in args],
                                     stream=mlx.cpu, **kw)


def both(name, *args, tol=TOL, **kw):
    same(kl(name, *args, **kw), ml(name, *args, **kw), **tol)


def test_norm():
    both("norm", V)
    both("norm", V, 1, 1)
    both("norm", V, ord=np.inf, axis=0)
    both("norm", V, -np.inf, -1, True)
    both("norm", V, 0.5, axis=1)
    both("norm", V, 2.0, axis=1)
    both("norm", V, "fro")
    both("norm", V, ord="nuc")
    both("norm", V, 1)
    both("norm", V, ord=-1)
    both("norm", V, np.inf)
    both("norm", V, axis=[0, 1], keepdims=True)
    both("norm", BATCH, axis=(1, 2))
    with pytest.raises(ValueError):
        kiln.linalg.norm(kiln.array(V), "bad")


def test_factorisations():
    q, r = kl("qr", A)
    np.testing.assert_allclose(np.array(q) @ np.array(r), A, **TOL)
    same(kl("qr", A)[1].abs(), ml("qr", A)[1].abs(), **TOL)
    u, s, vt = kl("svd", V)
    assert u.shape == (3, 3) and s.shape == (3,) and vt.shape == (5, 5)
    same(s, ml("svd", V)[1], **TOL)
    same(kl("svd", V, compute_uv=False), ml("svd", V, compute_uv=False), **TOL)
    both("inv", A)
    both("inv", BATCH)
    both("pinv", V)
    both("cholesky", SPD)
    both("cholesky", SPD, upper=True)
    L = np.linalg.cholesky(SPD).astype(np.float32)
    both("cholesky_inv", L)
    both("cholesky_inv", L.T.copy(), True)
    both("tri_inv", np.tril(A) + 3 * np.eye(4, dtype=np.float32))
    both("tri_inv", np.triu(A) + 3 * np.eye(4, dtype=np.float32), upper=True)
    p, l, uu = kl("lu", A)
    mp, mlo, mu = ml("lu", A)
    same([p, l, uu], [mp, mlo, mu], **TOL)
    same(list(kl("lu_factor", A)), list(ml("lu_factor", A)), **TOL)


def test_solve_cross():
    b = rng.standard_normal((4, 2)).astype(np.float32)
    both("solve", A, b)
    both("solve", A, b[:, 0])
    lo = np.tril(A) + 3 * np.eye(4, dtype=np.float32)
    both("solve_triangular", lo, b)
    both("solve_triangular", lo.T.copy(), b, upper=True)
    with pytest.raises(TypeError):
        kiln.linalg.solve_triangular(kiln.array(lo), kiln.array(b), True)  # upper is keyword-only
    x, y = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    both("cross", x, y)
    both("cross", x.T.copy(), y.T.copy(), axis=0)


def test_eig():
    both("eigvalsh", SPD)
    both("eigvalsh", SPD, UPLO="U")
    w, v = kl("eigh", SPD)
    mw, mv = ml("eigh", SPD)
    same(w, mw, **TOL)
    same(v.abs(), mv.abs(), **TOL)
    ew = np.sort_complex(np.array(kl("eigvals", SPD)))
    np.testing.assert_allclose(ew, np.sort_complex(np.array(ml("eigvals", SPD))), **TOL)
    w, v = kl("eig", A)
    assert w.dtype == kiln.complex64 and v.shape == (4, 4)
    np.testing.assert_allclose(A.astype(np.complex64) @ np.array(v), np.array(v) * np.array(w), rtol=1e-3, atol=1e-3)


def test_errors():
    with pytest.raises(ValueError):
        kiln.linalg.inv(kiln.array(V))  # not square
    with pytest.raises(ValueError):
        kiln.linalg.cholesky(kiln.array([1, 2]))
