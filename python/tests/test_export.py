"""kiln's Python export API: export_function, exporter, import_function (MLX 0.30.1's behaviour and
kiln's additions), the callback form, and the errors each raises."""

import io
import os
import pathlib

import numpy as np
import pytest

import kiln


def np_of(a):
    return np.array(a)


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "fn.mlxfn")


# ---- round trips ----


def test_positional_with_constant(path):
    w = f32(4, 3, seed=1)
    wk = kiln.array(w)

    def fun(x, b):
        return x @ wk + b

    x, b = f32(2, 4), f32(3, seed=2)
    kiln.export_function(path, fun, kiln.array(x), kiln.array(b))
    fn = kiln.import_function(path)
    out = fn(kiln.array(x), kiln.array(b))
    assert isinstance(out, tuple) and len(out) == 1
    np.testing.assert_allclose(np_of(out[0]), x @ w + b, rtol=1e-5, atol=1e-6)
    # NumPy inputs are converted, for export and for calls.
    x2 = f32(2, 4, seed=5)
    np.testing.assert_allclose(np_of(fn(x2, b)[0]), x2 @ w + b, rtol=1e-5, atol=1e-6)


def test_numpy_and_scalar_example_inputs(path):
    kiln.export_function(path, lambda x, s: x * s, f32(3), 2.0)
    fn = kiln.import_function(path)
    assert fn.info["functions"][0]["positional_inputs"] == [
        {"shape": [3], "dtype": "float32"},
        {"shape": [], "dtype": "float32"},
    ]
    x = f32(3, seed=3)
    np.testing.assert_allclose(np_of(fn(x, np.float32(3.0))[0]), x * 3.0, rtol=1e-6)
    np.testing.assert_allclose(np_of(fn(x, kiln.array(3.0))[0]), x * 3.0, rtol=1e-6)
    # Calls take arrays, as in MLX: a bare Python scalar is refused with a hint.
    with pytest.raises(ValueError, match=r"\[import_function::call\] Expected arrays .* found a Python float"):
        fn(x, 3.0)


def test_keyword_inputs_and_call_forms(path):
    def fun(x, *, y, z):
        return x + y * z

    x, y, z = f32(3), f32(3, seed=1), f32(3, seed=2)
    kiln.export_function(path, fun, x, y=y, z=z)
    fn = kiln.import_function(path)
    want = x + y * z
    for out in (
        fn(x, y=y, z=z),
        fn(x, z=kiln.array(z), y=kiln.array(y)),
        fn((x,), {"y": y, "z": z}),
        fn([kiln.array(x)], {"z": z, "y": y}),
    ):
        np.testing.assert_allclose(np_of(out[0]), want, rtol=1e-6)
    info = fn.info["functions"][0]
    assert len(info["positional_inputs"]) == 1
    assert sorted(info["keyword_inputs"]) == ["y", "z"]


def test_single_tuple_or_dict_example_inputs(path):
    kiln.export_function(path, lambda a, b: a - b, (f32(2), f32(2, seed=1)))
    fn = kiln.import_function(path)
    a, b = f32(2, seed=7), f32(2, seed=8)
    np.testing.assert_allclose(np_of(fn(a, b)[0]), a - b)
    np.testing.assert_allclose(np_of(fn((a, b))[0]), a - b)

    p2 = path + "2"
    kiln.export_function(p2, lambda **kw: kw["p"] * kw["q"], {"p": f32(2), "q": f32(2)})
    fn2 = kiln.import_function(p2)
    np.testing.assert_allclose(np_of(fn2({"p": a, "q": b})[0]), a * b)
    np.testing.assert_allclose(np_of(fn2(p=a, q=b)[0]), a * b)


def test_no_inputs(path):
    c = kiln.array(np.arange(4, dtype=np.float32))
    kiln.export_function(path, lambda: c + 1)
    out = kiln.import_function(path)()
    np.testing.assert_array_equal(np_of(out[0]), np.arange(4, dtype=np.float32) + 1)


def test_output_forms(path):
    x = f32(3)
    kiln.export_function(path, lambda a: [a + 1, a * 2], x)
    outs = kiln.import_function(path)(x)
    assert len(outs) == 2
    np.testing.assert_allclose(np_of(outs[1]), x * 2)

    # kiln: a dict's values, in insertion order.
    p2 = path + ".dict"
    kiln.export_function(p2, lambda a: {"second": a * 2, "first": a + 1, "third": a - 1}, x)
    outs = kiln.import_function(p2)(x)
    assert len(outs) == 3
    for o, want in zip(outs, (x * 2, x + 1, x - 1)):
        np.testing.assert_allclose(np_of(o), want, rtol=1e-6)


def test_dtypes_round_trip(path):
    xi = np.arange(6, dtype=np.int32).reshape(2, 3)
    xb = np.array([True, False, True])
    xh = np.array([1.5, -2.0], dtype=np.float16)

    def fun(i, b, h):
        return i * 3 - 1, b == b, h + h, i > 2

    kiln.export_function(path, fun, xi, xb, xh)
    outs = kiln.import_function(path)(xi, xb, xh)
    assert [str(o.dtype) for o in outs] == [str(kiln.int32), str(kiln.bool_), str(kiln.float16), str(kiln.bool_)]
    np.testing.assert_array_equal(np_of(outs[0]), xi * 3 - 1)
    np.testing.assert_array_equal(np_of(outs[2]), xh + xh)
    np.testing.assert_array_equal(np_of(outs[3]), xi > 2)


def test_shapeless(path):
    kiln.export_function(path, lambda a, b: a * b + 1, f32(2, 3), f32(2, 3), shapeless=True)
    fn = kiln.import_function(path)
    assert fn.info["shapeless"] is True
    a, b = f32(5, 7), f32(5, 7, seed=1)
    np.testing.assert_allclose(np_of(fn(a, b)[0]), a * b + 1, rtol=1e-6)
    with pytest.raises(ValueError, match="No imported function found"):
        fn(f32(5), f32(5))  # the rank still has to match


def test_pathlike_and_repr(tmp_path):
    p = pathlib.Path(tmp_path) / "p.mlxfn"
    kiln.export_function(p, lambda a: a + a, f32(2))
    fn = kiln.import_function(p)
    assert fn.file == str(p)
    assert "ImportedFunction" in repr(fn) and "1 signature" in repr(fn)
    b = os.fsencode(str(p) + ".b")
    kiln.export_function(b, lambda a: a - a, f32(2))
    assert kiln.import_function(b).file == str(p) + ".b"


def test_exporter_several_traces(path):
    def fun(*args):
        out = args[0]
        for a in args[1:]:
            out = out + a
        return out

    with kiln.exporter(path, fun) as e:
        assert isinstance(e, kiln.FunctionExporter)
        e(f32(2))
        e(f32(2), f32(2))
        e(f32(2), f32(2), f32(2))
    fn = kiln.import_function(path)
    assert len(fn.info["functions"]) == 3
    xs = [f32(2, seed=s) for s in range(3)]
    for n in (1, 2, 3):
        np.testing.assert_allclose(np_of(fn(*xs[:n])[0]), sum(xs[:n]), rtol=1e-6)
    with pytest.raises(RuntimeError, match="closed"):  # MLX raises RuntimeError here
        e(f32(2), f32(2), f32(2), f32(2))


def test_exporter_close_and_same_signature(path):
    e = kiln.exporter(path, lambda a, b=None: a + 1 if b is None else a + b)
    e(f32(3))
    with pytest.raises(RuntimeError, match="same signature is not allowed"):
        e(f32(3, seed=1))
    e(f32(3), b=f32(3))  # another signature (keyword input)
    e.close()
    e.close()  # closing twice is fine
    with pytest.raises(RuntimeError, match="Attempting to write after exporting is closed"):
        e(f32(4))
    fn = kiln.import_function(path)
    assert len(fn.info["functions"]) == 2


def test_exporter_in_a_reference_cycle_is_collected(path):
    import gc
    import weakref

    class Fun:
        def __call__(self, x):
            return x + 1

    def make():
        d = {}
        f = Fun()
        f.d = d  # the function holds the dict that holds the exporter: a cycle through C++
        d["e"] = kiln.exporter(path, f)
        d["e"](f32(2))
        return weakref.ref(f)

    refs = [make() for _ in range(3)]
    gc.collect()
    assert all(r() is None for r in refs)


def test_exporter_shapeless_and_version(path):
    with kiln.exporter(path, lambda a: a * 2, shapeless=True, version="0.29.0") as e:
        e(f32(2, 2))
    fn = kiln.import_function(path)
    assert fn.info["version"] == "0.29.0" and fn.info["shapeless"]
    np.testing.assert_allclose(np_of(fn(f32(3, 1))[0]), f32(3, 1) * 2)


def test_versions_and_metadata(path):
    versions = kiln.supported_versions()
    assert isinstance(versions, list) and "0.30.1" in versions and versions == sorted(
        versions, key=lambda v: tuple(int(p) for p in v.split("."))
    )
    for v in versions:
        kiln.export_function(path, lambda a: a + 1, f32(2), version=v)
        fn = kiln.import_function(path)
        assert fn.info["version"] == v
        np.testing.assert_allclose(np_of(fn(np.ones(2, np.float32))[0]), [2, 2])

    kiln.export_function(path, lambda a: a + 1, f32(2), metadata="model=tiny; ü")
    fn = kiln.import_function(path)
    assert fn.metadata == "model=tiny; ü"
    assert fn.info["version"] == "0.32.1"  # metadata alone selects MLX 0.32.1's layout
    kiln.export_function(path, lambda a: a + 1, f32(2))
    assert kiln.import_function(path).metadata == ""

    with pytest.raises(ValueError, match="Metadata cannot be written for MLX 0.30.1"):
        kiln.export_function(path, lambda a: a + 1, f32(2), version="0.30.1", metadata="m")
    with pytest.raises(ValueError, match="9.9.9"):
        kiln.export_function(path, lambda a: a + 1, f32(2), version="9.9.9")
    with pytest.raises(TypeError, match="version must be a str"):
        kiln.export_function(path, lambda a: a + 1, f32(2), version=30)


def test_imported_function_in_a_trace(path):
    kiln.export_function(path, lambda a: a * 3, f32(2))
    inner = kiln.import_function(path)
    outer = path + ".outer"
    kiln.export_function(outer, lambda a: inner(a)[0] + 1, f32(2))
    x = f32(2, seed=4)
    np.testing.assert_allclose(np_of(kiln.import_function(outer)(x)[0]), x * 3 + 1, rtol=1e-6)


def test_import_limits(path):
    kiln.export_function(path, lambda a: a @ a, f32(64, 64))
    with pytest.raises((ValueError, RuntimeError), match="import_function"):
        kiln.import_function(path, max_array_bytes=1024)
    with pytest.raises((ValueError, RuntimeError), match="import_function"):
        kiln.import_function(path, max_call_bytes=1024)
    fn = kiln.import_function(path, max_array_bytes=0, max_call_bytes=0, mlx_cpu_quirks=True)
    x = f32(64, 64)
    np.testing.assert_allclose(np_of(fn(x)[0]), x @ x, rtol=1e-4, atol=1e-4)
    with pytest.raises(TypeError, match="max_array_bytes must be an int"):
        kiln.import_function(path, max_array_bytes="big")
    with pytest.raises(ValueError, match="must not be negative"):
        kiln.import_function(path, max_call_bytes=-1)


# ---- the callback form ----


def test_callback_events():
    events = []
    c = kiln.array(np.array([1.0, 2.0, 3.0], np.float32))

    def fun(x, y, z):
        return x * c + y - z, x @ y

    x, y, z = f32(3), f32(3), f32(3)
    kiln.export_function(events.append, fun, x, y, z=z)
    types = [e["type"] for e in events]
    assert types[:4] == ["inputs", "keyword_inputs", "outputs", "constants"]
    assert set(types[4:]) == {"primitive"}
    assert events[0]["inputs"] == [("A", (3,), kiln.float32), ("B", (3,), kiln.float32), ("C", (3,), kiln.float32)]
    assert events[1]["keywords"] == [("z", "C")]
    outs = events[2]["outputs"]
    assert [(o[1], o[2]) for o in outs] == [((3,), kiln.float32), ((), kiln.float32)]
    (cname, cval), = events[3]["constants"]
    assert isinstance(cval, kiln.array)
    np.testing.assert_array_equal(np_of(cval), [1, 2, 3])
    prims = events[4:]
    assert {p["name"] for p in prims} >= {"Multiply", "Add", "Subtract"}
    for p in prims:
        assert set(p) == {"type", "name", "inputs", "outputs", "arguments"}
        assert isinstance(p["arguments"], list)
        for name, shape, dtype in p["inputs"] + p["outputs"]:
            assert isinstance(name, str) and isinstance(shape, tuple) and isinstance(dtype, kiln.Dtype)
    # The multiply reads the first input and the constant.
    mul = next(p for p in prims if p["name"] == "Multiply")
    assert {n for n, _, _ in mul["inputs"]} == {"A", cname}


def test_callback_exporter_reports_constants_once():
    events = []
    c = kiln.array(np.ones(2, np.float32))
    with kiln.exporter(events.append, lambda *a: a[0] + c if len(a) == 1 else a[0] * a[1] + c) as e:
        e(f32(2))
        e(f32(2), f32(2))
    consts = [e for e in events if e["type"] == "constants"]
    assert len(consts) == 2 and len(consts[0]["constants"]) == 1 and consts[1]["constants"] == []


def test_callback_primitive_arguments():
    events = []
    kiln.export_function(events.append, lambda a: a.T, f32(2, 3))
    (t,) = [e for e in events if e["type"] == "primitive"]
    assert t["name"] == "Transpose" and t["arguments"] == [[1, 0]]


def test_callback_errors_propagate():
    def cb(event):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        kiln.export_function(cb, lambda a: a + 1, f32(2))
    with pytest.raises(ValueError, match="version and metadata apply to files"):
        kiln.export_function(lambda e: None, lambda a: a + 1, f32(2), metadata="m")


# ---- errors ----


def test_bad_function_and_file_types(path):
    with pytest.raises(TypeError, match=r"\[export_function\] fun must be a callable, found int"):
        kiln.export_function(path, 3, f32(2))
    with pytest.raises(TypeError, match=r"\[export_function\] The first argument must be a file path"):
        kiln.export_function(42, lambda a: a, f32(2))
    with pytest.raises(TypeError, match=r"\[exporter\] fun must be a callable"):
        kiln.exporter(path, None)
    with pytest.raises(TypeError, match=r"\[import_function\] file must be a path"):
        kiln.import_function(3.5)


def test_bad_outputs(path):
    with pytest.raises(ValueError, match=r"\[export_function\] Outputs can be either a single array.*found int"):
        kiln.export_function(path, lambda a: 3, f32(2))
    with pytest.raises(ValueError, match=r"Outputs can be either .*found a tuple holding a str"):
        kiln.export_function(path, lambda a: (a, "x"), f32(2))
    with pytest.raises(ValueError, match=r"Outputs can be either .*found a list holding a NoneType"):
        kiln.export_function(path, lambda a: [None], f32(2))
    with pytest.raises(ValueError, match=r"found a tuple holding a list"):  # no nesting, as MLX
        kiln.export_function(path, lambda a: (a, [a]), f32(2))
    with pytest.raises(ValueError, match=r"found a dict holding a tuple"):
        kiln.export_function(path, lambda a: {"x": (a,)}, f32(2))


def test_bad_example_inputs(path):
    msg = r"\[export_function\] Inputs can either be a variable number of positional and keyword arrays"
    with pytest.raises(ValueError, match=msg):
        kiln.export_function(path, lambda a: a, (f32(2),), f32(2), f32(2))
    with pytest.raises(ValueError, match=msg):
        kiln.export_function(path, lambda a, b: a, (f32(2),), b=f32(2))
    with pytest.raises(ValueError, match=r"\[export_function\].*str"):
        kiln.export_function(path, lambda a: a, "text")
    # Lists are not inputs (as in MLX): a nested list is refused, not converted.
    with pytest.raises(ValueError, match=msg + r".*found a list where an input array was expected"):
        kiln.export_function(path, lambda a: a, [[kiln.array(np.float32(1))]])
    with pytest.raises(ValueError, match=msg):
        kiln.export_function(path, lambda a, b: a, f32(1), [1.0, 2.0])


def test_exception_in_function_propagates(path):
    def fun(a):
        raise ZeroDivisionError("inside the traced function")

    with pytest.raises(ZeroDivisionError, match="inside the traced function"):
        kiln.export_function(path, fun, f32(2))
    # The exporter stays usable after a failed trace.
    e = kiln.exporter(path, lambda a: a + 1 if a.ndim == 1 else fun(a))
    with pytest.raises(ZeroDivisionError):
        e(f32(2, 2))
    e(f32(2))
    e.close()
    assert len(kiln.import_function(path).info["functions"]) == 1


def test_wrong_calls(path):
    kiln.export_function(path, lambda a, *, k: a + k, f32(2, 3), k=f32(2, 3))
    fn = kiln.import_function(path)
    nomatch = r"\[import_function::call\] No imported function found which matches"
    with pytest.raises(ValueError, match=nomatch):
        fn(f32(2, 3))  # missing keyword
    with pytest.raises(ValueError, match=nomatch):
        fn(f32(2, 3), f32(2, 3), k=f32(2, 3))  # too many positional inputs
    with pytest.raises(ValueError, match=nomatch):
        fn(f32(3, 2), k=f32(2, 3))  # wrong shape
    with pytest.raises(ValueError, match=nomatch):
        fn(np.zeros((2, 3), np.int32), k=f32(2, 3))  # wrong dtype
    with pytest.raises(ValueError, match=nomatch):
        fn(f32(2, 3), k=f32(2, 3), other=f32(2, 3))  # unknown keyword
    with pytest.raises(ValueError) as ei:
        fn(f32(2, 3), j=f32(2, 3))
    assert '"k": (2,3) float32' in str(ei.value) or '"k"' in str(ei.value)
    with pytest.raises(ValueError, match=r"\[import_function::call\] Inputs can either be"):
        fn((f32(2, 3),), {"k": f32(2, 3)}, f32(1))
    with pytest.raises(ValueError, match=r"\[import_function::call\].*object"):
        fn(object(), k=f32(2, 3))


def test_not_an_mlxfn_file(tmp_path):
    p = tmp_path / "text.mlxfn"
    p.write_text("hello, this is not a function file\n" * 4)
    with pytest.raises((ValueError, RuntimeError), match=r"\[import_function\]"):
        kiln.import_function(str(p))
    with pytest.raises((ValueError, RuntimeError), match=r"\[import_function\]"):
        kiln.import_function(str(tmp_path / "missing.mlxfn"))
    empty = tmp_path / "empty.mlxfn"
    empty.write_bytes(b"")
    with pytest.raises((ValueError, RuntimeError), match=r"\[import_function\]"):
        kiln.import_function(str(empty))


def test_truncated_file(path):
    w = kiln.array(f32(16, 16))
    kiln.export_function(path, lambda a: a @ w + 1, f32(16, 16))
    data = open(path, "rb").read()
    errors = set()
    for n in (len(data) - 1, len(data) // 2, len(data) // 3, 40, 9, 1):
        with open(path, "wb") as f:
            f.write(data[:n])
        with pytest.raises((ValueError, RuntimeError), match=r"\[import_function") as ei:
            fn = kiln.import_function(path)
            fn(f32(16, 16))  # a cut in the constants shows when a call reads them
        errors.add(type(ei.value))
    assert errors <= {ValueError, RuntimeError}


def test_write_failure_is_an_error(tmp_path):
    with pytest.raises(RuntimeError, match=r"\[export_function\] Failed to open"):
        kiln.export_function(str(tmp_path / "no" / "such" / "dir.mlxfn"), lambda a: a, f32(2))


# ---- export_to_dot ----


def test_export_to_dot_stream_and_file(tmp_path):
    a = kiln.array(np.float32(1.0))
    b = kiln.array(np.float32(2.0))
    c = (a + b) * b
    s = io.StringIO()
    kiln.export_to_dot(s, c, a=a, b=b)
    text = s.getvalue()
    lines = text.split("\n")
    assert lines[0] == "digraph {" and lines[-1] == "}"
    assert '{ rank=source; "a"; }' in lines and '{ rank=source; "b"; }' in lines
    assert sum("[label =\"Add\", shape=rectangle]" in l for l in lines) == 1
    assert sum("[label =\"Multiply\", shape=rectangle]" in l for l in lines) == 1
    assert '{ "C"; }' in lines and '{ rank=sink; "D"; }' in lines

    p = tmp_path / "g.dot"
    kiln.export_to_dot(p, [c], {"x": c})
    assert p.read_text().startswith("digraph {\n")
    kiln.export_to_dot(str(p), c)
    assert p.read_text().count("rank=sink") == 1

    with pytest.raises(ValueError, match=r"\[export_to_dot\] Accepts file-like objects or strings"):
        kiln.export_to_dot(3, c)
    with pytest.raises(ValueError, match=r"\[export_to_dot\]"):
        kiln.export_to_dot(io.StringIO(), c, "not an array")
