#!/usr/bin/env bash
# The measuring stick of kiln's MLX C++ API compatibility: MLX's own C++ tests (doctest), compiled
# against kiln with only the includes pointed at kiln/kiln.h and `mlx::core` renamed `kiln`, one
# program per TEST_CASE, each compiled and run. No MLX code lives here: pass the path of an MLX
# checkout's tests folder, e.g.
#   git -C /work/.mirror/ml-explore+mlx/repo archive v0.30.1 tests | tar -x -C /tmp/mlxsrc
#   scripts/mlx_cpp_tests.sh /tmp/mlxsrc/tests [BUILD_DIR]
# BUILD_DIR (default build/) must hold a built libkiln.so. JOBS (default 2) programs build at once;
# WORK (default /tmp/kiln_mlx_cpp_tests) keeps the sources and logs. Prints each failure with its
# reason, then `mlx cpp tests: N compile, M pass (of T)`. Not part of CI (CI has no MLX source).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
tests="${1:?usage: $0 MLX_TESTS_DIR [BUILD_DIR]}"
build="$(cd "${2:-$root/build}" && pwd)"
work="${WORK:-/tmp/kiln_mlx_cpp_tests}"
jobs="${JOBS:-2}"
cxx="${CXX:-g++}"
[[ -f "$build/libkiln.so" ]] || { echo "no libkiln.so in $build (build the kiln target first)" >&2; exit 2; }
[[ -d "$tests" ]] || { echo "no tests folder at $tests" >&2; exit 2; }

rm -rf "$work"
mkdir -p "$work/pch"
python3 "$here/mlx_cpp_tests/split.py" "$tests" "$work"

flags=(-std=c++20 -O1 -g0 -w -I"$root/include" -I"$here/mlx_cpp_tests")
# One precompiled header of what every program includes first anyway (the umbrella header and the
# doctest stand-in), and the stand-in's main() in its own object.
printf '#pragma once\n#include "doctest/doctest.h"\n#include "kiln/kiln.h"\n' > "$work/pch/pre.h"
nice -n 10 "$cxx" "${flags[@]}" -x c++-header "$work/pch/pre.h" -o "$work/pch/pre.h.gch"
printf '#define KILN_SHIM_MAIN\n#include "doctest/doctest.h"\n' > "$work/pch/main.cpp"
nice -n 10 "$cxx" "${flags[@]}" -c "$work/pch/main.cpp" -o "$work/pch/main.o"

export work build cxx
export flags_str="${flags[*]}"
one_case() {
  local key="$1"
  # shellcheck disable=SC2086
  if nice -n 10 timeout 600 "$cxx" $flags_str -I"$work/pch" -include pre.h -Winvalid-pch \
      "$work/$key.cpp" "$work/pch/main.o" -o "$work/$key.bin" -L"$build" -lkiln -Wl,-rpath,"$build" \
      >"$work/$key.compile.log" 2>&1; then
    local rc=0
    (cd "$work" && timeout 300 "./$key.bin") >"$work/$key.run.log" 2>&1 || rc=$?
    echo "compiled rc=$rc" >"$work/$key.status"
    rm -f "$work/$key.bin"
  else
    echo "compile-failed" >"$work/$key.status"
  fi
}
export -f one_case
awk -F'\t' '$4 == "" {print $1}' "$work/cases.tsv" | xargs -P "$jobs" -I{} bash -c 'one_case "$@"' _ {}
python3 "$here/mlx_cpp_tests/summarize.py" "$work"
