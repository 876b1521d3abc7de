#!/bin/bash
# The TensorFlow/JavaScript binding (runners/tensorflow-js: TF.js layers
# models on @tensorflow/tfjs-node 4.22.0, whose addon runs on the TensorFlow
# 2.18.1 C library of runners/tensorflow-python's wheel) against
# TensorFlow/Python (the framework's default binding):
#  - the manifest and version command; the addon loads the wheel's
#    libtensorflow_cc.so.2 (ldd) and the backend is 'tensorflow';
#  - logits: from the same canonical weights (random values; VGG-16 with
#    positive running variances) every model TF.js infers (the reset-after
#    GRU through the runner's custom RNN cell) gives TF/Python's
#    outputs within the tolerance rule of tests/README.md for logits
#    (|a - r| <= 1e-5 + 1e-4 |r|), on 16 test samples, read from
#    safetensors and, for LeNet-1 and GRU-rb, from TF.js' layers-model format
#    (a directory written by tests/tensorflow_js_reference.py from TF/Python's
#    Keras model, softmax layer included);
#  - training: LeNet-1 from TF/Python's initial weights, 2 epochs on 2048
#    Fashion-MNIST images, lands on TF/Python's curve: per epoch the test
#    accuracy within 0.01 and the training loss within 2% (measured: the
#    same accuracies to 0.001 and losses to 1e-4); init.safetensors is the
#    --init file bit for bit; final.safetensors (read by TF/Python) and
#    final.tfjs (read by TF.js) evaluate to the trainer's count;
#  - a tiny `crossbind study` of LeNet-1 with tensorflow-python and
#    tensorflow-js stores complete training runs and ok evaluations with
#    TF/Python's count;
#  - bad input (missing or truncated weights, another model's weights, a
#    broken model.json, a missing data file, an unknown option or model)
#    gets one clear error line and a non-zero exit;
#  - the benchmark worker answers train, infer, latency and startup with
#    the keys crossbind bench reads.
# Prints "N passed, N failed" (32 tests; about 3.5 minutes on 2 shared cores).
# Needs runners/tensorflow-js/install.sh done (it installs tensorflow-python
# first) and crossbind built (make).
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/crossbind-tensorflow-js-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=tensorflow-js
. tests/lib.sh
PY=runners/tensorflow-python/.venv/bin/python
TF="$PY runners/tensorflow/crossbind_tf.py"
JS="node runners/tensorflow-js/crossbind_tfjs.js"
CB=build/crossbind
MNIST=/usr/share/datasets/fashion-mnist
THREADS=2
ADDON=runners/tensorflow-js/node_modules/@tensorflow/tfjs-node/lib/napi-v8/tfjs_binding.node

if [ ! -f runners/tensorflow-js/node_modules/.crossbind-complete ] || [ ! -f $ADDON ] || [ ! -x $PY ]; then
    echo "FAIL $SUITE: the environment is missing (run: bash runners/tensorflow-js/install.sh)"
    echo "0 passed, 1 failed"; exit 1
fi
if [ ! -x $CB ]; then echo "FAIL $SUITE: $CB is missing (run make)"; echo "0 passed, 1 failed"; exit 1; fi

# ---- the manifest, the version command, the library the addon runs on
check "manifest: tensorflow-js, TensorFlow, JavaScript, not the default; the six models; safetensors" \
    $PY -c '
import json
m = json.load(open("runners/tensorflow-js/manifest.json"))
models = ["lenet1", "lenet5", "vgg16", "lstm", "gru", "gru-rb"]
assert m["binding"] == "tensorflow-js" and m["framework"] == "TensorFlow" and m["language"] == "JavaScript"
assert not m.get("framework_default") and m["train"] == models and m["infer"] == models, m
assert m["native_format"] in m["writes"] and "safetensors" in m["loads"]'
vcmd=$($PY -c 'import json; print(json.load(open("runners/tensorflow-js/manifest.json"))["version_command"][2])')
check "version command: tfjs-node 4.22.0 on TensorFlow 2.18.1, backend tensorflow" bash -c \
    "node -e \"\$1\" \"\$PWD/runners/tensorflow-js\" | tr '\n' ' ' | grep -q 'tfjs-node 4.22.0 TensorFlow 2.18.1 (backend tensorflow)'" _ "$vcmd"
wheel=$(realpath "$(ls -d runners/tensorflow-python/.venv/lib/python3*/site-packages/tensorflow)/libtensorflow_cc.so.2")
check "the addon loads the wheel's libtensorflow_cc.so.2 (ldd)" bash -c \
    "[ \"\$(realpath \"\$(ldd $ADDON | awk '/libtensorflow_cc.so.2/ { print \$3 }')\")\" = '$wheel' ]"

# ---- data: a CIFAR-10 stand-in (crossbind) and a small prepared IMDb set
$CB data cifar-stand-in --from $MNIST --out "$T/cifar" >/dev/null 2>&1
$PY - "$T/imdb" <<'PY'
import os, sys
import numpy as np
d = sys.argv[1]
os.makedirs(d)
rng = np.random.default_rng(7)
for split, n in (("train", 32), ("test", 16)):
    np.save(f"{d}/x_{split}.npy", rng.integers(1, 10000, (n, 300)).astype(np.int64))
    np.save(f"{d}/y_{split}.npy", (np.arange(n) % 2).astype(np.int64))
with open(f"{d}/vocab.txt", "w") as f:
    f.write("crossbind-vocab 1 num_words=10000 maxlen=300 index_from=3\n" + "".join(f"w{i}\n" for i in range(9996)))
PY
data_of() { case $1 in lenet*) echo "$MNIST";; vgg16) echo "$T/cifar";; *) echo "$T/imdb";; esac; }

# close A.npy R.npy: A agrees with the reference R by |a - r| <= 1e-5 + 1e-4 |r|
close() {
    $PY - "$1" "$2" <<'PY'
import sys
import numpy as np
a, r = np.load(sys.argv[1]).astype(np.float64), np.load(sys.argv[2]).astype(np.float64)
assert a.shape == r.shape, (a.shape, r.shape)
d = np.abs(a - r)
print(f"    largest |difference| {d.max():.3e} over {a.size} values; worst ratio to the bound "
      f"{(d / (1e-5 + 1e-4 * np.abs(r))).max():.3f}")
ok = np.array_equal(np.isnan(a), np.isnan(r)) and bool(np.all((d <= 1e-5 + 1e-4 * np.abs(r)) | np.isnan(r)))
sys.exit(0 if ok else 1)
PY
}

# ---- logits from the same canonical weights (TF/Python's side in one process)
$PY tests/tensorflow_js_reference.py "$T" lenet1:$MNIST:tfjs lenet5:$MNIST vgg16:$T/cifar lstm:$T/imdb \
    gru:$T/imdb:tfjs gru-rb:$T/imdb:tfjs 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
for m in lenet1 lenet5 vgg16 lstm gru gru-rb; do
    D=$(data_of $m)
    $JS eval $m --weights "$T/w-$m.safetensors" --data "$D" --limit-test 16 --repeat 2 --threads $THREADS \
        --logits "$T/js-$m.npy" --json >"$T/js-$m.json" 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
    check "$m: TF.js' outputs from canonical safetensors agree with TF/Python's (16 samples)" close "$T/js-$m.npy" "$T/py-$m.npy"
    if [ -d "$T/$m.tfjs" ]; then
        $JS eval $m --weights "$T/$m.tfjs" --data "$D" --limit-test 16 --repeat 1 --threads $THREADS \
            --logits "$T/jst-$m.npy" --json >/dev/null 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
        check "$m: TF.js' outputs from the layers-model format (tf.loadLayersModel) agree with TF/Python's" \
            close "$T/jst-$m.npy" "$T/py-$m.npy"
    fi
done
check "the eval answer has the keys the harness reads, backend tensorflow" $PY -c '
import json, sys
a = json.loads(open(sys.argv[1]).read())
assert a["total"] == 16 and 0 <= a["correct"] <= 16 and len(a["times_s"]) == 2 and a["correct_per_pass"][-1] == a["correct"]
assert a["backend"] == "tensorflow" and a["tensorflow"] == "2.18.1" and a["load_mode"] == "parameters", a' "$T/js-lenet1.json"

# ---- training: LeNet-1 from TF/Python's initial weights, next to TF/Python's run
common="--run 1 --epochs 2 --threads $THREADS --data $MNIST --limit-train 2048 --limit-test 1000 --quiet"
$TF train lenet1 $common --out "$T/l1-py" >/dev/null 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
expect_ok "lenet1: trains from TF/Python's init.safetensors" $JS train lenet1 $common --init "$T/l1-py/init.safetensors" --out "$T/l1-js"
check "lenet1: the curve lands on TF/Python's (test accuracy within 0.01, training loss within 2% per epoch)" \
    $PY - "$T/l1-js/run.json" "$T/l1-py/run.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["status"] == "complete" and a["binding"] == "tensorflow-js" and len(a["epochs"]) == 2, a
ok = True
for x, y in zip(a["epochs"], b["epochs"]):
    print(f"    epoch {x['epoch']}: test acc TF.js {x['test_acc']:.4f}, TF/Python {y['test_acc']:.4f}; train loss "
          f"TF.js {x['train_loss']:.5f}, TF/Python {y['train_loss']:.5f}; train time TF.js {x['train_time_s']:.2f}s, "
          f"TF/Python {y['train_time_s']:.2f}s")
    ok = ok and abs(x["test_acc"] - y["test_acc"]) <= 0.01 and abs(x["train_loss"] - y["train_loss"]) <= 0.02 * y["train_loss"]
sys.exit(0 if ok else 1)
PY
check "lenet1: init.safetensors is the --init file, bit for bit" $PY - "$T/l1-js/init.safetensors" "$T/l1-py/init.safetensors" <<'PY'
import sys
sys.path.insert(0, "runners/pytorch")
import numpy as np
import cb_safetensors
a, _ = cb_safetensors.read(sys.argv[1])
b, _ = cb_safetensors.read(sys.argv[2])
assert list(a) == list(b) and all(a[k].dtype == b[k].dtype and np.array_equal(a[k].view(np.uint8), b[k].view(np.uint8)) for k in a)
PY
want=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["test_correct"])' "$T/l1-js/run.json" 2>/dev/null)
check "lenet1: TF/Python evaluates TF.js' final.safetensors to the trainer's count ($want)" bash -c \
    "$TF eval lenet1 --weights '$T/l1-js/final.safetensors' --data $MNIST --limit-test 1000 --repeat 1 --threads $THREADS --json 2>/dev/null | grep -q '\"correct\": $want,'"
check "lenet1: TF.js evaluates its final.tfjs (layers model) to the trainer's count ($want)" bash -c \
    "$JS eval lenet1 --weights '$T/l1-js/final.tfjs' --data $MNIST --limit-test 1000 --repeat 1 --threads $THREADS --json 2>/dev/null | grep -q '\"correct\":$want,'"

# ---- a tiny study with both TensorFlow bindings
cat > "$T/tiny.json" <<'JSON'
{"models": ["lenet1"], "bindings": ["tensorflow-python", "tensorflow-js"], "runs": 1, "epochs": 1,
 "limit_train": 256, "limit_test": 128, "threads": 2, "repeat": 2, "timeout_s": 300, "init": "shared"}
JSON
expect_ok "a tiny study of tensorflow-python and tensorflow-js runs" $CB study --profile "$T/tiny.json" \
    --store "$T/s/study.sqlite" --work "$T/s/work" --runners runners --no-report
check "the store: both trainings complete, both evaluations ok with TF/Python's count" $PY - "$T/s/study.sqlite" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
runs = dict(c.execute("select binding, status from train_run"))
inf = {r[0]: r[1:] for r in c.execute("select binding, status, correct, reference_correct from inference")}
print(f"    train_run {runs}; inference {inf}")
assert runs == {"tensorflow-python": "complete", "tensorflow-js": "complete"}, runs
assert inf["tensorflow-js"][0] == "ok" and inf["tensorflow-js"][1] == inf["tensorflow-js"][2] == inf["tensorflow-python"][1]
PY

# ---- bad input: one error line, non-zero exit
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
ev="--data $MNIST --limit-test 64 --repeat 1 --threads $THREADS --json"
expect_one_error "a missing weights file is refused" "cannot open weights" $JS eval lenet1 --weights "$T/none.safetensors" $ev
expect_one_error "a Keras reset-after GRU in TF.js format is refused for another model" "reset-after GRU, which lstm is not" \
    $JS eval lstm --weights "$T/gru.tfjs" --data "$T/imdb" --limit-test 16 --repeat 1 --threads $THREADS --json
head -c 1000 "$T/l1-py/init.safetensors" >"$T/cut.safetensors"
expect_one_error "truncated weights are refused, naming the file" "cut.safetensors.*truncated" $JS eval lenet1 --weights "$T/cut.safetensors" $ev
expect_one_error "a truncated --init file is refused" "cut.safetensors.*truncated" \
    $JS train lenet1 --epochs 1 --data $MNIST --limit-train 128 --limit-test 64 --init "$T/cut.safetensors" --out "$T/bad1" --quiet
expect_one_error "another model's weights are refused" "missing" $JS eval lenet5 --weights "$T/l1-py/init.safetensors" $ev
cp -r "$T/lenet1.tfjs" "$T/broken.tfjs" && echo '{"format": "layers-model", "modelTopology": {' >"$T/broken.tfjs/model.json"
expect_one_error "a broken model.json is refused" "broken.tfjs" $JS eval lenet1 --weights "$T/broken.tfjs" $ev
mkdir -p "$T/empty"
expect_one_error "a missing data file is refused, naming it" "cannot open .*train-images-idx3-ubyte" \
    $JS train lenet1 --epochs 1 --data "$T/empty" --out "$T/bad2" --quiet
expect_one_error "an unknown option is refused" "unknown option '--epoch'" $JS train lenet1 --epoch 1
expect_one_error "an unknown model is refused" "unknown model 'gru-ra'" $JS eval gru-ra --weights "$T/w-gru.safetensors" $ev
expect_one_error "LSTM weights are refused by the GRU, naming the shape" "rnn.weight_ih_l0 has shape \\[2048, 300\\], gru needs \\[1536, 300\\]" \
    $JS eval gru --weights "$T/w-lstm.safetensors" --data "$T/imdb" --limit-test 4 --repeat 1 --json

# ---- the benchmark worker
for kind in train infer latency startup; do
    check "the bench worker answers $kind with the keys crossbind bench reads" bash -c "
        $JS bench --model lenet1 --kind $kind --weights '$T/l1-py/init.safetensors' --batch 64 --samples 128 --repeat 2 \
            --threads $THREADS 2>/dev/null | tail -1 | $PY -c '
import json, sys
a = json.loads(sys.stdin.read())
assert a[\"vmhwm_kib\"] > 0, a
if \"$kind\" == \"startup\": assert a[\"label\"] in range(10) and a[\"monotonic_s\"] > 0, a
else: assert len(a[\"times_s\"]) == (128 if \"$kind\" == \"latency\" else 2) and all(t > 0 for t in a[\"times_s\"]), a'"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
