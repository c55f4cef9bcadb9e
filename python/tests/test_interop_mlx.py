"""Interop with real MLX in the same process: functions exported by MLX's Python API run in kiln, and
functions exported by kiln run in MLX, with the same numbers."""

import numpy as np
import pytest

import kiln

mlx = pytest.importorskip("mlx.core", reason="real MLX (pip install mlx[cpu]) is not installed")


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def close(k, m, rtol=1e-5, atol=1e-5):
    a, b = np.array(k), np.array(m)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol)


# ---- MLX exports, kiln imports ----


def test_mlx_mlp_with_constants(tmp_path):
    path = str(tmp_path / "mlp.mlxfn")
    w1, b1 = mlx.array(f32(8, 16, seed=1)), mlx.array(f32(16, seed=2))
    w2, b2 = mlx.array(f32(16, 4, seed=3)), mlx.array(f32(4, seed=4))

    def mlp(x):
        h = mlx.maximum(x @ w1 + b1, 0.0)
        return mlx.softmax(h @ w2 + b2, axis=-1)

    x = f32(5, 8, seed=5)
    mlx.export_function(path, mlp, mlx.array(x))
    fn = kiln.import_function(path)
    close(fn(x)[0], mlp(mlx.array(x)))
    assert fn.info["constants"] >= 4  # the weights, plus the scalars MLX makes


def test_mlx_shapeless(tmp_path):
    path = str(tmp_path / "sl.mlxfn")

    def fun(a, b):
        return mlx.exp(a) * b + mlx.sum(a, axis=-1, keepdims=True)

    mlx.export_function(path, fun, mlx.array(f32(2, 3)), mlx.array(f32(2, 3)), shapeless=True)
    fn = kiln.import_function(path)
    for shape in ((2, 3), (7, 5), (1, 1)):
        a, b = f32(*shape, seed=1), f32(*shape, seed=2)
        close(fn(a, b)[0], fun(mlx.array(a), mlx.array(b)))


def test_mlx_kwargs_and_multiple_traces(tmp_path):
    path = str(tmp_path / "kw.mlxfn")

    def fun(x, y=None, *, z):
        out = x * z
        return out if y is None else (out + y, out - y)

    with mlx.exporter(path, fun) as e:
        e(mlx.array(f32(3)), z=mlx.array(f32(3)))
        e(mlx.array(f32(3)), mlx.array(f32(3)), z=mlx.array(f32(3)))
        e(mlx.array(f32(2, 2)), z=mlx.array(f32(2, 2)))
    fn = kiln.import_function(path)
    assert len(fn.info["functions"]) == 3
    x, y, z = f32(3, seed=7), f32(3, seed=8), f32(3, seed=9)
    close(fn(x, z=z)[0], fun(mlx.array(x), z=mlx.array(z)))
    got = fn(x, y, z=z)
    want = fun(mlx.array(x), mlx.array(y), z=mlx.array(z))
    assert len(got) == 2
    for g, w in zip(got, want):
        close(g, w)
    x2, z2 = f32(2, 2, seed=3), f32(2, 2, seed=4)
    close(fn((x2,), {"z": z2})[0], fun(mlx.array(x2), z=mlx.array(z2)))


def test_mlx_dtypes(tmp_path):
    path = str(tmp_path / "dt.mlxfn")

    def fun(i, b, h):
        return (i * 3) // 2 - i % 3, mlx.logical_and(b, i > 2), (h * h).astype(mlx.float16), mlx.argmax(h, axis=0)

    xi = np.arange(6, dtype=np.int32).reshape(2, 3)
    xb = np.array([[True, False, True], [False, True, True]])
    xh = f32(2, 3).astype(np.float16)
    mlx.export_function(path, fun, mlx.array(xi), mlx.array(xb), mlx.array(xh))
    got = kiln.import_function(path)(xi, xb, xh)
    want = fun(mlx.array(xi), mlx.array(xb), mlx.array(xh))
    for g, w in zip(got, want):
        close(g, w, rtol=1e-3, atol=1e-3)


def test_mlx_callback_events_match(tmp_path):
    """kiln's callback events equal MLX's for the same function (names, shapes, primitive names)."""
    c = f32(3, seed=1)

    def as_plain(events, mod):
        out = []
        for e in events:
            d = {}
            for k, v in e.items():
                if k in ("inputs", "outputs"):
                    d[k] = [(n, tuple(s), str(t).split(".")[-1]) for n, s, t in v]
                elif k == "constants":
                    d[k] = [(n, np.array(a).tolist()) for n, a in v]
                else:
                    d[k] = v
            out.append(d)
        return out

    mev, kev = [], []
    mc, kc = mlx.array(c), kiln.array(c)
    mlx.export_function(mev.append, lambda x, y: (x * mc - y, x @ y), mlx.array(f32(3)), mlx.array(f32(3)))
    kiln.export_function(kev.append, lambda x, y: (x * kc - y, x @ y), f32(3), f32(3))
    assert as_plain(kev, kiln) == as_plain(mev, mlx)


# ---- kiln exports, MLX imports ----


def test_kiln_mlp_in_mlx(tmp_path):
    path = str(tmp_path / "k.mlxfn")
    w1, w2 = f32(8, 16, seed=1), f32(16, 4, seed=2)
    kw1, kw2 = kiln.array(w1), kiln.array(w2)

    def mlp(x, *, bias):
        h = x @ kw1
        h = h * (h > 0)
        return h @ kw2 + bias

    x, bias = f32(3, 8), f32(4, seed=3)
    kiln.export_function(path, mlp, x, bias=bias)
    fn = mlx.import_function(path)
    got = fn(mlx.array(x), bias=mlx.array(bias))[0]
    h = np.maximum(x @ w1, 0)
    np.testing.assert_allclose(np.array(got), h @ w2 + bias, rtol=1e-4, atol=1e-4)
    close(kiln.import_function(path)(x, bias=bias)[0], got, rtol=1e-4, atol=1e-4)


def test_kiln_shapeless_and_traces_in_mlx(tmp_path):
    path = str(tmp_path / "ks.mlxfn")
    with kiln.exporter(path, lambda *a: a[0] * a[-1] + 1, shapeless=True) as e:
        e(f32(2, 2))
        e(f32(2, 2), f32(2, 2))
    fn = mlx.import_function(path)
    a, b = f32(5, 3, seed=1), f32(5, 3, seed=2)
    np.testing.assert_allclose(np.array(fn(mlx.array(a))[0]), a * a + 1, rtol=1e-6)
    np.testing.assert_allclose(np.array(fn(mlx.array(a), mlx.array(b))[0]), a * b + 1, rtol=1e-6)


def test_kiln_dtypes_in_mlx(tmp_path):
    path = str(tmp_path / "kd.mlxfn")
    xi = np.arange(6, dtype=np.int32).reshape(2, 3)
    xb = np.array([True, False, True])
    xh = np.array([0.5, -1.25, 3.0], dtype=np.float16)

    def fun(i, b, h):
        return i * 2 - 1, (i > 2), h * h + h, b == b

    kiln.export_function(path, fun, xi, xb, xh)
    got = mlx.import_function(path)(mlx.array(xi), mlx.array(xb), mlx.array(xh))
    want = kiln.import_function(path)(xi, xb, xh)
    for g, w in zip(got, want):
        close(w, g, rtol=1e-3, atol=1e-3)


def test_kiln_versions_read_by_mlx_0_30_1(tmp_path):
    """Files kiln writes for MLX 0.30.1 (the default) and older layouts that 0.30.1 still reads."""
    path = str(tmp_path / "v.mlxfn")
    x = f32(4)
    kiln.export_function(path, lambda a: a * 2 + 1, x, version="0.30.1")
    np.testing.assert_allclose(np.array(mlx.import_function(path)(mlx.array(x))[0]), x * 2 + 1, rtol=1e-6)
    # A file MLX wrote, converted by kiln to MLX 0.30.1's layout from 0.32.1's, is read back by MLX.
    src = str(tmp_path / "m.mlxfn")
    mlx.export_function(src, lambda a: mlx.sin(a) * a, mlx.array(x))
    mid, back = str(tmp_path / "mid.mlxfn"), str(tmp_path / "back.mlxfn")
    kiln.convert(src, mid, version="0.32.1", metadata="via kiln")
    assert kiln.import_function(mid).metadata == "via kiln"
    kiln.convert(mid, back, version="0.30.1", metadata="")
    np.testing.assert_allclose(
        np.array(mlx.import_function(back)(mlx.array(x))[0]), np.sin(x) * x, rtol=1e-5, atol=1e-6
    )


def test_kiln_dot_matches_mlx_layout():
    """The same graph gives the same DOT text in kiln and MLX, node ids aside."""
    import io
    import re

    def norm(text):
        ids = {}
        return re.sub(r"\b\d{5,}\b", lambda m: ids.setdefault(m.group(0), f"N{len(ids)}"), text)

    x = f32(3)
    ka, kb = kiln.array(x), kiln.array(x + 1)
    ma, mb = mlx.array(x), mlx.array(x + 1)
    mlx.eval(ma, mb)
    ks, ms = io.StringIO(), io.StringIO()
    kiln.export_to_dot(ks, (ka * kb - kb) @ ka, a=ka, b=kb)
    mlx.export_to_dot(ms, (ma * mb - mb) @ ma, a=ma, b=mb)
    assert norm(ks.getvalue()) == norm(ms.getvalue())
