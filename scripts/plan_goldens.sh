#!/bin/bash
# Rewrites the plan goldens (tests/plans/NAME.txt) from this build, for the
# cases in tests/plans/cases.txt: `crossbind plan ARGS --threads 2`, with
# the environment a case names. Usage: scripts/plan_goldens.sh [BUILD_DIR]
set -eu
BIN="${1:-build}/crossbind"
while read -r name rest; do
    case "$name" in ''|'#'*) continue ;; esac
    read -ra words <<<"$rest"
    args=() envs=()
    for w in "${words[@]}"; do
        if [[ "$w" == *=* ]]; then envs+=("$w"); else args+=("$w"); fi
    done
    env "${envs[@]}" "$BIN" plan "${args[@]}" --threads 2 >"tests/plans/$name.txt"
    echo "wrote tests/plans/$name.txt"
done <tests/plans/cases.txt
