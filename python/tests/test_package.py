"""The installed package: the CLI through `python -m kiln` and the `kiln` entry point, type stubs,
and a self-contained extension (libkiln inside the package, found through $ORIGIN)."""

import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

import kiln

PKG = os.path.dirname(kiln.__file__)
INSTALLED = "site-packages" in PKG or "dist-packages" in PKG
needs_wheel = pytest.mark.skipif(not INSTALLED, reason="kiln is a development copy here, not an installed wheel")


def test_python_m_kiln_runs_the_cli():
    r = subprocess.run([sys.executable, "-m", "kiln", "--help"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "usage: kiln" in r.stdout and "inspect" in r.stdout


def test_cli_errors_exit_nonzero():
    r = subprocess.run([sys.executable, "-m", "kiln", "inspect", "/nonexistent.mlxfn"], capture_output=True, text=True)
    assert r.returncode != 0
    assert "nonexistent" in r.stderr


@needs_wheel
def test_console_entry_point():
    exe = os.path.join(sysconfig.get_path("scripts"), "kiln")
    assert os.path.exists(exe), exe
    r = subprocess.run([exe, "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "usage: kiln" in r.stdout


@needs_wheel
def test_type_stubs_are_shipped():
    stub = os.path.join(PKG, "_core", "__init__.pyi")
    assert os.path.exists(stub)
    text = open(stub).read()
    for name in ["class array", "def eval", "class Dtype", "def __getitem__"]:
        assert name in text, name
    for sub in ["random", "linalg", "fft", "fast"]:
        assert os.path.exists(os.path.join(PKG, "_core", sub + ".pyi")), sub
    assert os.path.exists(os.path.join(PKG, "py.typed"))


@needs_wheel
def test_extension_is_self_contained():
    libs = [f for f in os.listdir(PKG) if f.startswith("libkiln")]
    assert libs, os.listdir(PKG)
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) is not installed")
    ext = kiln._core.__file__
    out = subprocess.run([readelf, "-d", ext], capture_output=True, text=True).stdout
    paths = [line for line in out.splitlines() if "RUNPATH" in line or "RPATH" in line]
    assert paths and all("$ORIGIN" in line for line in paths), paths
    assert not any("/build" in line or "/work" in line for line in paths), paths


def test_submodules_import_like_mlx():
    import kiln.random
    import kiln.linalg
    import kiln.fft
    import kiln.fast

    assert kiln.random is sys.modules["kiln.random"]
    assert kiln.linalg.__name__.endswith("linalg")


def test_openblas_thread_timeout_set_before_the_extension_loads_unless_given():
    # OpenBLAS reads OPENBLAS_THREAD_TIMEOUT once, as it loads with kiln's extension; kiln sets a short
    # spin (2^20 cycles) unless the user chose one.
    code = "import os, kiln; print(os.environ.get('OPENBLAS_THREAD_TIMEOUT'))"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "20"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(env, OPENBLAS_THREAD_TIMEOUT="7"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "7"
