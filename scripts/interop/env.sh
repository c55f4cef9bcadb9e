#!/usr/bin/env bash
# usage: env.sh VERSION VENV_DIR
# Creates (once; later calls reuse it) a Python venv at VENV_DIR holding `mlx[cpu]==VERSION` and numpy
# from PyPI, and prints the venv's python on the last line of stdout. When that cannot be done (no
# python3, no venv module, PyPI unreachable, no wheel for this platform) it prints the reason and
# exits 77, which the interop tests pass through to CTest as "skipped" (never "passed").
set -uo pipefail
SKIP=77
VERSION="${1:?usage: env.sh VERSION VENV_DIR}"
VENV="${2:?usage: env.sh VERSION VENV_DIR}"
PY_HOST="${KILN_INTEROP_PYTHON:-python3}"

skip() {
  echo "SKIPPED: MLX $VERSION is not available: $*"
  exit $SKIP
}

mkdir -p "$(dirname "$VENV")" || skip "cannot create $(dirname "$VENV")"
# Two tests of one version may start together (ctest -j): the second waits for the first's install.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$VENV.lock"
  flock 9
fi

ready="$VENV/.kiln-mlx-ready"
if [ -f "$ready" ] && [ "$(cat "$ready")" = "$VERSION" ] && [ -x "$VENV/bin/python" ]; then
  echo "$VENV/bin/python"
  exit 0
fi
# A failed attempt is not retried for an hour (the other test of this version would pay the pip
# timeouts again).
failed="$VENV.failed"
if [ -n "$(find "$failed" -mmin -60 2>/dev/null)" ]; then
  skip "$(cat "$failed") (an attempt in the last hour; delete $failed to retry)"
fi
rm -f "$failed"
fail() {
  echo "$*" >"$failed"
  skip "$*"
}

command -v "$PY_HOST" >/dev/null 2>&1 || fail "no $PY_HOST on PATH (install python3, python3-venv)"
rm -rf "$VENV"
log="$VENV.log"
if ! "$PY_HOST" -m venv "$VENV" >"$log" 2>&1; then
  fail "'$PY_HOST -m venv' failed (install python3-venv): $(tail -n 2 "$log" | tr '\n' ' ')"
fi
pip=("$VENV/bin/python" -m pip --disable-pip-version-check --no-input -q)
if ! "${pip[@]}" --version >>"$log" 2>&1; then
  fail "the venv has no pip (install python3-venv/python3-pip): $(tail -n 2 "$log" | tr '\n' ' ')"
fi
echo "[interop] installing mlx[cpu]==$VERSION numpy into $VENV" >&2
if ! timeout 900 "${pip[@]}" install --timeout 30 --retries 2 --only-binary=:all: "mlx[cpu]==$VERSION" numpy >>"$log" 2>&1; then
  fail "pip install 'mlx[cpu]==$VERSION' numpy failed: $(grep -E 'ERROR|error' "$log" | tail -n 2 | tr '\n' ' ')"
fi
got=$("$VENV/bin/python" -c 'import mlx.core as mx, numpy; print(mx.__version__)' 2>>"$log")
if [ "$got" != "$VERSION" ]; then
  fail "import mlx.core gave version '$got', expected $VERSION: $(tail -n 2 "$log" | tr '\n' ' ')"
fi
echo "$VERSION" >"$ready"
echo "$VENV/bin/python"
