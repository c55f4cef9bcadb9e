#!/usr/bin/env bash
# Install kiln's build dependencies (Debian/Ubuntu) and configure + build into ${BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
PKGS="cmake g++ make pkg-config libopenblas-dev liblapacke-dev libfftw3-dev libgtest-dev nlohmann-json3-dev"
# SLEEF: vectorized math functions (exp/log/tanh/pow/... at AVX2 and AVX-512 width), src/backend/cpu/vmath.h.
PKGS="$PKGS libsleef-dev"
# clang with its sanitizer and libFuzzer runtimes (libclang-rt-dev): scripts/sanitize.sh.
PKGS="$PKGS clang libclang-rt-dev"
# Graphviz: `kiln dot -o graph.svg|png` renders through its `dot` program (and the CLI test checks it).
PKGS="$PKGS graphviz"
# ccache: the wheel build (scripts/python_tests.sh) compiles the same library sources as build/, so they
# come from the cache (CCACHE_BASEDIR makes the two build trees' paths match).
PKGS="$PKGS ccache"
# ONNX's generated protobuf classes and protobuf itself: `kiln to-onnx` builds ModelProto (src/onnx).
PKGS="$PKGS libonnx-dev libprotobuf-dev"
missing=""
for p in $PKGS; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "[setup] installing:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
# Optional: python3 with venv and pip, for the interop tests against real MLX from PyPI (they report
# skipped, with the reason, when these or MLX's wheel cannot be installed).
missing=""
for p in python3 python3-venv python3-pip; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
# (a python3 that already makes venvs with pip, e.g. pyenv's, needs none of the Debian packages)
venv_works() {
  local d
  d=$(mktemp -d) && python3 -m venv "$d/v" >/dev/null 2>&1 && [ -x "$d/v/bin/pip" ]
  local rc=$?
  rm -rf "$d"
  return $rc
}
if [ -n "$missing" ] && ! venv_works; then
  echo "[setup] installing (optional, for the MLX interop tests):$missing"
  { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null; } ||
    echo "[setup] could not install$missing; the MLX interop tests will report skipped"
fi
BUILD_DIR="${BUILD_DIR:-build}"
export CCACHE_BASEDIR="$PWD"
# The compiler by the name the wheel build (scripts/python_tests.sh) uses: ccache keys on the name too, so
# a build/ configured with CMake's default `c++` shared no object with the wheel's `g++` (a second full
# compile of the library in CI).
export CXX="${CXX:-g++}" CC="${CC:-gcc}"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DKILN_BUILD_BENCH="${KILN_BUILD_BENCH:-OFF}" ${KILN_CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc)"
