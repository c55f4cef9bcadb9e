"""kiln's creation, shape, joining and padding ops against MLX 0.30.1."""

import numpy as np
import pytest

import kiln

mlx = pytest.importorskip("mlx.core")
from test_ops_elementwise import both, same  # noqa: E402

rng = np.random.default_rng(2)
F = rng.standard_normal((2, 3, 4)).astype(np.float32)
I = rng.integers(0, 9, (2, 3, 4)).astype(np.int32)


def test_arange():
    both("arange", 5)
    both("arange", 5.0)
    both("arange", 1, 7)
    both("arange", 1, 7, 2)
    both("arange", 0, 1, 0.25)
    both("arange", 10, step=3)
    both("arange", 3, dtype="dtype:float16")
    both("arange", 0.0, 5, 1, "dtype:int32")
    both("arange", stop=4)
    both("arange", start=2, stop=6)
    both("arange", 5, 0, -1)
    with pytest.raises(ValueError, match=r"\[arange\]"):
        kiln.arange("a")


def test_linspace_full_zeros_ones():
    both("linspace", 0, 1)
    both("linspace", -1, 1, 7)
    both("linspace", 0, 10, num=5, dtype="dtype:float16")
    both("full", (2, 3), 7)
    both("full", [2, 3], 7.5)
    both("full", 4, True)
    both("full", (2, 3), 2, "dtype:float16")
    both("full", (2, 3), np.arange(3, dtype=np.float32))
    # MLX 0.30.1 ignores an integer dtype for a float fill value (it returns float32); kiln casts.
    assert kiln.full((2, 3), 1.5, dtype=kiln.int32).dtype == kiln.int32
    both("full", (2, 3), 3, dtype="dtype:float16")
    for name in ["zeros", "ones"]:
        both(name, (2, 3))
        both(name, 3)
        both(name, [2, 0, 1], "dtype:int32")
        both(name, (2,), dtype="dtype:bool_")
    both("zeros_like", I)
    both("ones_like", F)


def test_eye_identity_tri():
    both("eye", 3)
    both("eye", 3, 4)
    both("eye", 3, 4, 1)
    both("eye", 4, k=-2, dtype="dtype:int32")
    both("identity", 3)
    both("identity", 2, "dtype:float16")
    both("tri", 3)
    both("tri", 3, 4, 1)
    both("tri", 3, m=2, k=-1, dtype="dtype:int32")
    for name in ["tril", "triu"]:
        both(name, F[0])
        both(name, F, 1)
        both(name, F, k=-1)


def test_reshape_flatten_unflatten():
    both("reshape", F, (4, 6))
    both("reshape", F, [-1])
    both("reshape", F, shape=(2, -1, 2))
    both("flatten", F)
    both("flatten", F, 1)
    both("flatten", F, start_axis=0, end_axis=1)
    both("unflatten", F, 2, (2, 2))
    both("unflatten", F, axis=0, shape=[1, 2])
    with pytest.raises(ValueError):
        kiln.reshape(kiln.array(F), (5, 5))


def test_squeeze_expand_transpose():
    x = F.reshape(2, 1, 3, 1, 4)
    both("squeeze", x)
    both("squeeze", x, 1)
    both("squeeze", x, axis=[1, 3])
    both("expand_dims", F, 0)
    both("expand_dims", F, axis=[0, -1])
    both("transpose", F)
    both("transpose", F, (2, 0, 1))
    both("transpose", F, axes=[1, 0, 2])
    both("permute_dims", F, (1, 2, 0))
    both("swapaxes", F, 0, 2)
    both("moveaxis", F, 0, -1)
    both("moveaxis", F, source=2, destination=0)
    with pytest.raises(ValueError):
        kiln.squeeze(kiln.array(F), 0)


def test_broadcast():
    both("broadcast_to", F[0, 0], (2, 3, 4))
    both("broadcast_to", 2.5, [3])
    ks = kiln.broadcast_arrays(kiln.array(F[0]), kiln.array(F[:, :1]))
    ms = mlx.broadcast_arrays(mlx.array(F[0]), mlx.array(F[:, :1]))
    assert isinstance(ks, tuple)
    same(list(ks), list(ms))
    assert kiln.broadcast_shapes((1, 3), (2, 1)) == mlx.broadcast_shapes((1, 3), (2, 1)) == (2, 3)
    assert kiln.broadcast_shapes((4, 1, 3), (2, 1), [3]) == (4, 2, 3)
    with pytest.raises(ValueError, match="broadcast"):
        kiln.broadcast_shapes((2,), (3,))
    x, y = np.arange(3, dtype=np.float32), np.arange(4, dtype=np.float32)
    for kw in [{}, {"indexing": "ij"}, {"sparse": True}]:
        same(kiln.meshgrid(kiln.array(x), kiln.array(y), **kw), mlx.meshgrid(mlx.array(x), mlx.array(y), **kw))


def test_as_strided_contiguous_atleast():
    both("as_strided", F, (3, 4), (4, 1))
    both("as_strided", F, shape=(2, 2), strides=(1, 2), offset=3)
    both("as_strided", F)
    both("contiguous", F)
    both("contiguous", np.ascontiguousarray(F), allow_col_major=True)
    for name in ["atleast_1d", "atleast_2d", "atleast_3d"]:
        both(name, np.array(3.0, np.float32))
        both(name, F[0])
        assert getattr(kiln, name)(3.0).ndim == int(name[-2])  # kiln also takes scalars
        k = getattr(kiln, name)(kiln.array(1.0), kiln.array(F[0, 0]))
        m = getattr(mlx, name)(mlx.array(1.0), mlx.array(F[0, 0]))
        assert isinstance(k, list)
        same(k, m)


def test_split_concat_stack():
    same(kiln.split(kiln.array(F), 2), mlx.split(mlx.array(F), 2))
    same(kiln.split(kiln.array(F), [1, 3], axis=2), mlx.split(mlx.array(F), [1, 3], axis=2))
    same(kiln.split(kiln.array(F), indices_or_sections=3, axis=1), mlx.split(mlx.array(F), 3, 1))
    with pytest.raises(ValueError):
        kiln.split(kiln.array(F), 3)
    for name in ["concatenate", "concat"]:
        both(name, [F, F])
        both(name, [F, I], 1)
        both(name, (F, F[:, :1]), axis=1)
        both(name, [F, I], axis=None)
    both("stack", [F, F])
    both("stack", [F, I], axis=-1)
    with pytest.raises(ValueError):
        kiln.concatenate([kiln.array(F), kiln.array(F[0])])


def test_tile_repeat_roll_pad():
    both("tile", F, 2)
    both("tile", F, (1, 2, 1))
    both("tile", F[0], [2, 1, 2])
    both("repeat", F, 2)
    both("repeat", F, 3, 1)
    both("repeat", F, repeats=2, axis=-1)
    both("roll", F, 1)
    both("roll", F, -2, 1)
    both("roll", F, (1, 2), (0, 2))
    both("roll", F, 3, axis=(1, 2))
    both("roll", F, shift=[1, -1], axis=[0, 1])
    both("pad", F, 1)
    both("pad", F, (1, 2))
    both("pad", F, [(0, 1), (1, 0), (2, 2)])
    both("pad", F, [(1, 1)])
    both("pad", F, 1, constant_values=3.5)
    both("pad", F.astype(np.float16), 1, constant_values=2.5, rtol=1e-3)
    both("pad", I, ((1, 0), (0, 0), (0, 1)), "edge")
    both("pad", I, 2, mode="edge")
    both("pad", I, 1, constant_values=7)
    with pytest.raises(ValueError):
        kiln.pad(kiln.array(F), 1, mode="reflect")
