#!/bin/bash
# Training parity (the engine issue's acceptance check): crossbind and the
# PyTorch runner train LeNet-5 and LeNet-1 on Fashion-MNIST for 3 epochs
# (plain SGD, lr 0.05, batch 128, file order) from the same initial weights,
# written by one side and read by the other; every epoch's test accuracy must
# agree within 0.3 percentage points. Prints "N passed, N failed".
# Environment: PARITY_EPOCHS (default 3), PARITY_DATA, PARITY_THREADS.
set -u
cd "$(dirname "$0")/.."
DATA=${PARITY_DATA:-/usr/share/datasets/fashion-mnist}
EPOCHS=${PARITY_EPOCHS:-3}
THREADS=${PARITY_THREADS:-$(nproc)}
T=$(mktemp -d /tmp/crossbind-parity-XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
TORCH="/usr/bin/python3 runners/pytorch/crossbind_torch.py"
common="--data $DATA --epochs $EPOCHS --batch 128 --lr 0.05 --run 1 --threads $THREADS --quiet"

compare() { # compare NAME C_DIR TORCH_DIR
    if /usr/bin/python3 - "$2/run.json" "$3/run.json" <<'PY'
import json, sys
c, t = (json.load(open(p)) for p in sys.argv[1:3])
assert c["status"] == t["status"] == "complete", "a run did not complete"
worst = 0.0
for ec, et in zip(c["epochs"], t["epochs"]):
    d = abs(ec["test_acc"] - et["test_acc"]) * 100
    worst = max(worst, d)
    print(f"    epoch {ec['epoch']}: test acc crossbind {ec['test_acc']:.4f}  pytorch {et['test_acc']:.4f}  "
          f"diff {d:.2f} pp   (train time {ec['train_time_s']:.2f}s vs {et['train_time_s']:.2f}s)")
assert len(c["epochs"]) == len(t["epochs"])
sys.exit(0 if worst <= 0.3 else 1)
PY
    then echo "ok   parity: $1"; pass=$((pass + 1)); else echo "FAIL parity: $1"; fail=$((fail + 1)); fi
}

# LeNet-5: PyTorch initialises, crossbind starts from PyTorch's init file.
$TORCH train lenet5 $common --out "$T/l5-torch" || fail=$((fail + 1))
./build/crossbind train lenet5 $common --init "$T/l5-torch/init.safetensors" --out "$T/l5-c" || fail=$((fail + 1))
compare "lenet5 (init written by PyTorch)" "$T/l5-c" "$T/l5-torch"
# LeNet-1: crossbind initialises, PyTorch starts from crossbind's init file.
./build/crossbind train lenet1 $common --out "$T/l1-c" || fail=$((fail + 1))
$TORCH train lenet1 $common --init "$T/l1-c/init.safetensors" --out "$T/l1-torch" || fail=$((fail + 1))
compare "lenet1 (init written by crossbind)" "$T/l1-c" "$T/l1-torch"
# Each side evaluates the other's trained weights: same count of correct answers.
./build/crossbind eval lenet5 --weights "$T/l5-torch/final.safetensors" --data "$DATA" --repeat 1 --json > "$T/c-eval.json" &&
$TORCH eval lenet5 --weights "$T/l5-torch/final.safetensors" --data "$DATA" --repeat 1 --json > "$T/t-eval.json"
if /usr/bin/python3 -c "
import json,sys; c=json.load(open('$T/c-eval.json')); t=json.load(open('$T/t-eval.json'))
print(f\"    PyTorch-trained LeNet-5: crossbind {c['correct']}/{c['total']}, pytorch {t['correct']}/{t['total']}\")
sys.exit(0 if abs(c['correct'] - t['correct']) <= 2 else 1)"; then
    echo "ok   parity: crossbind evaluates PyTorch's trained LeNet-5 alike"; pass=$((pass + 1))
else echo "FAIL parity: cross evaluation"; fail=$((fail + 1)); fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
