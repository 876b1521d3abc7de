#!/bin/bash
# Measures crossbind's speed and memory goals (scripts/speed_goals.tsv) on
# this machine and checks them (scripts/speed_goals.py): three `crossbind
# bench` invocations, each side by side with its peers, alternating, after
# warm-up, at 2 threads:
#   onnxruntime   the ImageNet CNNs, VGG-16, LSTM and GRU: inference and
#                 batch-1 latency, crossbind against ONNX Runtime;
#   lenet5        LeNet-5's batch-1 latency in every installed binding;
#   vgg16-train   a VGG-16 training step in every installed binding (the
#                 goal compares peak memory with the PyTorch bindings').
# Each writes DIR/NAME/bench.{json,md,html}; one that fails leaves the
# others' results and the check names what it could not measure; after an
# interruption (exit 130) nothing more is measured and what was is checked. Then
# DIR/goals.md: the goals, crossbind's ratio to the best peer of each cell
# and whether it is met, with the processor and BLAS kernels that ran.
# Usage: scripts/speed_goals.sh [--rounds N] [--out DIR]   (default 3, runs/speed-goals)
#        scripts/speed_goals.sh --from DIR                  (check results measured before)
# Exit status: 0 every goal met; 1 one missed or unmeasured; 2 bad usage or input.
set -uo pipefail
cd "$(dirname "$0")/.."
rounds=3 out=runs/speed-goals from=
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) [ $# -ge 2 ] || { echo "speed_goals: error: --rounds needs a number" >&2; exit 2; }; rounds=$2; shift 2 ;;
        --out) [ $# -ge 2 ] || { echo "speed_goals: error: --out needs a folder" >&2; exit 2; }; out=$2; shift 2 ;;
        --from) [ $# -ge 2 ] || { echo "speed_goals: error: --from needs a folder" >&2; exit 2; }; from=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "speed_goals: error: unknown option '$1' (--rounds N, --out DIR, --from DIR)" >&2; exit 2 ;;
    esac
done
case $rounds in ''|*[!0-9]*|0) echo "speed_goals: error: --rounds must be a whole number of at least 1, not '$rounds'" >&2; exit 2 ;; esac

if [ -z "$from" ]; then
    [ -x build/crossbind ] || { echo "speed_goals: error: build/crossbind is missing: run make first" >&2; exit 2; }
    mkdir -p "$out" || exit 2
    interrupted=0
    bench() { # NAME OPTIONS...: after an interruption (Ctrl-C), measures nothing more
        local name=$1 rc=0; shift
        [ $interrupted -eq 0 ] || return 0
        echo "speed_goals: $name: crossbind bench $*"
        build/crossbind bench --rounds "$rounds" --out "$out/$name" "$@" || rc=$?
        [ $rc -eq 130 ] && interrupted=1
        [ $rc -eq 0 ] || echo "speed_goals: $name: the bench stopped with status $rc (its finished cells are kept)" >&2
    }
    bench onnxruntime --models mobilenet_v2,resnet50,vgg16,lstm,gru --bindings crossbind,onnxruntime-node \
        --kinds infer,latency
    bench lenet5 --models lenet5 --kinds latency
    bench vgg16-train --models vgg16 --kinds train
    from=$out
fi
[ -d "$from" ] || { echo "speed_goals: error: no folder $from" >&2; exit 2; }
shopt -s nullglob
results=("$from"/*/bench.json)
[ ${#results[@]} -gt 0 ] || { echo "speed_goals: error: no bench results (*/bench.json) in $from" >&2; exit 2; }
python3 scripts/speed_goals.py scripts/speed_goals.tsv "${results[@]}" --md "$from/goals.md"
status=$?
[ $status -ne 2 ] && echo "speed_goals: $from/goals.md"
# Interrupted: what was measured is checked above, and the exit says so.
[ "${interrupted:-0}" -eq 1 ] && exit 130
exit $status
