"""kiln.fft against MLX 0.30.1."""

import numpy as np
import pytest

import kiln

mlx = pytest.importorskip("mlx.core")
from test_ops_elementwise import same  # noqa: E402

rng = np.random.default_rng(5)
X = rng.standard_normal((4, 6, 8)).astype(np.float32)
Z = (X + 1j * rng.standard_normal((4, 6, 8))).astype(np.complex64)
TOL = dict(rtol=1e-4, atol=1e-4)


def both(name, x, **kw):
    k = getattr(kiln.fft, name)(kiln.array(x), **kw)
    m = getattr(mlx.fft, name)(mlx.array(x), stream=mlx.cpu, **kw)
    same(k, m, **TOL)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft"])
def test_1d(name):
    x = X if name == "rfft" else Z
    both(name, x)
    both(name, x, n=5)
    both(name, x, axis=0)
    both(name, x, n=10, axis=1)
    same(getattr(kiln.fft, name)(kiln.array(x), 6, 1), getattr(mlx.fft, name)(mlx.array(x), 6, 1, stream=mlx.cpu), **TOL)


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"])
def test_nd(name):
    x = X if name.startswith("rfft") else Z
    both(name, x)
    both(name, x, axes=[0, 2])
    both(name, x, s=[4, 6], axes=[1, 2])
    both(name, x, s=(3, 5), axes=(0, 1))
    if name.endswith("n"):
        both(name, x, axes=[1])
        both(name, x, s=[2, 3, 4], axes=[0, 1, 2])
    with pytest.raises(ValueError, match="axes"):
        getattr(kiln.fft, name)(kiln.array(x), s=[4, 4], axes=None)


def test_real_input_to_complex_transform():
    both("fft", X)
    both("fftn", X)


def test_shift():
    for name in ["fftshift", "ifftshift"]:
        both(name, X)
        both(name, X, axes=[1])
        both(name, X, axes=(0, 2))
