"""kiln's ops against NumPy (no MLX needed): a smoke test of each family and of the argument forms."""

import numpy as np
import pytest

import kiln

rng = np.random.default_rng(8)
F = rng.standard_normal((3, 4)).astype(np.float32)


def close(k, n, rtol=1e-5, atol=1e-6):
    assert isinstance(k, kiln.array)
    np.testing.assert_allclose(np.array(k), n, rtol=rtol, atol=atol)


def test_elementwise():
    close(kiln.exp(F), np.exp(F))
    close(kiln.add(F, 1), F + 1)
    close(kiln.maximum(F, 0.0), np.maximum(F, 0))
    close(kiln.where(F > 0, F, 0.0), np.where(F > 0, F, 0))
    close(kiln.clip(F, -0.5, 0.5), np.clip(F, -0.5, 0.5))
    assert kiln.add(kiln.array([1, 2], kiln.float16), 2.5).dtype == kiln.float16
    assert kiln.add(kiln.array([1, 2], kiln.int8), 2).dtype == kiln.int8
    assert kiln.multiply(kiln.array([1, 2], kiln.int32), 2.5).dtype == kiln.float32
    q, r = kiln.divmod(7, 3)
    assert (q.item(), r.item()) == (2, 1)


def test_reduce_and_sort():
    close(kiln.sum(F), F.sum(), rtol=1e-4)
    close(kiln.sum(F, axis=0, keepdims=True), F.sum(0, keepdims=True))
    close(kiln.mean(F, axis=[0, 1]), F.mean(), rtol=1e-4)
    close(kiln.var(F, 1, ddof=1), F.var(1, ddof=1), rtol=1e-4)
    close(kiln.cumsum(F, axis=1, reverse=True), np.flip(np.cumsum(np.flip(F, 1), 1), 1), rtol=1e-5)
    close(kiln.sort(F, axis=None), np.sort(F, axis=None))
    assert kiln.argmax(F).item() == int(np.argmax(F))


def test_shape():
    close(kiln.reshape(F, (2, 6)), F.reshape(2, 6))
    close(kiln.transpose(F), F.T)
    close(kiln.concatenate([F, F], axis=1), np.concatenate([F, F], 1))
    close(kiln.pad(F, ((1, 0), (0, 2))), np.pad(F, ((1, 0), (0, 2))))
    close(kiln.arange(0, 1, 0.25), np.arange(0, 1, 0.25))
    assert kiln.arange(5).dtype == kiln.int32 and kiln.arange(5.0).dtype == kiln.float32
    parts = kiln.split(F, [1, 3], axis=1)
    assert [p.shape for p in parts] == [(3, 1), (3, 2), (3, 1)]
    a = kiln.array(F)
    close(a.reshape(4, 3), F.reshape(4, 3))
    close(a.reshape((4, 3)), F.reshape(4, 3))
    close(a.transpose(1, 0), F.T)
    close(a.sum(axis=1), F.sum(1), rtol=1e-5)
    close(a.real, F)


def test_linalg_fft_random():
    A = (F[:3, :3] @ F[:3, :3].T + 3 * np.eye(3)).astype(np.float32)
    close(kiln.linalg.inv(A), np.linalg.inv(A), rtol=1e-4, atol=1e-5)
    close(kiln.linalg.norm(F), np.linalg.norm(F), rtol=1e-5)
    close(kiln.fft.rfft(F), np.fft.rfft(F).astype(np.complex64), rtol=1e-4, atol=1e-5)
    k = kiln.random.key(0)
    u = kiln.random.uniform(shape=(1000,), key=k)
    assert 0 <= float(kiln.min(u).item()) and float(kiln.max(u).item()) < 1


def test_errors():
    with pytest.raises(ValueError, match=r"\[reshape\]"):
        kiln.reshape(F, (5,))
    with pytest.raises(TypeError, match=r"\[concatenate\] Expected a list or tuple of arrays"):
        kiln.concatenate(F)
    with pytest.raises(TypeError, match=r"\[squeeze\] Expected axis"):
        kiln.squeeze(F, axis="a")
    with pytest.raises(TypeError):
        kiln.sum(F, 0, False, None)  # stream is keyword-only
    with pytest.raises(TypeError, match="Expected stream"):
        kiln.exp(F, stream="cpu")
