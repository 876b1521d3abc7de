#!/bin/bash
# Benchmark (not a test): serialization-mode inference, crossbind against
# ONNX Runtime through Node.js, on the same ONNX files, side by side in one
# invocation, alternating, at the same thread count (ONNX Runtime with
# intraOpNumThreads = N, interOpNumThreads = 1, sequential execution, all
# graph optimisations: its fastest fair CPU setting). The models are
# LeNet-1 and LeNet-5 exported by torch.onnx.export from a 1-epoch PyTorch
# training; the time is the protocol's: the mean over the 10,000 Fashion-MNIST
# test images at batch 128, after one warm-up pass.
# Usage: bench/onnx_eval_vs_ort.sh [ROUNDS=5] [THREADS=2] [BATCH=128]
set -euo pipefail
cd "$(dirname "$0")/.."
# Both sides use the BLAS kernels the crossbind command runs with (it sets
# OPENBLAS_CORETYPE where OpenBLAS does not know the processor).
make -s build/crossbind >/dev/null
CORE=$(./build/crossbind version | sed -n 's/^blas core: \([A-Za-z0-9]*\).*/\1/p')
[ -n "$CORE" ] && export OPENBLAS_CORETYPE="$CORE"
ROUNDS=${1:-5}
THREADS=${2:-2}
BATCH=${3:-128}
DATA=/usr/share/datasets/fashion-mnist
make -j"$(nproc)" build/crossbind >/dev/null
T=$(mktemp -d /tmp/crossbind-bench-XXXXXX)
trap 'rm -rf "$T"' EXIT
export OPENBLAS_NUM_THREADS=1
for m in lenet1 lenet5; do
    /usr/bin/python3 runners/pytorch/crossbind_torch.py train "$m" --epochs 1 --limit-train 6000 --limit-test 100 \
        --threads "$THREADS" --quiet --out "$T/$m" >/dev/null
done
for i in $(seq 1 "$ROUNDS"); do
    echo "round $i/$ROUNDS" >&2
    for m in lenet1 lenet5; do
        ./build/crossbind eval --weights "$T/$m/final.onnx" --data "$DATA" --batch "$BATCH" --threads "$THREADS" \
            --json > "$T/c-$m-$i.json"
        node runners/onnxruntime-node/crossbind_ort.js eval --weights "$T/$m/final.onnx" --data "$DATA" \
            --batch "$BATCH" --threads "$THREADS" --json > "$T/o-$m-$i.json"
    done
done
/usr/bin/python3 - "$T" "$ROUNDS" "$THREADS" "$BATCH" <<'PY'
import json, statistics, sys
d, n, threads, batch = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
print(f"ONNX inference over 10,000 images, batch {batch}, {threads} threads, {n} rounds of 5 timed passes")
for m in ("lenet1", "lenet5"):
    c = [t for i in range(1, n + 1) for t in json.load(open(f"{d}/c-{m}-{i}.json"))["times_s"]]
    o = [t for i in range(1, n + 1) for t in json.load(open(f"{d}/o-{m}-{i}.json"))["times_s"]]
    cc = {json.load(open(f"{d}/c-{m}-{i}.json"))["correct"] for i in range(1, n + 1)}
    oc = {json.load(open(f"{d}/o-{m}-{i}.json"))["correct"] for i in range(1, n + 1)}
    mc, mo = statistics.median(c), statistics.median(o)
    print(f"  {m}: crossbind {mc:.4f}s [{min(c):.4f}, {max(c):.4f}]  onnxruntime-node {mo:.4f}s "
          f"[{min(o):.4f}, {max(o):.4f}]  ratio {mc / mo:.2f}x  (correct: {sorted(cc)} vs {sorted(oc)})")
PY
