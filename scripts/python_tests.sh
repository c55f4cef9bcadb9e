#!/usr/bin/env bash
# kiln's Python package, tested as a user gets it: build the wheel with pip (scikit-build-core +
# nanobind from PyPI; the C++ library is built inside it), install it into a fresh venv together with
# pytest, NumPy and real MLX (mlx[cpu]==0.30.1, for the side-by-side and interop tests), and run
# python/tests. The wheel's CMake build is kept in build-py/ and compiled through ccache, so a second
# run rebuilds only what changed.
#   BUILD_DIR (default build): where the venv (pyvenv/) and the wheel (wheel/) go.
#   KILN_PYTEST_ARGS: extra pytest arguments (e.g. "-k export").
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
export CCACHE_BASEDIR="$PWD"
# The same compiler name as build/ (scripts/setup.sh), so that the library's objects come from ccache.
export CXX="${CXX:-g++}" CC="${CC:-gcc}"
PY="${KILN_PYTHON:-python3}"
VENV="$BUILD_DIR/pyvenv"
rm -rf "$VENV" "$BUILD_DIR/wheel"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "scikit-build-core>=0.10" "nanobind>=2.4" pytest numpy
# Real MLX is optional: the tests that compare with it report skipped, with the reason, without it.
"$VENV/bin/python" -m pip install -q "mlx[cpu]==0.30.1" ||
  echo "[python] mlx[cpu]==0.30.1 could not be installed: the MLX comparison tests will be skipped"
# The reference safetensors implementation, for the interop test of .safetensors files, and llama.cpp's
# gguf package (its writer and reference dequantization), for the .gguf tests.
"$VENV/bin/python" -m pip install -q safetensors ||
  echo "[python] safetensors could not be installed: its interop test will be skipped"
"$VENV/bin/python" -m pip install -q gguf ||
  echo "[python] gguf could not be installed: its interop test will be skipped"
# ONNX and ONNX Runtime, for kiln.to_onnx's tests (python/tests/test_onnx.py: converted models run in ORT).
"$VENV/bin/python" -m pip install -q onnx onnxruntime ||
  echo "[python] onnx / onnxruntime could not be installed: the ONNX tests will be skipped"
echo "[python] building the wheel (pip wheel .)"
"$VENV/bin/python" -m pip wheel -q . --no-build-isolation --no-deps -w "$BUILD_DIR/wheel"
"$VENV/bin/python" -m pip install -q --no-deps "$BUILD_DIR"/wheel/kiln-*.whl
ls "$BUILD_DIR"/wheel/
# Run from outside the source tree so that `import kiln` is the installed wheel.
VENV_ABS="$(cd "$VENV" && pwd)"
# -rs: the reason of every skipped test in the summary.
(cd python/tests && "$VENV_ABS/bin/python" -m pytest -q -rs -p no:cacheprovider ${KILN_PYTEST_ARGS:-} .)
# The side-by-side benchmark's own logic (case list, medians, tables; no MLX, no timings): bench/compare.py.
"$VENV_ABS/bin/python" -m pytest -q -p no:cacheprovider bench/test_compare.py

# The stable ABI: on Python 3.12 the wheel is abi3 (cp312-abi3); it must install and pass on a newer
# Python (3.13) too. Runs where both interpreters exist (pyenv's, on this project's machines).
find_python() {  # an interpreter of version $1 that runs (a pyenv shim may exist without its version active)
  local c
  for c in "$(command -v "python$1" || true)" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/"python$1" \
           "/usr/bin/python$1"; do
    if [ -n "$c" ] && [ -x "$c" ] && "$c" -c "import venv" >/dev/null 2>&1; then
      echo "$c"
      return
    fi
  done
}
PY312="$(find_python 3.12)"
PY313="$(find_python 3.13)"
if [ -n "$PY312" ] && [ -n "$PY313" ] && [ "${KILN_SKIP_ABI3:-0}" != 1 ]; then
  echo "[python] stable-ABI wheel: built with $("$PY312" --version), tested with $("$PY313" --version)"
  rm -rf "$BUILD_DIR/pyvenv312" "$BUILD_DIR/pyvenv313" "$BUILD_DIR/wheel-abi3"
  "$PY312" -m venv "$BUILD_DIR/pyvenv312"
  "$BUILD_DIR/pyvenv312/bin/python" -m pip install -q --upgrade pip
  "$BUILD_DIR/pyvenv312/bin/python" -m pip install -q "scikit-build-core>=0.10" "nanobind>=2.4"
  "$BUILD_DIR/pyvenv312/bin/python" -m pip wheel -q . --no-build-isolation --no-deps -Cbuild-dir=build-py312 \
    -w "$BUILD_DIR/wheel-abi3"
  ls "$BUILD_DIR"/wheel-abi3/
  case "$(ls "$BUILD_DIR"/wheel-abi3/)" in
    *-abi3-*) ;;
    *) echo "[python] expected an abi3 wheel from Python 3.12"; exit 1 ;;
  esac
  "$PY313" -m venv "$BUILD_DIR/pyvenv313"
  "$BUILD_DIR/pyvenv313/bin/python" -m pip install -q --upgrade pip
  "$BUILD_DIR/pyvenv313/bin/python" -m pip install -q pytest numpy "$BUILD_DIR"/wheel-abi3/kiln-*.whl
  "$BUILD_DIR/pyvenv313/bin/python" -m pip install -q safetensors || true
  "$BUILD_DIR/pyvenv313/bin/python" -m pip install -q gguf onnx onnxruntime || true
  "$BUILD_DIR/pyvenv313/bin/python" -m pip install -q "mlx[cpu]==0.30.1" ||
    echo "[python] mlx[cpu]==0.30.1 could not be installed for 3.13: the MLX comparison tests will be skipped"
  V313="$(cd "$BUILD_DIR/pyvenv313" && pwd)"
  (cd python/tests && "$V313/bin/python" -m pytest -q -rs -p no:cacheprovider ${KILN_PYTEST_ARGS:-} .)
else
  echo "[python] stable-ABI check skipped: needs python3.12 and python3.13 on PATH"
fi
