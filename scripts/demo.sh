#!/usr/bin/env bash
# Set up and build kiln, then run the demo: a small MLP with embedded weights is built in C++,
# exported to an .mlxfn file, and imported and run in a separate process.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
BUILD_DIR="${BUILD_DIR:-build}"
OUT="${DEMO_DIR:-$BUILD_DIR/demo}"
mkdir -p "$OUT"
"$BUILD_DIR/kiln_demo" export "$OUT/mlp.mlxfn" "$OUT"
"$BUILD_DIR/kiln" inspect "$OUT/mlp.mlxfn"
"$BUILD_DIR/kiln_demo" run "$OUT/mlp.mlxfn" "$OUT"
