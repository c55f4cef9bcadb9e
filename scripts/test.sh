#!/usr/bin/env bash
# Set up, build and run every kiln test (unit, conformance over the golden MLX corpus, CLI).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
BUILD_DIR="${BUILD_DIR:-build}"
cd "$BUILD_DIR"
ctest --output-on-failure -j"$(nproc)" "$@"
