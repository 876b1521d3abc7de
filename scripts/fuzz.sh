#!/bin/bash
# Builds the libFuzzer targets (make fuzz) and runs every build-fuzz/fuzz_*
# from its seed corpus in fuzz/corpus/<target> (with fuzz/<target>.dict when
# there is one). A crash, leak, timeout or sanitizer report fails the run and
# leaves the reproducer in build-fuzz/artifacts/.
#
# Usage:
#   scripts/fuzz.sh [SECONDS_PER_TARGET]   bounded by time (default 20): CI's run
#   scripts/fuzz.sh --runs N [--log FILE]  bounded by executions: the recorded
#                                          long run (e.g. --runs 10000000)
#   --max-len N                            the longest input libFuzzer makes
#                                          (default 65536; longer seeds are cut)
# FUZZ_JOBS (default 2) targets run at once; FUZZ_TARGETS="json npy" runs
# only those. Each run appends one row per target to a summary table
# (target, executions, seconds, exec/s, coverage, max input length, result): the --log FILE,
# by default build-fuzz/summary.md. Closes with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
secs=20 runs= log=build-fuzz/summary.md max_len=65536
while [ $# -gt 0 ]; do
    case $1 in
    --runs) runs=${2:?--runs needs a count}; shift 2 ;;
    --log) log=${2:?--log needs a file}; shift 2 ;;
    --max-len) max_len=${2:?--max-len needs a size}; shift 2 ;;
    [0-9]*) secs=$1; shift ;;
    *) echo "usage: scripts/fuzz.sh [SECONDS] | --runs N [--log FILE] [--max-len N]" >&2; exit 2 ;;
    esac
done
jobs=${FUZZ_JOBS:-2}
# The commit the targets are built from (taken now: the tree may move on while they run).
commit="$(git rev-parse --short HEAD 2>/dev/null || echo ?)$(git diff --quiet HEAD -- 2>/dev/null || echo ' (modified)')"
make -s -j"$jobs" fuzz >/dev/null || { echo "fuzz build failed"; echo "0 passed, 1 failed"; exit 1; }
mkdir -p build-fuzz/artifacts build-fuzz/results "$(dirname "$log")"
if [ -n "$runs" ]; then bound="-runs=$runs"; what="$runs executions"; else bound="-max_total_time=$secs"; what="${secs}s"; fi

# One target: runs it, removes its scratch files (also after a crash) and
# writes its summary row to build-fuzz/results/NAME.
run_target() {
    local name=$1 bin=build-fuzz/fuzz_$1 log=build-fuzz/$1.log
    local work dict=() t0 t1 rc pid
    # New inputs stay out of the repository, in memory where there is a
    # tmpfs: libFuzzer writes and removes a file for every input it keeps
    # or reduces.
    work=$(mktemp -d "$tmp_base"/crossbind-fuzz-XXXXXX)
    [ -f "fuzz/$name.dict" ] && dict=(-dict="fuzz/$name.dict")
    t0=$(date +%s.%N)
    "$bin" $bound "${dict[@]}" -max_len="$max_len" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        -artifact_prefix=build-fuzz/artifacts/"$name"- "$work" "fuzz/corpus/$name" >"$log" 2>&1 &
    pid=$!
    wait "$pid"; rc=$?
    t1=$(date +%s.%N)
    rm -rf "$work" /tmp/crossbind-fuzz-*-"$pid" /dev/shm/crossbind-fuzz-*-"$pid"
    local execs cov secs_taken rate result
    execs=$(grep -Eo '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1)
    [ -n "$execs" ] || execs=$(grep -Eo '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
    secs_taken=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
    rate=$(awk -v n="${execs:-0}" -v s="$secs_taken" 'BEGIN { printf "%.0f", (s > 0 ? n / s : 0) }')
    if [ $rc -eq 0 ]; then result=ok
    else result="FAIL: $(grep -Eo 'ERROR: [A-Za-z]+: [a-z-]+|SUMMARY: [A-Za-z]+: [a-z-]+|runtime error' "$log" | head -1)"; fi
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "${execs:-0}" "$secs_taken" "$rate" "${cov:-?}" "$result" \
        >build-fuzz/results/"$name"
}

tmp_base=/tmp
[ -d /dev/shm ] && [ -w /dev/shm ] && tmp_base=/dev/shm
names=()
for bin in build-fuzz/fuzz_*; do
    name=${bin#build-fuzz/fuzz_}
    if [ -n "${FUZZ_TARGETS:-}" ] && ! [[ " $FUZZ_TARGETS " == *" $name "* ]]; then continue; fi
    names+=("$name")
    rm -f build-fuzz/results/"$name"
done
t_all=$(date +%s)
for name in "${names[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    run_target "$name" &
done
wait
t_all=$(( $(date +%s) - t_all ))

pass=0 fail=0
{
    [ -s "$log" ] || printf '| target | executions | seconds | exec/s | coverage | max input | result |\n|---|---:|---:|---:|---|---:|---|\n'
} >>"$log"
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $commit, $what per target, inputs up to $max_len bytes, $jobs at once, $(nproc) cores:" \
     "$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)" >>"$log.runs"
for name in "${names[@]}"; do
    IFS=$'\t' read -r n execs s rate cov result <build-fuzz/results/"$name" || { n=$name execs=0 s=0 rate=0 cov=? result="FAIL: no result"; }
    printf '| fuzz_%s | %s | %s | %s | %s | %s | %s |\n' "$n" "$execs" "$s" "$rate" "$cov" "$max_len" "$result" >>"$log"
    if [ "$result" = ok ]; then
        echo "ok   fuzz_$n: $execs runs in ${s}s ($rate/s, $cov), no crash"
        pass=$((pass + 1))
    else
        echo "FAIL fuzz_$n (see build-fuzz/$n.log, reproducer in build-fuzz/artifacts/): $result"
        grep -E "ERROR|SUMMARY|runtime error" "build-fuzz/$n.log" | head -5
        fail=$((fail + 1))
    fi
done
echo "fuzzing took ${t_all}s (summary: $log)"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
