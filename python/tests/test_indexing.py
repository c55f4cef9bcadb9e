"""NumPy-style indexing and index assignment with MLX's semantics, against real MLX and NumPy."""

import numpy as np
import pytest

import kiln

from conftest import assert_same

A = np.arange(24, dtype=np.int32).reshape(2, 3, 4)

READS = [
    "[1]", "[-2]", "[1, 2]", "[1, 2, 3]", "[:, 1]", "[..., 1]", "[1:]", "[::-1]", "[::-1, ::2]", "[:, ::-2, 1:3]",
    "[:, 10:]", "[:, -10:2]", "[5:1:-1]", "[None]", "[None, ..., 0]", "[..., None]", "[:, None, 1]", "[()]",
    "[[0, 1]]", "[[1, 0], :, [1, 2]]", "[:, [0, 1], [1, 2]]", "[[0, 1], 1, [1, 2]]", "[0, :, [1, 2]]",
    "[..., [1, 2], None]", "[[[0], [1]], [[0, 1, 2]]]", "[:, IDX]", "[1:, [0, 2], 1:3]",
    "[None, [0, 1], None, 2]", "[[1], [2]]", "[IDX0]", "[[-1, 0]]", "[True]", "[1, ..., ::2]",
]


@pytest.mark.parametrize("expr", READS)
def test_reads_match_mlx(mlx, expr):
    k = eval("a" + expr, {"a": kiln.array(A), "IDX": kiln.array([[0, 1], [2, 0]]), "IDX0": kiln.array(1)})
    m = eval("a" + expr, {"a": mlx.array(A), "IDX": mlx.array([[0, 1], [2, 0]]), "IDX0": mlx.array(1)})
    assert_same(k, m)


@pytest.mark.parametrize("expr", [e for e in READS if "True" not in e])
def test_reads_match_numpy(expr):
    k = eval("a" + expr, {"a": kiln.array(A), "IDX": kiln.array([[0, 1], [2, 0]]), "IDX0": kiln.array(1)})
    n = eval("a" + expr, {"a": A, "IDX": np.array([[0, 1], [2, 0]]), "IDX0": np.array(1)})
    np.testing.assert_array_equal(np.array(k), n)


def test_numpy_index_arrays_are_accepted():
    # (MLX 0.30.1 refuses NumPy arrays as indices; kiln takes them like lists)
    k = kiln.array(A)[np.array([1, 0]), :, np.array([3, 0])]
    np.testing.assert_array_equal(np.array(k), A[np.array([1, 0]), :, np.array([3, 0])])


def test_basic_reads_are_views():
    a = kiln.array(A)
    base = np.asarray(a).ctypes.data
    v = a[1, :, 1:3]
    assert np.asarray(v).ctypes.data == base + (12 + 1) * 4


@pytest.mark.parametrize("expr, exc, message", [
    ("[5]", IndexError, "out of bounds for axis 0 with size 2"),
    ("[-3]", IndexError, "out of bounds"),
    ("[0, 3]", IndexError, "axis 1 with size 3"),
    ("[0, 0, 0, 0]", IndexError, "Too many indices"),
    ("[..., ...]", ValueError, "single ellipsis"),
    ("[1.5]", ValueError, "type float"),
    ("['x']", ValueError, "type str"),
    ("[M]", ValueError, "Boolean mask indices are not supported for reading"),
    ("[F]", ValueError, "integer dtype"),
    ("[::0]", ValueError, "zero"),
])
def test_bad_reads(expr, exc, message):
    a = kiln.array(A)
    with pytest.raises(exc, match=message):
        eval("a" + expr, {"a": a, "M": kiln.array([True, False]), "F": kiln.array([0.5])})


WRITES = [
    "b[0] = 5", "b[:, 1] = V3", "b[[0, 2]] = 0", "b[b > 5] = 0", "b[MASK_ROWS] = 1", "b[1:, ::2] = V21",
    "b[[0, 0], [1, 1]] = V2", "b[..., -1] = 2.7", "b[None, 0] = 3", "b[MASK] = V6", "b[b > 100] = 1",
    "b[:, ::-1] = V4", "b[1] = V114", "b[-1, 1:3] = V2", "b[[2, 0], 1:] = 9", "b[:, [1, 3]] = V2",
]


def operands(lib):
    return {"V3": lib.array([7, 8, 9]), "V21": lib.array([[1], [2]]), "V2": lib.array([5, 6]),
            "MASK_ROWS": lib.array([True, False, True]), "MASK": lib.array([[True, False, True, False]] * 3),
            "V6": lib.array([1, 2, 3, 4, 5, 6]), "V4": lib.array([0, 1, 2, 3]), "V114": lib.array([[[1, 2, 3, 4]]])}


def assert_same_after(mlx, stmt, dtype):
    """`stmt` run on b = arange(12).reshape(3, 4) of `dtype` leaves the same b in kiln and in MLX."""
    envs = [{"b": lib.array(np.arange(12, dtype=dtype).reshape(3, 4)), **operands(lib)} for lib in (kiln, mlx)]
    for env in envs:
        exec(stmt, env)
    assert_same(envs[0]["b"], envs[1]["b"])


@pytest.mark.parametrize("stmt", WRITES)
def test_writes_match_mlx(mlx, stmt):
    assert_same_after(mlx, stmt, np.int32)


def test_write_then_alias_sees_it():
    b = kiln.array([1, 2, 3])
    alias = b
    b[1] = 10
    assert alias.tolist() == [1, 10, 3]


def test_bad_writes():
    b = kiln.array(np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match="Cannot broadcast array of shape"):
        b[0] = kiln.array(np.ones((2, 4), np.float32))
    with pytest.raises(IndexError, match="out of bounds"):
        b[3] = 1
    with pytest.raises(ValueError, match="boolean mask must have the shape"):
        b[kiln.array([True, False])] = 1
    with pytest.raises(ValueError, match="Invalid type str"):
        b[0] = "x"


@pytest.mark.parametrize("stmt", [
    "b = b.at[[0, 0]].add(1)", "b = b.at[1, 2:].multiply(V2)", "b = b.at[[0, 0], 1].subtract(1)",
    "b = b.at[[0, 1, 0]].maximum(6)", "b = b.at[:, 0].minimum(V3)", "b = b.at[[1, 1]].divide(2)",
])
def test_at_updates_match_mlx(mlx, stmt):
    assert_same_after(mlx, stmt, np.float32)


def test_at_accumulates_repeated_indices():
    b = kiln.array([0.0, 0.0, 0.0])
    assert b.at[[0, 0, 2]].add(1).tolist() == [2.0, 0.0, 1.0]
    assert b.tolist() == [0.0, 0.0, 0.0]  # .at returns a new array
