#!/bin/bash
# The TensorFlow/Rust binding (runners/tensorflow-rust: the tensorflow crate
# 0.21.0 on the C library of runners/tensorflow-python's tensorflow-cpu 2.18.1
# wheel; inference only) against TensorFlow/Python, from the same weights:
#  - the build: the version command names TensorFlow 2.18.1; tensorflow-sys
#    found the library through pkg-config (no download route); the binary
#    resolves libtensorflow_cc.so.2 to the wheel's file;
#  - LeNet-1, LeNet-5 (crossbind's weights after a short run, 256 test
#    images), VGG-16 (crossbind's weights after one step: trained BatchNorm
#    statistics; 48 stand-in CIFAR images) and the LSTM and GRU (random
#    canonical weights, 16 sequences of 300 tokens) are exported as
#    SavedModels (final.savedmodel convention: signature serving_default,
#    input x, output output) by TensorFlow/Python; the Rust eval's logits equal
#    TF/Python's eval of the same canonical weights within the tolerance rule
#    of tests/README.md (atol 1e-5, rtol 1e-4), with the same count, and its
#    JSON line and .npy follow runners/README.md;
#  - bad input (a missing, truncated or not-a-SavedModel directory, wrong
#    signature, input or output names, the wrong model's SavedModel, missing
#    data, an unknown option) gets one clear error line and a non-zero exit;
#  - the benchmark worker answers infer, latency and startup with the keys
#    crossbind bench reads, and refuses train.
# Prints "N passed, N failed" (28 tests; about 1 minute of CPU time, 4 minutes
# on 2 cores shared with other work).
# Needs runners/tensorflow-rust/install.sh (which runs
# runners/tensorflow-python/install.sh) and crossbind built (make).
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/crossbind-tensorflow-rust-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=tensorflow-rust
. tests/lib.sh
PY=runners/tensorflow-python/.venv/bin/python
TF="$PY runners/tensorflow/crossbind_tf.py"
RS=runners/tensorflow-rust/target/release/crossbind-tfrs
CB=build/crossbind
MNIST=/usr/share/datasets/fashion-mnist
THREADS=2
# As the manifest runs it: TensorFlow's C++ library prints an INFO line
# (oneDNN) from a static initializer, before the program's main, unless this is set.
export TF_CPP_MIN_LOG_LEVEL=2

if ! $PY -c 'import os; os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"; import tensorflow as tf; assert tf.__version__ == "2.18.1"' 2>"$T/err"; then
    echo "FAIL $SUITE: the TensorFlow/Python environment is missing or not TensorFlow 2.18.1 (run: bash runners/tensorflow-rust/install.sh)"
    sed 's/^/    /' "$T/err" | tail -3
    echo "0 passed, 1 failed"; exit 1
fi
if [ ! -x $RS ]; then echo "FAIL $SUITE: $RS is missing (run: bash runners/tensorflow-rust/install.sh)"; echo "0 passed, 1 failed"; exit 1; fi
if [ ! -x $CB ]; then echo "FAIL $SUITE: $CB is missing (run make)"; echo "0 passed, 1 failed"; exit 1; fi

# 1. The build
check "version command names the tensorflow crate 0.21.0 and TensorFlow 2.18.1" bash -c \
    "$RS version | tr '\n' ' ' | grep -q '^tensorflow-crate 0\.21\.0 tensorflow 2\.18\.1 '"
check "tensorflow-sys found the library through pkg-config (never the download route)" \
    grep -qs "Returning early because tensorflow was already found" runners/tensorflow-rust/target/release/build/tensorflow-sys-*/output
wheel=$($PY -c 'import os, tensorflow; print(os.path.realpath(os.path.join(os.path.dirname(tensorflow.__file__), "libtensorflow_cc.so.2")))' 2>/dev/null)
check "the binary loads the wheel's libtensorflow_cc.so.2 ($wheel)" bash -c \
    "[ -n '$wheel' ] && [ \"\$(readlink -f \"\$(ldd $RS | awk '\$1 == \"libtensorflow_cc.so.2\" { print \$3 }')\")\" = '$wheel' ]"

# 2. Data: the Fashion-MNIST test set, 48 stand-in CIFAR images, 16 token sequences.
$PY - "$T" <<'PY'
import os, sys, numpy as np
rng = np.random.default_rng(11)
d = os.path.join(sys.argv[1], "cifar"); os.makedirs(d)
for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
    rec = rng.integers(0, 256, (48, 3073), dtype=np.uint8); rec[:, 0] %= 10
    rec.tofile(os.path.join(d, name))
d = os.path.join(sys.argv[1], "imdb"); os.makedirs(d)
open(os.path.join(d, "vocab.txt"), "w").write("crossbind-vocab 1 num_words=10000 maxlen=300 index_from=3\n")
for split in ("train", "test"):
    np.save(os.path.join(d, f"x_{split}.npy"), rng.integers(1, 10000, (16, 300), dtype=np.int64))
    np.save(os.path.join(d, f"y_{split}.npy"), (np.arange(16) % 2).astype(np.int64))
PY

# Canonical weights: crossbind's after a short run (the CNNs; VGG-16's BatchNorm
# statistics move in its one step), random ones from TF/Python's checks (RNNs).
declare -A DATA=([lenet1]=$MNIST [lenet5]=$MNIST [vgg16]=$T/cifar [lstm]=$T/imdb [gru]=$T/imdb)
declare -A LIMIT=([lenet1]=256 [lenet5]=256 [vgg16]=48 [lstm]=16 [gru]=16)
for m in lenet1 lenet5 vgg16; do
    lt=$([ $m = vgg16 ] && echo 8 || echo 512)
    $CB train $m --data ${DATA[$m]} --epochs 1 --batch 8 --limit-train $lt --limit-test 8 --threads $THREADS --quiet --out "$T/$m-cb" \
        >/dev/null 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3
    cp "$T/$m-cb/final.safetensors" "$T/$m.safetensors" 2>/dev/null
done
for m in lstm gru; do
    $PY runners/tensorflow/cb_tf_checks.py random-init $m "$T/$m.safetensors" >/dev/null 2>"$T/err" ||
        sed 's/^/    /' "$T/err" | tail -3
done

# SavedModels of these weights made by TF/Python's own exporter (`crossbind_tf.py
# export`, what a study's final.savedmodel is). For the refusal tests, SavedModels
# whose signature, input or output is named otherwise: the Keras model of
# crossbind_tf.build with the canonical weights, its logits model in inference
# mode wrapped in a tf.function (spec MODEL,WEIGHTS,OUT,SIGNATURE,INPUT,OUTPUT).
export_savedmodels() {
    TF_USE_LEGACY_KERAS=1 TF_CPP_MIN_LOG_LEVEL=2 $PY - "$@" <<'PY'
import os, sys
sys.path.insert(0, "runners/tensorflow")
sys.path.insert(0, "runners/pytorch")
import tensorflow as tf
import crossbind_tf
crossbind_tf.tf = tf
tf.random.set_seed(1)  # saving traces the dropout layers' training branch too (op determinism wants a seed)
for spec in sys.argv[1:]:
    name, weights, out, *names = spec.split(",")
    signature, x_name, out_name = names
    model = crossbind_tf.build(name)
    crossbind_tf.set_canonical(model, name, crossbind_tf.read_canonical(weights))
    logits = crossbind_tf.logits_model(model, name)
    dtype = tf.int32 if crossbind_tf.binary(name) else tf.float32
    spec_x = tf.TensorSpec([None] + list(model.input_shape[1:]), dtype, name=x_name)

    @tf.function(input_signature=[spec_x])
    def serve(x):
        return {out_name: logits(x, training=False)}
    module = tf.Module()
    module.model, module.serve = logits, serve
    tf.saved_model.save(module, out, signatures={signature: serve})
PY
}
for m in lenet1 lenet5 vgg16 lstm gru; do
    $TF export $m --weights "$T/$m.safetensors" --format savedmodel --out "$T/$m.savedmodel" >/dev/null 2>"$T/err" ||
        sed 's/^/    /' "$T/err" | tail -3
done
specs=("lenet1,$T/lenet1.safetensors,$T/badsig.savedmodel,predict,x,output")
specs+=("lenet1,$T/lenet1.safetensors,$T/badin.savedmodel,serving_default,image,output")
specs+=("lenet1,$T/lenet1.safetensors,$T/badout.savedmodel,serving_default,x,logits")
export_savedmodels "${specs[@]}" >/dev/null 2>"$T/err" || sed 's/^/    /' "$T/err" | tail -3

# 3. The same weights through TF/Python (canonical safetensors) and TF/Rust (SavedModel)
for m in lenet1 lenet5 vgg16 lstm gru; do
    common="--data ${DATA[$m]} --limit-test ${LIMIT[$m]} --batch 32 --threads $THREADS --json"
    $TF eval $m --weights "$T/$m.safetensors" $common --repeat 1 --logits "$T/$m-py.npy" >"$T/$m-py.json" 2>"$T/err" ||
        sed 's/^/    /' "$T/err" | tail -3
    expect_ok "$m: eval of the SavedModel runs" $RS eval $m --weights "$T/$m.savedmodel" $common --repeat 2 --logits "$T/$m-rs.npy"
    cp "$T/out" "$T/$m-rs.json"
    check "$m: logits equal TF/Python's within |a - r| <= 1e-5 + 1e-4 |r|, same count; JSON and .npy per runners/README.md" \
        $PY - "$T/$m-rs.npy" "$T/$m-py.npy" "$T/$m-rs.json" "$T/$m-py.json" ${LIMIT[$m]} <<'PY'
import json, sys, numpy as np
a, r = np.load(sys.argv[1]), np.load(sys.argv[2])
e = json.loads(open(sys.argv[3]).read().strip().splitlines()[-1])
p = json.loads(open(sys.argv[4]).read().strip().splitlines()[-1])
n = int(sys.argv[5])
assert a.dtype == np.float32 and a.shape == r.shape and a.shape[0] == n, (a.dtype, a.shape, r.shape)
d = np.abs(a.astype(np.float64) - r)
bound = 1e-5 + 1e-4 * np.abs(r.astype(np.float64))
print(f"    largest |difference| {d.max():.3e} over {a.size} values ({int((d == 0).sum())} identical); "
      f"count {e['correct']}/{e['total']} (TF/Python {p['correct']})")
assert np.isfinite(a).all() and (d <= bound).all()
assert e["correct"] == p["correct"] and e["total"] == n and e["binding"] == "tensorflow-rust"
assert len(e["times_s"]) == 2 and all(t > 0 for t in e["times_s"]) and e["correct_per_pass"][-1] == e["correct"]
assert abs(e["accuracy"] - e["correct"] / n) < 1e-12 and abs(e["loss"] - p["loss"]) < 1e-5
for k in ("f1_macro", "auc_macro"):
    assert (e[k] is None and p[k] is None) or abs(e[k] - p[k]) < 1e-9, (k, e[k], p[k])
PY
done

# 4. Bad input: one error line, non-zero exit
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
ev="--data $MNIST --limit-test 16 --repeat 1 --threads $THREADS --json"
cp -r "$T/lenet1.savedmodel" "$T/cut.savedmodel"
head -c 500 "$T/lenet1.savedmodel/saved_model.pb" >"$T/cut.savedmodel/saved_model.pb"
expect_one_error "a truncated saved_model.pb is refused" "cut.savedmodel: cannot load the SavedModel" \
    $RS eval lenet1 --weights "$T/cut.savedmodel" $ev
cp -r "$T/lenet1.savedmodel" "$T/novars.savedmodel"
for f in "$T"/novars.savedmodel/variables/variables.data-*; do head -c 100 "$f" >"$f.cut" && mv "$f.cut" "$f"; done
expect_one_error "truncated variables are refused" "novars.savedmodel: cannot load the SavedModel" \
    $RS eval lenet1 --weights "$T/novars.savedmodel" $ev
expect_one_error "a missing SavedModel is refused" "cannot open weights .*none.savedmodel" \
    $RS eval lenet1 --weights "$T/none.savedmodel" $ev
expect_one_error "a safetensors file is refused: not a SavedModel directory" "not a SavedModel directory" \
    $RS eval lenet1 --weights "$T/lenet1.safetensors" $ev
expect_one_error "a signature other than serving_default is refused, naming it" "no signature serving_default (it has: predict)" \
    $RS eval lenet1 --weights "$T/badsig.savedmodel" $ev
expect_one_error "an input not named x is refused, naming it" "no input named x (it has: image)" \
    $RS eval lenet1 --weights "$T/badin.savedmodel" $ev
expect_one_error "an output not named output is refused, naming it" "no output named output (it has: logits)" \
    $RS eval lenet1 --weights "$T/badout.savedmodel" $ev
expect_one_error "another model's SavedModel is refused (input shape)" "input x has shape \\[None, 28, 28, 1\\], vgg16 takes" \
    $RS eval vgg16 --weights "$T/lenet1.savedmodel" --data "$T/cifar" --repeat 1
expect_one_error "missing data is refused, naming the file" "cannot open .*t10k-images-idx3-ubyte" \
    $RS eval lenet1 --weights "$T/lenet1.savedmodel" --data "$T" --repeat 1
expect_one_error "an unknown option is refused" "unknown option --epochs" \
    $RS eval lenet1 --weights "$T/lenet1.savedmodel" --epochs 3
expect_one_error "train is refused: inference only" "inference only" $RS train lenet1 --epochs 1

# 5. The benchmark worker
for spec in "lenet5 infer --batch 64 --samples 256 --repeat 3" "gru latency --samples 4" "vgg16 startup"; do
    set -- $spec; m=$1; k=$2; shift 2
    $RS bench --model $m --kind $k --weights "$T/$m.savedmodel" --threads $THREADS "$@" >"$T/bench.json" 2>"$T/err"
    check "bench worker: $m $k answers one JSON line with the keys crossbind bench reads" $PY - "$T/bench.json" $k <<'PY'
import json, sys
lines = open(sys.argv[1]).read().strip().splitlines()
a = json.loads(lines[-1])
assert a["vmhwm_kib"] > 0, a
if sys.argv[2] == "startup":
    assert a["label"] in range(10) and a["monotonic_s"] > 0, a
else:
    want = 3 if sys.argv[2] == "infer" else 4
    assert len(a["times_s"]) == want and all(t > 0 for t in a["times_s"]), a
PY
done
expect_one_error "bench worker refuses train" "does not train" \
    $RS bench --model lenet1 --kind train --weights "$T/lenet1.savedmodel" --batch 8 --samples 8

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
