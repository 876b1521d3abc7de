#!/bin/bash
# The Keras side of `crossbind delta` (DeltaNN's Keras variants): one
# tf.keras.applications MobileNetV2 with seeded random weights, exported
# once by crossbind_tf.py keras-export (model.h5, model.onnx through
# tf2onnx, model-float.tflite and the dynamic-range quantised
# model-int8.tflite), then exported again from its model.h5
# (--weights-in), and run on three random uint8 images preprocessed in
# Keras' 'tf' mode (x / 127.5 - 1, NHWC) by
#  - crossbind_tf.py delta (Keras 2 on TensorFlow 2.18.1) with --capture
#    (every layer's output, every layer's weights);
#  - crossbind_ort.js delta on model.onnx at level all;
#  - crossbind_tflite.py delta (LiteRT) on the float file (with --capture)
#    and on the int8 file;
#  - crossbind_tf.py delta --onnx (onnx2tf into TensorFlow) on model.onnx
#    with three values added as outputs (--capture), and on a small NCHW
#    CNN exported by Debian's torch 1.13, against ONNX Runtime on both;
# checks export.json (fields, each file's SHA-256), that the export from
# model.h5 gives the same .h5 and .tflite bytes and the same outputs in
# Keras and ONNX Runtime, the files each delta
# writes (shapes, times.json, capture indexes), that float TFLite and ONNX
# Runtime agree with Keras (max |a - b| / max |keras| <= 1e-3), that the
# int8 file differs measurably more (over 1e-3 and over ten times the float
# file's difference; the figures are printed), and that bad input gets one
# error line and a non-zero exit. Prints the wall time of the export and of
# each delta run, then "N passed, N failed" (38 tests; 2 min 55 s on the
# 2-core AMD EPYC with another suite running beside it, 71 s of it the two
# exports when alone).
# Needs runners/tensorflow-python/install.sh (with tf2onnx),
# runners/tensorflow-lite/install.sh and npm ci in runners/onnxruntime-node.
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/crossbind-delta-keras-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=delta-keras
. tests/lib.sh
TFPY=runners/tensorflow-python/.venv/bin/python
LITEPY=runners/tensorflow-lite/.venv/bin/python
KERAS="$TFPY runners/tensorflow/crossbind_tf.py"
LITE="$LITEPY runners/tensorflow-lite/crossbind_tflite.py"
ORT="node runners/onnxruntime-node/crossbind_ort.js"
PY=/usr/bin/python3

missing=""
TF_CPP_MIN_LOG_LEVEL=2 $TFPY -c 'import tensorflow, tf2onnx, onnx' 2>/dev/null ||
    missing="$missing; tensorflow and tf2onnx in $TFPY (run: bash runners/tensorflow-python/install.sh)"
$LITEPY -c 'import ai_edge_litert' 2>/dev/null || missing="$missing; LiteRT (run: bash runners/tensorflow-lite/install.sh)"
[ -d runners/onnxruntime-node/node_modules/onnxruntime-node ] || missing="$missing; onnxruntime-node (run: npm ci in runners/onnxruntime-node)"
$PY -c 'import numpy' 2>/dev/null || missing="$missing; numpy for /usr/bin/python3 (run: apt-get install python3-numpy)"
if [ -n "$missing" ]; then
    echo "FAIL $SUITE: missing${missing#;}"
    echo "0 passed, 1 failed"; exit 1
fi

# refuses NAME NEEDLE CMD...: as expect_error, and stderr is that one line
# (no traceback, no usage text).
refuses() {
    local before=$fail
    expect_error "$@"
    if [ $fail -eq $before ] && [ "$(grep -c . "$T/err")" -ne 1 ]; then
        echo "FAIL $SUITE: $1: more than one line on stderr"; sed 's/^/    /' "$T/err" | head -5
        pass=$((pass - 1)); fail=$((fail + 1))
    fi
}

# timed NAME CMD...: expect_ok, with the command's wall time added to its line.
timed() {
    local name="$1" t0 t1; shift
    t0=$(date +%s.%N)
    expect_ok "$name" "$@"
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "     wall time %.2f s\n", b - a }'
}

N_IN=3 REPS=3 WARMUP=2 SEED=20261203
timed "keras-export mobilenet_v2 --seed $SEED: model.h5, model.onnx, model-float.tflite, model-int8.tflite, export.json" \
    $KERAS keras-export mobilenet_v2 --seed $SEED --out-dir "$T/e" --opset 13
timed "... exported again from its model.h5 (--weights-in)" \
    $KERAS keras-export mobilenet_v2 --weights-in "$T/e/model.h5" --out-dir "$T/w"

check "export.json: fields, versions, each file's SHA-256 and size; no temporary file left" $PY - "$T" $SEED <<'PY'
import hashlib, json, os, sys
t, seed = sys.argv[1], int(sys.argv[2])
sha = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()
names = {"h5": "model.h5", "onnx": "model.onnx", "tflite_float": "model-float.tflite",
         "tflite_int8": "model-int8.tflite"}
for d in ("e", "w"):
    j = json.load(open(f"{t}/{d}/export.json"))
    assert j["model"] == "mobilenet_v2" and j["preprocessing"] == "tf" and j["input"] == [224, 224, 3], j
    assert j["layout"] == "NHWC" and j["classes"] == 1000, j
    assert set(j["versions"]) >= {"tensorflow", "tf_keras", "tf2onnx", "onnx", "python"}, j["versions"]
    assert j["versions"]["tensorflow"] == "2.18.1" and j["versions"]["tf2onnx"] == "1.17.0", j["versions"]
    assert set(j["files"]) == set(names), j["files"]
    for k, f in j["files"].items():
        p = f"{t}/{d}/{f['file']}"
        assert f["file"] == names[k] and f["sha256"] == sha(p) and f["bytes"] == os.path.getsize(p), (d, k)
        assert f["what"], (d, k)
    assert "quantised" in j["files"]["tflite_int8"]["what"] and "Optimize.DEFAULT" in j["files"]["tflite_int8"]["what"]
    assert not [f for f in os.listdir(f"{t}/{d}") if ".tmp." in f], d
    if d == "e":
        assert j["seed"] == seed and "weights_sha256" not in j, j
    else:
        assert j["weights_sha256"] == sha(f"{t}/e/model.h5") and "seed" not in j, j
PY

# (tf2onnx names some of its shared constants differently from run to run,
# so model.onnx is compared by the outputs ONNX Runtime gives below.)
for f in model.h5 model-float.tflite model-int8.tflite; do
    check "... to the same $f, byte for byte" cmp -s "$T/e/$f" "$T/w/$f"
done
# Three random uint8 images in Keras' 'tf' preprocessing (x / 127.5 - 1), NHWC.
$PY -c "
import numpy as np
img = np.random.default_rng(5).integers(0, 256, ($N_IN, 224, 224, 3), dtype=np.uint8)
np.save('$T/x.npy', (img.astype(np.float32) / np.float32(127.5) - np.float32(1)).astype(np.float32))
np.save('$T/nchw.npy', np.load('$T/x.npy').transpose(0, 3, 1, 2).copy())"

RUN="--inputs $T/x.npy --threads 2 --reps $REPS --warmup $WARMUP"
timed "keras: delta with --capture" $KERAS delta --model "$T/e/model.h5" $RUN --out "$T/keras" --capture
timed "keras: delta on the model exported again from model.h5" $KERAS delta --model "$T/w/model.h5" $RUN --out "$T/keras_w"
timed "onnxruntime-node: delta on model.onnx at level all" $ORT delta --model "$T/e/model.onnx" --opt-level all $RUN --out "$T/ort"
timed "onnxruntime-node: delta on the model.onnx exported again" $ORT delta --model "$T/w/model.onnx" --opt-level all $RUN --out "$T/ort_w"
timed "tflite: delta on model-float.tflite with --capture" $LITE delta --model "$T/e/model-float.tflite" $RUN --out "$T/float" --capture
timed "tflite: delta on model-int8.tflite" $LITE delta --model "$T/e/model-int8.tflite" $RUN --out "$T/int8"

check "outputs.npy float32 [$N_IN, 1000] and times.json as the contract says, every run" $PY - "$T" $N_IN $REPS $WARMUP <<'PY'
import json, os, sys
import numpy as np
t, n, reps, warmup = sys.argv[1], *map(int, sys.argv[2:])
for v, fw in (("keras", "keras"), ("keras_w", "keras"), ("ort", "onnxruntime"), ("ort_w", "onnxruntime"),
              ("float", "tflite"), ("int8", "tflite")):
    y = np.load(f"{t}/{v}/outputs.npy")
    assert y.dtype == np.float32 and y.shape == (n, 1000), (v, y.dtype, y.shape)
    assert np.isfinite(y).all(), v
    j = json.load(open(f"{t}/{v}/times.json"))
    assert j["framework"] == fw and j["device"] == "cpu" and j["version"], (v, j)
    assert (j["reps"], j["warmup"], j["threads"]) == (reps, warmup, 2), (v, j)
    assert len(j["per_input_s"]) == n and all(len(r) == reps for r in j["per_input_s"]), (v, j["per_input_s"])
    assert all(0 < s < 60 for r in j["per_input_s"] for s in r) and 0 < j["first_call_s"] < 60, v
    if fw == "keras":
        assert j["version"] == "2.18.0" and j["tensorflow"] == "2.18.1" and j["python"], j
    if fw == "tflite":
        assert j["quantised"] is (v == "int8"), (v, j["quantised"])
    assert not [f for f in os.listdir(f"{t}/{v}") if ".tmp." in f], v
for a, b in (("keras", "keras_w"), ("ort", "ort_w")):
    assert (np.load(f"{t}/{a}/outputs.npy") == np.load(f"{t}/{b}/outputs.npy")).all(), f"--weights-in changed {a}"
PY

check "float TFLite and ONNX Runtime agree with Keras (max |a - b| / max |keras| <= 1e-3); int8 differs measurably more" \
    $PY - "$T" <<'PY'
import sys
import numpy as np
t = sys.argv[1]
ref = np.load(f"{t}/keras/outputs.npy")
rel = {}
for v in ("ort", "float", "int8"):
    y = np.load(f"{t}/{v}/outputs.npy")
    rel[v] = float(np.abs(y - ref).max() / np.abs(ref).max())
    print(f"    {v:6s} max |diff| {np.abs(y - ref).max():.3g}, relative to max |keras logit| {rel[v]:.3g}, "
          f"same top-1 {int((y.argmax(1) == ref.argmax(1)).sum())}/{len(y)}")
ok = rel["ort"] <= 1e-3 and rel["float"] <= 1e-3 and rel["int8"] > 1e-3 and rel["int8"] > 10 * rel["float"]
sys.exit(0 if ok else 1)
PY

check "keras --capture: one output per non-input layer of model.h5, in its order; every layer's weights" \
    $TFPY - "$T" <<'PY'
import json, sys
import h5py
import numpy as np
t = sys.argv[1]
with h5py.File(f"{t}/e/model.h5", "r") as f:
    config = json.loads(f.attrs["model_config"])
    layers = [l for l in config["config"]["layers"] if l["class_name"] != "InputLayer"]
    n_weights = sum(len(f["model_weights"][name].attrs["weight_names"]) for name in f["model_weights"].attrs["layer_names"])
index = json.load(open(f"{t}/keras/capture/index.json"))
assert len(index) == len(layers), (len(index), len(layers))
assert [e["name"] for e in index] == [l["config"]["name"] for l in layers]
assert [e["type"] for e in index] == [l["class_name"] for l in layers]
assert [e["index"] for e in index] == list(range(len(index)))
for e in index:
    a = np.load(f"{t}/keras/capture/{e['file']}")
    assert list(a.shape) == e["shape"] and a.dtype == np.float32, e
last = np.load(f"{t}/keras/capture/{index[-1]['file']}")
y0 = np.load(f"{t}/keras/outputs.npy")[0]
assert np.abs(last[0] - y0).max() <= 1e-5 * np.abs(y0).max(), "the last layer's output is not the logits"
params = json.load(open(f"{t}/keras/capture/params.json"))
assert len(params) == n_weights, (len(params), n_weights)
assert params[0]["name"] == "Conv1/kernel" and params[0]["shape"] == [3, 3, 3, 32], params[0]
assert any(p["name"] == "bn_Conv1/moving_variance" for p in params)
print(f"    {len(index)} layer outputs, {len(params)} weights")
PY

check "tflite --capture: every operator's output, the last one the logits" $PY - "$T" <<'PY'
import json, sys
import numpy as np
t = sys.argv[1]
index = json.load(open(f"{t}/float/capture/index.json"))
# MobileNetV2 in TFLite: 35 convolutions, 17 depthwise, 10 adds, the mean and the dense layer.
assert len(index) == 64, len(index)
assert [e["index"] for e in index] == list(range(64))
for e in index:
    a = np.load(f"{t}/float/capture/{e['file']}")
    assert list(a.shape) == e["shape"] and a.dtype.name == e["dtype"], e
assert index[-1]["op"] == "FULLY_CONNECTED", index[-1]
last = np.load(f"{t}/float/capture/{index[-1]['file']}")[0]
y0 = np.load(f"{t}/float/outputs.npy")[0]
assert np.abs(last - y0).max() <= 1e-4 * np.abs(y0).max(), np.abs(last - y0).max()
PY

# ---- onnx2tf: ONNX files into TensorFlow (crossbind_tf.py delta --onnx) ----
# The Keras file (NHWC) with three intermediate values added as outputs by
# name alone, as crossbind delta instruments files; and a small NCHW CNN
# exported by Debian's torch 1.13 with its own inputs.
$TFPY - "$T" <<'PY'
import sys
import onnx
t = sys.argv[1]
m = onnx.load(f"{t}/e/model.onnx")
produced = [o for n in m.graph.node for o in n.output]
picks = [produced[2], produced[len(produced) // 2], produced[-3]]
for name in picks:
    m.graph.output.append(onnx.ValueInfoProto(name=name))
onnx.save(m, f"{t}/instrumented.onnx")
PY
$PY - "$T" <<'PY'
import sys
import numpy as np
import torch
t = sys.argv[1]
torch.manual_seed(3)
net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
                          torch.nn.Conv2d(8, 16, 3, stride=2), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                          torch.nn.Flatten(), torch.nn.Linear(16, 10)).eval()
with torch.no_grad():
    net[1].running_mean.uniform_(-0.5, 0.5), net[1].running_var.uniform_(0.5, 2)
x = torch.randn(1, 3, 32, 32)
torch.onnx.export(net, x, f"{t}/small.onnx", input_names=["image"], output_names=["logits"], opset_version=13,
                  dynamic_axes={"image": {0: "batch"}})
np.save(f"{t}/small-x.npy", np.random.default_rng(8).standard_normal((3, 3, 32, 32), dtype=np.float32))
PY
timed "onnx2tf: delta --onnx on the tf2onnx file (NHWC) with --capture" \
    $KERAS delta --onnx "$T/instrumented.onnx" $RUN --out "$T/o2t" --capture
timed "onnxruntime-node: the same file with --capture" $ORT delta --model "$T/instrumented.onnx" --opt-level all $RUN --out "$T/ort_i" --capture
timed "onnx2tf: delta --onnx on a torch.onnx file (NCHW)" \
    $KERAS delta --onnx "$T/small.onnx" --inputs "$T/small-x.npy" --threads 2 --reps 2 --warmup 0 --out "$T/o2t_small"
timed "onnxruntime-node: the same NCHW file" \
    $ORT delta --model "$T/small.onnx" --opt-level all --inputs "$T/small-x.npy" --threads 2 --reps 2 --warmup 0 --out "$T/ort_small"
check "onnx2tf: TensorFlow's logits agree with ONNX Runtime's, NHWC and NCHW (max |a - b| <= 1e-4 max |a|); its times.json" \
    $PY - "$T" <<'PY'
import json, sys
import numpy as np
t = sys.argv[1]
for o2t, ort, layout in (("o2t", "ort_i", "nhwc"), ("o2t_small", "ort_small", "nchw")):
    a, b = np.load(f"{t}/{ort}/outputs.npy"), np.load(f"{t}/{o2t}/outputs.npy")
    assert a.shape == b.shape and b.dtype == np.float32, (a.shape, b.shape)
    print(f"    {layout}: max |diff| {np.abs(a - b).max():.3g} of max |logit| {np.abs(a).max():.3g}")
    assert np.abs(a - b).max() <= 1e-4 * np.abs(a).max() and (a.argmax(1) == b.argmax(1)).all()
    j = json.load(open(f"{t}/{o2t}/times.json"))
    assert (j["framework"], j["conversion"], j["onnx2tf"], j["tensorflow"]) == \
        ("tensorflow", "onnx2tf", "1.29.24", "2.18.1"), j
    assert j["input_layout"] == layout and j["convert_s"] > 0 and len(j["per_input_s"]) == len(a), j
PY
check "onnx2tf --capture: every added value by its ONNX name, in ONNX Runtime's layout and within 1e-4 of it" \
    $PY - "$T" <<'PY'
import json, sys
import numpy as np
t = sys.argv[1]
a = {v["name"]: v for v in json.load(open(f"{t}/ort_i/capture/index.json"))}
b = json.load(open(f"{t}/o2t/capture/index.json"))
assert len(b) == 3 and [v["name"] for v in b] == list(a), ([v["name"] for v in b], list(a))
for v in b:
    x, y = np.load(f"{t}/ort_i/capture/{a[v['name']]['file']}"), np.load(f"{t}/o2t/capture/{v['file']}")
    assert x.shape == y.shape, (v["name"], x.shape, y.shape)
    assert np.abs(x - y).max() <= 1e-4 * max(np.abs(x).max(), 1e-6), (v["name"], np.abs(x - y).max())
PY
refuses "onnx2tf delta: a missing ONNX file" 'cannot open model' \
    $KERAS delta --onnx "$T/none.onnx" $RUN --out "$T/bad"
refuses "onnx2tf delta: a file that is no ONNX model" 'not an ONNX model' \
    $KERAS delta --onnx "$T/x.npy" $RUN --out "$T/bad"
refuses "onnx2tf delta: NCHW inputs for the NHWC file" 'inputs have shape \[3, 3, 224, 224\]' \
    $KERAS delta --onnx "$T/e/model.onnx" --inputs "$T/nchw.npy" --threads 2 --reps 1 --warmup 0 --out "$T/bad"
expect_error "delta: both --model and --onnx" 'not allowed with argument' \
    $KERAS delta --model "$T/e/model.h5" --onnx "$T/e/model.onnx" $RUN --out "$T/bad"

refuses "keras-export: an unknown model name" 'unknown model vgg19' \
    $KERAS keras-export vgg19 --seed 1 --out-dir "$T/bad"
refuses "keras-export: a missing --weights-in file" 'cannot open weights' \
    $KERAS keras-export mobilenet_v2 --weights-in "$T/none.h5" --out-dir "$T/bad"
refuses "keras-export: weights of another model" 'not weights of resnet50' \
    $KERAS keras-export resnet50 --weights-in "$T/e/model.h5" --out-dir "$T/bad"
refuses "keras delta: a missing model" 'cannot open model' \
    $KERAS delta --model "$T/none.h5" $RUN --out "$T/bad"
refuses "keras delta: a file that is no Keras model" 'cannot load the Keras model' \
    $KERAS delta --model "$T/x.npy" $RUN --out "$T/bad"
refuses "keras delta: NCHW inputs for the NHWC model" 'inputs have shape \[3, 3, 224, 224\]' \
    $KERAS delta --model "$T/e/model.h5" --inputs "$T/nchw.npy" --threads 2 --reps 1 --warmup 0 --out "$T/bad"
refuses "keras delta: a missing inputs file" 'cannot open inputs' \
    $KERAS delta --model "$T/e/model.h5" --inputs "$T/none.npy" --threads 2 --reps 1 --warmup 0 --out "$T/bad"
refuses "keras delta: --reps 0" 'reps must be at least 1' \
    $KERAS delta --model "$T/e/model.h5" --inputs "$T/x.npy" --threads 2 --reps 0 --warmup 0 --out "$T/bad"
refuses "tflite delta: a missing model" 'cannot open model' \
    $LITE delta --model "$T/none.tflite" $RUN --out "$T/bad"
refuses "tflite delta: a file that is no TFLite model" 'not a TFLite model' \
    $LITE delta --model "$T/e/model.onnx" $RUN --out "$T/bad"
refuses "tflite delta: NCHW inputs for the NHWC model" 'inputs have shape \[3, 3, 224, 224\]' \
    $LITE delta --model "$T/e/model-int8.tflite" --inputs "$T/nchw.npy" --threads 2 --reps 1 --warmup 0 --out "$T/bad"
check "no output directory was made by a refused run" test ! -e "$T/bad"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
