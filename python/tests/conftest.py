"""Shared pytest fixtures for kiln's Python tests.

`mlx` is real MLX from PyPI (mlx[cpu]) when it is installed next to kiln: tests that compare against it
use the `mlx` fixture and are skipped, with the reason, where it cannot be imported.
"""

import numpy as np
import pytest


@pytest.fixture(scope="session")
def mlx():
    return pytest.importorskip("mlx.core", reason="real MLX (pip install mlx[cpu]) is not installed")


def assert_same(kiln_result, mlx_result, rtol=1e-6, atol=1e-6):
    """kiln's and MLX's results agree in shape, dtype name and values."""
    a = np.array(kiln_result)
    b = np.array(mlx_result)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert str(kiln_result.dtype).split(".")[-1] == str(mlx_result.dtype).split(".")[-1]
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
