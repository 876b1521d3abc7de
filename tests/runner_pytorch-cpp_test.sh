#!/bin/bash
# The PyTorch/C++ runner (runners/pytorch-cpp, libtorch's torch::nn frontend
# on the libtorch of runners/pytorch-python/.venv) against PyTorch/Python:
#  - parity: from PyTorch/Python's initial weights (--init), same data order
#    and threads, LeNet-1 and LeNet-5 per-epoch training and test accuracy
#    EQUAL PyTorch/Python's (DTW 0), and the trained weights are bit-identical;
#    without --init the seeded default initialisation equals PyTorch/Python's;
#  - every declared model trains and evaluates on tiny limits (run.json,
#    final.safetensors, eval JSON and logits);
#  - PyTorch/Python's trained files load in every declared format
#    (safetensors, TorchScript) with PyTorch/Python's count of correct answers;
#  - bad inputs give one clear error line and a non-zero exit;
#  - the benchmark worker answers each kind with its JSON line.
# Installs nothing: run `bash runners/pytorch-cpp/install.sh` first.
# Environment: CPP_TEST_MNIST (default /usr/share/datasets/fashion-mnist),
# CPP_TEST_CIFAR, CPP_TEST_IMDB (default data/cifar-stand-in and
# data/imdb-prepared; made in a scratch directory with build/crossbind when absent).
# Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/crossbind-pytorch-cpp-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=pytorch-cpp
. tests/lib.sh
C=runners/pytorch-cpp/build/crossbind-torch-cpp
PY=runners/pytorch-python/.venv/bin/python
TORCH="$PY runners/pytorch/crossbind_torch.py"
MNIST=${CPP_TEST_MNIST:-/usr/share/datasets/fashion-mnist}
CIFAR=${CPP_TEST_CIFAR:-data/cifar-stand-in}
IMDB=${CPP_TEST_IMDB:-data/imdb-prepared}

if [ ! -x "$C" ] || [ ! -x "$PY" ]; then
    echo "FAIL $SUITE: the runner is not built (run: bash runners/pytorch-cpp/install.sh)"
    echo "0 passed, 1 failed"
    exit 1
fi
# The stand-in data sets the study makes, when this checkout has none yet.
if [ ! -f "$CIFAR/test_batch.bin" ] && [ -x build/crossbind ]; then
    CIFAR=$T/cifar; build/crossbind data cifar-stand-in --from "$MNIST" --out "$CIFAR" >/dev/null
fi
if [ ! -f "$IMDB/vocab.txt" ] && [ -x build/crossbind ]; then
    IMDB=$T/imdb
    build/crossbind data imdb-stand-in --out "$T/acl" >/dev/null && build/crossbind data imdb-prepare --from "$T/acl" --out "$IMDB" >/dev/null
fi
# OpenMP's waiting threads sleep rather than spin: on a machine shared with
# other jobs, spinning workers at 2 threads stall each call by a time slice
# (both bindings alike; the numbers computed are the same either way).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
data_of() { case $1 in lenet*) echo "$MNIST";; vgg16) echo "$CIFAR";; *) echo "$IMDB";; esac; }

# ---- the manifest and the version command
check "manifest: pytorch-cpp, trains and infers lenet1 lenet5 vgg16 lstm gru, loads safetensors and ts" \
    /usr/bin/python3 -c '
import json, sys
m = json.load(open("runners/pytorch-cpp/manifest.json"))
models = ["lenet1", "lenet5", "vgg16", "lstm", "gru"]
assert m["binding"] == "pytorch-cpp" and m["framework"] == "PyTorch" and m["language"] == "C++"
assert m["train"] == models and m["infer"] == models, "gru-rb must stay undeclared"
assert m["loads"] == ["safetensors", "ts"] and m["native_format"] in m["writes"]'
check "version command prints libtorch 2.7.1" sh -c "$C --version | grep -qx 'libtorch 2.7.1'"

# ---- parity with PyTorch/Python on the LeNets (exact)
common="--data $MNIST --epochs 2 --limit-train 2048 --limit-test 1000 --threads 2 --quiet"
same_curves() { # same_curves NAME PY_DIR CPP_DIR
    if /usr/bin/python3 - "$2/run.json" "$3/run.json" <<'PY'
import json, sys
p, c = (json.load(open(f)) for f in sys.argv[1:3])
assert p["status"] == c["status"] == "complete", "a run did not complete"
assert len(p["epochs"]) == len(c["epochs"]) == 2
for ep, ec in zip(p["epochs"], c["epochs"]):
    print(f"    epoch {ep['epoch']}: train acc {ep['train_acc']:.6f} / {ec['train_acc']:.6f}, "
          f"test acc {ep['test_acc']:.6f} / {ec['test_acc']:.6f} (python / c++)")
    assert ep["train_acc"] == ec["train_acc"] and ep["test_acc"] == ec["test_acc"], "the curves differ"
assert p["test_correct"] == c["test_correct"]
PY
    then echo "ok   $SUITE: $1"; pass=$((pass + 1)); else echo "FAIL $SUITE: $1"; fail=$((fail + 1)); fi
}
$TORCH train lenet1 $common --run 1 --out "$T/l1-py" >/dev/null 2>"$T/l1-py.err" || cat "$T/l1-py.err"
expect_ok "lenet1 trains from PyTorch/Python's init" $C train lenet1 $common --run 1 --init "$T/l1-py/init.safetensors" --out "$T/l1-cpp"
same_curves "lenet1: per-epoch train and test accuracy equal PyTorch/Python's" "$T/l1-py" "$T/l1-cpp"
check "lenet1: the trained weights are bit-identical to PyTorch/Python's" cmp -s "$T/l1-py/final.safetensors" "$T/l1-cpp/final.safetensors"
$TORCH train lenet5 $common --run 2 --out "$T/l5-py" >/dev/null 2>"$T/l5-py.err" || cat "$T/l5-py.err"
expect_ok "lenet5 trains from PyTorch/Python's init" $C train lenet5 $common --run 2 --init "$T/l5-py/init.safetensors" --out "$T/l5-cpp"
same_curves "lenet5: per-epoch train and test accuracy equal PyTorch/Python's" "$T/l5-py" "$T/l5-cpp"
check "lenet5: the trained weights are bit-identical to PyTorch/Python's" cmp -s "$T/l5-py/final.safetensors" "$T/l5-cpp/final.safetensors"
expect_ok "lenet5 trains from its own seeded initialisation" \
    $C train lenet5 --data "$MNIST" --epochs 1 --limit-train 256 --limit-test 256 --threads 2 --run 2 --quiet --out "$T/l5-own"
check "lenet5: the seeded default initialisation equals PyTorch/Python's (same seed)" \
    cmp -s "$T/l5-py/init.safetensors" "$T/l5-own/init.safetensors"

# ---- every declared model trains and evaluates (tiny limits)
run_ok() { # run_ok MODEL DIR: run.json complete with E epochs, final.safetensors, eval of it agrees
    /usr/bin/python3 - "$1" "$2" <<'PY'
import json, os, sys
model, d = sys.argv[1:3]
r = json.load(open(os.path.join(d, "run.json")))
assert r["status"] == "complete" and r["binding"] == "pytorch-cpp" and r["model"] == model, r.get("status")
assert len(r["epochs"]) == 1 and 0 <= r["epochs"][0]["test_acc"] <= 1 and r["training_time_s"] > 0
assert r["test_correct"] == round(r["test_accuracy"] * r["n_test"])
assert set(r["subactivities_s"]) == {"load", "forward", "backward"}
for f in ("init.safetensors", "final.safetensors"):
    assert os.path.getsize(os.path.join(d, f)) > 1000, f
e = json.loads(open(os.path.join(d, "eval.json")).read().strip().splitlines()[-1])
assert e["total"] == r["n_test"] and e["correct"] == r["test_correct"], (e["correct"], r["test_correct"])
assert len(e["times_s"]) == 2 and e["correct_per_pass"] == [e["correct"]] * 2 and e["load_mode"] == "parameters"
PY
}
for m in vgg16 lstm gru; do
    tiny="--data $(data_of $m) --epochs 1 --limit-train 32 --limit-test 32 --batch 32 --threads 2 --quiet --subactivities"
    if $C train $m $tiny --out "$T/$m" >"$T/$m.out" 2>"$T/$m.err" &&
        $C eval $m --weights "$T/$m/final.safetensors" --data "$(data_of $m)" --limit-test 32 --batch 32 --repeat 2 \
            --threads 2 --json --logits "$T/$m/logits.npy" >"$T/$m/eval.json" 2>>"$T/$m.err" && run_ok $m "$T/$m"; then
        echo "ok   $SUITE: $m trains and evaluates its trained weights to the same count"; pass=$((pass + 1))
    else
        echo "FAIL $SUITE: $m train/eval"; sed 's/^/    /' "$T/$m.err" | tail -5; fail=$((fail + 1))
    fi
done
check "eval logits: float32 .npy [32, 1] for the binary models, [32, 10] for vgg16" \
    $PY -c "
import numpy as np
for m, k in (('vgg16', 10), ('lstm', 1), ('gru', 1)):
    a = np.load('$T/' + m + '/logits.npy'); assert a.dtype == np.float32 and a.shape == (32, k), (m, a.dtype, a.shape)"

# ---- PyTorch/Python's trained files, in every format this binding loads
cross_eval() { # cross_eval MODEL PY_DIR [EVAL OPTIONS...]: same count as PyTorch/Python, identical logits
    local m=$1 d=$2; shift 2
    $TORCH eval $m --weights "$d/final.pt" "$@" --logits "$T/ref.npy" --json >"$T/ref.json" 2>"$T/ref.err" || cat "$T/ref.err"
    for fmt in safetensors ts; do
        if $C eval $m --weights "$d/final.$fmt" "$@" --logits "$T/$m-$fmt.npy" --json >"$T/$m-$fmt.json" 2>"$T/err" &&
            $PY - "$T/ref.json" "$T/$m-$fmt.json" "$T/ref.npy" "$T/$m-$fmt.npy" "$fmt" <<'PY'
import json, sys
import numpy as np
r, c = (json.loads(open(f).read().strip().splitlines()[-1]) for f in sys.argv[1:3])
a, b = np.load(sys.argv[3]), np.load(sys.argv[4])
mode = {"safetensors": "parameters", "ts": "serialization"}[sys.argv[5]]
print(f"    {sys.argv[5]}: {c['correct']}/{c['total']} correct (PyTorch/Python {r['correct']}/{r['total']}), "
      f"max |logit difference| {float(np.abs(a - b).max()):.3g}")
assert c["correct"] == r["correct"] and c["total"] == r["total"] and c["load_mode"] == mode
PY
        then echo "ok   $SUITE: $m: PyTorch/Python's final.$fmt gives its count of correct answers"; pass=$((pass + 1))
        else echo "FAIL $SUITE: $m: PyTorch/Python's final.$fmt"; sed 's/^/    /' "$T/err" | head -5; fail=$((fail + 1)); fi
    done
}
cross_eval lenet5 "$T/l5-py" --data "$MNIST" --limit-test 2000 --repeat 1 --threads 2
$TORCH train gru --data "$IMDB" --epochs 1 --limit-train 32 --limit-test 32 --batch 32 --threads 2 --quiet \
    --out "$T/gru-py" >/dev/null 2>"$T/gru-py.err" || tail -3 "$T/gru-py.err"
cross_eval gru "$T/gru-py" --data "$IMDB" --limit-test 32 --batch 32 --repeat 1 --threads 2

# ---- bad inputs: one clear message, non-zero exit
W="$T/l5-py/final.safetensors"
ev="--data $MNIST --limit-test 100 --repeat 1 --threads 1 --json"
expect_error "a missing weights file" "cannot open weights $T/none.safetensors" $C eval lenet5 --weights "$T/none.safetensors" $ev
head -c 5000 "$W" >"$T/truncated.safetensors"
expect_error "a truncated safetensors file" "lies outside the file" $C eval lenet5 --weights "$T/truncated.safetensors" $ev
printf '\x10\x00\x00\x00\x00\x00\x00\x00{"a": [1, 2     ' >"$T/badjson.safetensors"
expect_error "a safetensors header that is not JSON" "header is not JSON" $C eval lenet5 --weights "$T/badjson.safetensors" $ev
expect_error "--init with a file that is not safetensors" "init needs a .safetensors file" \
    $C train lenet5 --init "$T/l5-py/final.pt" --data "$MNIST" --out "$T/x"
expect_error "weights of another model" "parameters missing from the file" $C eval lenet1 --weights "$W" $ev
expect_error "PyTorch/Python's .pt state dict (not readable by libtorch's C++ API)" "cannot be read by libtorch" \
    $C eval lenet5 --weights "$T/l5-py/final.pt" $ev
expect_error "an ONNX file" "cannot run ONNX" $C eval lenet5 --weights "$T/l5-py/final.onnx" $ev
expect_error "an unknown option" "unknown option --frobnicate" $C eval lenet5 --weights "$W" $ev --frobnicate
expect_error "an unknown model" "unknown model 'lenet7'" $C train lenet7 --data "$MNIST" --out "$T/x"
expect_error "gru-rb, declared unsupported" "gru-rb is not supported" $C train gru-rb --data "$IMDB" --out "$T/x"
expect_error "a missing data set" "cannot open $T/nodata/t10k-images-idx3-ubyte" $C eval lenet5 --weights "$W" --data "$T/nodata"
expect_error "--run out of range" "run must be 1 to 5" $C train lenet5 --run 9 --data "$MNIST" --out "$T/x"
expect_error "a device it does not have" "not available" $C eval lenet5 --weights "$W" $ev --device cuda

# ---- the benchmark worker
for kind in train infer latency startup; do
    if $C bench --model lenet5 --kind $kind --weights "$W" --batch 16 --samples 32 --repeat 2 --threads 2 >"$T/bench.json" 2>"$T/err" &&
        /usr/bin/python3 - "$kind" "$T/bench.json" <<'PY'
import json, sys
kind = sys.argv[1]
lines = open(sys.argv[2]).read().strip().splitlines()
assert len(lines) == 1, lines
a = json.loads(lines[0])
assert a["vmhwm_kib"] > 0
if kind == "startup":
    assert a["label"] in range(10) and a["monotonic_s"] > 0
else:
    n = 32 if kind == "latency" else 2
    assert len(a["times_s"]) == n and all(t > 0 for t in a["times_s"]) and a["torch_threads"] == 2
PY
    then echo "ok   $SUITE: bench worker answers $kind"; pass=$((pass + 1))
    else echo "FAIL $SUITE: bench worker $kind"; sed 's/^/    /' "$T/err" | head -5; fail=$((fail + 1)); fi
done
expect_error "bench: a training unit smaller than a batch" "at least one whole batch" \
    $C bench --model lenet5 --kind train --weights "$W" --batch 64 --samples 32

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
