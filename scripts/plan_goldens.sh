#!/bin/bash
# Rewrites the plan goldens of this build's kind (tests/plans/NAME.txt for
# AVX-512 builds, tests/plans/avx2/NAME.txt for AVX2 ones) from this build,
# for the cases in tests/plans/cases.txt: `crossbind plan ARGS --threads 2`,
# with the environment a case names. Usage: scripts/plan_goldens.sh [BUILD_DIR]
set -eu
BIN="${1:-build}/crossbind"
G=tests/plans
case "$("$BIN" plan lenet5 --batch 1 --threads 2 | sed -n 2p)" in
"build: avx2,"*) G=tests/plans/avx2 ;;
"build: avx512,"*) ;;
*) echo "plan_goldens: goldens are kept for AVX-512 and AVX2 builds only" >&2; exit 1 ;;
esac
while read -r name rest; do
    case "$name" in ''|'#'*) continue ;; esac
    read -ra words <<<"$rest"
    args=() envs=()
    for w in "${words[@]}"; do
        if [[ "$w" == *=* ]]; then envs+=("$w"); else args+=("$w"); fi
    done
    env "${envs[@]}" "$BIN" plan "${args[@]}" --threads 2 >"$G/$name.txt"
    echo "wrote $G/$name.txt"
done <tests/plans/cases.txt
