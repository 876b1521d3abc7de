#!/bin/bash
# The TensorFlow/Python binding (runners/tensorflow-python: tensorflow-cpu
# 2.18.1 with tf-keras 2.18.0, the TensorFlow framework's default binding)
# against crossbind, from the same initial weights:
#  - its environment answers the manifest's version command (TF 2.18.1);
#  - (a) the weight mapping (runners/tensorflow/cb_keras_map.py): canonical ->
#    Keras -> canonical and Keras -> canonical -> Keras are bit-exact for all
#    six models (random values, every tensor);
#  - (b) LeNet-1 and LeNet-5 from crossbind's init.safetensors: the logits of
#    64 test images agree with crossbind's within 1e-4; the LSTM, GRU and
#    GRU-rb outputs on 4 sequences from random canonical weights within 1e-5;
#  - (c) the GRU-rb oracle: crossbind's reset-before GRU against Keras'
#    GRU(reset_after=False) from crossbind's initial weights on 4 sequences
#    of 300 tokens: outputs within 1e-5; every gradient within 1e-5 (absolute;
#    crossbind's gradient is read as w0 - w1 after one SGD step with lr 1, so
#    the float32 rounding of the weights, up to 2.4e-7 for embedding values
#    near 3, is part of the difference); 3 Adam steps (lr 3e-4, PyTorch's
#    epsilon 1e-8): every weight within 1e-5 of crossbind's (the steps move
#    weights by up to 9e-4) and the loss after each step within 1e-5;
#  - training: LeNet-1 trains from crossbind's initial weights and writes
#    run.json (listing the formats written), final.safetensors and every
#    export format (h5, keras, savedmodel, tflite, onnx, tfjs); the formats
#    eval loads (safetensors, h5, keras, savedmodel, tfjs) evaluate to the
#    trainer's count with logits within the tolerance rule (atol 1e-5, rtol
#    1e-4) of the safetensors ones; a second run from the same weights gives
#    the same curve (TF_DETERMINISTIC_OPS); the curve next to crossbind's is
#    printed (measured, not asserted);
#  - exports: LeNet-5 (crossbind's init) and the LSTM (random weights)
#    through `export`'s writer to h5, keras, savedmodel and tfjs, each loaded
#    back as eval loads it, logits within the tolerance rule of the Keras
#    model's (tflite and ONNX: tests/runner_tensorflow-lite_test.sh); an
#    export that fails (tf2onnx hidden) is one error line, and the training
#    still completes with run.json naming the error;
#  - (d) bad input (a missing data file, a truncated init or weights file, a
#    corrupt .h5, .keras, SavedModel and TF.js model, an unknown export
#    format) gets one clear error line and a non-zero exit;
#  - the benchmark worker answers with the keys crossbind bench reads.
# Prints "N passed, N failed" (44 tests; about 3.5 minutes of CPU, 6 to 18 minutes on 2 shared, busy cores).
# Needs runners/tensorflow-python/install.sh done
# and crossbind built (make).
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/crossbind-tensorflow-python-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=tensorflow-python
. tests/lib.sh
PY=runners/tensorflow-python/.venv/bin/python
TF="$PY runners/tensorflow/crossbind_tf.py"
CHK="$PY runners/tensorflow/cb_tf_checks.py"
CB=build/crossbind
MNIST=/usr/share/datasets/fashion-mnist
THREADS=2

if ! $PY -c 'import os; os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"; import tensorflow as tf; assert tf.__version__ == "2.18.1"' 2>"$T/err"; then
    echo "FAIL $SUITE: the environment is missing or not TensorFlow 2.18.1 (run: bash runners/tensorflow-python/install.sh)"
    sed 's/^/    /' "$T/err" | tail -3
    echo "0 passed, 1 failed"; exit 1
fi
if [ ! -x $CB ]; then echo "FAIL $SUITE: $CB is missing (run make)"; echo "0 passed, 1 failed"; exit 1; fi

check "version command names tensorflow 2.18.1 and tf-keras 2.18.0" bash -c \
    "$PY -c 'import os; os.environ[\"TF_CPP_MIN_LOG_LEVEL\"] = \"2\"; import tensorflow, tf_keras; print(tensorflow.__version__, tf_keras.__version__)' 2>/dev/null | grep -q '^2\.18\.1 2\.18\.0$'"

# (a) the mapping, both ways, bit for bit
for m in lenet1 lenet5 vgg16 lstm gru gru-rb; do
    check "$m: canonical -> Keras -> canonical and Keras -> canonical -> Keras are bit-exact" $CHK roundtrip $m
done

# (b) LeNets from crossbind's initial weights: logits of 64 test images
for m in lenet1 lenet5; do
    $CB train $m --run 1 --epochs 1 --threads $THREADS --data $MNIST --limit-train 256 --limit-test 64 --quiet \
        --out "$T/$m-cb" >/dev/null 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
    $CB eval $m --weights "$T/$m-cb/init.safetensors" --data $MNIST --limit-test 64 --repeat 1 --threads $THREADS \
        --logits "$T/$m-cb.npy" --json >/dev/null 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
    $TF eval $m --weights "$T/$m-cb/init.safetensors" --data $MNIST --limit-test 64 --repeat 1 --threads $THREADS \
        --logits "$T/$m-tf.npy" --json >/dev/null 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
    check "$m: logits of 64 test images from crossbind's init agree with crossbind's within 1e-4" \
        $CHK compare "$T/$m-cb.npy" "$T/$m-tf.npy" 1e-4
done

# A tiny prepared IMDb set: 4 sequences of 300 token ids, labels 1,0,0,1.
$PY - "$T/imdb" <<'PY'
import os, sys
import numpy as np
d = sys.argv[1]
os.makedirs(d)
rng = np.random.default_rng(7)
for split in ("train", "test"):
    np.save(f"{d}/x_{split}.npy", rng.integers(1, 10000, (4, 300)).astype(np.int64))
    np.save(f"{d}/y_{split}.npy", np.array([1, 0, 0, 1], np.int64))
np.save(f"{d}/x.npy", np.load(f"{d}/x_train.npy"))
np.save(f"{d}/y.npy", np.load(f"{d}/y_train.npy").astype(np.float32))
with open(f"{d}/vocab.txt", "w") as f:
    f.write("crossbind-vocab 1 num_words=10000 maxlen=300 index_from=3\n")
    f.write("".join(f"w{i}\n" for i in range(9996)))
PY

# The recurrent mappings through the forward pass (gate orders, bias rows)
for m in lstm gru gru-rb; do
    $CHK random-init $m "$T/r-$m.safetensors" &&
        $CB run $m --weights "$T/r-$m.safetensors" --input "$T/imdb/x.npy" --output "$T/r-$m-cb.npy" \
            --threads $THREADS 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
    $CHK forward $m "$T/r-$m.safetensors" "$T/imdb/x.npy" "$T/r-$m-tf.npy" 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
    check "$m: outputs on 4 sequences from random canonical weights agree with crossbind's within 1e-5" \
        $CHK compare "$T/r-$m-cb.npy" "$T/r-$m-tf.npy" 1e-5
done

# (c) the GRU-rb oracle: crossbind's initial weights, one SGD step with lr 1
# (its gradient), then 3 Adam steps at the protocol's lr from the same weights.
common="--data $T/imdb --batch 4 --no-dropout --threads $THREADS --quiet"
$CB train gru-rb $common --epochs 1 --optimizer sgd --lr 1 --out "$T/grb-sgd" >/dev/null 2>"$T/err" ||
    sed 's/^/    /' "$T/err" | tail -3
$CB run gru-rb --weights "$T/grb-sgd/init.safetensors" --input "$T/imdb/x.npy" --output "$T/grb-cb.npy" \
    --threads $THREADS 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
$CHK forward gru-rb "$T/grb-sgd/init.safetensors" "$T/imdb/x.npy" "$T/grb-tf.npy" 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
check "gru-rb oracle: outputs equal Keras GRU(reset_after=False)'s within 1e-5" \
    $CHK compare "$T/grb-cb.npy" "$T/grb-tf.npy" 1e-5
check "gru-rb oracle: every gradient equals Keras' within 1e-5" \
    $CHK grurb-grad "$T/grb-sgd/init.safetensors" "$T/imdb/x.npy" "$T/imdb/y.npy" "$T/grb-sgd/final.safetensors" 1e-5
$CB train gru-rb $common --epochs 3 --optimizer adam --lr 3e-4 --init "$T/grb-sgd/init.safetensors" \
    --out "$T/grb-adam" >/dev/null 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
check "gru-rb oracle: 3 Adam steps give Keras' weights and losses within 1e-5" \
    $CHK grurb-adam "$T/grb-sgd/init.safetensors" "$T/imdb/x.npy" "$T/imdb/y.npy" 3e-4 3 \
        "$T/grb-adam/final.safetensors" 1e-5 "$T/grb-adam/run.json"

# Training: LeNet-1 from crossbind's initial weights, twice, and crossbind's own run
common="--run 1 --epochs 2 --threads $THREADS --data $MNIST --limit-train 2048 --limit-test 1000 --quiet"
expect_ok "lenet1: trains from crossbind's init.safetensors" $TF train lenet1 $common \
    --init "$T/lenet1-cb/init.safetensors" --out "$T/l1-a"
check "lenet1: run.json is complete, names tensorflow-python and lists the 7 formats written" \
    $PY - "$T/l1-a" <<'PY'
import json, os, sys
d = sys.argv[1]
r = json.load(open(f"{d}/run.json"))
assert r["status"] == "complete" and r["binding"] == "tensorflow-python" and len(r["epochs"]) == 2, r
assert r["n_train"] == 2048 and r["n_test"] == 1000 and 0 < r["training_time_s"] <= r["total_time_s"]
formats = ["safetensors", "h5", "keras", "savedmodel", "tflite", "onnx", "tfjs"]
assert r["formats"] == formats and "export_errors" not in r, (r["formats"], r.get("export_errors"))
for f in ["init.safetensors", "init.h5"] + [f"final.{f}" for f in formats if f not in ("savedmodel", "tfjs")]:
    assert os.path.getsize(f"{d}/{f}") > 0, f
assert os.path.isfile(f"{d}/final.savedmodel/saved_model.pb") and os.path.isfile(f"{d}/final.tfjs/model.json")
print("    export seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in r["export_time_s"].items()))
PY
want=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["test_correct"])' "$T/l1-a/run.json" 2>/dev/null)
for f in safetensors h5 keras savedmodel tfjs; do
    check "lenet1: final.$f evaluates to the trainer's count ($want)" bash -c \
        "$TF eval lenet1 --weights '$T/l1-a/final.$f' --data $MNIST --limit-test 1000 --repeat 1 --threads $THREADS --logits '$T/l1-$f.npy' --json 2>/dev/null | grep -q '\"correct\": $want,'"
    [ $f = safetensors ] || check "lenet1: final.$f's logits agree with final.safetensors' (atol 1e-5, rtol 1e-4)" \
        $CHK close "$T/l1-$f.npy" "$T/l1-safetensors.npy" 1e-5 1e-4
done
check "lenet1: crossbind evaluates TF's final.safetensors to the trainer's count ($want)" bash -c \
    "$CB eval lenet1 --weights '$T/l1-a/final.safetensors' --data $MNIST --limit-test 1000 --repeat 1 --threads $THREADS --json 2>/dev/null | grep -q '\"correct\": $want,'"
$TF train lenet1 $common --init "$T/lenet1-cb/init.safetensors" --out "$T/l1-b" >/dev/null 2>&1
$CB train lenet1 $common --init "$T/lenet1-cb/init.safetensors" --out "$T/l1-cb" >/dev/null 2>&1
check "lenet1: two TF runs from the same weights give the same curve" $PY - "$T/l1-a/run.json" "$T/l1-b/run.json" "$T/l1-cb/run.json" <<'PY'
import json, sys
a, b, c = (json.load(open(p)) for p in sys.argv[1:4])
for x, y, z in zip(a["epochs"], b["epochs"], c.get("epochs", [])):
    print(f"    epoch {x['epoch']}: TF test acc {x['test_acc']:.4f} / {y['test_acc']:.4f}, crossbind {z['test_acc']:.4f}; "
          f"train loss TF {x['train_loss']:.6f}, crossbind {z['train_loss']:.6f}")
assert [(e["train_acc"], e["test_acc"]) for e in a["epochs"]] == [(e["train_acc"], e["test_acc"]) for e in b["epochs"]]
PY

# Exports of LeNet-5 and the LSTM, loaded back as eval loads them
$PY -c 'import sys, numpy as np; sys.path.insert(0, "runners/pytorch"); import cb_data
np.save(sys.argv[1], np.ascontiguousarray(cb_data.load_mnist(sys.argv[2], False, 64)[0].transpose(0, 2, 3, 1)))' \
    "$T/mnist64.npy" $MNIST
check "lenet5: h5, keras, savedmodel and tfjs exports give the Keras logits (atol 1e-5, rtol 1e-4)" \
    $CHK formats-agree lenet5 "$T/lenet5-cb/init.safetensors" "$T/x-lenet5" "$T/mnist64.npy" 1e-5 1e-4
check "lstm: h5, keras, savedmodel and tfjs exports give the Keras outputs (atol 1e-5, rtol 1e-4)" \
    $CHK formats-agree lstm "$T/r-lstm.safetensors" "$T/x-lstm" "$T/imdb/x.npy" 1e-5 1e-4
expect_ok "export writes one format from given weights" \
    $TF export lenet5 --weights "$T/x-lenet5/final.h5" --format keras --out "$T/l5.keras"
check "and it evaluates like the weights it came from" bash -c \
    "$TF eval lenet5 --weights '$T/l5.keras' --data $MNIST --limit-test 64 --repeat 1 --threads $THREADS --logits '$T/l5k.npy' --json >/dev/null 2>&1 &&
     $CHK close '$T/l5k.npy' '$T/lenet5-tf.npy' 1e-5 1e-4"
# An export that fails: tf2onnx hidden from the runner. The training completes
# and keeps final.safetensors; run.json lists what it wrote and the error.
mkdir -p "$T/hide" && echo 'raise ImportError("tf2onnx hidden by the test")' >"$T/hide/tf2onnx.py"
PYTHONPATH="$T/hide" $TF train lenet1 --epochs 1 --threads $THREADS --data $MNIST --limit-train 256 --limit-test 64 \
    --quiet --out "$T/l1-noonnx" >/dev/null 2>"$T/err"
check "a failed export is one error line naming the format, and the training still completes" $PY - "$T/l1-noonnx" "$T/err" <<'PY'
import json, os, sys
d, err = sys.argv[1], open(sys.argv[2]).read().splitlines()
lines = [l for l in err if "error:" in l]
print("    " + (lines[0] if lines else "no error line"))
assert len(lines) == 1 and "final.onnx not written" in lines[0] and "tf2onnx" in lines[0], lines
r = json.load(open(f"{d}/run.json"))
assert r["status"] == "complete" and "onnx" not in r["formats"] and "tf2onnx" in r["export_errors"]["onnx"], r
assert os.path.exists(f"{d}/final.safetensors") and os.path.exists(f"{d}/final.tflite") and not os.path.exists(f"{d}/final.onnx")
PY

# (d) bad input: one error line, non-zero exit
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
mkdir -p "$T/empty"
expect_one_error "a missing data file is refused, naming it" "cannot open .*train-images-idx3-ubyte" \
    $TF train lenet1 --epochs 1 --data "$T/empty" --out "$T/bad1" --quiet
head -c 1000 "$T/lenet1-cb/init.safetensors" >"$T/cut.safetensors"
expect_one_error "a truncated init file is refused, naming it" "cut.safetensors.*\\(truncated\\|outside the file\\)" \
    $TF train lenet1 --epochs 1 --data $MNIST --limit-train 128 --limit-test 64 --init "$T/cut.safetensors" --out "$T/bad2" --quiet
expect_one_error "truncated weights are refused by eval, naming the file" "cut.safetensors" \
    $TF eval lenet1 --weights "$T/cut.safetensors" --data $MNIST --limit-test 64 --repeat 1 --json
expect_one_error "a missing weights file is refused" "cannot open weights" \
    $TF eval lenet1 --weights "$T/none.safetensors" --data $MNIST --limit-test 64 --repeat 1 --json
expect_one_error "weights of another model are refused" "missing\\|shape" \
    $TF eval lenet5 --weights "$T/lenet1-cb/init.safetensors" --data $MNIST --limit-test 64 --repeat 1 --json
# A corrupt file of each format eval loads: truncated .h5 and .keras, a
# SavedModel with a damaged saved_model.pb, a TF.js model with a cut shard.
head -c 3000 "$T/l1-a/final.h5" >"$T/cut.h5"
head -c 3000 "$T/l1-a/final.keras" >"$T/cut.keras"
cp -r "$T/l1-a/final.savedmodel" "$T/bad.savedmodel" && head -c 500 "$T/l1-a/final.savedmodel/saved_model.pb" >"$T/bad.savedmodel/saved_model.pb"
cp -r "$T/l1-a/final.tfjs" "$T/bad.tfjs" && truncate -s 1000 "$T/bad.tfjs/group1-shard1of1.bin"
for f in cut.h5 cut.keras bad.savedmodel bad.tfjs; do
    expect_one_error "a corrupt ${f#*.} model is refused, naming it" "$f" \
        $TF eval lenet1 --weights "$T/$f" --data $MNIST --limit-test 64 --repeat 1 --json
done
expect_one_error "export refuses an unknown format" "unknown format pb" \
    $TF export lenet1 --weights "$T/lenet1-cb/init.safetensors" --format pb --out "$T/x.pb"

$TF bench --model lenet1 --kind train --weights "$T/lenet1-cb/init.safetensors" --batch 128 --samples 256 \
    --repeat 2 --threads $THREADS >"$T/bench.json" 2>"$T/err"
check "the bench worker answers times_s (2) and vmhwm_kib" $PY -c '
import json, sys
a = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert len(a["times_s"]) == 2 and all(t > 0 for t in a["times_s"]) and a["vmhwm_kib"] > 0' "$T/bench.json"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
