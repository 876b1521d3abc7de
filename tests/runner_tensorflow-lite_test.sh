#!/bin/bash
# The TensorFlow Lite binding (runners/tensorflow-lite: LiteRT 2.3.0 from
# PyPI's ai-edge-litert, inference only) and the TensorFlow/Python binding's
# exports that other runtimes read (.tflite, and .onnx through tf2onnx):
#  - the environment answers the manifest's version command (LiteRT 2.3.0);
#  - LeNet-1 and LeNet-5 from crossbind's initial weights and the LSTM from
#    random canonical weights, exported by runners/tensorflow/cb_tf_export.py:
#    LiteRT's outputs of final.tflite (64 test images; 16 sequences) agree
#    with the Keras model's logits by the tolerance rule of tests/README.md
#    (atol 1e-5, rtol 1e-4), and so do ONNX Runtime's (onnxruntime-node) of
#    final.onnx; so do crossbind's of the LeNets' final.onnx, and it refuses
#    the LSTM's (tf2onnx's recurrent graph) as unsupported, naming the operator;
#  - bad input (a truncated or foreign file, a model of another input shape,
#    a missing file, `train`) gets one clear error line and a non-zero exit;
#  - the benchmark worker answers infer, latency and startup;
#  - a tiny `crossbind study` of tensorflow-python (trainer, the reference),
#    tensorflow-lite, crossbind and onnxruntime-node stores ok rows for every
#    format of TF's each loads, with label agreement 1 and logits within 1e-4.
# Prints "N passed, N failed" (21 tests; about 1.5 minutes of CPU, 4 to 10 minutes on 2 shared, busy cores).
# Needs runners/tensorflow-python/install.sh and runners/tensorflow-lite/install.sh
# done, crossbind built (make), and for the ONNX Runtime checks scripts/setup.sh.
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/crossbind-tensorflow-lite-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=tensorflow-lite
. tests/lib.sh
LPY=runners/tensorflow-lite/.venv/bin/python
LITE="$LPY runners/tensorflow-lite/crossbind_tflite.py"
PY=runners/tensorflow-python/.venv/bin/python
TF="$PY runners/tensorflow/crossbind_tf.py"
CHK="$PY runners/tensorflow/cb_tf_checks.py"
ORT="node runners/onnxruntime-node/crossbind_ort.js"
CB=build/crossbind
MNIST=/usr/share/datasets/fashion-mnist
THREADS=2

if ! $LPY -c 'import ai_edge_litert; assert ai_edge_litert.__version__ == "2.3.0"' 2>"$T/err"; then
    echo "FAIL $SUITE: the environment is missing or not LiteRT 2.3.0 (run: bash runners/tensorflow-lite/install.sh)"
    sed 's/^/    /' "$T/err" | tail -3
    echo "0 passed, 1 failed"; exit 1
fi
if ! $PY -c 'import os; os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"; import tf2onnx, tensorflow' 2>"$T/err"; then
    echo "FAIL $SUITE: the TensorFlow/Python environment (with tf2onnx) makes the models this binding runs; run: bash runners/tensorflow-python/install.sh"
    echo "0 passed, 1 failed"; exit 1
fi
if [ ! -x $CB ]; then echo "FAIL $SUITE: $CB is missing (run make)"; echo "0 passed, 1 failed"; exit 1; fi
have_ort=0
[ -f runners/onnxruntime-node/node_modules/onnxruntime-node/package.json ] && have_ort=1

check "version command names ai-edge-litert 2.3.0" bash -c \
    "$(/usr/bin/python3 -c 'import json, shlex; print(shlex.join(json.load(open("runners/tensorflow-lite/manifest.json"))["version_command"]))' | sed 's|{dir}|runners/tensorflow-lite|g') | grep -qx 'ai-edge-litert 2.3.0'"

# Weights: crossbind's initialisation of the LeNets, random canonical LSTM weights
for m in lenet1 lenet5; do
    $CB train $m --run 1 --epochs 1 --threads $THREADS --data $MNIST --limit-train 128 --limit-test 64 --quiet \
        --out "$T/$m-cb" >/dev/null 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
    cp "$T/$m-cb/init.safetensors" "$T/$m.safetensors"
done
$CHK random-init lstm "$T/lstm.safetensors" 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
# A tiny prepared IMDb set: 16 sequences of 300 token ids
$PY - "$T/imdb" <<'PY'
import os, sys
import numpy as np
d = sys.argv[1]
os.makedirs(d)
rng = np.random.default_rng(11)
for split in ("train", "test"):
    np.save(f"{d}/x_{split}.npy", rng.integers(1, 10000, (16, 300)).astype(np.int64))
    np.save(f"{d}/y_{split}.npy", (np.arange(16) % 2).astype(np.int64))
with open(f"{d}/vocab.txt", "w") as f:
    f.write("crossbind-vocab 1 num_words=10000 maxlen=300 index_from=3\n")
    f.write("".join(f"w{i}\n" for i in range(9996)))
PY

for m in lenet1 lenet5 lstm; do
    data=$MNIST lim="--limit-test 64"
    [ $m = lstm ] && data=$T/imdb lim=""
    $CHK export-all $m "$T/$m.safetensors" "$T/x-$m" tflite,onnx 2>"$T/err" | grep -v '^ *$' || sed 's/^/    /' "$T/err" | grep -i error | tail -3
    $TF eval $m --weights "$T/$m.safetensors" --data $data $lim --repeat 1 --threads $THREADS --logits "$T/$m-keras.npy" \
        --json >/dev/null 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
    expect_ok "$m: LiteRT evaluates final.tflite" $LITE eval $m --weights "$T/x-$m/final.tflite" --data $data $lim \
        --repeat 2 --threads $THREADS --logits "$T/$m-lite.npy" --json
    check "$m: LiteRT's outputs agree with the Keras model's (atol 1e-5, rtol 1e-4)" \
        $CHK close "$T/$m-lite.npy" "$T/$m-keras.npy" 1e-5 1e-4
    if [ $have_ort = 1 ]; then
        $ORT eval $m --weights "$T/x-$m/final.onnx" --data $data $lim --repeat 1 --threads $THREADS \
            --logits "$T/$m-ort.npy" --json >/dev/null 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
        check "$m: ONNX Runtime's outputs of TF's final.onnx agree with the Keras model's (atol 1e-5, rtol 1e-4)" \
            $CHK close "$T/$m-ort.npy" "$T/$m-keras.npy" 1e-5 1e-4
    else
        echo "skip $SUITE: $m through onnxruntime-node (not installed: run scripts/setup.sh)"
    fi
    # crossbind: its ONNX import maps PyTorch's export patterns, which the
    # LeNets' exports follow (cb_tf_export.plain_dense); tf2onnx's recurrent
    # graphs it refuses as unsupported.
    if $CB eval $m --weights "$T/x-$m/final.onnx" --data $data $lim --repeat 1 --threads $THREADS \
        --logits "$T/$m-cbonnx.npy" --json >/dev/null 2>"$T/err" || [ $m != lstm ]; then
        sed 's/^/    /' "$T/err" | grep error | head -1
        check "$m: crossbind's outputs of TF's final.onnx agree with the Keras model's (atol 1e-5, rtol 1e-4)" \
            $CHK close "$T/$m-cbonnx.npy" "$T/$m-keras.npy" 1e-5 1e-4
    else
        check "$m: crossbind refuses TF's final.onnx as unsupported, naming the operator" \
            grep -q "error: .*final.onnx.*(unsupported)" "$T/err"
        sed 's/^/    crossbind: /' "$T/err" | head -1 | cut -c1-220
    fi
done

# Bad input: one error line, non-zero exit
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
head -c 5000 "$T/x-lenet1/final.tflite" >"$T/cut.tflite"
ev="--data $MNIST --limit-test 64 --repeat 1 --json"
expect_one_error "a truncated .tflite is refused, naming it" "cut.tflite" $LITE eval lenet1 --weights "$T/cut.tflite" $ev
expect_one_error "an ONNX file is refused as not TFLite" "not a TFLite model" \
    $LITE eval lenet1 --weights "$T/x-lenet1/final.onnx" $ev
expect_one_error "a model of another input shape is refused" "needs float32 \\[N, 32, 32, 3\\]" \
    $LITE eval vgg16 --weights "$T/x-lenet1/final.tflite" --data $MNIST --repeat 1 --json
expect_one_error "a missing file is refused" "cannot open weights" $LITE eval lenet1 --weights "$T/none.tflite" $ev
expect_one_error "train is refused: inference only" "does not train" $LITE train lenet1 --epochs 1

$LITE bench --model lenet5 --kind infer --weights "$T/x-lenet5/final.tflite" --batch 32 --samples 64 --repeat 2 \
    --threads $THREADS >"$T/b1" 2>"$T/err" && $LITE bench --model lstm --kind latency --weights "$T/x-lstm/final.tflite" \
    --samples 3 --threads 1 >"$T/b2" 2>>"$T/err" && $LITE bench --model lenet1 --kind startup \
    --weights "$T/x-lenet1/final.tflite" >"$T/b3" 2>>"$T/err"
check "the bench worker answers infer (2 times), latency (3 times) and startup with vmhwm_kib" $LPY -c '
import json, sys
a, b, c = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:4])
assert len(a["times_s"]) == 2 and len(b["times_s"]) == 3 and all(t > 0 for t in a["times_s"] + b["times_s"])
assert 0 <= c["label"] <= 9 and c["monotonic_s"] > 0 and min(a["vmhwm_kib"], b["vmhwm_kib"], c["vmhwm_kib"]) > 0' \
    "$T/b1" "$T/b2" "$T/b3"

# A tiny study: tensorflow-python trains (and is the reference), both bindings evaluate what they load
# (and crossbind, and ONNX Runtime where installed, evaluate TF's final.onnx)
others='"crossbind"' want_ort=""
[ $have_ort = 1 ] && others='"crossbind", "onnxruntime-node"' want_ort=onnxruntime-node
cat >"$T/study.json" <<JSON
{"models": ["lenet1"], "bindings": ["tensorflow-python", "tensorflow-lite", $others], "reference": "tensorflow-python",
 "runs": 1, "epochs": 1, "limit_train": 256, "limit_test": 128, "threads": $THREADS, "repeat": 1, "timeout_s": 300}
JSON
expect_ok "crossbind study with tensorflow-python and tensorflow-lite runs" \
    $CB study --profile "$T/study.json" --store "$T/st/study.sqlite" --quiet
check "the store: TF's training complete, ok rows for tflite, onnx, safetensors and the 5 formats TF/Python loads, labels agree" \
    /usr/bin/python3 - "$T/st/study.sqlite" $want_ort <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
assert c.execute("select status from train_run where binding='tensorflow-python'").fetchall() == [("complete",)]
ok = {(b, f): (agree, diff) for b, f, agree, diff in c.execute("select binding, format, label_agreement,"
      " max_abs_logit_diff from inference where status='ok' and trainer='tensorflow-python'")}
for (b, f), (agree, diff) in sorted(ok.items()):
    print(f"    {b} {f}: label agreement {agree}, largest logit difference {diff:.3e}")
want = {("tensorflow-lite", "tflite"), ("crossbind", "onnx"), ("crossbind", "safetensors")}
want |= {(b, "onnx") for b in sys.argv[2:]}
want |= {("tensorflow-python", f) for f in ("safetensors", "h5", "keras", "savedmodel", "tfjs")}
assert set(ok) == want, sorted(set(ok) ^ want)
assert all(agree == 1.0 and diff <= 1e-4 for agree, diff in ok.values())
PY

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
