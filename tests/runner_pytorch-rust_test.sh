#!/bin/bash
# The PyTorch/Rust runner (runners/pytorch-rust: tch 0.20 on the shared
# libtorch 2.7.1 of runners/pytorch-python):
#  - parity: from PyTorch/Python's initial weights, same data order and
#    threads, LeNet-1 and LeNet-5 train to exactly PyTorch/Python's per-epoch
#    accuracies and losses (2 epochs, 2,048 / 1,000 Fashion-MNIST images);
#  - every declared model (lenet1, lenet5, vgg16, lstm, gru) trains and its
#    final.safetensors and final.ts evaluate to the run's own test count;
#  - PyTorch/Python's trained files load in every format the manifest
#    declares (safetensors, ts) with PyTorch/Python's count and logits;
#  - bad inputs (a missing or truncated weights file, the wrong model, an
#    unknown option or model, gru-rb) end with one clear error line;
#  - the benchmark worker answers one JSON line per kind.
# Installs nothing: assumes bash runners/pytorch-rust/install.sh ran.
# Usage: tests/runner_pytorch-rust_test.sh   (prints "N passed, N failed")
# Environment: MNIST_DATA (default /usr/share/datasets/fashion-mnist).
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/crossbind-pytorch-rust-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=pytorch-rust
source tests/lib.sh
RS=runners/pytorch-rust/target/release/crossbind-tch
PY=runners/pytorch-python/.venv/bin/python
TORCH="$PY runners/pytorch/crossbind_torch.py"
DATA=${MNIST_DATA:-/usr/share/datasets/fashion-mnist}

if [ ! -x "$RS" ] || [ ! -x "$PY" ]; then
    echo "FAIL $SUITE: not installed ($RS or $PY missing): run bash runners/pytorch-rust/install.sh"
    echo "0 passed, 1 failed"
    exit 1
fi

expect_ok "the version command names tch and libtorch 2.7.1" bash -c "'$RS' version | grep -q '^tch 0.20.0' && '$RS' version | grep -q '^libtorch 2.7.1'"
check "  ... and the manifest is valid JSON declaring no gru-rb" $PY -c "
import json; m = json.load(open('runners/pytorch-rust/manifest.json'))
assert m['binding'] == 'pytorch-rust' and 'gru-rb' not in m['train'] + m['infer'], m"

# 1. Parity with PyTorch/Python from PyTorch/Python's initial weights.
common="--data $DATA --epochs 2 --run 1 --threads 2 --quiet --limit-train 2048 --limit-test 1000"
same_curves() { # same_curves PY_DIR RS_DIR: every epoch's accuracies and losses equal
    $PY - "$1/run.json" "$2/run.json" <<'PY'
import json, sys
p, r = (json.load(open(f)) for f in sys.argv[1:3])
assert p["status"] == r["status"] == "complete" and len(p["epochs"]) == len(r["epochs"]) == 2
for a, b in zip(p["epochs"], r["epochs"]):
    print(f"    epoch {a['epoch']}: train acc {a['train_acc']:.6f} / {b['train_acc']:.6f}, test acc "
          f"{a['test_acc']:.6f} / {b['test_acc']:.6f}, train loss {a['train_loss']:.9g} / {b['train_loss']:.9g}")
    for k in ("train_acc", "test_acc", "train_loss", "test_loss"):
        assert a[k] == b[k], (a["epoch"], k, a[k], b[k])
assert p["test_correct"] == r["test_correct"]
PY
}
for m in lenet1 lenet5; do
    expect_ok "$m: PyTorch/Python trains (the reference)" $TORCH train $m $common --out "$T/$m-py"
    expect_ok "$m: tch trains from its initial weights" $RS train $m $common --init "$T/$m-py/init.safetensors" --out "$T/$m-rs"
    check "$m: per-epoch accuracies and losses equal PyTorch/Python's exactly" same_curves "$T/$m-py" "$T/$m-rs"
    check "  ... and so do the trained weights" $PY - "$T/$m-py/final.safetensors" "$T/$m-rs/final.safetensors" <<'PY'
import sys; sys.path.insert(0, "runners/pytorch")
import numpy as np, cb_safetensors
a, _ = cb_safetensors.read(sys.argv[1]); b, meta = cb_safetensors.read(sys.argv[2])
assert sorted(a) == sorted(b) and meta.get("format") == "crossbind-weights/1"
assert all(a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a)
PY
done

# 2. PyTorch/Python's trained LeNet-5 in every declared format: same count, same logits.
expect_ok "PyTorch/Python evaluates its own LeNet-5" $TORCH eval lenet5 --weights "$T/lenet5-py/final.safetensors" \
    --data "$DATA" --limit-test 1000 --repeat 1 --threads 2 --json --logits "$T/py.npy"
for f in safetensors ts; do
    expect_ok "PyTorch/Python's final.$f loads" $RS eval lenet5 --weights "$T/lenet5-py/final.$f" --data "$DATA" \
        --limit-test 1000 --batch 128 --repeat 2 --threads 2 --json --logits "$T/rs-$f.npy"
    cp "$T/out" "$T/eval-$f.json"
    check "  ... with PyTorch/Python's count and logits (max |diff| 0)" $PY - "$T/eval-$f.json" "$T/lenet5-py/run.json" "$T/py.npy" "$T/rs-$f.npy" <<'PY'
import json, sys, numpy as np
e, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
a, b = np.load(sys.argv[3]), np.load(sys.argv[4])
print(f"    {e['format']} ({e['load_mode']}): {e['correct']}/{e['total']}, PyTorch/Python {r['test_correct']}, "
      f"max |logit diff| {np.abs(a - b).max()}")
assert e["correct"] == r["test_correct"] and e["total"] == 1000 and len(e["times_s"]) == 2
assert e["correct_per_pass"][-1] == e["correct"] and b.dtype == np.float32 and b.shape == (1000, 10)
assert np.array_equal(a, b)
PY
done
rs_count=$($PY -c "import json; print(json.load(open('$T/lenet1-rs/run.json'))['test_correct'])")
for f in safetensors ts; do
    check "PyTorch/Python loads tch's final.$f with tch's count ($rs_count)" bash -c "$TORCH eval lenet1 \
        --weights '$T/lenet1-rs/final.$f' --data '$DATA' --limit-test 1000 --repeat 1 --threads 2 --json | grep -q '\"correct\": $rs_count,'"
done

# 3. Every declared model trains and evaluates (tiny sizes).
$PY - "$T" <<'PY'
import os, sys, numpy as np
d = os.path.join(sys.argv[1], "cifar"); os.makedirs(d)
rng = np.random.default_rng(5)
for name, n in [(f"data_batch_{i}.bin", 40) for i in range(1, 6)] + [("test_batch.bin", 40)]:
    rec = rng.integers(0, 256, (n, 3073), dtype=np.uint8); rec[:, 0] %= 10
    rec.tofile(os.path.join(d, name))
d = os.path.join(sys.argv[1], "imdb"); os.makedirs(d)
open(os.path.join(d, "vocab.txt"), "w").write("the\nmovie\n")
for split, n in (("train", 48), ("test", 32)):
    np.save(os.path.join(d, f"x_{split}.npy"), rng.integers(0, 10000, (n, 300), dtype=np.int64))
    np.save(os.path.join(d, f"y_{split}.npy"), (np.arange(n) % 2).astype(np.int64))
PY
run_count() { $PY -c "import json,sys; print(json.load(open(sys.argv[1]))['test_correct'])" "$1"; }
for spec in "vgg16 cifar --limit-train 64 --limit-test 32 --batch 32" "lstm imdb --batch 24" "gru imdb --batch 24"; do
    set -- $spec; m=$1; d=$2; shift 2
    expect_ok "$m trains (1 epoch, tiny)" $RS train $m --data "$T/$d" --epochs 1 --run 2 --threads 2 --quiet "$@" --out "$T/$m"
    check "  ... run.json complete, vocabulary copied for text" $PY -c "
import json, os, sys; r = json.load(open('$T/$m/run.json'))
assert r['status'] == 'complete' and r['binding'] == 'pytorch-rust' and len(r['epochs']) == 1
assert '$d' != 'imdb' or os.path.exists('$T/$m/vocab.txt')"
    for f in safetensors ts; do
        check "  ... final.$f evaluates to the run's count" bash -c "'$RS' eval $m --weights '$T/$m/final.$f' --data '$T/$d' \
            --batch 16 --repeat 1 --threads 2 --json | grep -q '\"correct\":$(run_count "$T/$m/run.json"),'"
    done
done

# 4. Bad inputs: one clear error line, non-zero exit.
expect_error "a missing weights file" "cannot open weights" $RS eval lenet1 --weights "$T/none.safetensors" --data "$DATA" --limit-test 10
head -c 300 "$T/lenet1-py/final.safetensors" > "$T/trunc.safetensors"
expect_error "a truncated safetensors file" "cannot read weights" $RS eval lenet1 --weights "$T/trunc.safetensors" --data "$DATA" --limit-test 10
head -c 2000 "$T/lenet1-py/final.ts" > "$T/trunc.ts"
expect_error "a truncated TorchScript file" "corrupt zip archive\|cannot load TorchScript" $RS eval lenet1 --weights "$T/trunc.ts" --data "$DATA" --limit-test 10
expect_error "the wrong model's weights" "parameters missing from the file: conv3.weight" $RS eval lenet5 --weights "$T/lenet1-py/final.safetensors" --data "$DATA" --limit-test 10
$PY - "$T/lenet1-py/final.safetensors" "$T/wide.safetensors" <<'PY'
import sys; sys.path.insert(0, "runners/pytorch")
import numpy as np, cb_safetensors
t, meta = cb_safetensors.read(sys.argv[1]); t["fc.weight"] = np.zeros((10, 301), np.float32)
cb_safetensors.write(sys.argv[2], t, meta)
PY
expect_error "a parameter of the wrong shape" "parameter fc.weight has shape \\[10, 301\\], the model needs \\[10, 300\\]" $RS eval lenet1 --weights "$T/wide.safetensors" --data "$DATA" --limit-test 10
expect_error "an ONNX file (unsupported load mode)" "unsupported load mode" $RS eval lenet1 --weights "$T/lenet1-py/final.onnx" --data "$DATA" --limit-test 10
expect_error "a torch.save state dict (OrderedDict) is refused clearly" "OrderedDict" $RS eval lenet1 --weights "$T/lenet1-py/final.pt" --data "$DATA" --limit-test 10
expect_error "an unknown option" "unknown option --bogus" $RS train lenet1 --bogus 3 --out "$T/x"
expect_error "an unknown model" "unknown model resnet" $RS train resnet --out "$T/x"
expect_error "gru-rb is declared unsupported" "gru-rb is not supported" $RS train gru-rb --out "$T/x"
expect_error "a bad number" "expects an integer" $RS train lenet1 --epochs two --out "$T/x"
expect_error "missing data" "cannot open" $RS train lenet1 --data "$T/nothing" --out "$T/x"

# 5. The benchmark worker.
for kind in train infer latency startup; do
    expect_ok "bench $kind answers" $RS bench --model lenet1 --kind $kind --weights "$T/lenet1-py/init.safetensors" \
        --batch 16 --samples 32 --repeat 2 --threads 1
    check "  ... with one JSON line of the right keys" $PY -c "
import json, sys; lines = open('$T/out').read().splitlines(); assert len(lines) == 1, lines
r = json.loads(lines[0]); assert r['vmhwm_kib'] > 0
if '$kind' == 'startup': assert r['label'] in range(10) and r['monotonic_s'] > 0
else: assert len(r['times_s']) == (32 if '$kind' == 'latency' else 2) and all(t > 0 for t in r['times_s'])"
done
expect_ok "bench trains the LSTM" $RS bench --model lstm --kind train --weights "$T/lstm/final.safetensors" --batch 4 --samples 4 --repeat 1 --threads 2
expect_error "bench: samples below one batch" "whole batch" $RS bench --model lenet1 --kind train --weights "$T/lenet1-py/init.safetensors" --batch 16 --samples 8

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
