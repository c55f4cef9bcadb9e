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
PY="${KILN_PYTHON:-python3}"
VENV="$BUILD_DIR/pyvenv"
rm -rf "$VENV" "$BUILD_DIR/wheel"
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q "scikit-build-core>=0.10" "nanobind>=2.4" pytest numpy
# Real MLX is optional: the tests that compare with it report skipped, with the reason, without it.
"$VENV/bin/python" -m pip install -q "mlx[cpu]==0.30.1" ||
  echo "[python] mlx[cpu]==0.30.1 could not be installed: the MLX comparison tests will be skipped"
echo "[python] building the wheel (pip wheel .)"
"$VENV/bin/python" -m pip wheel -q . --no-build-isolation --no-deps -w "$BUILD_DIR/wheel"
"$VENV/bin/python" -m pip install -q --no-deps "$BUILD_DIR"/wheel/kiln-*.whl
ls "$BUILD_DIR"/wheel/
# Run from outside the source tree so that `import kiln` is the installed wheel.
VENV_ABS="$(cd "$VENV" && pwd)"
cd python/tests
exec "$VENV_ABS/bin/python" -m pytest -q -p no:cacheprovider ${KILN_PYTEST_ARGS:-} .
