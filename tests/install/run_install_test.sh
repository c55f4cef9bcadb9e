#!/usr/bin/env bash
# Install kiln from BUILD_DIR into a temporary prefix, then configure, build and run a consumer project
# that finds it with find_package(kiln).
set -euo pipefail
BUILD_DIR="$1"
SRC_DIR="$(cd "$(dirname "$0")" && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD_DIR" --prefix "$WORK/prefix" >/dev/null
cmake -S "$SRC_DIR" -B "$WORK/build" -DCMAKE_PREFIX_PATH="$WORK/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$WORK/build" >/dev/null
LD_LIBRARY_PATH="$WORK/prefix/lib:$WORK/prefix/lib64:${LD_LIBRARY_PATH:-}" "$WORK/build/consumer"
