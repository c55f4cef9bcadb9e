"""Ops of kiln's Python API written in Python over kiln._core (compositions of bound ops)."""

from . import _core

__all__ = ["convolve"]


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


# Constants of mlx.core.
import math as _math  # noqa: E402

e = _math.e
pi = _math.pi
inf = _math.inf
nan = _math.nan
euler_gamma = 0.5772156649015329
newaxis = None

__all__ += ["e", "pi", "inf", "nan", "euler_gamma", "newaxis"]
