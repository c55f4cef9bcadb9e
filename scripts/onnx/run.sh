#!/usr/bin/env bash
# usage: run.sh KILN_CLI WORK_DIR [check.py options...]
# The ONNX export test (CTest label onnx; README "kiln to-onnx"): every golden case and version fixture
# converted with `kiln to-onnx`, checked by onnx.checker and run in ONNX Runtime against the expected
# outputs (check.py). ONNX and ONNX Runtime come from PyPI into a venv under WORK_DIR (created once);
# KILN_ONNX_PYTHON names a python that already has onnx, onnxruntime and numpy instead. When none can be
# had, exit 77: CTest shows the test as skipped, with the reason printed.
set -uo pipefail
SKIP=77
KILN="${1:?usage: run.sh KILN_CLI WORK_DIR}"
WORK="${2:?usage: run.sh KILN_CLI WORK_DIR}"
shift 2
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

skip() {
  echo "SKIPPED: ONNX Runtime is not available: $*"
  exit $SKIP
}

mkdir -p "$WORK" || skip "cannot create $WORK"
if [ -n "${KILN_ONNX_PYTHON:-}" ]; then
  PY="$KILN_ONNX_PYTHON"
else
  VENV="$WORK/onnx-venv"
  if command -v flock >/dev/null 2>&1; then
    exec 9>"$VENV.lock"
    flock 9
  fi
  if [ ! -f "$VENV/.kiln-onnx-ready" ]; then
    failed="$VENV.failed"
    if [ -n "$(find "$failed" -mmin -60 2>/dev/null)" ]; then
      skip "$(cat "$failed") (an attempt in the last hour; delete $failed to retry)"
    fi
    rm -rf "$VENV" "$failed"
    fail() {
      echo "$*" >"$failed"
      skip "$*"
    }
    command -v python3 >/dev/null 2>&1 || fail "no python3"
    python3 -m venv "$VENV" >"$WORK/venv.log" 2>&1 || fail "python3 -m venv failed (see $WORK/venv.log)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --timeout 30 \
      onnx onnxruntime numpy >>"$WORK/venv.log" 2>&1 || fail "pip install onnx onnxruntime numpy failed (see $WORK/venv.log)"
    touch "$VENV/.kiln-onnx-ready"
  fi
  PY="$VENV/bin/python"
fi
"$PY" -c "import onnx, onnxruntime, numpy" 2>/dev/null || skip "$PY cannot import onnx, onnxruntime and numpy"

manifests=("=$ROOT/tests/golden/mlx-0.30.1/manifest.json")
for m in "$ROOT"/tests/golden/versions/*/manifest.json; do
  v="$(basename "$(dirname "$m")")"
  manifests+=("versions/$v=$m")
done
exec "$PY" "$HERE/check.py" --kiln "$KILN" --work "$WORK/cases" --expect "$ROOT/tests/onnx/refusals.json" "$@" \
  "${manifests[@]}"
