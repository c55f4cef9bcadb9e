#!/usr/bin/env bash
# Set up, build and run every kiln test (unit, conformance over the golden MLX corpus, CLI).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
BUILD_DIR="${BUILD_DIR:-build}"
cd "$BUILD_DIR"
ctest --output-on-failure -j"$(nproc)" "$@"
# ---- Hostile files (issue 6): ASan+UBSan suite, fuzzing, TSan concurrency (scripts/sanitize.sh) ----
# KILN_SKIP_SANITIZE=1 skips them (e.g. for a quick local run).
if [ "${KILN_SKIP_SANITIZE:-0}" != 1 ]; then
  cd "$OLDPWD"
  ./scripts/sanitize.sh
fi
