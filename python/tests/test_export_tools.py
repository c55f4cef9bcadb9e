"""kiln.inspect (the dict `kiln inspect --json` prints), kiln.convert and ImportedFunction.info."""

import json
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import kiln

HERE = pathlib.Path(__file__).resolve().parent


def kiln_cli():
    """The command-line tool of this build: next to the package (build/python/kiln/bin/kiln), at
    build/kiln, or on PATH."""
    candidates = [pathlib.Path(kiln.__file__).parent / "bin" / "kiln", HERE.parents[1] / "build" / "kiln"]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which("kiln")
    if found is None:
        pytest.skip("the kiln command-line tool is not built")
    return found


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.fixture
def sample(tmp_path):
    path = str(tmp_path / "sample.mlxfn")
    w = kiln.array(f32(4, 4, seed=1))
    b = kiln.array(f32(4, seed=2))

    def fun(x, *, y):
        h = x @ w + b
        return h * y, (h > 0)

    with kiln.exporter(path, fun, metadata='{"note": "tab\\there"}') as e:
        e(f32(2, 4), y=f32(2, 4))
        e(f32(3, 4), y=f32(3, 4))
    return path


def test_inspect_equals_cli_json(sample):
    out = subprocess.run([kiln_cli(), "inspect", "--json", sample], check=True, capture_output=True, text=True)
    assert json.loads(out.stdout) == kiln.inspect(sample)


def test_inspect_tape_equals_cli(sample):
    out = subprocess.run(
        [kiln_cli(), "inspect", "--json", "--tape", sample], check=True, capture_output=True, text=True
    )
    assert json.loads(out.stdout) == kiln.inspect(sample, tape=True)


def test_inspect_contents(sample):
    d = kiln.inspect(pathlib.Path(sample))
    assert d["file"] == sample
    assert d["version"] == "0.32.1" and d["metadata"] == '{"note": "tab\\there"}'
    # w and b, plus the scalar of `h > 0` (and any other scalar the ops make)
    assert d["constants"] >= 3 and d["constant_bytes"] >= (16 + 4) * 4
    f0, f1 = d["functions"]
    assert f0["positional_inputs"] == [{"shape": [2, 4], "dtype": "float32"}]
    assert f0["keyword_inputs"] == {"y": {"shape": [2, 4], "dtype": "float32"}}
    assert f0["outputs"] == [{"shape": [2, 4], "dtype": "float32"}, {"shape": [2, 4], "dtype": "bool"}]
    # w and b are written once, with the first trace
    assert f0["new_constants"] >= 2 and f0["new_constants"] + f1["new_constants"] == d["constants"]
    assert f1["new_constant_bytes"] < 64
    assert f0["primitive_histogram"].get("Matmul", 0) == 1
    assert "tape" not in f0
    assert kiln.import_function(sample).info == {k: v for k, v in d.items() if k != "file"}


def test_inspect_mlx_file_equals_cli(tmp_path):
    mlx = pytest.importorskip("mlx.core")
    path = str(tmp_path / "m.mlxfn")
    w = mlx.array(f32(3, 3))
    mlx.export_function(path, lambda x: mlx.exp(x @ w).sum(axis=1), mlx.array(f32(2, 3)))
    out = subprocess.run([kiln_cli(), "inspect", "--json", "--tape", path], check=True, capture_output=True, text=True)
    assert json.loads(out.stdout) == kiln.inspect(path, tape=True)


def test_convert(sample, tmp_path):
    versions = kiln.supported_versions()
    x, y = f32(2, 4, seed=9), f32(2, 4, seed=10)
    want = [np.array(o) for o in kiln.import_function(sample)(x, y=y)]
    for v in [v for v in versions if v >= "0.32.1"]:
        out = tmp_path / f"conv-{v}.mlxfn"
        kiln.convert(sample, out, version=v)
        fn = kiln.import_function(out)
        assert fn.info["version"] == v and fn.metadata == '{"note": "tab\\there"}'
        for o, w in zip(fn(x, y=y), want):
            np.testing.assert_array_equal(np.array(o), w)
    # Dropping the metadata allows an older layout.
    old = str(tmp_path / "old.mlxfn")
    kiln.convert(sample, old, metadata="")
    fn = kiln.import_function(old)
    assert fn.info["version"] == "0.30.1" and fn.metadata == ""
    for o, w in zip(fn(x, y=y), want):
        np.testing.assert_array_equal(np.array(o), w)
    kiln.convert(old, str(tmp_path / "meta.mlxfn"), version="0.32.1", metadata="new")
    assert kiln.import_function(str(tmp_path / "meta.mlxfn")).metadata == "new"


def test_convert_errors(sample, tmp_path):
    with pytest.raises(ValueError, match=r"convert"):
        kiln.convert(sample, str(tmp_path / "x.mlxfn"))  # metadata cannot be written for 0.30.1
    assert not (tmp_path / "x.mlxfn").exists()
    with pytest.raises((ValueError, RuntimeError), match=r"\["):
        kiln.convert(str(tmp_path / "missing.mlxfn"), str(tmp_path / "y.mlxfn"))
    with pytest.raises(TypeError, match=r"\[convert\] Expected file paths"):
        kiln.convert(sample, 7)
    with pytest.raises(TypeError, match=r"metadata must be a str"):
        kiln.convert(sample, str(tmp_path / "z.mlxfn"), metadata=3)
