"""Ops of kiln's Python API written in Python over kiln._core (compositions of bound ops)."""

from . import _core

__all__ = ["convolve", "segmented_mm"]


def convolve(a, v, /, mode="full", *, stream=None):
    """Discrete linear convolution of two 1-D arrays (NumPy's ``convolve``), with mode ``'full'``,
    ``'same'`` or ``'valid'``."""
    a = a if isinstance(a, _core.array) else _core.array(a)
    v = v if isinstance(v, _core.array) else _core.array(v)
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(
            f"[convolve] Expected two 1-D arrays, found {a.ndim}-D and {v.ndim}-D inputs."
        )
    if a.size < v.size:
        a, v = v, a
    m = v.size
    if mode == "full":
        lo = hi = m - 1
    elif mode == "same":
        hi = (m - 1) // 2
        lo = m - 1 - hi
    elif mode == "valid":
        lo = hi = 0
    else:
        raise ValueError(
            f"[convolve] Expected mode to be 'full', 'same' or 'valid', found '{mode}'."
        )
    out = _core.conv_general(
        a.reshape(1, -1, 1),
        v.reshape(1, -1, 1),
        padding=([lo], [hi]),
        flip=True,
        stream=stream,
    )
    return out.reshape(-1)


def segmented_mm(a, b, /, segments, *, stream=None):
    """Matrix products of a (M, K) and b (K, N) over segments of the inner axis: segments (..., 2) holds
    [start, end) offsets and the result is (..., M, N)."""
    a = a if isinstance(a, _core.array) else _core.array(a)
    b = b if isinstance(b, _core.array) else _core.array(b)
    segments = segments if isinstance(segments, _core.array) else _core.array(segments)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(
            f"[segmented_mm] Expected 2-D a and b (batched matmul is not supported), found {a.ndim}-D and {b.ndim}-D."
        )
    if segments.ndim < 1 or segments.shape[-1] != 2:
        raise ValueError(
            f"[segmented_mm] Expected segments of shape (..., 2), found {segments.shape}."
        )
    k = a.shape[1]
    pos = _core.arange(k, stream=stream)
    start = _core.expand_dims(_core.take(segments, 0, axis=-1, stream=stream), -1, stream=stream)
    end = _core.expand_dims(_core.take(segments, 1, axis=-1, stream=stream), -1, stream=stream)
    inside = _core.logical_and(pos >= start, pos < end, stream=stream)  # (..., K)
    masked = _core.where(_core.expand_dims(inside, -2, stream=stream), a, _core.zeros_like(a), stream=stream)
    return _core.matmul(masked, b, stream=stream)


# Constants of mlx.core.
import math as _math  # noqa: E402

e = _math.e
pi = _math.pi
inf = _math.inf
nan = _math.nan
euler_gamma = 0.5772156649015329
newaxis = None

__all__ += ["e", "pi", "inf", "nan", "euler_gamma", "newaxis"]
