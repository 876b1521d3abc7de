#!/bin/bash
# Builds the libFuzzer targets (make fuzz) and runs each for a bounded time
# from its seed corpus in fuzz/corpus/<target>. A crash, leak or sanitizer
# report fails the run and leaves the reproducer in build-fuzz/artifacts/.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 20)
# Closes with "N passed, N failed" (one per target).
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
make -s fuzz >/dev/null || { echo "fuzz build failed"; echo "0 passed, 1 failed"; exit 1; }
mkdir -p build-fuzz/artifacts
pass=0 fail=0
for bin in build-fuzz/fuzz_*; do
    name=${bin#build-fuzz/fuzz_}
    work=$(mktemp -d /tmp/crossbind-fuzz-XXXXXX)   # new inputs stay out of the repository
    log=build-fuzz/$name.log
    if "$bin" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
            -artifact_prefix=build-fuzz/artifacts/"$name"- "$work" "fuzz/corpus/$name" >"$log" 2>&1; then
        echo "ok   fuzz_$name: $(grep -Eo '^#[0-9]+' "$log" | tail -1 | tr -d '#') runs in ${secs}s, no crash"
        pass=$((pass + 1))
    else
        echo "FAIL fuzz_$name (see $log):"; grep -E "ERROR|SUMMARY" "$log" | head -5
        fail=$((fail + 1))
    fi
    rm -rf "$work"
done
rm -rf /tmp/crossbind-fuzz-idx-*
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
