"""kiln.array: construction, conversion (zero-copy to NumPy, buffer protocol, DLPack), properties,
printing, operators with MLX's weak scalars, pickling and bad input, checked against real MLX."""

import copy
import pickle

import numpy as np
import pytest

import kiln

from conftest import assert_same

ALL_DTYPES = ["bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
              "float16", "float32", "float64", "bfloat16", "complex64"]
NUMPY_OF = {"bool_": np.bool_, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
            "uint64": np.uint64, "int8": np.int8, "int16": np.int16, "int32": np.int32,
            "int64": np.int64, "float16": np.float16, "float32": np.float32, "float64": np.float64,
            "complex64": np.complex64}


# ---- construction ----

@pytest.mark.parametrize("value, dtype, shape", [
    (3, kiln.int32, ()), (2**40, kiln.int64, ()), (-2**40, kiln.int64, ()), (1.5, kiln.float32, ()),
    (True, kiln.bool_, ()), (1 + 2j, kiln.complex64, ()), ([1, 2, 3], kiln.int32, (3,)),
    ([1, 2.5], kiln.float32, (2,)), ([True, 2], kiln.int32, (2,)), ([[1, 2], [3, 4]], kiln.int32, (2, 2)),
    ((1, 2), kiln.int32, (2,)), ([], kiln.float32, (0,)), ([[]], kiln.float32, (1, 0)),
    ([1, 2**40], kiln.int64, (2,)), ([1j, 2], kiln.complex64, (2,)),
])
def test_from_python(value, dtype, shape):
    a = kiln.array(value)
    assert a.dtype == dtype
    assert a.shape == shape
    assert a.tolist() == (np.array(value).tolist() if shape else value)


def test_from_python_matches_mlx(mlx):
    for v in [3, 1.5, True, [1, 2.5], [[1, 2], [3, 4]], [True, False], [], [1 + 2j, 3], 2**40]:
        assert_same(kiln.array(v), mlx.array(v))
    for v, d in [([1, 2], "float16"), (1.7, "int32"), ([1.5, -2.5], "uint8"), ([0, 1], "bool_")]:
        k = kiln.array(v, getattr(kiln, d))
        m = mlx.array(v, getattr(mlx, "bool_" if d == "bool_" else d))
        assert k.tolist() == m.tolist()


def test_nested_arrays_in_lists():
    a = kiln.array([kiln.array([1, 2]), kiln.array([3.5, 4])])
    assert a.dtype == kiln.float32 and a.tolist() == [[1, 2], [3.5, 4]]
    b = kiln.array([np.array([1, 2], np.int8), np.array([3, 4], np.int8)])
    assert b.dtype == kiln.int8 and b.shape == (2, 2)


@pytest.mark.parametrize("name", [d for d in ALL_DTYPES if d != "bfloat16"])
def test_numpy_roundtrip_every_dtype(name):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 4)) * 10).astype(NUMPY_OF[name])
    if name == "complex64":
        x = x + 1j * x[::-1]
    a = kiln.array(x, getattr(kiln, name))
    assert a.dtype == getattr(kiln, name)
    np.testing.assert_array_equal(np.array(a), x)
    assert np.array(a).dtype == x.dtype


def test_numpy_float64_becomes_float32_unless_asked():
    x = np.array([1.0, 2.0])
    assert kiln.array(x).dtype == kiln.float32
    assert kiln.array(x, kiln.float64).dtype == kiln.float64
    assert kiln.array(np.array([1 + 2j])).dtype == kiln.complex64
    assert kiln.array(np.array([1 + 2j]))[0].item() == 1 + 2j


def test_numpy_strided_and_empty_inputs():
    x = np.arange(24, dtype=np.int32).reshape(4, 6)[::2, ::-3]
    np.testing.assert_array_equal(np.array(kiln.array(x)), x)
    assert kiln.array(np.zeros((2, 0, 3))).shape == (2, 0, 3)
    assert kiln.array(np.float32(3)).shape == ()


def test_buffer_protocol_and_dlpack_inputs():
    assert kiln.array(memoryview(b"abc")).tolist() == [97, 98, 99]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.array(kiln.array(memoryview(x))), x)

    class OnlyDLPack:
        def __init__(self, arr):
            self.arr = arr

        def __dlpack__(self, **kw):
            return self.arr.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.arr.__dlpack_device__()

    np.testing.assert_array_equal(np.array(kiln.array(OnlyDLPack(x))), x)


def test_bfloat16():
    a = kiln.array([1.5, 2.0, -3.25], kiln.bfloat16)
    assert a.dtype == kiln.bfloat16 and a.itemsize == 2
    assert a.tolist() == [1.5, 2.0, -3.25]
    with pytest.raises(TypeError, match="bfloat16 has no NumPy dtype"):
        np.array(a)
    with pytest.raises(BufferError, match="bfloat16"):
        memoryview(a)
    np.testing.assert_array_equal(np.array(a.astype(kiln.float32)), [1.5, 2.0, -3.25])


# ---- zero copy out ----

def test_zero_copy_to_numpy():
    a = kiln.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    v1 = np.asarray(a)
    v2 = np.asarray(a)
    assert not v1.flags["OWNDATA"]
    assert v1.ctypes.data == v2.ctypes.data  # both views of kiln's buffer
    m = memoryview(a)
    assert m.shape == (3, 4) and m.format == "f" and not m.readonly
    assert np.frombuffer(m, np.float32).ctypes.data == v1.ctypes.data
    d = np.from_dlpack(a)
    assert d.ctypes.data == v1.ctypes.data
    assert a.__dlpack_device__() == (1, 0)
    # the view keeps the buffer alive after the array is gone
    del a
    assert v1.sum() == 66


def test_zero_copy_of_views_keeps_strides():
    a = kiln.array(np.arange(12, dtype=np.int32).reshape(3, 4)).T
    v = np.asarray(a)
    assert v.shape == (4, 3)
    np.testing.assert_array_equal(v, np.arange(12).reshape(3, 4).T)


def test_array_protocol_copy_and_dtype():
    a = kiln.array([1, 2, 3])
    c = a.__array__(copy=True)
    assert c.flags["OWNDATA"] or c.base is None or c.ctypes.data != np.asarray(a).ctypes.data
    assert np.array(a, dtype=np.float64).dtype == np.float64


# ---- properties and Python conversions ----

def test_properties():
    a = kiln.array(np.zeros((2, 3, 4), np.float16))
    assert (a.shape, a.ndim, a.size, a.nbytes, a.itemsize) == ((2, 3, 4), 3, 24, 48, 2)
    assert a.T.shape == (4, 3, 2)
    assert a.astype(kiln.int8).dtype == kiln.int8
    assert len(a) == 2
    with pytest.raises(TypeError, match="0-dimensional"):
        len(kiln.array(1))


def test_item_and_tolist_types():
    assert type(kiln.array(2).item()) is int
    assert type(kiln.array(2.5).item()) is float
    assert type(kiln.array(True).item()) is bool
    assert type(kiln.array(1j).item()) is complex
    assert kiln.array([1, 2], kiln.float16).tolist() == [1.0, 2.0]
    assert kiln.array(2**63 + 5, kiln.uint64).item() == 2**63 + 5
    with pytest.raises(ValueError, match="to uint64 would result in overflow"):
        kiln.array(2**64, kiln.uint64)
    assert kiln.array(200, kiln.int8).item() == -56  # the constructor converts as MLX's does
    assert kiln.array([-1], kiln.uint8).tolist() == [255]
    assert kiln.array([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    with pytest.raises(ValueError, match="size 1"):
        kiln.array([1, 2]).item()
    assert int(kiln.array(2.7)) == 2 and float(kiln.array(2)) == 2.0 and bool(kiln.array([1]))
    with pytest.raises(ValueError, match="length-1"):
        bool(kiln.array([1, 2]))
    assert list(range(10))[kiln.array(3)] == 3  # __index__
    rows = list(kiln.array([[1, 2], [3, 4]]))
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4]]


def test_dtypes_are_mlx_named():
    for name in ALL_DTYPES:
        t = getattr(kiln, name)
        assert repr(t) == "kiln." + ("bool" if name == "bool_" else name)
        assert t == getattr(kiln, name) and hash(t) == hash(getattr(kiln, name))
    assert kiln.float32.size == 4 and kiln.bfloat16.size == 2 and kiln.complex64.size == 8
    assert kiln.issubdtype(kiln.float16, kiln.floating)
    assert not kiln.issubdtype(kiln.int32, kiln.inexact)
    assert kiln.finfo(kiln.float16).max == 65504.0
    assert kiln.iinfo(kiln.int8).min == -128 and kiln.iinfo(kiln.uint64).max == 2**64 - 1


# ---- printing ----

def test_printing_matches_mlx(mlx):
    cases = [3, 2.5, True, [True, False], [[1.5, 2], [3, 4]], [1e10, 1e-5], [1 + 2j, 3j], [],
             [0.1, 100.25], [123456789.0], np.zeros((2, 3, 4), np.float32), np.arange(2000, dtype=np.int32),
             np.arange(20000, dtype=np.int32).reshape(10, 2000), np.arange(2000, dtype=np.int32).reshape(2, 10, 100),
             np.zeros((2000, 2), np.float32), np.zeros((2, 0), np.float32),
             [float("nan"), float("inf"), -float("inf")]]
    for v in cases:
        k = repr(kiln.array(v)).replace("kiln", "mlx")
        m = repr(mlx.array(v))
        assert k == m, (v, k, m)
    for d in ["float16", "bfloat16", "uint8", "int8", "float64"]:
        v = [1.5, -2.0, 3.0]
        assert repr(kiln.array(v, getattr(kiln, d))) == repr(mlx.array(v, getattr(mlx, d)))


# ---- operators ----

BINARY = ["+", "-", "*", "/", "//", "%", "**", "==", "!=", "<", "<=", ">", ">="]


@pytest.mark.parametrize("op", BINARY)
def test_binary_operators_match_mlx(mlx, op):
    xs = [[1.5, -2.0, 3.0], [4, 5, 6]]
    for x in xs:
        # (no integer zero divisors: MLX's CPU backend dies of SIGFPE on them; kiln gives 0)
        bools = [True, True, True] if op in ("//", "%") else [True, False, True]
        for y in [[2.0, 0.5, -1.5], 3, 2.5, bools]:
            k = eval(f"kx {op} ky", {"kx": kiln.array(x), "ky": kiln.array(y) if isinstance(y, list) else y})
            m = eval(f"mx {op} my", {"mx": mlx.array(x), "my": mlx.array(y) if isinstance(y, list) else y})
            assert_same(k, m, rtol=1e-5)
            kr = eval(f"ky {op} kx", {"kx": kiln.array(x), "ky": y if not isinstance(y, list) else kiln.array(y)})
            mr = eval(f"my {op} mx", {"mx": mlx.array(x), "my": y if not isinstance(y, list) else mlx.array(y)})
            assert_same(kr, mr, rtol=1e-5)


def test_weak_python_scalars(mlx):
    for d in ["float16", "bfloat16", "int8", "uint8", "int32", "float32", "bool_"]:
        for s in [2, 2.5, True, 1j]:
            k = kiln.array([1, 0], getattr(kiln, d)) + s
            m = mlx.array([1, 0], getattr(mlx, d)) + s
            assert str(k.dtype).split(".")[-1] == str(m.dtype).split(".")[-1], (d, s)
    with pytest.raises(ValueError, match="Converting 300 to uint8 would result in overflow"):
        kiln.array([1], kiln.uint8) + 300
    assert (kiln.array([1, 2], kiln.uint8) + 255).tolist() == [0, 1]


def test_bitwise_and_unary_operators(mlx):
    ki, mi = kiln.array([1, 6, 12]), mlx.array([1, 6, 12])
    for op in ["&", "|", "^", "<<", ">>"]:
        assert_same(eval(f"a {op} 3", {"a": ki}), eval(f"a {op} 3", {"a": mi}))
    kb, mb = kiln.array([True, False]), mlx.array([True, False])
    for op in ["&", "|"]:
        assert_same(eval(f"a {op} b", {"a": kb, "b": kiln.array([True, True])}),
                    eval(f"a {op} b", {"a": mb, "b": mlx.array([True, True])}))
    # MLX 0.30.1 gives True ^ True == True on bool arrays; kiln gives NumPy's (and Python's) False.
    assert (kb ^ kiln.array([True, True])).tolist() == [False, True]
    assert_same(~ki, ~mi)
    assert_same(~kb, ~mb)
    assert_same(-ki, -mi)
    assert_same(abs(kiln.array([-1.5, 2])), abs(mlx.array([-1.5, 2])))
    with pytest.raises(ValueError, match="negative"):
        -kb
    with pytest.raises(ValueError):
        kiln.array([1.5]) & 1
    with pytest.raises(ValueError):
        ~kiln.array([1.5])


def test_matmul_operator(mlx):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert_same(kiln.array(a) @ kiln.array(b), mlx.array(a) @ mlx.array(b))
    assert_same(kiln.array(a) @ b.tolist(), mlx.array(a) @ mlx.array(b))
    with pytest.raises(ValueError, match="matmul"):
        kiln.array([1, 2]) @ kiln.array([1, 2])


def test_inplace_operators_rebind_like_mlx():
    a = kiln.array([1, 2])
    alias = a
    a += 1
    assert a.tolist() == [2, 3] and alias.tolist() == [2, 3]
    a *= 2.0
    assert a.dtype == kiln.float32 and a.tolist() == [4.0, 6.0]


def test_unsupported_operands():
    a = kiln.array([1, 2])
    with pytest.raises(TypeError):
        a + "x"
    with pytest.raises(TypeError):
        a * object()
    assert (a == None) is False  # noqa: E711  (falls back to identity, as for other Python objects)


def test_divmod_operator():
    q, r = divmod(kiln.array([7, -7]), 2)
    assert q.tolist() == [3, -3]  # MLX 0.30.1's divmod truncates (README "MLX versions")
    assert r.tolist() == [1, -1]


# ---- bad input ----

@pytest.mark.parametrize("value, message", [
    ("a", "Invalid type str"), ([[1, 2], [3]], "non-uniform length"), ({"a": 1}, "Invalid type dict"),
    (2**70, "overflow"), ([object()], "Invalid type object"), (range(3), "Invalid type range"),
])
def test_bad_construction(value, message):
    with pytest.raises(ValueError, match=message):
        kiln.array(value)


def test_bad_dtype_argument():
    with pytest.raises(TypeError, match="Expected a dtype"):
        kiln.array([1], "float32")
    with pytest.raises(TypeError):
        kiln.array([1], kiln.float32, 3)


# ---- copying and pickling ----

@pytest.mark.parametrize("name", ALL_DTYPES)
def test_pickle_every_dtype(name):
    a = kiln.array([[1, 0], [3, 4]], getattr(kiln, name))
    b = pickle.loads(pickle.dumps(a))
    assert b.dtype == a.dtype and b.shape == a.shape and b.tolist() == a.tolist()
    c = copy.deepcopy(a)
    assert c.tolist() == a.tolist() and c is not a


def test_eval_trees():
    a = kiln.array([1.0]) + 1
    b = kiln.array([2.0]) * 3
    kiln.eval({"x": [a, (b, 3)], "y": "ignored"})
    assert a.tolist() == [2.0] and b.tolist() == [6.0]
    kiln.async_eval(a)
