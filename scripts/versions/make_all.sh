#!/bin/bash
# Regenerate tests/golden/versions/ from the MLX wheels on PyPI (Linux x86_64 CPU builds exist from
# 0.25.2; 0.26.5 and later need the mlx-cpu backend package). One venv per release under $VENVS.
set -euo pipefail
VENVS=${VENVS:-/tmp/mlxv}
OUT=${1:-$(cd "$(dirname "$0")/../.." && pwd)/tests/golden/versions}
VERSIONS=${VERSIONS:-"0.25.2 0.26.1 0.26.2 0.29.0 0.29.4 0.30.1 0.31.2 0.32.0 0.32.1 0.32.2 0.32.3 0.32.4"}
for v in $VERSIONS; do
  d=$VENVS/$v
  if ! "$d/bin/python" -c "import mlx.core" 2>/dev/null; then
    python3 -m venv "$d"
    case $v in
      0.25.*|0.26.0|0.26.1|0.26.2|0.26.3) pkgs="mlx==$v" ;;
      *) pkgs="mlx==$v mlx-cpu==$v" ;;
    esac
    "$d/bin/pip" install -q --only-binary=:all: $pkgs "numpy<2.3"
  fi
  "$d/bin/python" "$(dirname "$0")/make_fixtures.py" "$OUT"
done
