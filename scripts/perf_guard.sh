#!/bin/bash
# Performance regression guard: instruction counts (valgrind's cachegrind,
# which needs no hardware counters) of fixed small workloads of the engine,
# compared with the committed baseline tests/perf_baseline.txt. A workload
# that now executes more than PERF_TOLERANCE percent (default 10) more
# instructions fails; one that got more than that much cheaper passes and
# says to update the baseline.
#
# Counts are deterministic for one build, so they are taken on a fixed
# configuration: a build for x86-64-v3 (AVX2; valgrind does not run AVX-512)
# in build-guard/, OpenBLAS's Haswell kernels, one thread.
# Usage: scripts/perf_guard.sh [--update]   (--update rewrites the baseline)
# Closes with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
BASELINE=${PERF_BASELINE:-tests/perf_baseline.txt}
TOL=${PERF_TOLERANCE:-10}
UPDATE=0
[ "${1:-}" = "--update" ] && UPDATE=1
if ! command -v valgrind >/dev/null; then echo "valgrind is missing (scripts/setup.sh installs it)"; echo "0 passed, 1 failed"; exit 1; fi
if ! make -s -j"$(nproc)" BUILD=build-guard ARCH="-march=x86-64-v3" build-guard/crossbind >/dev/null; then
    echo "guard build failed"; echo "0 passed, 1 failed"; exit 1
fi
export OPENBLAS_CORETYPE=Haswell OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# name and bench-worker arguments (initial weights from the first protocol seed)
WORKLOADS=(
    "lenet1-train --model lenet1 --kind train --batch 32 --samples 64"
    "lenet5-train --model lenet5 --kind train --batch 32 --samples 64"
    "lenet5-infer --model lenet5 --kind infer --batch 64 --samples 256"
    "vgg16-infer --model vgg16 --kind infer --batch 1 --samples 1"
    "gru-infer --model gru --kind infer --batch 1 --samples 1"
)

pass=0 fail=0
# check NAME COUNT BASE: the comparison, also exercised below on made-up numbers.
check() {
    awk -v n="$2" -v b="$3" -v t="$TOL" 'BEGIN {
        d = 100 * (n - b) / b
        if (d > t) { printf "%.1f%% more instructions than the baseline (tolerance %s%%)", d, t; exit 1 }
        if (d < -t) { printf "ok, %.1f%% fewer: update the baseline (scripts/perf_guard.sh --update)", -d; exit 0 }
        printf "ok (%+.1f%%)", d; exit 0 }'
}
# The comparison itself must flag a regression and pass a small change.
if check x 112 100 >/dev/null || ! check x 105 100 >/dev/null || ! check x 80 100 >/dev/null; then
    echo "the guard's comparison is broken"; fail=$((fail + 1))
else pass=$((pass + 1)); fi

new=$(mktemp /tmp/crossbind-guard-XXXXXX)
trap 'rm -f "$new"' EXIT
for w in "${WORKLOADS[@]}"; do
    name=${w%% *} args=${w#* }
    # shellcheck disable=SC2086 # args is a word list
    out=$(valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
        build-guard/crossbind bench-worker $args --threads 1 2>&1)
    count=$(printf '%s\n' "$out" | sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' | tr -d ,)
    if [ -z "$count" ] || ! printf '%s\n' "$out" | grep -q '"times_s"'; then
        echo "FAIL $name: the workload did not run under valgrind:"; printf '%s\n' "$out" | tail -5
        fail=$((fail + 1)); continue
    fi
    echo "$name $count" >> "$new"
    base=$(awk -v n="$name" '$1 == n {print $2}' "$BASELINE" 2>/dev/null)
    if [ "$UPDATE" = 1 ]; then echo "$name: $count instructions (baseline updated)"; pass=$((pass + 1)); continue; fi
    if [ -z "$base" ]; then echo "FAIL $name: no baseline in $BASELINE (scripts/perf_guard.sh --update)"; fail=$((fail + 1)); continue; fi
    # A failure's line starts with FAIL, as in every suite (scripts/test.sh collects them).
    if verdict=$(check "$name" "$count" "$base"); then pass=$((pass + 1)) mark=""; else fail=$((fail + 1)) mark="FAIL "; fi
    printf '%s%s: %s instructions, baseline %s: %s\n' "$mark" "$name" "$count" "$base" "$verdict"
done
if [ "$UPDATE" = 1 ] && [ "$fail" -eq 0 ]; then
    { echo "# Instruction counts of scripts/perf_guard.sh's workloads (cachegrind, x86-64-v3 build,"
      echo "# OpenBLAS Haswell kernels, 1 thread). Rewritten by scripts/perf_guard.sh --update."
      cat "$new"; } > "$BASELINE"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
