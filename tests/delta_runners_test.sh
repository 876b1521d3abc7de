#!/bin/bash
# The runner side of `crossbind delta`: one torchvision MobileNetV2 with
# seeded random weights, exported once (crossbind_torch.py imagenet-export
# --weights-out), run on three random inputs by
#  - crossbind_torch.py delta on PyPI's torch 2.7.1 (runners/pytorch-python)
#    and on Debian's torch 1.13 (/usr/bin/python3 with python3-torchvision),
#    both with --capture (every leaf module's output, the state dict);
#  - crossbind_torch.py delta --onnx on torch 2.7.1: the exported file
#    brought back into torch.nn by onnx2torch (PyTorch -> ONNX -> PyTorch),
#    with --capture;
#  - crossbind_ort.js delta at graph optimisation levels all and disabled,
#    and with --capture on the same ONNX file with every node's output added
#    as a graph output that carries its name alone (as crossbind delta
#    edits it);
# checks the files each writes (shapes, times.json, capture indexes), that
# the logits agree (max |a - b| / max |b| <= 1e-3 against torch 2.7.1; the
# measured figures are printed), that the exported file is the weights'
# own (again from --weights-in: the same bytes), and that bad input gets
# one error line and a non-zero exit. Prints "N passed, N failed".
# Needs runners/pytorch-python/install.sh, python3-torchvision and npm ci
# in runners/onnxruntime-node done.
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/crossbind-delta-runners-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=delta-runners
. tests/lib.sh
VENV=runners/pytorch-python/.venv/bin/python
NEW="$VENV runners/pytorch/crossbind_torch.py --binding pytorch-python"
OLD="/usr/bin/python3 runners/pytorch/crossbind_torch.py"
ORT="node runners/onnxruntime-node/crossbind_ort.js"
PY=/usr/bin/python3

missing=""
$VENV -c 'import torch, torchvision, onnx, onnx2torch' 2>/dev/null || missing="$missing; torchvision, onnx and onnx2torch in $VENV (run: bash runners/pytorch-python/install.sh)"
$PY -c 'import torch, torchvision' 2>/dev/null || missing="$missing; torchvision for /usr/bin/python3 (run: apt-get install python3-torchvision)"
[ -d runners/onnxruntime-node/node_modules/onnxruntime-node ] || missing="$missing; onnxruntime-node (run: npm ci in runners/onnxruntime-node)"
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

N_IN=3 REPS=3 WARMUP=2
expect_ok "mobilenet_v2 exported with a seed, its weights beside it" \
    $NEW imagenet-export mobilenet_v2 --seed 20261203 --out "$T/m.onnx" --weights-out "$T/m.pt"
expect_ok "... exported again from those weights (--weights-in)" \
    $NEW imagenet-export mobilenet_v2 --weights-in "$T/m.pt" --out "$T/again.onnx"
check "... to the same bytes: the ONNX file holds exactly the weights written" cmp -s "$T/m.onnx" "$T/again.onnx"
$PY -c "import numpy as np; np.save('$T/x.npy', np.random.default_rng(5).standard_normal(($N_IN, 3, 224, 224)).astype(np.float32))"

# Every node's output (but constants') as an extra graph output with a name
# and nothing else: the file crossbind delta hands the runner for --capture.
$VENV - "$T/m.onnx" "$T/mc.onnx" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1])
have = {o.name for o in m.graph.output}
for n in m.graph.node:
    for o in n.output:
        if n.op_type != "Constant" and o and o not in have:
            vi = onnx.ValueInfoProto()
            vi.name = o
            m.graph.output.append(vi)
            have.add(o)
onnx.save(m, sys.argv[2])
PY

RUN="--inputs $T/x.npy --threads 2 --reps $REPS --warmup $WARMUP"
expect_ok "torch 2.7.1: delta with --capture" $NEW delta --model mobilenet_v2 --weights "$T/m.pt" $RUN --out "$T/new" --capture
expect_ok "torch 1.13: delta with --capture" $OLD delta --model mobilenet_v2 --weights "$T/m.pt" $RUN --out "$T/old" --capture
expect_ok "torch 2.7.1 through onnx2torch: delta --onnx of the exported file with --capture" \
    $NEW delta --onnx "$T/m.onnx" $RUN --out "$T/o2t" --capture
for level in all disabled; do
    expect_ok "onnxruntime-node: delta at level $level" $ORT delta --model "$T/m.onnx" --opt-level $level $RUN --out "$T/ort_$level"
done
expect_ok "onnxruntime-node: delta at level all with --capture (outputs with only a name)" \
    $ORT delta --model "$T/mc.onnx" --opt-level all $RUN --out "$T/ortc" --capture

check "outputs.npy float32 [$N_IN, 1000] and times.json as the contract says, every variant" $PY - "$T" $N_IN $REPS $WARMUP <<'PY'
import json, os, sys
import numpy as np
t, n, reps, warmup = sys.argv[1], *map(int, sys.argv[2:])
for v, fw in (("new", "pytorch"), ("old", "pytorch"), ("o2t", "pytorch"), ("ort_all", "onnxruntime"), ("ort_disabled", "onnxruntime"),
              ("ortc", "onnxruntime")):
    y = np.load(f"{t}/{v}/outputs.npy")
    assert y.dtype == np.float32 and y.shape == (n, 1000), (v, y.dtype, y.shape)
    assert np.isfinite(y).all(), v
    j = json.load(open(f"{t}/{v}/times.json"))
    assert j["framework"] == fw and j["device"] == "cpu" and j["version"], (v, j)
    assert (j["reps"], j["warmup"], j["threads"]) == (reps, warmup, 2), (v, j)
    assert len(j["per_input_s"]) == n and all(len(r) == reps for r in j["per_input_s"]), (v, j["per_input_s"])
    assert all(0 < s < 60 for r in j["per_input_s"] for s in r) and 0 < j["first_call_s"] < 60, v
    if fw == "pytorch":
        assert j["torchvision"] and j["python"], v
    else:
        assert j["opt_level"] == v.split("_")[-1].replace("ortc", "all") and j["execution_provider"] == "cpu", v
    assert not [f for f in os.listdir(f"{t}/{v}") if ".tmp." in f], v
assert json.load(open(f"{t}/new/times.json"))["version"].startswith("2.7.1")
assert json.load(open(f"{t}/old/times.json"))["version"].startswith("1.13")
PY

check "the logits agree: max |a - b| / max |b| <= 1e-3 against torch 2.7.1" $PY - "$T" <<'PY'
import sys
import numpy as np
t = sys.argv[1]
ref = np.load(f"{t}/new/outputs.npy")
ok = True
for v in ("old", "o2t", "ort_all", "ort_disabled", "ortc"):
    y = np.load(f"{t}/{v}/outputs.npy")
    d = np.abs(y - ref).max() / np.abs(ref).max()
    print(f"    {v:12s} max |diff| {np.abs(y - ref).max():.3g}, relative to max |logit| {d:.3g}, "
          f"same top-1 {int((y.argmax(1) == ref.argmax(1)).sum())}/{len(y)}")
    ok &= bool(d <= 1e-3)
sys.exit(0 if ok else 1)
PY

check "torch captures: one entry per leaf module (141) in execution order, the state dict's 262 float tensors" \
    $VENV - "$T" <<'PY'
import json, sys
import numpy as np
import torch, torchvision
t = sys.argv[1]
model = torchvision.models.mobilenet_v2(weights=None)
leaves = [n for n, m in model.named_modules() if not list(m.children())]
state = torch.load(f"{t}/m.pt", weights_only=True)
floats = [k for k, v in state.items() if v.is_floating_point()]
assert (len(leaves), len(floats)) == (141, 262), (len(leaves), len(floats))
for v in ("new", "old"):
    index = json.load(open(f"{t}/{v}/capture/index.json"))
    assert [e["module"] for e in index] == leaves, v  # each leaf called once, in registration order
    assert [e["index"] for e in index] == list(range(len(leaves))), v
    for e in index:
        a = np.load(f"{t}/{v}/capture/{e['file']}")
        assert a.dtype == np.float32 and list(a.shape) == e["shape"] and e["type"], (v, e)
    params = json.load(open(f"{t}/{v}/capture/params.json"))
    assert [p["name"] for p in params] == floats, v
    for p in params:
        a = np.load(f"{t}/{v}/capture/{p['file']}")
        assert list(a.shape) == p["shape"] and np.array_equal(a, state[p["name"]].numpy()), (v, p)
# the last leaf is the classifier: its output is the logits of input 0
last = np.load(f"{t}/new/capture/{index[-1]['file']}")
assert np.array_equal(last[0], np.load(f"{t}/new/outputs.npy")[0])
PY

check "ORT capture: every added output in graph order; the first Clip is PyTorch's first ReLU6, within 1e-4" \
    $VENV - "$T" <<'PY'
import json, sys
import numpy as np
import onnx
t = sys.argv[1]
names = [o.name for o in onnx.load(f"{t}/mc.onnx").graph.output][1:]
index = json.load(open(f"{t}/ortc/capture/index.json"))
assert [e["name"] for e in index] == names and len(names) == 99, len(index)
for e in index:
    a = np.load(f"{t}/ortc/capture/{e['file']}")
    assert list(a.shape) == e["shape"] and a.dtype == np.float32, e
clip = np.load(f"{t}/ortc/capture/{next(e for e in index if 'Clip' in e['name'])['file']}")
torch_index = json.load(open(f"{t}/new/capture/index.json"))
relu6 = np.load(f"{t}/new/capture/{next(e for e in torch_index if e['type'] == 'ReLU6')['file']}")
d = np.abs(clip - relu6).max() / np.abs(relu6).max()
print(f"    first ReLU6: max |ORT - torch| / max |torch| = {d:.3g}")
assert d <= 1e-4
PY

check "onnx2torch: times.json names the conversion and its versions; every leaf module captured once" \
    $VENV - "$T" <<'PY'
import json, sys
from importlib import metadata
import numpy as np
import onnx, onnx2torch
t = sys.argv[1]
j = json.load(open(f"{t}/o2t/times.json"))
assert j["conversion"] == "onnx2torch" and j["onnx2torch"] == metadata.version("onnx2torch") == "1.5.15", j
assert j["onnx"] == onnx.__version__ and j["model"] == f"{t}/m.onnx" and j["version"].startswith("2.7.1"), j
model = onnx2torch.convert(onnx.load(f"{t}/m.onnx"))
leaves = {n: type(m).__name__ for n, m in model.named_modules() if not list(m.children())}
index = json.load(open(f"{t}/o2t/capture/index.json"))
assert sorted(e["module"] for e in index) == sorted(leaves) and len(index) == 170, len(index)
assert [e["index"] for e in index] == list(range(len(index)))
for e in index:
    a = np.load(f"{t}/o2t/capture/{e['file']}")
    assert list(a.shape) == e["shape"] and e["type"] == leaves[e["module"]], e
kinds = {e["type"] for e in index}
assert {"Conv2d", "ReLU6", "Linear"} <= kinds, kinds
state = {k: v for k, v in model.state_dict().items() if v.is_floating_point()}
params = json.load(open(f"{t}/o2t/capture/params.json"))
assert [p["name"] for p in params] == list(state) and params, len(params)
for p in params:
    assert np.array_equal(np.load(f"{t}/o2t/capture/{p['file']}"), state[p["name"]].numpy()), p
last = np.load(f"{t}/o2t/capture/{index[-1]['file']}")  # the classifier's Gemm: input 0's logits
assert index[-1]["type"] == "Linear" and np.array_equal(last[0], np.load(f"{t}/o2t/outputs.npy")[0])
print(f"    {len(index)} leaf outputs ({len(kinds)} module types), {len(params)} state-dict tensors")
PY

# Bad input: one error line, non-zero exit, for each runner.
$PY -c "import numpy as np; np.save('$T/small.npy', np.zeros((1, 3, 32, 32), np.float32)); np.save('$T/f64.npy', np.zeros((1, 3, 224, 224)))"
$NEW imagenet-export resnet18 --seed 1 --out "$T/r.onnx" --weights-out "$T/r.pt" >/dev/null 2>&1
D="--threads 1 --reps 1 --warmup 0 --out $T/bad"
for v in NEW OLD; do
    R=${!v}
    [ $v = NEW ] && v="torch 2.7.1" || v="torch 1.13"
    refuses "$v: missing inputs file" "cannot open inputs" $R delta --model mobilenet_v2 --weights "$T/m.pt" --inputs "$T/none.npy" $D
    refuses "$v: inputs of the wrong shape" "shape \[1, 3, 32, 32\].*\[n, 3, 224, 224\]" \
        $R delta --model mobilenet_v2 --weights "$T/m.pt" --inputs "$T/small.npy" $D
    refuses "$v: float64 inputs" "must be float32" $R delta --model mobilenet_v2 --weights "$T/m.pt" --inputs "$T/f64.npy" $D
    refuses "$v: unknown model" "unknown model vgg99" $R delta --model vgg99 --weights "$T/m.pt" --inputs "$T/x.npy" $D
    refuses "$v: weights of another model" "does not fit mobilenet_v2" \
        $R delta --model mobilenet_v2 --weights "$T/r.pt" --inputs "$T/x.npy" $D
    refuses "$v: weights that are no state dict" "not a PyTorch state dict" \
        $R delta --model mobilenet_v2 --weights "$T/m.onnx" --inputs "$T/x.npy" $D
    refuses "$v: missing weights" "cannot open weights" $R delta --model mobilenet_v2 --weights "$T/none.pt" --inputs "$T/x.npy" $D
    refuses "$v: --reps 0" "reps must be at least 1" \
        $R delta --model mobilenet_v2 --weights "$T/m.pt" --inputs "$T/x.npy" --threads 1 --reps 0 --warmup 0 --out "$T/bad"
done
check "no outputs left by the refused runs" test ! -e "$T/bad/times.json"
refuses "--onnx: a file that is no ONNX" "m.pt: not an ONNX model" $NEW delta --onnx "$T/m.pt" --inputs "$T/x.npy" $D
refuses "--onnx together with --model" "give one or the other" \
    $NEW delta --onnx "$T/m.onnx" --model mobilenet_v2 --inputs "$T/x.npy" $D
refuses "--onnx: missing file" "cannot open model" $NEW delta --onnx "$T/none.onnx" --inputs "$T/x.npy" $D
refuses "--onnx: inputs of the wrong shape" "shape \[1, 3, 32, 32\].*\[n, 3, 224, 224\]" \
    $NEW delta --onnx "$T/m.onnx" --inputs "$T/small.npy" $D
$VENV - "$T/nhwc.onnx" <<'PY'
import sys, onnx
from onnx import helper as h, TensorProto as TP
g = h.make_graph([h.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]),
                  h.make_node("GlobalAveragePool", ["t"], ["p"]), h.make_node("Flatten", ["p"], ["logits"])],
                 "nhwc", [h.make_tensor_value_info("x", TP.FLOAT, ["batch", 224, 224, 3])],
                 [h.make_tensor_value_info("logits", TP.FLOAT, ["batch", 3])])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), sys.argv[1])
PY
refuses "--onnx: NCHW inputs for an NHWC file (tf2onnx's form)" "inputs have shape \[.*, 3, 224, 224\], the model needs \[n, 224, 224, 3\]" \
    $NEW delta --onnx "$T/nhwc.onnx" --inputs "$T/x.npy" $D
$VENV -c "import numpy as np, sys; np.save(sys.argv[2], np.load(sys.argv[1]).transpose(0, 2, 3, 1).copy())" "$T/x.npy" "$T/x-nhwc.npy"
expect_ok "--onnx: an NHWC file runs on NHWC inputs" $NEW delta --onnx "$T/nhwc.onnx" --inputs "$T/x-nhwc.npy" \
    --out "$T/nhwc" --threads 1 --reps 1 --warmup 0
check "... to each channel's mean, as the file computes" $VENV -c "
import numpy as np, sys
x, y = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(not (y.shape == (len(x), 3) and np.abs(y - x.mean(axis=(1, 2))).max() <= 1e-5))" "$T/x-nhwc.npy" "$T/nhwc/outputs.npy"
refuses "--onnx under torch 1.13 (no onnx2torch): says where it runs" "bash runners/pytorch-python/install.sh" \
    $OLD delta --onnx "$T/m.onnx" --inputs "$T/x.npy" $D
$OLD delta --onnx "$T/m.onnx" --inputs "$T/x.npy" $D >/dev/null 2>&1
check "... with exit status 2" test $? -eq 2
check "no outputs left by the refused runs" test ! -e "$T/bad/times.json"
refuses "imagenet-export: neither --seed nor --weights-in" "exactly one of --seed" $NEW imagenet-export mobilenet_v2 --out "$T/z.onnx"
refuses "imagenet-export: weights of another model" "does not fit resnet18" \
    $NEW imagenet-export resnet18 --weights-in "$T/m.pt" --out "$T/z.onnx"
refuses "imagenet-export --dynamo below opset 18" "writes opset 18 or later" \
    $NEW imagenet-export mobilenet_v2 --seed 1 --dynamo --opset 17 --out "$T/z.onnx"
refuses "imagenet-export --dynamo under torch 1.13: says which torch has it" "has no dynamo exporter" \
    $OLD imagenet-export mobilenet_v2 --seed 1 --dynamo --opset 18 --out "$T/z.onnx"
expect_ok "imagenet-export --dynamo: the weights in a data file beside the model" \
    $NEW imagenet-export mobilenet_v2 --weights-in "$T/m.pt" --dynamo --opset 18 --out "$T/dyn.onnx"
check "... (dyn.onnx.data)" test -s "$T/dyn.onnx.data"
check "... and crossbind runs the file to the TorchScript export's outputs" $VENV -c "
import subprocess, sys, numpy as np
t = sys.argv[1]
for f in ('m', 'dyn'):
    subprocess.run([sys.argv[2], 'run', '--onnx', f'{t}/{f}.onnx', '--input', f'{t}/x.npy', '--output', f'{t}/{f}-out.npy'], check=True)
a, b = np.load(f'{t}/m-out.npy'), np.load(f'{t}/dyn-out.npy')
sys.exit(not (np.abs(a - b).max() <= 1e-4 * max(1.0, np.abs(a).max())))" "$T" "$PWD/build/crossbind"
# torchvision missing: a package that fails to import in its place
mkdir -p "$T/notv/torchvision"
echo 'raise ImportError("No module named torchvision")' >"$T/notv/torchvision/__init__.py"
refuses "torch 1.13 without torchvision: says which package to install" "apt-get install python3-torchvision" \
    env PYTHONPATH="$T/notv" $OLD delta --model mobilenet_v2 --weights "$T/m.pt" --inputs "$T/x.npy" $D
env PYTHONPATH="$T/notv" $OLD delta --model mobilenet_v2 --weights "$T/m.pt" --inputs "$T/x.npy" $D >/dev/null 2>&1
check "... with exit status 2" test $? -eq 2

O="--threads 1 --reps 1 --warmup 0 --out $T/bad"
refuses "ORT: missing inputs file" "cannot open inputs" $ORT delta --model "$T/m.onnx" --opt-level all --inputs "$T/none.npy" $O
refuses "ORT: inputs of the wrong shape" "shape \[1, 3, 32, 32\].*\[n, 3, 224, 224\]" \
    $ORT delta --model "$T/m.onnx" --opt-level all --inputs "$T/small.npy" $O
refuses "ORT: float64 inputs" "must be float32" $ORT delta --model "$T/m.onnx" --opt-level all --inputs "$T/f64.npy" $O
refuses "ORT: unknown opt-level" "unknown --opt-level 'layout'" $ORT delta --model "$T/m.onnx" --opt-level layout --inputs "$T/x.npy" $O
refuses "ORT: missing model file" "cannot open" $ORT delta --model "$T/none.onnx" --opt-level all --inputs "$T/x.npy" $O
refuses "ORT: a model file that is no ONNX" "not an ONNX model" $ORT delta --model "$T/m.pt" --opt-level all --inputs "$T/x.npy" $O
refuses "ORT: --warmup missing" "--warmup is required" \
    $ORT delta --model "$T/m.onnx" --opt-level all --inputs "$T/x.npy" --threads 1 --reps 1 --out "$T/bad"
check "no outputs left by the refused runs" test ! -e "$T/bad/times.json"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
