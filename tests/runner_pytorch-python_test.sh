#!/bin/bash
# The PyTorch/Python binding on PyPI's torch 2.7.1 (runners/pytorch-python,
# the PyTorch framework's default binding) against Debian's torch 1.13 running
# the same runner code (runners/pytorch):
#  - its environment answers the manifest's version command (torch 2.7.1);
#  - LeNet-1 and LeNet-5 from one initial state, in file order: every epoch's
#    training and test accuracy equal between the two versions (DTW 0.000);
#  - VGG-16, LSTM, GRU, GRU-rb train on small subsets and write every format; their
#    per-epoch differences between the versions are printed (measured, not
#    asserted: different library versions may pick different kernels);
#  - models move between the versions in every load mode both have (pt,
#    safetensors, TorchScript): the other version counts the same correct
#    test samples as the trainer;
#  - bad input gets one clear error and a non-zero exit;
#  - the benchmark worker answers with the keys crossbind bench reads.
# Prints "N passed, N failed". Needs runners/pytorch-python/install.sh done.
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/crossbind-pytorch-python-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=pytorch-python
. tests/lib.sh
NEW="runners/pytorch-python/.venv/bin/python runners/pytorch/crossbind_torch.py --binding pytorch-python"
OLD="/usr/bin/python3 runners/pytorch/crossbind_torch.py"
MNIST=/usr/share/datasets/fashion-mnist
THREADS=2

if ! runners/pytorch-python/.venv/bin/python -c 'import torch; assert torch.__version__.startswith("2.7.1")' 2>"$T/err"; then
    echo "FAIL $SUITE: the environment is missing or not torch 2.7.1 (run: bash runners/pytorch-python/install.sh)"
    sed 's/^/    /' "$T/err" | tail -3
    echo "0 passed, 1 failed"; exit 1
fi
check "version command names torch 2.7.1" bash -c \
    "runners/pytorch-python/.venv/bin/python -c 'import torch; print(torch.__version__)' | grep -q '^2\.7\.1'"

# The Python runners' metrics (runners/pytorch/cb_metrics.py): AUC equal to
# scikit-learn's on scores full of ties, and NaN scores answered with NaN
# at once (a tie scan that compares NaN with itself would never end).
check "cb_metrics: AUC as scikit-learn's with ties; NaN scores give NaN without hanging" timeout 20 /usr/bin/python3 -c '
import sys; sys.path.insert(0, "runners/pytorch")
import math, numpy as np, cb_metrics
from sklearn.metrics import roc_auc_score
rng = np.random.default_rng(7)
s = rng.integers(0, 5, 400).astype(np.float32); y = rng.integers(0, 2, 400).astype(bool)
assert abs(cb_metrics.auc_binary(s, y) - roc_auc_score(y, s)) < 1e-12
s[17] = np.nan
assert math.isnan(cb_metrics.auc_binary(s, y))
'

# same_curves NAME A/run.json B/run.json: per-epoch train and test accuracy equal.
same_curves() {
    check "$1" /usr/bin/python3 - "$2" "$3" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["status"] == b["status"] == "complete"
assert len(a["epochs"]) == len(b["epochs"]) > 0
for ea, eb in zip(a["epochs"], b["epochs"]):
    print(f"    epoch {ea['epoch']}: train {ea['train_acc']:.6f} / {eb['train_acc']:.6f}, "
          f"test {ea['test_acc']:.6f} / {eb['test_acc']:.6f}")
    assert ea["train_acc"] == eb["train_acc"] and ea["test_acc"] == eb["test_acc"], "curves differ"
PY
}

# show_diff NAME A/run.json B/run.json: the largest per-epoch test-accuracy difference.
show_diff() {
    /usr/bin/python3 - "$@" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[2:4])
d = max(abs(x["test_acc"] - y["test_acc"]) for x, y in zip(a["epochs"], b["epochs"]))
print(f"    {sys.argv[1]}: largest per-epoch test-accuracy difference torch 2.7.1 vs 1.13: {100 * d:.2f} pp")
PY
}

# correct FILE: the run's final test_correct.
correct() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["test_correct"])' "$1"; }

for m in ${PT_LENETS:-lenet1 lenet5}; do
    common="--run 1 --epochs 2 --threads $THREADS --data $MNIST --limit-train 2048 --limit-test 1000 --quiet"
    $NEW train $m $common --out "$T/$m-new" >/dev/null 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
    $OLD train $m $common --init "$T/$m-new/init.safetensors" --out "$T/$m-old" >/dev/null 2>"$T/err" ||
        sed 's/^/    /' "$T/err" | tail -3
    same_curves "$m: torch 2.7.1 and 1.13 curves equal from one initial state" "$T/$m-new/run.json" "$T/$m-old/run.json"
    check "$m: each run.json names its own binding (pytorch-python, pytorch)" test \
        "$(/usr/bin/python3 -c 'import json,sys; print(*(json.load(open(p))["binding"] for p in sys.argv[1:]))' "$T/$m-new/run.json" "$T/$m-old/run.json")" = "pytorch-python pytorch"
    want=$(correct "$T/$m-new/run.json")
    for f in pt safetensors ts; do
        check "$m: torch 1.13 evaluates 2.7.1's final.$f to the trainer's count ($want)" bash -c \
            "$OLD eval $m --weights '$T/$m-new/final.$f' --data $MNIST --limit-test 1000 --repeat 1 --threads $THREADS --json 2>/dev/null | grep -q '\"correct\": $want,'"
    done
    want=$(correct "$T/$m-old/run.json")
    for f in pt safetensors ts; do
        check "$m: torch 2.7.1 evaluates 1.13's final.$f to the trainer's count ($want)" bash -c \
            "$NEW eval $m --weights '$T/$m-old/final.$f' --data $MNIST --limit-test 1000 --repeat 1 --threads $THREADS --json 2>/dev/null | grep -q '\"correct\": $want,'"
    done
done

# The other models on small subsets, dropout off (each version draws its own masks).
for m in ${PT_MODELS:-vgg16 lstm gru gru-rb}; do
    case $m in vgg16) data=data/cifar-stand-in ;; *) data=data/imdb-prepared ;; esac
    if [ ! -d "$data" ]; then echo "FAIL $SUITE: $m: $data is missing (make it with crossbind data; see README)"; fail=$((fail + 1)); continue; fi
    # Recurrent models: 64 sequences of 300 steps (GRU-rb, a cell written in
    # Python, runs step by step: 32), enough to compare two epochs.
    case $m in vgg16) n=256 ;; gru-rb) n=32 ;; *) n=64 ;; esac
    common="--run 1 --epochs 2 --threads $THREADS --data $data --limit-train $n --limit-test $n --no-dropout --quiet"
    expect_ok "$m: torch 2.7.1 trains and writes every format" $NEW train $m $common --out "$T/$m-new"
    check "$m: torch 2.7.1 wrote pt, safetensors, ts and onnx" bash -c \
        "for f in pt safetensors ts onnx; do [ -s '$T/$m-new/final.'\$f ] || exit 1; done"
    # GRU-rb is the same Python cell in both versions, run step by step: one
    # version's training is all its test needs.
    [ $m = gru-rb ] && continue
    $OLD train $m $common --init "$T/$m-new/init.safetensors" --out "$T/$m-old" >/dev/null 2>&1 &&
        show_diff "$m" "$T/$m-new/run.json" "$T/$m-old/run.json"
done

expect_error "a missing weights file is refused" "no such file\|not found\|cannot open\|No such" \
    $NEW eval lenet1 --weights "$T/none.pt" --data $MNIST --limit-test 100 --repeat 1 --json
head -c 300 "$T/lenet1-new/final.pt" >"$T/cut.pt"
expect_error "a truncated .pt is refused, naming the file" "cut.pt: .*\\(corrupt\\|truncated\\|not a zip\\)" $NEW eval lenet1 --weights "$T/cut.pt" --data $MNIST --limit-test 100 --repeat 1 --json
expect_error "an unknown option is refused" "unrecognized\|unknown" $NEW train lenet1 --no-such-option

$NEW bench --model lenet1 --kind train --weights "$T/lenet1-new/init.safetensors" --batch 128 --samples 256 \
    --repeat 2 --threads $THREADS >"$T/bench.json" 2>"$T/err"
check "the bench worker answers times_s (2) and vmhwm_kib" /usr/bin/python3 -c '
import json, sys
a = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert len(a["times_s"]) == 2 and all(t > 0 for t in a["times_s"]) and a["vmhwm_kib"] > 0' "$T/bench.json"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
