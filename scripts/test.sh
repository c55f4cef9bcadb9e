#!/usr/bin/env bash
# Set up, build and run every kiln test (unit, conformance over the golden MLX corpus, CLI, and the
# interop tests against real MLX from PyPI), then the Python package's tests and the sanitizer stage.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
# ccache keys on paths relative to the checkout, so every build here (and a clone elsewhere) shares it.
export CCACHE_BASEDIR="$ROOT"
./scripts/setup.sh
BUILD_DIR="${BUILD_DIR:-build}"
cd "$BUILD_DIR"
rc=0
ctest --output-on-failure -j"$(nproc)" "$@" || rc=$?
# The interop tests' per-version counts and their skipped/known cases with reasons (CTest shows the
# output of failed tests only).
if [ -f Testing/Temporary/LastTest.log ]; then
  summary=$(grep -E '^(kiln_to_mlx|mlx_to_kiln|kiln |generated|SKIPPED: MLX)|^  (SKIPPED  |KNOWN    |FAILED   )' \
    Testing/Temporary/LastTest.log || true)
  if [ -n "$summary" ]; then
    echo "---- interop with real MLX (ctest -L interop) ----"
    echo "$summary"
  fi
fi
[ "$rc" = 0 ] || exit "$rc"
# ---- The Python package (issue 10): pip wheel ., installed into a fresh venv, python/tests ----
cd "$ROOT"
echo "---- Python package (scripts/python_tests.sh) ----"
BUILD_DIR="$BUILD_DIR" ./scripts/python_tests.sh
# ---- Hostile files (issue 6): ASan+UBSan suite, fuzzing, TSan concurrency (scripts/sanitize.sh) ----
# KILN_SKIP_SANITIZE=1 skips them (e.g. for a quick local run).
if [ "${KILN_SKIP_SANITIZE:-0}" != 1 ]; then
  ./scripts/sanitize.sh
fi
