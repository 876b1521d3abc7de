#!/bin/bash
# Benchmark (not a test): training-step and inference-batch time of a model
# in crossbind and PyTorch, side by side in one invocation, alternating
# rounds, same synthetic inputs, same thread count. PyTorch runs at its
# fastest fair setting: torch.set_num_threads(THREADS) with
# OPENBLAS_NUM_THREADS 1 or THREADS, whichever is faster in a first probe
# round (reported). Also reports this machine's SGEMM throughput and the
# fraction of it each binding reaches (training = 3x forward FLOPs).
# Usage: bench/step_vs_pytorch.sh MODEL [BATCH] [ROUNDS=3] [STEPS=2] [THREADS=2]
#   e.g. bench/step_vs_pytorch.sh gru 256; bench/step_vs_pytorch.sh vgg16 128
set -euo pipefail
cd "$(dirname "$0")/.."
# Both sides use the BLAS kernels the crossbind command runs with (it sets
# OPENBLAS_CORETYPE where OpenBLAS does not know the processor).
make -s build/crossbind >/dev/null
CORE=$(./build/crossbind version | sed -n 's/^blas core: \([A-Za-z0-9]*\).*/\1/p')
[ -n "$CORE" ] && export OPENBLAS_CORETYPE="$CORE"
MODEL=$1
BATCH=${2:-$([ "$MODEL" = vgg16 ] && echo 128 || echo 256)}
ROUNDS=${3:-3}
STEPS=${4:-2}
THREADS=${5:-2}
make -s build/bench_train_step
T=$(mktemp -d /tmp/crossbind-bench-XXXXXX)
trap 'rm -rf "$T"' EXIT
PY=/usr/bin/python3
# The probe: PyTorch's BLAS threads 1 vs THREADS (its RNN kernels run in BLAS).
best=1 bestt=1e9
for ob in 1 "$THREADS"; do
    OPENBLAS_NUM_THREADS=$ob $PY bench/train_step.py "$MODEL" "$BATCH" 1 "$THREADS" > "$T/probe$ob.json"
    t=$($PY -c "import json; print(json.load(open('$T/probe$ob.json'))['train_step_s'][0])")
    if $PY -c "import sys; sys.exit(0 if $t < $bestt else 1)"; then best=$ob bestt=$t; fi
done
echo "PyTorch fastest fair setting: torch.set_num_threads($THREADS), OPENBLAS_NUM_THREADS=$best" >&2
for i in $(seq 1 "$ROUNDS"); do
    echo "round $i/$ROUNDS" >&2
    ./build/bench_train_step "$MODEL" "$BATCH" "$STEPS" "$THREADS" > "$T/c$i.json"
    OPENBLAS_NUM_THREADS=$best $PY bench/train_step.py "$MODEL" "$BATCH" "$STEPS" "$THREADS" > "$T/t$i.json"
done
$PY - "$T" "$ROUNDS" "$best" <<'PY'
import json, statistics, sys
d, n, ob = sys.argv[1], int(sys.argv[2]), sys.argv[3]
c = [json.load(open(f"{d}/c{i}.json")) for i in range(1, n + 1)]
t = [json.load(open(f"{d}/t{i}.json")) for i in range(1, n + 1)]
m = c[0]
flops = m["forward_gflop_per_sample"] * m["batch"]
print(f"{m['model']}, batch {m['batch']}, {m['threads']} threads, {n} rounds x {len(m['train_step_s'])} steps; "
      f"PyTorch {t[0]['torch']} with OPENBLAS_NUM_THREADS={ob}")
print(f"  SGEMM (OpenBLAS, 2048^3): {m['sgemm_gflops_1']:.1f} GFLOP/s at 1 thread, "
      f"{m['sgemm_gflops_n']:.1f} at {m['threads']}; forward {flops:.1f} GFLOP per batch")
for key, label, mult in (("train_step_s", "training step", 3), ("inference_batch_s", "inference batch", 1)):
    cs = [x for r in c for x in r[key]]
    ts = [x for r in t for x in r[key]]
    mc, mt = statistics.median(cs), statistics.median(ts)
    frac = lambda s: mult * flops / s / m["sgemm_gflops_n"]
    print(f"  {label:16} crossbind median {mc:8.3f}s [{min(cs):.3f}, {max(cs):.3f}] ({frac(mc):.0%} of SGEMM)   "
          f"pytorch median {mt:8.3f}s [{min(ts):.3f}, {max(ts):.3f}] ({frac(mt):.0%})   ratio {mc / mt:.2f}x")
PY
