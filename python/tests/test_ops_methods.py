"""kiln.array's op methods (a.sum(), a.reshape(2, 3), a.real, ...) against MLX 0.30.1."""

import numpy as np
import pytest

import kiln

mlx = pytest.importorskip("mlx.core")
from test_ops_elementwise import same  # noqa: E402

rng = np.random.default_rng(7)
F = (rng.random((2, 3, 4)) + 0.5).astype(np.float32)
C = (F + 2j * F).astype(np.complex64)


def both(x, name, *args, **kw):
    same(getattr(kiln.array(x), name)(*args, **kw), getattr(mlx.array(x), name)(*args, **kw), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["abs", "conj", "cos", "exp", "log", "log10", "log1p", "log2", "reciprocal",
                                  "rsqrt", "sin", "sqrt", "square"])
def test_unary_methods(name):
    both(F, name)
    both(F, name, stream=None)


@pytest.mark.parametrize("name", ["all", "any", "sum", "prod", "min", "max", "mean", "logsumexp", "var", "std"])
def test_reduce_methods(name):
    both(F, name)
    both(F, name, 1)
    both(F, name, axis=[0, 2], keepdims=True)
    both(F, name, (1,), True)
    if name in ("var", "std"):
        both(F, name, 0, ddof=1)


def test_arg_and_scan_methods():
    for name in ["argmin", "argmax"]:
        both(F, name)
        both(F, name, 1)
        both(F, name, axis=2, keepdims=True)
    for name in ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]:
        both(F, name)
        both(F, name, 1)
        both(F, name, axis=-1, reverse=True, inclusive=False)


def test_shape_methods():
    both(F, "reshape", 6, 4)
    both(F, "reshape", (4, 6))
    both(F, "reshape", [-1])
    both(F, "transpose")
    both(F, "transpose", 2, 0, 1)
    both(F, "transpose", (1, 0, 2))
    both(F, "flatten")
    both(F, "flatten", 1)
    both(F, "flatten", start_axis=0, end_axis=1)
    both(F.reshape(2, 1, 12), "squeeze")
    both(F.reshape(2, 1, 12), "squeeze", 1)
    both(F.reshape(2, 1, 12, 1), "squeeze", axis=[1, 3])
    both(F, "swapaxes", 0, 2)
    both(F, "moveaxis", 0, -1)
    both(F, "moveaxis", source=2, destination=0)
    same(kiln.array(F).split(2, axis=2), mlx.array(F).split(2, axis=2))
    same(kiln.array(F).split([1, 2], 1), mlx.array(F).split([1, 2], 1))
    both(F, "diagonal")
    both(F, "diagonal", 1, 1, 2)
    both(F[0], "diag")
    both(F[0], "diag", k=1)
    both(F * 3.33, "round")
    both(F * 3.33, "round", 1)
    both(F * 3.33, "round", decimals=2)
    same(kiln.array(F).view(kiln.int32), mlx.array(F).view(mlx.int32))
    with pytest.raises(ValueError, match="reshape"):
        kiln.array(F).reshape(2, "a")


def test_real_imag():
    same(kiln.array(C).real, mlx.array(C).real)
    same(kiln.array(C).imag, mlx.array(C).imag)
    same(kiln.array(F).real, mlx.array(F).real)
    same(kiln.array(F).imag, mlx.array(F).imag)
