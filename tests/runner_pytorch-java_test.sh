#!/bin/bash
# The PyTorch/Java runner (runners/pytorch-java: DJL 0.36's PyTorch engine on the
# shared libtorch 2.7.1). Assumes both installs ran (bash runners/pytorch-java/install.sh,
# which runs runners/pytorch-python/install.sh); installs nothing.
#  - parity with PyTorch/Python: LeNet-1 and LeNet-5, 2 epochs on 2,048 Fashion-MNIST
#    images (test 1,000), 2 threads, PyTorch/Python starting from the Java run's initial
#    weights: every epoch's train and test accuracy equal, and the final weights equal
#    to the bit;
#  - train + eval of every declared model on tiny limits (VGG-16, LSTM and GRU on small
#    made-up CIFAR/IMDb-format sets), the eval's correct count equal to the run's;
#  - PyTorch/Python's trained LeNet-5 and GRU loaded from .safetensors and TorchScript
#    with PyTorch/Python's correct count;
#  - bad inputs: one clear error line and a non-zero exit;
#  - the bench worker's JSON (train, infer, latency, startup);
#  - nothing reached over the network (under unshare -n where the kernel allows it).
# Prints "N passed, N failed". Environment: JAVA_TEST_DATA (Fashion-MNIST IDX directory).
set -u
cd "$(dirname "$0")/.."
DATA=${JAVA_TEST_DATA:-/usr/share/datasets/fashion-mnist}
J=runners/pytorch-java/run.sh
PY=runners/pytorch-python/.venv/bin/python
TORCH="$PY runners/pytorch/crossbind_torch.py"
T=$(mktemp -d /tmp/crossbind-java-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=pytorch-java
. tests/lib.sh

if [ ! -x "$PY" ] || [ ! -f runners/pytorch-java/target/.crossbind-complete ]; then
    echo "FAIL $SUITE: not installed (run: bash runners/pytorch-java/install.sh)"
    echo "0 passed, 1 failed"
    exit 1
fi

# json_check NAME FILE PYTHON-EXPRESSION-ON-d: the JSON (file or one line) satisfies it.
json_check() {
    local name="$1" file="$2" expr="$3"
    if $PY - "$file" "$expr" <<'PY' >"$T/jc.err" 2>&1
import json, sys
text = open(sys.argv[1]).read().strip().splitlines()[-1] if not sys.argv[1].endswith(".json") else open(sys.argv[1]).read()
d = json.loads(text)
assert eval(sys.argv[2]), "condition false: " + sys.argv[2]
PY
    then echo "ok   $SUITE: $name"; pass=$((pass + 1))
    else echo "FAIL $SUITE: $name"; sed 's/^/    /' "$T/jc.err" | tail -3; fail=$((fail + 1)); fi
}

expect_ok "version: DJL 0.36.0 on libtorch 2.7.1" $J version
check "version lines" grep -qx "libtorch 2.7.1" "$T/out"

# --- parity with PyTorch/Python on the LeNets ---------------------------------------
common="--run 1 --epochs 2 --threads 2 --data $DATA --limit-train 2048 --limit-test 1000 --quiet"
for m in lenet1 lenet5; do
    $J train $m $common --out "$T/j-$m" >/dev/null 2>"$T/err" || { echo "FAIL $SUITE: java train $m"; cat "$T/err"; }
    $TORCH train $m $common --init "$T/j-$m/init.safetensors" --out "$T/p-$m" >/dev/null 2>"$T/err" ||
        { echo "FAIL $SUITE: python train $m"; cat "$T/err"; }
    if $PY - "$T/j-$m" "$T/p-$m" <<'PY'
import json, sys
sys.path.insert(0, "runners/pytorch")
import cb_safetensors, numpy as np
j, p = (json.load(open(d + "/run.json")) for d in sys.argv[1:3])
assert j["status"] == p["status"] == "complete"
for a, b in zip(j["epochs"], p["epochs"]):
    print(f"    epoch {a['epoch']}: train acc java {a['train_acc']:.6f} python {b['train_acc']:.6f}  "
          f"test acc java {a['test_acc']:.4f} python {b['test_acc']:.4f}")
    assert a["train_acc"] == b["train_acc"] and a["test_acc"] == b["test_acc"], "accuracies differ"
assert len(j["epochs"]) == len(p["epochs"]) == 2 and j["test_correct"] == p["test_correct"]
wj, _ = cb_safetensors.read(sys.argv[1] + "/final.safetensors")
wp, _ = cb_safetensors.read(sys.argv[2] + "/final.safetensors")
assert wj.keys() == wp.keys(), "different tensor names"
for k in wp:
    assert np.array_equal(wj[k], wp[k]), f"{k}: max |diff| {np.abs(wj[k] - wp[k]).max()}"
PY
    then echo "ok   $SUITE: $m parity with pytorch-python (2 epochs, same init): equal accuracies, equal weights"
        pass=$((pass + 1))
    else echo "FAIL $SUITE: $m parity with pytorch-python"; fail=$((fail + 1)); fi
done

# --- PyTorch/Python's LeNet-5 in both load modes -------------------------------------
want=$($PY -c "import json; print(json.load(open('$T/p-lenet5/run.json'))['test_correct'])")
for f in safetensors ts; do
    expect_ok "eval lenet5 final.$f of pytorch-python" $J eval lenet5 --weights "$T/p-lenet5/final.$f" --data "$DATA" \
        --limit-test 1000 --repeat 2 --threads 2 --logits "$T/l5-$f.npy" --json
    cp "$T/out" "$T/eval-$f.out"
    json_check "lenet5 final.$f: $want correct, as pytorch-python" "$T/eval-$f.out" \
        "d['correct'] == $want and d['total'] == 1000 and len(d['times_s']) == 2 and d['correct_per_pass'] == [$want] * 2"
done
$TORCH eval lenet5 --weights "$T/p-lenet5/final.pt" --data "$DATA" --limit-test 1000 --repeat 1 --threads 2 \
    --logits "$T/l5-py.npy" --json >/dev/null
check "lenet5 logits (safetensors and TorchScript) equal pytorch-python's" $PY -c "
import numpy as np, sys
p = np.load('$T/l5-py.npy')
sys.exit(0 if all(np.array_equal(p, np.load('$T/l5-%s.npy' % f)) for f in ('safetensors', 'ts')) else 1)"

# --- every declared model on tiny made-up sets ---------------------------------------
$PY - "$T" <<'PY'
import numpy as np, os, sys
t = sys.argv[1]
rng = np.random.default_rng(7)
os.makedirs(t + "/cifar"); os.makedirs(t + "/imdb")
for name, n in [("data_batch_%d.bin" % i, 16) for i in range(1, 6)] + [("test_batch.bin", 32)]:
    rec = rng.integers(0, 256, size=(n, 3073), dtype=np.uint8)
    rec[:, 0] = rng.integers(0, 10, size=n)
    rec.tofile(f"{t}/cifar/{name}")
for split, n in (("train", 64), ("test", 32)):
    y = rng.integers(0, 2, size=n).astype(np.int64)
    x = rng.integers(4, 10000, size=(n, 300)).astype(np.int64)
    x[:, -1] = np.where(y == 1, 5, 6)  # a token that gives the label away
    np.save(f"{t}/imdb/x_{split}.npy", x); np.save(f"{t}/imdb/y_{split}.npy", y)
open(t + "/imdb/vocab.txt", "w").write("crossbind-vocab 1 num_words=10000 maxlen=300 index_from=3\n")
PY
for m in vgg16 lstm gru; do
    d="$T/imdb"; [ $m = vgg16 ] && d="$T/cifar"
    expect_ok "train $m (1 epoch, tiny)" $J train $m --run 2 --epochs 1 --batch 32 --threads 2 --data "$d" \
        --limit-train 64 --limit-test 32 --out "$T/j-$m" --quiet
    json_check "$m run.json complete" "$T/j-$m/run.json" \
        "d['status'] == 'complete' and d['n_train'] == 64 and d['n_test'] == 32 and len(d['epochs']) == 1"
    expect_ok "eval $m final.safetensors" $J eval $m --weights "$T/j-$m/final.safetensors" --data "$d" --batch 32 \
        --repeat 1 --threads 2 --logits "$T/$m.npy" --json
    cp "$T/out" "$T/eval-$m.out"
    want=$($PY -c "import json; print(json.load(open('$T/j-$m/run.json'))['test_correct'])")
    json_check "$m eval: the run's $want correct, logits [32, K]" "$T/eval-$m.out" \
        "d['correct'] == $want and d['total'] == 32 and __import__('numpy').load('$T/$m.npy').shape[0] == 32"
done

# PyTorch/Python's GRU in both load modes.
$TORCH train gru --run 1 --epochs 1 --batch 32 --threads 2 --data "$T/imdb" --limit-train 64 --limit-test 32 \
    --out "$T/p-gru" --quiet >/dev/null 2>&1
want=$($PY -c "import json; print(json.load(open('$T/p-gru/run.json'))['test_correct'])" 2>/dev/null)
for f in safetensors ts; do
    expect_ok "eval gru final.$f of pytorch-python" $J eval gru --weights "$T/p-gru/final.$f" --data "$T/imdb" \
        --batch 32 --repeat 1 --threads 2 --json
    cp "$T/out" "$T/evalg-$f.out"
    json_check "gru final.$f: ${want:-?} correct, as pytorch-python" "$T/evalg-$f.out" "d['correct'] == ${want:--1}"
done

# --- bad inputs ----------------------------------------------------------------------
w="$T/j-lenet5/final.safetensors"
head -c 3000 "$w" > "$T/trunc.safetensors"
expect_error "missing weights file" "cannot open weights" $J eval lenet5 --weights "$T/none.safetensors" --data "$DATA"
expect_error "truncated safetensors" "truncated\|exceeds\|outside the file" $J eval lenet5 --weights "$T/trunc.safetensors" --data "$DATA"
expect_error "lenet1 weights as lenet5" "parameters missing" $J eval lenet5 --weights "$T/j-lenet1/final.safetensors" --data "$DATA"
expect_error "unknown option" "unknown option --bogus" $J train lenet1 --bogus 1
expect_error "unknown model" "unknown model" $J train lenet9 --data "$DATA"
expect_error "gru-rb unsupported" "gru-rb is not supported" $J eval gru-rb --weights "$w" --data "$DATA"
expect_error "onnx unsupported" "ONNX models are not supported" $J eval lenet5 --weights "$T/p-lenet5/final.onnx" --data "$DATA"
expect_error "missing data" "cannot open" $J eval lenet5 --weights "$w" --data "$T/nodata"
expect_error "device other than cpu" "not supported" $J eval lenet5 --weights "$w" --data "$DATA" --device cuda

# --- the bench worker ----------------------------------------------------------------
for k in train infer latency; do
    expect_ok "bench $k lenet1" $J bench --model lenet1 --kind $k --weights "$T/j-lenet1/init.safetensors" --batch 16 \
        --samples 32 --repeat 3 --threads 1
    cp "$T/out" "$T/bench-$k.out"
    n=3; [ $k = latency ] && n=32
    json_check "bench $k JSON: $n times, vmhwm_kib" "$T/bench-$k.out" \
        "len(d['times_s']) == $n and all(x > 0 for x in d['times_s']) and d['vmhwm_kib'] > 0"
done
expect_ok "bench startup gru" $J bench --model gru --kind startup --weights "$T/j-gru/final.safetensors" --threads 1
cp "$T/out" "$T/bench-startup.out"
json_check "bench startup JSON: label and monotonic_s" "$T/bench-startup.out" \
    "d['label'] in (0, 1) and abs(d['monotonic_s'] - __import__('time').clock_gettime(__import__('time').CLOCK_MONOTONIC)) < 60"

# --- offline -------------------------------------------------------------------------
if unshare -n true 2>/dev/null; then
    expect_ok "eval with no network at all (unshare -n)" unshare -n $J eval lenet1 \
        --weights "$T/j-lenet1/final.safetensors" --data "$DATA" --limit-test 500 --repeat 1 --threads 1 --json
else
    echo "skip $SUITE: unshare -n not permitted here (offline run not re-checked)"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
