"""kiln's reductions, scans, softmax and sorting against MLX 0.30.1."""

import numpy as np
import pytest

import kiln

mlx = pytest.importorskip("mlx.core")
from test_ops_elementwise import both, same  # noqa: E402

rng = np.random.default_rng(1)
F = rng.standard_normal((3, 4, 5)).astype(np.float32)
I = rng.integers(-5, 6, (3, 4, 5)).astype(np.int32)
B = rng.random((3, 4, 5)) > 0.3

REDUCE = ["sum", "prod", "min", "max", "mean", "median", "logsumexp", "all", "any", "var", "std"]
AXES = [None, 0, -1, 1, [0, 2], (1, 2), [], [0, 1, 2]]


@pytest.mark.parametrize("name", REDUCE)
@pytest.mark.parametrize("axis", AXES, ids=str)
def test_reduce_float(name, axis):
    if name == "median" and axis == []:
        # MLX 0.30.1 refuses a median over no axes ("[flatten] start_axis must be less than or equal
        # to end_axis"); kiln's median is the same composition and refuses it the same way.
        with pytest.raises(ValueError, match="flatten"):
            kiln.median(kiln.array(F), axis=[])
        return
    x = B if name in ("all", "any") else F
    both(name, x, axis=axis, rtol=1e-4, atol=1e-5)
    both(name, x, axis, True, rtol=1e-4, atol=1e-5)  # keepdims positionally


@pytest.mark.parametrize("name", ["sum", "prod", "min", "max", "mean", "all", "any", "var"])
@pytest.mark.parametrize("dt", [np.int32, np.int8, np.uint8, np.float16, np.bool_])
def test_reduce_dtypes(name, dt):
    x = (np.abs(I) % 3).astype(dt)
    tol = dict(rtol=2e-3, atol=2e-3) if dt == np.float16 else {}
    both(name, x, **tol)
    both(name, x, axis=1, keepdims=True, **tol)


def test_var_std_ddof():
    both("var", F, ddof=1)
    both("std", F, axis=0, ddof=2)
    both("var", F, [0, 1], False, 1)


def test_arg_reduce():
    for name in ["argmin", "argmax"]:
        both(name, F)
        both(name, F, axis=1)
        both(name, F, axis=-1, keepdims=True)
        both(name, F, keepdims=True)
        both(name, I, 0)


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"])
def test_scans(name):
    x = F * 0.5
    both(name, x, rtol=1e-4, atol=1e-5)
    both(name, x, axis=1, rtol=1e-4, atol=1e-5)
    both(name, x, 2, reverse=True, rtol=1e-4, atol=1e-5)
    both(name, x, axis=0, inclusive=False, rtol=1e-4, atol=1e-5)
    both(name, x, axis=-1, reverse=True, inclusive=False, rtol=1e-4, atol=1e-5)
    if name != "logcumsumexp":
        both(name, I % 3, axis=1)
    with pytest.raises(TypeError):
        getattr(kiln, name)(kiln.array(x), 0, True)  # reverse is keyword-only


def test_softmax():
    both("softmax", F)
    both("softmax", F, axis=-1)
    both("softmax", F, axis=[0, 2])
    both("softmax", F, 1, precise=True)
    both("softmax", F.astype(np.float16), axis=-1, rtol=2e-3, atol=1e-3)


def test_sorting():
    for name in ["sort", "argsort"]:
        both(name, F)
        both(name, F, axis=0)
        both(name, F, axis=None)
        both(name, I, -1)
    x = rng.permutation(60).astype(np.float32).reshape(3, 4, 5)
    for name in ["partition", "argpartition"]:
        # Only the kth element's position is fixed: compare sorted halves.
        k_res, m_res = getattr(kiln, name)(kiln.array(x), 2), getattr(mlx, name)(mlx.array(x), 2)
        assert k_res.dtype.__repr__().split(".")[-1] == m_res.dtype.__repr__().split(".")[-1]
        kr, mr = np.array(k_res), np.array(m_res)
        if name == "argpartition":
            kr, mr = np.take_along_axis(x, kr.astype(np.int64), -1), np.take_along_axis(x, mr.astype(np.int64), -1)
        np.testing.assert_array_equal(kr[..., 2], mr[..., 2])
        np.testing.assert_array_equal(np.sort(kr[..., :2], -1), np.sort(mr[..., :2], -1))
    kt = np.sort(np.array(kiln.topk(kiln.array(x), 3)), -1)
    mt = np.sort(np.array(mlx.topk(mlx.array(x), 3)), -1)
    np.testing.assert_array_equal(kt, mt)
    kt = np.sort(np.array(kiln.topk(kiln.array(x), k=2, axis=0)), 0)
    np.testing.assert_array_equal(kt, np.sort(np.array(mlx.topk(mlx.array(x), k=2, axis=0)), 0))
    same(kiln.sort(kiln.array(x), axis=None), mlx.sort(mlx.array(x), axis=None))


def test_reduce_errors():
    with pytest.raises((ValueError, IndexError)):
        kiln.sum(kiln.array(F), axis=5)
    with pytest.raises(TypeError, match=r"\[sum\].*axis"):
        kiln.sum(kiln.array(F), axis="x")
    with pytest.raises(TypeError, match=r"\[sum\] Expected axes to be integers"):
        kiln.sum(kiln.array(F), axis=[0, 1.5])
    with pytest.raises(TypeError):
        kiln.sum(kiln.array(F), 0, False, kiln.cpu)  # stream is keyword-only
