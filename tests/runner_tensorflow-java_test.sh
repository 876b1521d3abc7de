#!/bin/bash
# The TensorFlow/Java binding (runners/tensorflow-java: TF-Java 1.1.0 graphs and
# sessions on the TensorFlow 2.18.0 its native jar bundles) against the
# TensorFlow/Python binding (tensorflow-cpu 2.18.1, tf-keras 2.18.0), the
# framework's default, from the same canonical weights:
#  - its environment answers the manifest's version command (TF 2.18.0);
#  - training: LeNet-1, 1 epoch on 2,048 / 1,000 images from TF/Python's
#    init.safetensors: run.json complete; its init.safetensors is TF/Python's
#    bit for bit; its curve lands on TF/Python's: train and test loss within
#    1e-3, train and test accuracy within 0.005 (5 test images), every final
#    weight within 1e-3. Why these bounds: both run the same ops (padding,
#    valid convolutions, tanh, max pooling, softmax cross-entropy, plain SGD)
#    through TensorFlow's kernels, but two builds (2.18.0 and 2.18.1) whose
#    float32 sums may run in another order; 16 SGD steps at lr 0.05 carry
#    rounding differences of about 1e-7 forward, and a test image whose two
#    largest logits are that close may flip. Measured: train loss 3e-6 apart,
#    test counts 1 apart. Its final.safetensors evaluates to its count, in
#    TF-Java and in TF/Python;
#  - inference, every model it infers (LeNet-1 as trained by TF/Python above,
#    the others from random canonical weights): its logits (the probability
#    for the IMDb models) agree with TF/Python's eval within the suite's rule
#    |a - r| <= 1e-5 + 1e-4 |r| with the same count; and the weights read back
#    out of its graph (canonical -> Keras -> graph -> Keras -> canonical) are
#    the file's bit for bit;
#  - a tiny crossbind study of tensorflow-python and tensorflow-java (LeNet-1,
#    shared initial weights) stores both training runs complete and both
#    evaluations of TF/Python's model ok, same count, same labels;
#  - bad input (missing, truncated or non-safetensors weights, another model's
#    weights, an unknown option, a missing data file) gets one clear error line
#    and a non-zero exit;
#  - the benchmark worker answers each kind (train, infer, latency, startup)
#    with the keys crossbind bench reads.
# Prints "N passed, N failed" (31 tests; about 4 minutes on 2 shared cores).
# Needs runners/tensorflow-java/install.sh and runners/tensorflow-python/install.sh
# done, and crossbind built (make).
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/crossbind-tensorflow-java-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=tensorflow-java
. tests/lib.sh
J=runners/tensorflow-java/run.sh
PY=runners/tensorflow-python/.venv/bin/python
TF="$PY runners/tensorflow/crossbind_tf.py"
CB=build/crossbind
MNIST=/usr/share/datasets/fashion-mnist
THREADS=2

if ! $J version >"$T/version" 2>"$T/err"; then
    echo "FAIL $SUITE: the runner does not start (run: bash runners/tensorflow-java/install.sh)"
    sed 's/^/    /' "$T/err" | tail -3
    echo "0 passed, 1 failed"; exit 1
fi
if ! $PY -c 'import os; os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"; import tensorflow as tf; assert tf.__version__ == "2.18.1"' 2>"$T/err"; then
    echo "FAIL $SUITE: the reference binding's environment is missing (run: bash runners/tensorflow-python/install.sh)"
    sed 's/^/    /' "$T/err" | tail -3
    echo "0 passed, 1 failed"; exit 1
fi
if [ ! -x $CB ]; then echo "FAIL $SUITE: $CB is missing (run make)"; echo "0 passed, 1 failed"; exit 1; fi

check "version command names TF-Java 1.1.0 on TensorFlow 2.18.0" \
    bash -c "grep -q '^tensorflow-java 1\.1\.0$' '$T/version' && grep -q '^tensorflow 2\.18\.0$' '$T/version'"

# ---- training: LeNet-1 from TF/Python's initial weights ----
common="--run 1 --epochs 1 --threads $THREADS --data $MNIST --limit-train 2048 --limit-test 1000 --quiet"
$TF train lenet1 $common --out "$T/l1-py" >/dev/null 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
expect_ok "lenet1: trains 1 epoch from TF/Python's init.safetensors" \
    $J train lenet1 $common --init "$T/l1-py/init.safetensors" --out "$T/l1-j"
check "lenet1: run.json complete, names tensorflow-java; init and final weights written" $PY - "$T/l1-j" <<'PY'
import json, os, sys
d = sys.argv[1]
r = json.load(open(f"{d}/run.json"))
assert r["status"] == "complete" and r["binding"] == "tensorflow-java" and len(r["epochs"]) == 1, r
assert r["n_train"] == 2048 and r["n_test"] == 1000 and 0 < r["training_time_s"] <= r["total_time_s"], r
for f in ("init.safetensors", "final.safetensors"):
    assert os.path.getsize(f"{d}/{f}") > 0, f
PY
check "lenet1: its init.safetensors is TF/Python's bit for bit" $PY - "$T/l1-py/init.safetensors" "$T/l1-j/init.safetensors" <<'PY'
import sys
sys.path.insert(0, "runners/pytorch")
import cb_safetensors
a, _ = cb_safetensors.read(sys.argv[1])
b, _ = cb_safetensors.read(sys.argv[2])
assert list(a) == list(b), (list(a), list(b))
assert all(a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and a[k].tobytes() == b[k].tobytes() for k in a)
PY
check "lenet1: the curve lands on TF/Python's (losses 1e-3, accuracies 0.005, weights 1e-3)" \
    $PY - "$T/l1-py" "$T/l1-j" <<'PY'
import json, sys
import numpy as np
sys.path.insert(0, "runners/pytorch")
import cb_safetensors
p, j = (json.load(open(f"{d}/run.json")) for d in sys.argv[1:3])
ok = True
for a, b in zip(p["epochs"], j["epochs"]):
    print(f"    epoch {a['epoch']}: train loss TF/Python {a['train_loss']:.6f}, TF-Java {b['train_loss']:.6f}; "
          f"test acc {a['test_acc']:.4f} / {b['test_acc']:.4f}; train acc {a['train_acc']:.4f} / {b['train_acc']:.4f}; "
          f"training {a['train_time_s']:.2f}s / {b['train_time_s']:.2f}s")
    ok &= abs(a["train_loss"] - b["train_loss"]) <= 1e-3 and abs(a["test_loss"] - b["test_loss"]) <= 1e-3
    ok &= abs(a["train_acc"] - b["train_acc"]) <= 0.005 and abs(a["test_acc"] - b["test_acc"]) <= 0.005
wp, _ = cb_safetensors.read(f"{sys.argv[1]}/final.safetensors")
wj, _ = cb_safetensors.read(f"{sys.argv[2]}/final.safetensors")
d = max(float(np.max(np.abs(wp[k].astype(np.float64) - wj[k]))) for k in wp)
print(f"    final weights: largest |difference| {d:.2e}")
assert ok and d <= 1e-3
PY
want=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["test_correct"])' "$T/l1-j/run.json" 2>/dev/null)
check "lenet1: its final.safetensors evaluates to the trainer's count ($want) in TF-Java and in TF/Python" bash -c \
    "$J eval lenet1 --weights '$T/l1-j/final.safetensors' --data $MNIST --limit-test 1000 --repeat 1 --threads $THREADS --json 2>/dev/null | grep -q '\"correct\": $want,' &&
     $TF eval lenet1 --weights '$T/l1-j/final.safetensors' --data $MNIST --limit-test 1000 --repeat 1 --threads $THREADS --json 2>/dev/null | grep -q '\"correct\": $want,'"

# ---- inference: every model, against TF/Python's eval ----
CIFAR=data/cifar-stand-in # the stand-in scripts/test.sh makes; else one made here
if [ ! -f $CIFAR/test_batch.bin ]; then
    CIFAR=$T/cifar
    $CB data cifar-stand-in --out $CIFAR >/dev/null 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
fi
# A tiny prepared IMDb set: 8 sequences of 300 token ids.
# Random canonical weights for every model but LeNet-1 (BatchNorm variances
# positive), then TF/Python's eval of each (crossbind_tf.py's cmd_eval, one
# process): the reference logits.
$PY - "$T" "$MNIST" "$T/l1-py/final.safetensors" "$CIFAR" <<'PY' >"$T/ref.log" 2>&1 || sed 's/^/    /' "$T/ref.log" | tail -5
import argparse, os, sys
os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_DETERMINISTIC_OPS", "1")
sys.path.insert(0, "runners/tensorflow")
sys.path.insert(0, "runners/pytorch")
import numpy as np
import tensorflow as tf
import cb_safetensors
import crossbind_tf
crossbind_tf.tf = tf
tf.config.experimental.enable_op_determinism()
crossbind_tf.set_threads(2)
crossbind_tf.set_threads = lambda n: None  # TensorFlow takes its thread counts once per process
t, mnist, lenet1, cifar = sys.argv[1:5]
d = f"{t}/imdb"
os.makedirs(d)
rng = np.random.default_rng(7)
for split in ("train", "test"):
    np.save(f"{d}/x_{split}.npy", rng.integers(1, 10000, (8, 300)).astype(np.int64))
    np.save(f"{d}/y_{split}.npy", np.array([1, 0, 0, 1, 1, 0, 1, 0], np.int64))
with open(f"{d}/vocab.txt", "w") as f:
    f.write("crossbind-vocab 1 num_words=10000 maxlen=300 index_from=3\n")
    f.write("".join(f"w{i}\n" for i in range(9996)))
rng = np.random.default_rng(20261203)
for m in ("lenet5", "vgg16", "lstm", "gru", "gru-rb"):
    w = {}
    for k, v in crossbind_tf.get_canonical(crossbind_tf.build(m), m).items():
        if k.endswith("num_batches_tracked"):
            w[k] = np.zeros((), np.int64)
        elif k == "embedding.weight":
            w[k] = rng.standard_normal(v.shape).astype(np.float32)
        elif k.endswith("running_var"):
            w[k] = rng.uniform(0.5, 1.5, v.shape).astype(np.float32)
        else:
            w[k] = rng.uniform(-0.088, 0.088, v.shape).astype(np.float32)
    cb_safetensors.write(f"{t}/w-{m}.safetensors", w, {"model": m, "format": "crossbind-weights/1"})
os.symlink(lenet1, f"{t}/w-lenet1.safetensors")
data = {"lenet1": (mnist, 256), "lenet5": (mnist, 256), "vgg16": (cifar, 32), "lstm": (d, 8), "gru": (d, 8),
        "gru-rb": (d, 8)}
for m, (dd, n) in data.items():
    crossbind_tf.cmd_eval(argparse.Namespace(
        binding="tensorflow-python", model=m, weights=f"{t}/w-{m}.safetensors", data=dd, batch=128, repeat=1,
        limit_test=n, threads=2, predictions=None, logits=f"{t}/ref-{m}.npy", json=True, device="cpu"))
PY
for m in lenet1 lenet5 vgg16 lstm gru gru-rb; do
    case $m in lenet*) data=$MNIST n=256 ;; vgg16) data=$CIFAR n=32 ;; *) data=$T/imdb n=8 ;; esac
    $J eval $m --weights "$T/w-$m.safetensors" --data "$data" --limit-test $n --repeat 2 --threads $THREADS \
        --logits "$T/j-$m.npy" --weights-out "$T/rt-$m.safetensors" --json >"$T/j-$m.json" 2>"$T/err" ||
        sed 's/^/    /' "$T/err" | tail -3
    check "$m: outputs on $n test samples agree with TF/Python's (|a - r| <= 1e-5 + 1e-4 |r|), same count" \
        $PY - "$T/j-$m.npy" "$T/ref-$m.npy" "$T/j-$m.json" "$T/ref.log" $m <<'PY'
import json, sys
import numpy as np
a, r = np.load(sys.argv[1]), np.load(sys.argv[2])
j = json.loads(open(sys.argv[3]).read().strip().splitlines()[-1])
p = [json.loads(l) for l in open(sys.argv[4]) if l.startswith("{") and f'"model": "{sys.argv[5]}"' in l][0]
d = np.abs(a.astype(np.float64) - r)
print(f"    largest |difference| {d.max():.2e} over {a.size} values; correct {j['correct']} (TF/Python {p['correct']})")
assert a.shape == r.shape and np.all(d <= 1e-5 + 1e-4 * np.abs(r))
assert j["correct"] == p["correct"] and j["total"] == p["total"] and j["correct_per_pass"] == [j["correct"]] * 2
PY
    check "$m: canonical -> Keras -> graph -> Keras -> canonical is bit-exact" \
        $PY - "$T/w-$m.safetensors" "$T/rt-$m.safetensors" <<'PY'
import sys
sys.path.insert(0, "runners/pytorch")
import cb_safetensors
a, _ = cb_safetensors.read(sys.argv[1])
b, _ = cb_safetensors.read(sys.argv[2])
assert list(a) == list(b), (list(a), list(b))
assert all(a[k].shape == b[k].shape and a[k].tobytes() == b[k].astype(a[k].dtype).tobytes() for k in a)
PY
done

# ---- a tiny study of the two TensorFlow bindings ----
cat >"$T/study.json" <<JSON
{"models": ["lenet1"], "bindings": ["tensorflow-python", "tensorflow-java"], "reference": "tensorflow-python",
 "init": "shared", "runs": 1, "epochs": 1, "limit_train": 256, "limit_test": 128, "threads": $THREADS,
 "repeat": 1, "timeout_s": 300, "data": {"mnist": "$MNIST"}}
JSON
expect_ok "a tiny study of tensorflow-python and tensorflow-java runs" \
    $CB study --profile "$T/study.json" --store "$T/st/s.sqlite" --work "$T/st/w" --no-report --quiet
check "the study stores both training runs complete and both evaluations ok, same count and labels" \
    $PY - "$T/st/s.sqlite" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
runs = dict(c.execute("select binding, status from train_run"))
inf = {b: (s, k, rk, la) for b, s, k, rk, la in
       c.execute("select binding, status, correct, reference_correct, label_agreement from inference")}
print(f"    training {runs}; evaluations of TF/Python's model {inf}")
assert runs == {"tensorflow-python": "complete", "tensorflow-java": "complete"}, runs
assert set(inf) == {"tensorflow-python", "tensorflow-java"}, inf
assert all(s == "ok" and k == rk and la == 1.0 for s, k, rk, la in inf.values()), inf
PY

# ---- bad input: one error line, non-zero exit ----
# expect_one_error NAME NEEDLE CMD...: like expect_error, and stderr is that one line.
expect_one_error() {
    local name="$1" needle="$2"; shift 2
    "$@" >"$T/out" 2>"$T/err"
    local rc=$? lines
    lines=$(wc -l <"$T/err")
    if [ $rc -ne 0 ] && [ $rc -lt 128 ] && [ "$lines" -eq 1 ] && grep -q "error: .*$needle" "$T/err"; then
        echo "ok   $SUITE: $name"; pass=$((pass + 1))
    else
        echo "FAIL $SUITE: $name (exit $rc, $lines lines on stderr)"; sed 's/^/    /' "$T/err" | head -5; fail=$((fail + 1))
    fi
}
head -c 1000 "$T/w-lenet1.safetensors" >"$T/cut.safetensors"
printf 'PK\003\004 not a safetensors file' >"$T/other.bin"
mkdir -p "$T/empty"
expect_one_error "truncated weights are refused by eval, naming the file" "cut.safetensors.*\\(truncated\\|outside the file\\)" \
    $J eval lenet1 --weights "$T/cut.safetensors" --data $MNIST --limit-test 64 --repeat 1 --json
expect_one_error "a truncated init file is refused by train" "cut.safetensors" \
    $J train lenet1 --epochs 1 --data $MNIST --limit-train 128 --limit-test 64 --init "$T/cut.safetensors" --out "$T/bad1" --quiet
expect_one_error "a missing weights file is refused" "cannot open weights" \
    $J eval lenet1 --weights "$T/none.safetensors" --data $MNIST --limit-test 64 --repeat 1 --json
expect_one_error "a file of another format is refused" "unrecognised weights format" \
    $J eval lenet1 --weights "$T/other.bin" --data $MNIST --limit-test 64 --repeat 1 --json
expect_one_error "another model's weights are refused, naming a tensor" "conv3.weight\\|shape" \
    $J eval lenet5 --weights "$T/w-lenet1.safetensors" --data $MNIST --limit-test 64 --repeat 1 --json
expect_one_error "an unknown option is refused" "unknown option --epoch" \
    $J train lenet1 --epoch 1 --data $MNIST --out "$T/bad2"
expect_one_error "a missing data file is refused, naming it" "cannot open .*train-images-idx3-ubyte" \
    $J train lenet1 --epochs 1 --data "$T/empty" --out "$T/bad3" --quiet

# ---- the benchmark worker ----
for kind in train infer latency startup; do
    $J bench --model lenet1 --kind $kind --weights "$T/w-lenet1.safetensors" --batch 128 --samples 256 \
        --repeat 2 --threads $THREADS >"$T/bench-$kind.json" 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
    check "the bench worker answers $kind with the keys crossbind bench reads" $PY - "$T/bench-$kind.json" $kind <<'PY'
import json, sys, time
a = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
kind = sys.argv[2]
assert a["vmhwm_kib"] > 0, a
if kind == "startup":
    assert a["label"] in range(10) and 0 < a["monotonic_s"] <= time.clock_gettime(time.CLOCK_MONOTONIC), a
else:
    n = 256 if kind == "latency" else 2
    assert len(a["times_s"]) == n and all(t > 0 for t in a["times_s"]), a
PY
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
