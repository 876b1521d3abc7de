#!/bin/bash
# crossbind delta: a planted divergence localised by capture and by
# bisection in crossbind and in ONNX Runtime; the weights' differences;
# the determinism check; resuming after SIGKILL; a runner's missing
# environment; the report in headless Chromium; the configurations and
# stores it refuses. The model is a small classifier exported by Debian's
# torch 1.13 (tests/delta/planted.py); inputs are the stand-in photographs.
# Usage: tests/delta_test.sh BUILD_DIR. Prints "N passed, N failed".
BUILD=${1:-build}
BIN="$PWD/$BUILD/crossbind"
T=$(mktemp -d /tmp/crossbind-delta.XXXXXX)
SUITE=delta
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/lib.sh"
# The exports of the examples below (torchvision's and Keras' models with
# seeded weights) are made in work directories under $WORK. Given
# DELTA_TEST_WORK (scripts/test.sh gives both builds' runs one), a later run
# reuses what an earlier one exported.
WORK=${DELTA_TEST_WORK:-$T/work}

NODE_NAME=$(/usr/bin/python3 tests/delta/planted.py "$T") || { echo "FAIL $SUITE: export"; echo "0 passed, 1 failed"; exit 1; }
cat > "$T/planted.json" <<JSON
{"files": [{"name": "a", "file": "$T/a.onnx", "runtime": "crossbind", "level": "fast"},
           {"name": "b", "file": "$T/b.onnx", "runtime": "crossbind", "level": "fast"},
           {"name": "b-ort", "file": "$T/b.onnx", "runtime": "onnxruntime", "level": "all"}],
 "max_images": 4, "reps": 10, "warmup": 1, "repeat": true}
JSON
expect_ok "a planted divergence: three file variants run" "$BIN" delta --config "$T/planted.json" --store "$T/p.sqlite" \
    --json "$T/p.json" --report "$T/report"
cp "$T/err" "$T/first-run.err"
check "it shows progress per variant" grep -q "^\[delta\]  3/4 b-ort:onnxruntime@all/t2: ok, median" "$T/first-run.err"

# The summary, read with Python: localisation of both diverging pairs by both methods.
python3 - "$T/p.json" "$NODE_NAME" > "$T/checks" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); node = sys.argv[2]
pairs = {(p["a"], p["b"]): p for ax in d["axes"] for p in ax["pairs"]}
def say(name, ok): print(("ok " if ok else "FAIL ") + name)
ab = pairs.get(("a:crossbind@fast/t2", "b:crossbind@fast/t2"))
ao = pairs.get(("a:crossbind@fast/t2", "b-ort:onnxruntime@all/t2"))
bo = pairs.get(("b:crossbind@fast/t2", "b-ort:onnxruntime@all/t2"))
rep = pairs.get(("a:crossbind@fast/t2", "a:crossbind@fast/t2#2"))
say("three file pairs and the repeat pair are compared", all([ab, ao, bo, rep]))
for name, p in (("crossbind vs crossbind", ab), ("crossbind vs ONNX Runtime", ao)):
    loc = p["localisation"] or {}
    say(f"{name}: the pair diverges", p["diverges"] and p["max_logit_diff"] > 1e-3)
    for method in ("capture", "bisection"):
        first = (loc.get(method) or {}).get("first") or {}
        say(f"{name}: {method} names the planted layer {node}", first.get("onnx_node") == node and first.get("op") == "Conv")
    layers = (loc.get("capture") or {}).get("layers") or []
    w = {l["value"]: l.get("weights") for l in layers}
    conv1 = next((v for k, v in w.items() if k.startswith("/conv1/Conv")), None)
    conv2 = next((v for k, v in w.items() if k.startswith("/conv2/Conv")), None)
    say(f"{name}: the weights differ in conv2 only", conv1 is not None and conv1["max"] == 0 and conv2 is not None
        and conv2["max"] > 0)
    say(f"{name}: layers before the planted one are within the tolerance",
        all(l["activation"]["relative_max"] <= 1e-3 for l in layers[:layers.index(next(l for l in layers if l["value"].startswith("/conv2/")))]))
    say(f"{name}: bisection needed a logarithmic number of probes", 1 <= (loc.get("bisection") or {}).get("probes", 0) <= 6)
say("the same file in crossbind and ONNX Runtime stays within the tolerance", not bo["diverges"] and bo["localisation"] is None)
say("the repeat of a variant gives identical outputs", rep["identical_outputs"] and rep["max_logit_diff"] == 0)
for p in (ab, ao, bo):
    for k in ("top1_agreement", "mean_rbo", "mean_jaccard", "mean_kendall_tau"):
        say(f"{p['a']} vs {p['b']}: {k} in [-1, 1]", p[k] is not None and -1 <= p[k] <= 1)
    say(f"{p['a']} vs {p['b']}: time test recorded", p["time"]["p"] is not None and p["time"]["p_adjusted"] >= p["time"]["p"])
say("identical outputs give RBO, Jaccard and tau of 1", rep["mean_rbo"] == 1 and rep["mean_jaccard"] == 1 and rep["mean_kendall_tau"] == 1)
v = {x["key"]: x for x in d["variants"]}
say("every variant records its file's SHA-256", all(len(x["manifest"].get("file_sha256", "")) == 64 for x in v.values()))
say("every variant records 4 inputs' output hash", all(len(x.get("outputs_sha256", "")) == 64 for x in v.values()))
say("inputs are the stand-in photographs with their hashes", len(d["inputs"]) == 4 and all(len(i["sha256"]) == 64 for i in d["inputs"])
    and d["inputs"][0]["name"].endswith("astronaut.png"))
say("ONNX Runtime's manifest names its version and level", v["b-ort:onnxruntime@all/t2"]["manifest"].get("runner_opt_level") == "all"
    and "onnxruntime" in v["b-ort:onnxruntime@all/t2"]["manifest"].get("runner_versions", ""))
say("a differing input lists both top-5", all(len(x["top_a"]) == 5 and len(x["top_b"]) == 5 for x in ab["differing_inputs"]))
PY
while read -r verdict rest; do
    if [ "$verdict" = ok ]; then echo "ok   $SUITE: $rest"; pass=$((pass + 1)); else echo "FAIL $SUITE: $rest"; fail=$((fail + 1)); fi
done < "$T/checks"

# ---- stored results are kept; a second run measures nothing ----
expect_ok "a second run of the same experiment" "$BIN" delta --config "$T/planted.json" --store "$T/p.sqlite" --json "$T/p2.json" --no-report
check "it runs no variant again" test "$(grep -c 'stored (ok)' "$T/err")" = 4
check "it localises nothing again" bash -c "! grep -q localising '$T/err'"
check "it gives the same summary's measures" python3 -c "
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
strip = lambda d: [[(p['a'], p['b'], p['top1_agreement'], p['max_logit_diff'], p['localisation']) for p in ax['pairs']] for ax in d['axes']]
sys.exit(strip(a) != strip(b))" "$T/p.json" "$T/p2.json"

# ---- SIGKILL in the middle, then resume ----
mkdir -p "$T/slow/onnxruntime-node"
# The slow runner's sleep is this suite's own (60.PID seconds), so that the
# check below sees no other suite's.
nap="60.$$"
cat > "$T/slow/onnxruntime-node/manifest.json" <<JSON
{"format": "crossbind-runner/1", "binding": "onnxruntime-node", "framework": "ONNX Runtime", "language": "JavaScript",
 "command": ["bash", "-c", "sleep $nap"], "version_command": ["echo", "slow"], "train": [], "infer": [], "loads": ["onnx"], "devices": ["cpu"]}
JSON
"$BIN" delta --config "$T/planted.json" --store "$T/k.sqlite" --runners "$T/slow" --no-report > "$T/k.out" 2>&1 &
pid=$!
for _ in $(seq 600); do grep -q "running 4 inputs" <(grep "b-ort" "$T/k.out") && break; sleep 0.1; done
kill -9 $pid; wait $pid 2>/dev/null
check "killed while a runner ran, the two variants before it are stored" test "$(python3 -c "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM variant').fetchone()[0])" "$T/k.sqlite")" = 2
sleep 0.5
check "no runner is left behind" bash -c "! pgrep -fx 'sleep $nap' >/dev/null"
expect_ok "the same command continues" "$BIN" delta --config "$T/planted.json" --store "$T/k.sqlite" --no-report --json "$T/k.json"
check "it keeps the two stored variants and runs the other two" \
    test "$(grep -c 'stored (ok)' "$T/err")" = 2 -a "$(grep -c ': ok, median' "$T/err")" = 2

# ---- a runner's missing environment: the others still measured ----
mkdir -p "$T/none" && cp -r runners/crossbind "$T/none/"
expect_ok "without ONNX Runtime's runner the experiment still runs" "$BIN" delta --config "$T/planted.json" \
    --store "$T/u.sqlite" --runners "$T/none" --no-report --json "$T/u.json"
check "that variant is stored as unavailable, the others measured" python3 -c "
import json, sys
v = {x['key']: x['status'] for x in json.load(open(sys.argv[1]))['variants']}
sys.exit(not (v['b-ort:onnxruntime@all/t2'] == 'unavailable' and v['a:crossbind@fast/t2'] == 'ok'))" "$T/u.json"

# ---- the report in headless Chromium ----
cat > "$T/expect.json" <<'JSON'
{"figures": {"layers-0": 1, "layers-1": 1}, "min_figures": 4, "bindings": [],
 "tables": ["t-variants", "t-differing", "t-pairs", "t-matrix-top1", "t-matrix-rbo"]}
JSON
if node tests/browser/report_test.js "$T/report/index.html" "$T/expect.json" > "$T/browser.out" 2>&1; then
    echo "ok   $SUITE: the report renders in headless Chromium ($(tail -1 "$T/browser.out"))"; pass=$((pass + 1))
else
    echo "FAIL $SUITE: the report in headless Chromium"; sed 's/^/    /' "$T/browser.out" | tail -15; fail=$((fail + 1))
fi
check "the report names the planted layer" grep -q "$NODE_NAME (Conv" "$T/report/index.html"

# ---- PyTorch's modules paired with its ONNX export's values (MobileNetV2) ----
# A tolerance of 1e-9 makes every pair diverge, so that localisation runs.
cat > "$T/torch.json" <<'JSON'
{"model": "mobilenet_v2", "seed": 3, "max_images": 1, "reps": 10, "warmup": 0, "tolerance": 1e-9,
 "axes": {"runtime": ["pytorch", "crossbind"]}}
JSON
expect_ok "MobileNetV2 in PyTorch and in crossbind" "$BIN" delta --config "$T/torch.json" --store "$T/torch.sqlite" --work "$WORK/torch" \
    --json "$T/torch-s.json" --no-report
check "capture pairs PyTorch's modules with the ONNX values, batch norms folded into convolutions" python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))['axes'][0]['pairs'][0]
c = p['localisation']['capture']
m = {l['value']: (l['module'], l['module_type']) for l in c['layers']}
ok = c['matched'] >= 80 and m.get('/features/features.0/features.0.0/Conv_output_0') == ('features.0.1', 'BatchNorm2d')
ok = ok and m.get('/features/features.1/conv/conv.0/conv.0.2/Clip_output_0') == ('features.1.conv.0.2', 'ReLU6')
ok = ok and m.get('logits') == ('classifier.1', 'Linear') and c['first']['op'] == 'Conv'
ok = ok and p['localisation']['bisection']['available'] is False
sys.exit(not ok)" "$T/torch-s.json"

# ---- devices: a CUDA variant where no backend or runner offers CUDA is unavailable, with the reason ----
cat > "$T/device.json" <<'JSON'
{"model": "mobilenet_v2", "seed": 3, "max_images": 1, "reps": 10, "warmup": 0, "mode": "product",
 "axes": {"runtime": ["crossbind", "onnxruntime"], "device": ["cpu", "cuda"]}}
JSON
expect_ok "crossbind and ONNX Runtime on the CPU and on CUDA" "$BIN" delta --config "$T/device.json" \
    --store "$T/device.sqlite" --work "$WORK/torch" --json "$T/device-s.json" --no-report
check "the same model and seed in the same work directory are not exported again" bash -c "! grep -q exporting '$T/err'"
check "the CPU variants are measured; each CUDA one is unavailable, saying why, with device cuda in its manifest" python3 -c "
import json, sys
v = {x['key']: x for x in json.load(open(sys.argv[1]))['variants']}
ok = sorted(v) == ['crossbind@fast/t2', 'crossbind@fast/t2/cuda', 'onnxruntime@all/t2', 'onnxruntime@all/t2/cuda',
                   'pytorch-2.7.1/t2']  # and the base
ok = ok and v['crossbind@fast/t2']['status'] == 'ok' and v['onnxruntime@all/t2']['status'] == 'ok'
cb, ort = v['crossbind@fast/t2/cuda'], v['onnxruntime@all/t2/cuda']
ok = ok and cb['status'] == 'unavailable' and 'no cuda backend' in cb['error']
ok = ok and ort['status'] == 'unavailable' and 'onnxruntime-node declares no cuda device' in ort['error']
sys.exit(not (ok and cb['manifest']['device'] == 'cuda' and v['crossbind@fast/t2']['manifest']['device'] == 'cpu'))" "$T/device-s.json"
echo '{"model": "mobilenet_v2", "axes": {"device": ["tpu"]}}' > "$T/c12.json"
expect_error "an unknown device" 'axis "device": unknown value' "$BIN" delta --config "$T/c12.json" --list

# ---- Keras' side: native, tf2onnx into ONNX Runtime and crossbind, TFLite float and int8 ----
cat > "$T/keras.json" <<'JSON'
{"model": "mobilenet_v2", "seed": 3, "max_images": 2, "reps": 10, "warmup": 0,
 "keras": {"runtimes": ["keras", "onnxruntime", "crossbind", "tflite"], "quantisation": true}}
JSON
keras_made=$([ -f "$WORK/torch/keras/crossbind-export.json" ] && echo yes)
expect_ok "Keras' MobileNetV2 and its conversions" "$BIN" delta --config "$T/keras.json" --store "$T/keras.sqlite" --work "$WORK/torch" \
    --json "$T/keras-s.json" --no-report
if [ -n "$keras_made" ]; then
    check "Keras' export made by an earlier run in this work directory is reused" bash -c "! grep -q exporting '$T/err'"
else
    check "Keras' model is exported, PyTorch's reused from the work directory" bash -c \
        "grep -q \"exporting Keras' mobilenet_v2\" '$T/err' && ! grep -q 'exporting mobilenet_v2' '$T/err'"
fi
check "the float conversions agree with Keras; the int8 file only in its own group, differing more" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
v = {x['key']: x for x in d['variants']}
ax = {a['name']: a for a in d['axes']}
conv, quant = ax['Keras conversion'], ax['TFLite quantisation']
ok = all(x['status'] == 'ok' for k, x in v.items() if k.startswith('keras:'))
ok = ok and not any('int8' in k for k in conv['variants']) and 'keras:tflite@int8/t2' in quant['variants']
ok = ok and all(p['top1_agreement'] == 1 and p['max_logit_diff'] < 1e-3 * 50 for p in conv['pairs'])
q = {(p['a'], p['b']): p for p in quant['pairs']}
f, i8 = q[('keras:keras/t2', 'keras:tflite@float/t2')], q[('keras:keras/t2', 'keras:tflite@int8/t2')]
ok = ok and i8['max_logit_diff'] > 10 * f['max_logit_diff']
ok = ok and 'int8' in v['keras:tflite@int8/t2']['manifest']['quantisation'] and v['keras:tflite@float/t2']['manifest']['quantisation'].startswith('none')
ok = ok and v['keras:crossbind@fast/t2']['manifest']['preprocessing'] == 'tf' and v['pytorch-2.7.1/t2']['manifest']['preprocessing'] == 'torchvision'
sys.exit(not ok)" "$T/keras-s.json"

# ---- a study model with trained weights: labels, accuracy per variant ----
"$BIN" train lenet5 --epochs 3 --limit-train 4096 --out "$T/lenet5" --quiet > /dev/null 2>&1
cat > "$T/lenet.json" <<JSON
{"model": "lenet5", "weights": "$T/lenet5/final.safetensors", "max_images": 100, "reps": 10, "warmup": 0,
 "axes": {"runtime": ["pytorch", "onnxruntime", "crossbind", "onnx2torch", "onnx2tf"], "pytorch.version": ["2.7.1", "1.13.1"]}}
JSON
expect_ok "LeNet-5 trained by crossbind, in PyTorch (both versions), ONNX Runtime, crossbind, onnx2torch and onnx2tf" \
    "$BIN" delta --config "$T/lenet.json" --store "$T/lenet.sqlite" --json "$T/lenet-s.json" --no-report
check "every variant scores the same accuracy on Fashion-MNIST's labels, above chance" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
acc = [v['accuracy'] for v in d['variants']]
ok = all(v['status'] == 'ok' for v in d['variants']) and len(d['variants']) == 6 and len(set(acc)) == 1 and acc[0] > 0.3
ok = ok and d['inputs'][0]['name'] == 'test[0]' and 'fashion-mnist' in d['pipeline'].lower()
sys.exit(not ok)" "$T/lenet-s.json"

# ---- torchvision's MobileNetV3 (hard swish, squeeze and excitation) in PyTorch, ONNX Runtime and crossbind ----
cat > "$T/mnv3.json" <<JSON
{"model": "mobilenet_v3_small", "seed": 1, "max_images": 3, "reps": 10, "warmup": 1,
 "axes": {"runtime": ["pytorch", "onnxruntime", "crossbind"], "crossbind.level": ["reference", "fastmath"]},
 "keras": {"runtimes": ["keras", "crossbind"], "quantisation": false}}
JSON
expect_ok "MobileNetV3-small in PyTorch, ONNX Runtime and crossbind at two levels, and Keras' natively and in crossbind" \
    "$BIN" delta --config "$T/mnv3.json" --store "$T/mnv3.sqlite" --work "$WORK/mnv3" --json "$T/mnv3-s.json" --no-report
check "... every variant ran and every pair agrees on every label, the logits within 1e-4 (Keras' read the pixels)" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
ok = len(d['variants']) == 7 and all(v['status'] == 'ok' for v in d['variants'])
pairs = [p for a in d['axes'] for p in a['pairs']]
ok = ok and len(pairs) == 5 and all(p['top1_agreement'] == 1 and p['max_logit_diff'] < 1e-4 for p in pairs)
pre = {v['key']: v['manifest']['preprocessing'] for v in d['variants']}
ok = ok and pre['keras:keras/t2'] == pre['keras:crossbind@fast/t2'] == 'pixels' and pre['crossbind@fast/t2'] == 'torchvision'
sys.exit(not (ok and 'keras:crossbind@fast/t2' in [p['b'] for p in pairs]))" "$T/mnv3-s.json"

# ---- a recurrent study model: int64 token ids, one sigmoid output read as two classes ----
/usr/bin/python3 tests/fake_spam_package.py "$T/pkg"
{ "$BIN" data imdb-stand-in --from "$T/pkg" --out "$T/acl" && "$BIN" data imdb-prepare --from "$T/acl" --out "$T/imdb" &&
  "$BIN" train lstm --data "$T/imdb" --epochs 1 --limit-train 32 --out "$T/lstm" --quiet; } > /dev/null 2>&1
cat > "$T/lstm.json" <<JSON
{"model": "lstm", "weights": "$T/lstm/final.safetensors", "data": "$T/imdb", "max_images": 6, "reps": 10, "warmup": 0,
 "tolerance": 1e-12, "axes": {"runtime": ["pytorch", "onnxruntime", "crossbind", "tvm", "onnx2torch", "onnx2tf"]}}
JSON
expect_ok "the LSTM on IMDb token ids in PyTorch, ONNX Runtime, crossbind, TVM, onnx2torch and onnx2tf" \
    "$BIN" delta --config "$T/lstm.json" --store "$T/lstm.sqlite" --json "$T/lstm-s.json" --report "$T/lstm-report"
check "its report names the study's model and the IMDb stand-in it read" bash -c \
    "grep -q 'lstm (the study.s model), its trained weights' '$T/lstm-report/index.html' &&
     grep -q 'STAND-IN: A stand-in in the aclImdb directory layout, NOT the IMDb reviews' '$T/lstm-report/index.html'"
check "PyTorch, ONNX Runtime and crossbind agree on every label and score the same accuracy" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
v = {x['key']: x for x in d['variants']}
ran = [v[k] for k in ('pytorch-2.7.1/t2', 'onnxruntime@all/t2', 'crossbind@fast/t2')]
ok = all(x['status'] == 'ok' for x in ran) and len({x['accuracy'] for x in ran}) == 1
ok = ok and 'int64 token ids' in d['pipeline'] and d['inputs'][0]['name'] == 'test[0]'
pairs = [p for a in d['axes'] for p in a['pairs'] if not any(r in p['a'] + p['b'] for r in ('tvm', 'onnx2t'))]
ok = ok and len(pairs) == 3 and all(p['top1_agreement'] == 1 and p['max_logit_diff'] < 1e-5 for p in pairs)
sys.exit(not ok)" "$T/lstm-s.json"
check "TVM, onnx2torch and onnx2tf are failed variants that say they cannot convert the LSTM" python3 -c "
import json, sys
v = {x['key']: x for x in json.load(open(sys.argv[1]))['variants']}
ok = all(v[k]['status'] == 'failed' and 'LSTM' in v[k]['error'] for k in ('tvm@O2/t2', 'onnx2torch@eager/t2'))
sys.exit(not (ok and v['onnx2tf@default/t2']['status'] == 'failed' and 'cannot convert' in v['onnx2tf@default/t2']['error']))" "$T/lstm-s.json"
check "PyTorch's modules pair with crossbind's exported values: the first to differ is the LSTM's" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
p = [p for a in d['axes'] for p in a['pairs'] if (p['a'], p['b']) == ('pytorch-2.7.1/t2', 'crossbind@fast/t2')][0]
c = p['localisation']['capture']
mods = [l['module'] for l in c['layers']]
ok = c['available'] and mods[:2] == ['embedding', 'rnn'] and 'fc' in mods and c['layers'][0]['activation']['max'] == 0
sys.exit(not (ok and c['first']['value'] == 'rnn.out'))" "$T/lstm-s.json"
echo '{"model": "lenet5"}' > "$T/c11.json"
expect_error "a study model without its weights" "trained parameters" "$BIN" delta --config "$T/c11.json" --list

# ---- the variants a configuration names ----
expect_ok "the quick profile's variants" "$BIN" delta --profile quick --list
check "vary-one: one group per axis, the variants named once" grep -qx "variants: 25" "$T/out"
check "the int8 TFLite conversion is a group of its own, never a float conversion" \
    bash -c "grep -qx 'TFLite quantisation: keras:keras/t2 keras:tflite@float/t2 keras:tflite@int8/t2' '$T/out' && ! grep '^Keras conversion' '$T/out' | grep -q int8"
check "the PyTorch version axis holds the rest fixed" grep -qx "PyTorch version: pytorch-2.7.1/t2 pytorch-1.13.1/t2" "$T/out"
check "DeltaNN's TVM opt_levels 0, 2 and 4" grep -qx "TVM opt_level: tvm@O0/t2 tvm@O2/t2 tvm@O4/t2" "$T/out"
echo '{"model": "resnet18", "mode": "product", "axes": {"runtime": ["crossbind", "onnxruntime", "pytorch"], "threads": [1, 2], "crossbind.level": ["fast", "fused"]}}' > "$T/prod.json"
expect_ok "a product configuration" "$BIN" delta --config "$T/prod.json" --list
check "the product runs every combination as one group" \
    bash -c "grep -qx 'variants: 8' '$T/out' && grep -q '^product: crossbind@fast/t1 crossbind@fast/t2 crossbind@fused/t1 crossbind@fused/t2 onnxruntime@all/t1' '$T/out'"

# ---- configurations and stores it refuses ----
expect_error "neither --config nor --profile" "exactly one of" "$BIN" delta
expect_error "both --config and --profile" "exactly one of" "$BIN" delta --config "$T/planted.json" --profile quick
expect_error "an unknown option" "unknown option" "$BIN" delta --profile quick --frobnicate
expect_error "an unknown profile" "unknown profile" "$BIN" delta --profile huge --list
expect_error "a missing configuration file" "cannot\|No such" "$BIN" delta --config "$T/none.json"
echo '{"model": "mobilenet_v2", "colour": 1}' > "$T/c1.json"
expect_error "an unknown key" "unknown key \"colour\"" "$BIN" delta --config "$T/c1.json" --list
echo '{"model": "alexnet"}' > "$T/c2.json"
expect_error "an unknown model" "unknown model" "$BIN" delta --config "$T/c2.json" --list
echo '{"model": "resnet18", "keras": {}}' > "$T/c2k.json"
expect_error "Keras for a model it does not build" '"keras" has no resnet18' "$BIN" delta --config "$T/c2k.json" --list
echo '{"model": "efficientnet_b0", "axes": {"runtime": ["pytorch", "crossbind"]}}' > "$T/c2e.json"
check "torchvision's EfficientNet-B0 is a model to vary" bash -c '"$1" delta --config "$2" --list | grep -q "conversion: pytorch-2.7.1/t2 crossbind@fast/t2"' _ "$BIN" "$T/c2e.json"
echo '{"model": "mobilenet_v2", "reps": 5}' > "$T/c3.json"
expect_error "fewer than 10 repetitions" "reps" "$BIN" delta --config "$T/c3.json" --list
echo '{"model": "mobilenet_v2", "axes": {"runtime": ["caffe"]}}' > "$T/c4.json"
expect_error "an unknown runtime" "axis \"runtime\"" "$BIN" delta --config "$T/c4.json" --list
echo '{"files": [{"file": "x.onnx", "runtime": "pytorch"}]}' > "$T/c5.json"
expect_error "an ONNX file in PyTorch" "not pytorch" "$BIN" delta --config "$T/c5.json" --list
echo '{"model": "mobilenet_v2", "inputs_npy": "x.npy", "keras": {}}' > "$T/c9.json"
expect_error "Keras with a tensor instead of images" "needs images" "$BIN" delta --config "$T/c9.json" --list
echo '{"model": "mobilenet_v2", "keras": {"runtimes": ["pytorch"]}}' > "$T/c10.json"
expect_error "PyTorch among Keras' runtimes" "runtimes" "$BIN" delta --config "$T/c10.json" --list
echo '{"model": "mobilenet_v2", "axes": {"threads": [0]}}' > "$T/c6.json"
expect_error "zero threads" "threads" "$BIN" delta --config "$T/c6.json" --list
printf '{"model": ' > "$T/c7.json"
expect_error "truncated JSON" "c7.json" "$BIN" delta --config "$T/c7.json" --list
echo '{}' > "$T/c8.json"
expect_error "a configuration without model or files" "no \"model\" and no \"files\"" "$BIN" delta --config "$T/c8.json" --list
sed 's/"max_images": 4/"max_images": 3/' "$T/planted.json" > "$T/other.json"
expect_error "a store of another experiment" "holds another experiment" "$BIN" delta --config "$T/other.json" --store "$T/p.sqlite" --no-report
python3 -c "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('CREATE TABLE t(x)')" "$T/foreign.sqlite"
expect_error "an SQLite file of another application" "another application" "$BIN" delta --config "$T/planted.json" --store "$T/foreign.sqlite" --no-report
echo "not a database at all, just text that is long enough to be read as a header........." > "$T/text.sqlite"
expect_error "a text file as the store" "not a crossbind delta store\|not a database" "$BIN" delta --config "$T/planted.json" --store "$T/text.sqlite" --no-report
sed "s#$T/b.onnx#$T/missing.onnx#g" "$T/planted.json" > "$T/missing.json"
expect_error "a missing model file" "missing.onnx" "$BIN" delta --config "$T/missing.json" --store "$T/m.sqlite" --no-report
head -c 300 "$T/b.onnx" > "$T/cut.onnx"
sed "s#$T/b.onnx#$T/cut.onnx#g" "$T/planted.json" > "$T/cut.json"
expect_ok "a truncated model file: the experiment runs" "$BIN" delta --config "$T/cut.json" --store "$T/t.sqlite" --no-report --json "$T/t.json"
check "the truncated file's variants fail with a message, the others are measured" python3 -c "
import json, sys
v = {x['key']: x for x in json.load(open(sys.argv[1]))['variants']}
b = v['b:crossbind@fast/t2']
sys.exit(not (b['status'] == 'failed' and 'cut.onnx' in b['error'] and v['a:crossbind@fast/t2']['status'] == 'ok'))" "$T/t.json"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
