"""kiln.fast against MLX 0.30.1. MLX's CPU build computes the fused ops from their fallbacks, so its
values are the reference."""

import numpy as np
import pytest

import kiln

mlx = pytest.importorskip("mlx.core")
from test_ops_elementwise import same  # noqa: E402

rng = np.random.default_rng(6)
X = rng.standard_normal((2, 3, 8)).astype(np.float32)
W = rng.standard_normal(8).astype(np.float32)
Bv = rng.standard_normal(8).astype(np.float32)
TOL = dict(rtol=1e-4, atol=1e-5)


def conv(lib, v):
    return lib.array(v) if isinstance(v, np.ndarray) else v


def both(name, *args, tol=TOL, **kw):
    k = getattr(kiln.fast, name)(*[conv(kiln, a) for a in args], **{n: conv(kiln, v) for n, v in kw.items()})
    m = getattr(mlx.fast, name)(*[conv(mlx, a) for a in args], **{n: conv(mlx, v) for n, v in kw.items()})
    same(k, m, **tol)


def test_norms():
    both("rms_norm", X, W, 1e-5)
    both("rms_norm", X, None, eps=1e-6)
    both("rms_norm", X.astype(np.float16), W.astype(np.float16), 1e-5, tol=dict(rtol=5e-3, atol=5e-3))
    both("layer_norm", X, W, Bv, 1e-5)
    both("layer_norm", X, None, None, 1e-5)
    both("layer_norm", X, W, None, eps=1e-4)
    both("layer_norm", x=X, weight=None, bias=Bv, eps=1e-5)


def test_rope():
    x = rng.standard_normal((1, 2, 5, 8)).astype(np.float32)
    both("rope", x, 8, traditional=False, base=10000.0, scale=1.0, offset=0)
    both("rope", x, 4, traditional=True, base=10000.0, scale=0.5, offset=3)
    both("rope", x, 8, traditional=False, base=None, scale=1.0, offset=np.array(2, np.int32),
         freqs=np.linspace(1, 2, 4).astype(np.float32))
    with pytest.raises(TypeError):
        kiln.fast.rope(kiln.array(x), 8, False, 10000.0, 1.0, 0)  # the rest are keyword-only


def test_sdpa():
    q = rng.standard_normal((1, 4, 5, 8)).astype(np.float32)
    k = rng.standard_normal((1, 2, 7, 8)).astype(np.float32)
    v = rng.standard_normal((1, 2, 7, 8)).astype(np.float32)
    both("scaled_dot_product_attention", q, k, v, scale=0.35)
    both("scaled_dot_product_attention", q, k, v, scale=0.35, mask="causal")
    m = rng.random((5, 7)) > 0.3
    m[:, 0] = True
    both("scaled_dot_product_attention", q, k, v, scale=0.35, mask=m)
    both("scaled_dot_product_attention", q, k, v, scale=0.35, mask=rng.standard_normal((1, 4, 5, 7)).astype(np.float32))
    both("scaled_dot_product_attention", q, k, v, scale=0.35, sinks=rng.standard_normal(4).astype(np.float32))
    with pytest.raises(ValueError, match="causal"):
        kiln.fast.scaled_dot_product_attention(kiln.array(q), kiln.array(k), kiln.array(v), scale=1.0, mask="full")


def test_precompiled_cuda_kernel_records_but_cannot_run():
    outs = kiln.fast.precompiled_cuda_kernel(
        name="k", compiled_source=b"\x00", inputs=[kiln.ones((4,))], output_shapes=[(4,)],
        output_dtypes=[kiln.float32], scalars=[1, 2.0, True], grid=(1, 1, 1), threadgroup=(32, 1, 1))
    assert isinstance(outs, list) and outs[0].shape == (4,) and outs[0].dtype == kiln.float32
    with pytest.raises(Exception):
        kiln.eval(outs[0])
