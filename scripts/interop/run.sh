#!/usr/bin/env bash
# usage: run.sh kiln_to_mlx|mlx_to_kiln VERSION KILN_INTEROP WORK_DIR
# One interop test against real MLX VERSION from PyPI (CTest runs it; README "Interop with real MLX"):
#   kiln_to_mlx  kiln writes every golden case in MLX VERSION's layout; MLX imports and runs each file
#                on the golden inputs and must reproduce the golden outputs (mlx_check.py).
#   mlx_to_kiln  MLX VERSION exports a broad spread of functions (gen_cases.py); kiln imports each file
#                and must reproduce MLX's outputs (kiln_interop check).
# MLX lives in a venv cached under WORK_DIR (env.sh). If it cannot be installed, exit 77: CTest shows
# the test as skipped, with the reason printed.
set -uo pipefail
MODE="${1:?usage: run.sh MODE VERSION KILN_INTEROP WORK_DIR}"
VERSION="${2:?}"
KILN_INTEROP="${3:?}"
WORK="${4:?}"
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
EXPECT="$ROOT/tests/interop/expectations.json"

env_out=$("$HERE/env.sh" "$VERSION" "$WORK/venv-$VERSION")
rc=$?
if [ $rc -ne 0 ]; then
  echo "$env_out"
  exit $rc
fi
PY=$(echo "$env_out" | tail -n 1)

case "$MODE" in
  kiln_to_mlx)
    # Two ways kiln writes a golden case in MLX VERSION's layout: re-tracing the imported function
    # (kiln's exporter), and rewriting the file (kiln convert).
    rc=0
    for how in re-export convert; do
      out="$WORK/kiln-written-$VERSION-$how"
      rm -rf "$out"
      flag=""
      [ "$how" = convert ] && flag="--convert"
      "$KILN_INTEROP" export "$ROOT/tests/golden/mlx-0.30.1" "$out" --version "$VERSION" $flag || rc=1
      if [ -f "$out/manifest.json" ]; then
        "$PY" "$HERE/mlx_check.py" "$out/manifest.json" --expect "$EXPECT" --label "kiln_to_mlx ($how)" || rc=1
      fi
    done
    exit $rc
    ;;
  mlx_to_kiln)
    out="$WORK/mlx-written-$VERSION"
    rm -rf "$out"
    "$PY" "$HERE/gen_cases.py" "$out" || exit 1
    "$KILN_INTEROP" check "$out" --version "$VERSION" --expect "$EXPECT"
    ;;
  *)
    echo "run.sh: unknown mode '$MODE'" >&2
    exit 2
    ;;
esac
