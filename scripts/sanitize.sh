#!/usr/bin/env bash
# Hostile-file checks (README "Hostile files"), each in its own build directory, all with clang:
#  1. ASan + UBSan (every report fatal) build of the library, the CLI and the whole test suite, run
#     with ctest; the same build carries libFuzzer coverage and the fuzz targets;
#  2. the fuzz targets for a bounded time over the golden corpus (scripts/fuzz.sh);
#  3. a ThreadSanitizer build of only the library and the concurrency tests, run.
# KILN_FUZZ_SECONDS sets the fuzzing time of each target (default 120; the three run at once).
set -euo pipefail
cd "$(dirname "$0")/.."
J="${KILN_JOBS:-$(nproc)}"
ASAN_DIR="${ASAN_BUILD_DIR:-build-asan}"
TSAN_DIR="${TSAN_BUILD_DIR:-build-tsan}"
CLANG=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Sanitize -DKILN_BUILD_BENCH=OFF)
stamp() { echo "[sanitize] $1 ($(( $(date +%s) - T0 )) s)"; }
T0=$(date +%s)

cmake -S . -B "$ASAN_DIR" "${CLANG[@]}" -DKILN_SANITIZE=address,undefined -DKILN_BUILD_FUZZ=ON >/dev/null
cmake --build "$ASAN_DIR" -j"$J"
stamp "ASan+UBSan build done"
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# The mutation sweep flips one bit of every 2nd byte here (every bit of every byte in the normal
# build), to fit the time budget.
# Excluded here: the install test (it builds a separate consumer, uninstrumented), the two
# million-node scale tests (over 10 minutes under ASan; the normal run has them, and
# HostileFile.DeepChain* checks the same iterative code paths under ASan at a smaller depth), and the
# ONNX Runtime reruns at opset 23 and with --matmul-nbits (onnx.ort converts every file under ASan,
# about 3 minutes; the reruns, 1-2 more, go through the same driver; the normal run has them).
# Of the isa.<level> reruns, only the one a level below the CPU's own widest runs here (avx2 on an
# AVX-512 machine, scalar on an AVX2 one): the default run already is the widest level, and each rerun
# takes 3-5 minutes under ASan; the normal run has them all.
skip='^install\.|Export\.MillionNodeGraph|Core\.MillionDeepChainEvaluatesAndFrees|^onnx\.ort_'
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
if [[ " $flags " == *" avx512f "* ]]; then
  skip="$skip|^isa\.scalar\$"
elif [[ " $flags " == *" avx2 "* && " $flags " == *" fma "* ]]; then
  skip="$skip|^isa\.avx2\$"
else
  skip="$skip|^isa\."
fi
(cd "$ASAN_DIR" && KILN_SWEEP_STRIDE=2 KILN_SWEEP_BITS=1 ctest --output-on-failure -j"$J" -LE interop -E "$skip")
stamp "ASan+UBSan test suite passed"

./scripts/fuzz.sh "$ASAN_DIR" "${KILN_FUZZ_SECONDS:-120}"
stamp "fuzzing passed"

cmake -S . -B "$TSAN_DIR" "${CLANG[@]}" -DKILN_SANITIZE=thread >/dev/null
cmake --build "$TSAN_DIR" -j"$J" --target kiln_concurrency_tests
stamp "TSan build done"
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp" \
  OPENBLAS_NUM_THREADS=1 "$TSAN_DIR/tests/kiln_concurrency_tests"
stamp "TSan concurrency tests passed"
