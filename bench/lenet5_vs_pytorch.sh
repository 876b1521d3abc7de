#!/bin/bash
# Benchmark (not a test): LeNet-5 training-epoch time on 60,000 images and
# inference time over the 10,000 test images at batch 128, crossbind against
# the PyTorch runner, side by side in one invocation, alternating, at the same
# thread count (PyTorch at its fastest fair setting: torch.set_num_threads(N)
# with OPENBLAS_NUM_THREADS=1). Each side's figures come from its own
# run.json / eval JSON (training time excludes evaluation, as the protocol).
# Usage: bench/lenet5_vs_pytorch.sh [REPEATS=3] [THREADS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
# Both sides use the BLAS kernels the crossbind command runs with (it sets
# OPENBLAS_CORETYPE where OpenBLAS does not know the processor).
make -s build/crossbind >/dev/null
CORE=$(./build/crossbind version | sed -n 's/^blas core: \([A-Za-z0-9]*\).*/\1/p')
[ -n "$CORE" ] && export OPENBLAS_CORETYPE="$CORE"
REPEATS=${1:-3}
THREADS=${2:-2}
DATA=/usr/share/datasets/fashion-mnist
make -j"$(nproc)" build/crossbind >/dev/null
T=$(mktemp -d /tmp/crossbind-bench-XXXXXX)
trap 'rm -rf "$T"' EXIT
TORCH="/usr/bin/python3 runners/pytorch/crossbind_torch.py"
export OPENBLAS_NUM_THREADS=1
# one warm-up round (page cache, first-touch), discarded
./build/crossbind train lenet5 --data "$DATA" --epochs 1 --limit-train 2000 --limit-test 100 --threads "$THREADS" --quiet --out "$T/w" >/dev/null
$TORCH train lenet5 --data "$DATA" --epochs 1 --limit-train 2000 --limit-test 100 --threads "$THREADS" --quiet --out "$T/w" >/dev/null
for i in $(seq 1 "$REPEATS"); do
    echo "round $i/$REPEATS" >&2
    ./build/crossbind train lenet5 --data "$DATA" --epochs 1 --threads "$THREADS" --quiet --out "$T/c$i" >/dev/null
    $TORCH train lenet5 --data "$DATA" --epochs 1 --threads "$THREADS" --quiet --init "$T/c$i/init.safetensors" --out "$T/t$i" >/dev/null
    ./build/crossbind eval lenet5 --weights "$T/c$i/final.safetensors" --data "$DATA" --threads "$THREADS" --json > "$T/ce$i.json"
    $TORCH eval lenet5 --weights "$T/c$i/final.safetensors" --data "$DATA" --threads "$THREADS" --json > "$T/te$i.json"
done
/usr/bin/python3 - "$T" "$REPEATS" "$THREADS" <<'PY'
import json, statistics, sys
d, n, threads = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def stats(xs):
    return statistics.median(xs), min(xs), max(xs)
ct = [json.load(open(f"{d}/c{i}/run.json"))["training_time_s"] for i in range(1, n + 1)]
tt = [json.load(open(f"{d}/t{i}/run.json"))["training_time_s"] for i in range(1, n + 1)]
ci = [t for i in range(1, n + 1) for t in json.load(open(f"{d}/ce{i}.json"))["times_s"]]
ti = [t for i in range(1, n + 1) for t in json.load(open(f"{d}/te{i}.json"))["times_s"]]
print(f"LeNet-5, Fashion-MNIST, batch 128, {threads} threads, {n} rounds (inference: 5 timed passes per round)")
for name, c, t in (("training epoch, 60k images", ct, tt), ("inference, 10k images", ci, ti)):
    mc, lc, hc = stats(c); mt, lt, ht = stats(t)
    print(f"  {name:28} crossbind median {mc:7.3f}s [{lc:.3f}, {hc:.3f}]   "
          f"pytorch median {mt:7.3f}s [{lt:.3f}, {ht:.3f}]   ratio {mc / mt:.2f}x (target <= 0.5x)")
PY
