#!/usr/bin/env bash
# Run kiln's libFuzzer targets for a bounded time over the golden corpus (and the committed
# regression inputs). Usage: scripts/fuzz.sh BUILD_DIR [SECONDS]
# BUILD_DIR is a -DKILN_BUILD_FUZZ=ON -DKILN_SANITIZE=address,undefined build (scripts/sanitize.sh).
# The three targets run at once for SECONDS each (default 120): fuzz_reader and fuzz_run start from
# the golden files, fuzz_node (one node from raw bytes) from nothing. Any crash, leak, timeout,
# out-of-memory or sanitizer report fails the script; the input that caused it is printed (base64)
# and kept in $FUZZ_OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:?usage: scripts/fuzz.sh BUILD_DIR [SECONDS]}"
SECS="${2:-120}"
TARGETS=(reader run node)
OUT="${FUZZ_OUT:-$BUILD/fuzz-out}"
rm -rf "$OUT"
mkdir -p "$OUT/seeds" "$OUT/artifacts"
cp tests/golden/mlx-0.30.1/*/*.mlxfn "$OUT/seeds/"
if compgen -G "tests/regress/*.mlxfn" >/dev/null; then cp tests/regress/*.mlxfn "$OUT/seeds/"; fi
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export KILN_NUM_THREADS="${KILN_NUM_THREADS:-2}"
pids=()
for t in "${TARGETS[@]}"; do
  mkdir -p "$OUT/corpus-$t"
  seeds="$OUT/seeds"
  [ "$t" = node ] && seeds=""
  "$BUILD/fuzz/fuzz_$t" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -max_len=65536 -dict=fuzz/mlxfn.dict -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$t-" \
    "$OUT/corpus-$t" $seeds >"$OUT/$t.log" 2>&1 &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do
  wait "$p" || status=1
done
for t in "${TARGETS[@]}"; do
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$OUT/$t.log" | grep -o '[0-9]*$' || echo 0)
  secs=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$OUT/$t.log" | grep -o '[0-9]*$' || echo 0)
  echo "[fuzz] fuzz_$t: $execs executions ($secs/s), corpus $(ls "$OUT/corpus-$t" | wc -l) files"
done
if [ "$status" != 0 ] || compgen -G "$OUT/artifacts/*" >/dev/null; then
  for t in "${TARGETS[@]}"; do
    if grep -qE "ERROR: |SUMMARY: |runtime error|deadly signal|Timeout" "$OUT/$t.log"; then
      echo "[fuzz] fuzz_$t found a problem:"
      grep -E -A40 "ERROR: |runtime error|deadly signal|Timeout" "$OUT/$t.log" | head -80
    fi
  done
  for a in "$OUT"/artifacts/*; do
    [ -f "$a" ] || continue
    echo "[fuzz] input $(basename "$a") (base64; add it to tests/regress/):"
    base64 -w 100 "$a" | head -40
  done
  exit 1
fi
