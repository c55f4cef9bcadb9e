#!/usr/bin/env bash
# Set up and build kiln, then run the demo: a small MLP with embedded weights is built in C++,
# exported to an .mlxfn file, and imported and run in a separate process; then the same from Python
# (`pip install .` into a venv, examples/demo.py: MLX code run with `import kiln as mx`, exported,
# imported, and exchanged with real MLX from PyPI). KILN_DEMO_PYTHON=0 skips the Python part.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
BUILD_DIR="${BUILD_DIR:-build}"
OUT="${DEMO_DIR:-$BUILD_DIR/demo}"
mkdir -p "$OUT"
"$BUILD_DIR/kiln_demo" export "$OUT/mlp.mlxfn" "$OUT"
"$BUILD_DIR/kiln" inspect "$OUT/mlp.mlxfn"
"$BUILD_DIR/kiln_demo" run "$OUT/mlp.mlxfn" "$OUT"

if [ "${KILN_DEMO_PYTHON:-1}" != 0 ]; then
  echo "---- Python: pip install . into $BUILD_DIR/demo-venv, then examples/demo.py ----"
  export CCACHE_BASEDIR="$PWD"
  python3 -m venv "$BUILD_DIR/demo-venv"
  "$BUILD_DIR/demo-venv/bin/python" -m pip install -q --upgrade pip
  "$BUILD_DIR/demo-venv/bin/python" -m pip install -q numpy
  "$BUILD_DIR/demo-venv/bin/python" -m pip install -q "mlx[cpu]==0.30.1" || echo "(mlx[cpu] not installable here)"
  "$BUILD_DIR/demo-venv/bin/python" -m pip install -q .
  "$BUILD_DIR/demo-venv/bin/python" examples/demo.py "$OUT"
  "$BUILD_DIR/demo-venv/bin/python" -m kiln inspect "$OUT/mlp_py.mlxfn" | head -5
fi
