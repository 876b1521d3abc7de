#!/bin/bash
# The TVM runner of `crossbind delta` (runners/tvm/crossbind_tvm.py): one
# torchvision MobileNetV2 with seeded random weights exported to ONNX by the
# PyTorch runner, two random inputs, compiled by Apache TVM at opt_level 0
# and 3; checks the files it writes (shapes, times.json, the passes each
# level ran, which must differ), that its logits agree with ONNX Runtime's
# (max |a - b| / max |b| <= 1e-3; the measured figure is printed), --capture
# on a copy of the file with a few intermediate values added as graph
# outputs by name (checked against ONNX Runtime's capture of the same
# copy), and that bad input gets one error line and a non-zero exit. Prints
# each level's compile time and median latency, and "N passed, N failed".
# Needs runners/tvm/install.sh, runners/pytorch-python/install.sh and npm
# ci in runners/onnxruntime-node done.
set -u
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/crossbind-tvm-delta-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=runner-tvm-delta
. tests/lib.sh
TVMPY=runners/tvm/.venv/bin/python
TVM="$TVMPY runners/tvm/crossbind_tvm.py"
TORCH=runners/pytorch-python/.venv/bin/python
ORT="node runners/onnxruntime-node/crossbind_ort.js"

missing=""
$TVMPY -c 'import tvm, onnx' 2>/dev/null || missing="$missing; apache-tvm in $TVMPY (run: bash runners/tvm/install.sh)"
$TORCH -c 'import torch, torchvision, onnx' 2>/dev/null ||
    missing="$missing; torchvision and onnx in $TORCH (run: bash runners/pytorch-python/install.sh)"
[ -d runners/onnxruntime-node/node_modules/onnxruntime-node ] ||
    missing="$missing; onnxruntime-node (run: npm ci in runners/onnxruntime-node)"
if [ -n "$missing" ]; then
    echo "FAIL $SUITE: missing${missing#;}"
    echo "0 passed, 1 failed"; exit 1
fi

# refuses NAME NEEDLE CMD...: as expect_error, and stderr is that one line.
refuses() {
    local before=$fail
    expect_error "$@"
    if [ $fail -eq $before ] && [ "$(grep -c . "$T/err")" -ne 1 ]; then
        echo "FAIL $SUITE: $1: more than one line on stderr"; sed 's/^/    /' "$T/err" | head -5
        pass=$((pass - 1)); fail=$((fail + 1))
    fi
}

N_IN=2 REPS=3 WARMUP=1
expect_ok "mobilenet_v2 exported to ONNX by the PyTorch runner (seed 5)" \
    $TORCH runners/pytorch/crossbind_torch.py imagenet-export mobilenet_v2 --seed 5 --out "$T/m.onnx"
$TVMPY -c "import numpy as np; np.save('$T/x.npy', np.random.default_rng(7).standard_normal(($N_IN, 3, 224, 224)).astype(np.float32))"

# A few intermediate values as graph outputs that carry their name alone,
# as crossbind delta adds them: the first convolution and ReLU6, the first
# residual Add, the global pooling and the flattened features.
$TVMPY - "$T/m.onnx" "$T/mc.onnx" <<'PY'
import sys, onnx
m = onnx.load(sys.argv[1])
wanted, picked = ["Conv", "Clip", "Add", "GlobalAveragePool", "Flatten"], []
for n in m.graph.node:
    if n.op_type in wanted:
        wanted.remove(n.op_type)
        vi = onnx.ValueInfoProto()
        vi.name = n.output[0]
        m.graph.output.append(vi)
        picked.append(n.output[0])
assert len(picked) == 5, picked
onnx.save(m, sys.argv[2])
PY

RUN="--inputs $T/x.npy --threads 2 --reps $REPS --warmup $WARMUP"
for level in 0 3; do
    expect_ok "tvm: delta at opt_level $level" $TVM delta --model "$T/m.onnx" --opt-level $level $RUN --out "$T/tvm$level"
done
expect_ok "onnxruntime-node: delta at level all (the reference)" \
    $ORT delta --model "$T/m.onnx" --opt-level all $RUN --out "$T/ort"
expect_ok "tvm: delta at opt_level 3 with --capture (outputs with only a name)" \
    $TVM delta --model "$T/mc.onnx" --opt-level 3 --inputs "$T/x.npy" --threads 2 --reps 1 --warmup 0 --out "$T/tvmc" --capture
expect_ok "onnxruntime-node: the same copy with --capture" \
    $ORT delta --model "$T/mc.onnx" --opt-level all --inputs "$T/x.npy" --threads 2 --reps 1 --warmup 0 --out "$T/ortc" --capture

check "outputs.npy float32 [$N_IN, 1000] and times.json as the contract says, both levels" \
    $TVMPY - "$T" $N_IN $REPS $WARMUP <<'PY'
import json, os, sys
import numpy as np
t, n, reps, warmup = sys.argv[1], *map(int, sys.argv[2:])
for level in (0, 3):
    d = f"{t}/tvm{level}"
    y = np.load(f"{d}/outputs.npy")
    assert y.dtype == np.float32 and y.shape == (n, 1000) and np.isfinite(y).all(), (level, y.dtype, y.shape)
    j = json.load(open(f"{d}/times.json"))
    assert j["framework"] == "tvm" and j["version"] == "0.27.0.post1" and j["device"] == "cpu", j
    assert (j["opt_level"], j["reps"], j["warmup"], j["threads"], j["inputs"]) == (level, reps, warmup, 2, n), j
    assert len(j["per_input_s"]) == n and all(len(r) == reps for r in j["per_input_s"]), j["per_input_s"]
    assert all(0 < s < 60 for r in j["per_input_s"] for s in r) and 0 < j["first_call_s"] < 60, level
    assert 0 < j["compile_s"] < 600 and j["import_s"] > 0 and j["python"], level
    target = json.loads(j["target"])
    assert target["kind"] == "llvm" and target["mcpu"], target
    assert j["disabled_passes"] == [] and j["runtime_threads"] == 2, j
    assert "FuseOps" in j["passes"] and "LegalizeOps" in j["passes"], j["passes"]
    assert set(j["pass_runs"]) == set(j["passes"]) and all(c >= 1 for c in j["pass_runs"].values())
    assert not [f for f in os.listdir(d) if ".tmp." in f], level
PY

check "the levels ran different passes (level 3 adds FuseTIR's opt_level-1 passes) and fused (fewer kernels)" \
    $TVMPY - "$T" <<'PY'
import json, sys
t = sys.argv[1]
a, b = (json.load(open(f"{t}/tvm{level}/times.json")) for level in (0, 3))
added = [p for p in b["passes"] if p not in a["passes"]]
print(f"    opt_level 0: {len(a['passes'])} passes, {a['tir_kernels']} kernels; opt_level 3: {len(b['passes'])} "
      f"passes, {b['tir_kernels']} kernels; only at 3: {', '.join(added)}")
assert a["passes"] != b["passes"] and added
assert b["tir_kernels"] < a["tir_kernels"], (a["tir_kernels"], b["tir_kernels"])
PY

check "the logits agree with ONNX Runtime's: max |a - b| / max |b| <= 1e-3" $TVMPY - "$T" <<'PY'
import sys
import numpy as np
t = sys.argv[1]
ref = np.load(f"{t}/ort/outputs.npy")
ok = True
for v in ("tvm0", "tvm3", "tvmc"):
    y = np.load(f"{t}/{v}/outputs.npy")
    d = np.abs(y - ref).max() / np.abs(ref).max()
    print(f"    {v:5s} max |diff| {np.abs(y - ref).max():.3g}, relative to max |logit| {d:.3g}, "
          f"same top-1 {int((y.argmax(1) == ref.argmax(1)).sum())}/{len(y)}")
    ok &= bool(d <= 1e-3)
sys.exit(0 if ok else 1)
PY

check "capture: the 5 added outputs in graph order, as ONNX Runtime writes them, within 1e-4 of its values" \
    $TVMPY - "$T" <<'PY'
import json, sys
import numpy as np
import onnx
t = sys.argv[1]
names = [o.name for o in onnx.load(f"{t}/mc.onnx").graph.output][1:]
tvm, ort = (json.load(open(f"{t}/{v}/capture/index.json")) for v in ("tvmc", "ortc"))
assert [e["name"] for e in tvm] == names and [e["index"] for e in tvm] == list(range(5)), tvm
for e, o in zip(tvm, ort):
    assert set(e) == {"index", "name", "shape", "dtype", "file"} and e["file"] == f"{e['index']:04d}.npy", e
    a, b = np.load(f"{t}/tvmc/capture/{e['file']}"), np.load(f"{t}/ortc/capture/{o['file']}")
    assert list(a.shape) == e["shape"] == o["shape"] and a.dtype.name == e["dtype"] == "float32", (e, o)
    d = np.abs(a - b).max() / max(np.abs(b).max(), 1e-30)
    print(f"    {e['name']}: {e['shape']}, max |TVM - ORT| / max |ORT| = {d:.3g}")
    assert d <= 1e-4, e
PY

$TVMPY -c "import numpy as np; np.save('$T/small.npy', np.zeros((1, 3, 32, 32), np.float32)); np.save('$T/f64.npy', np.zeros((1, 3, 224, 224)))"
O="--threads 1 --reps 1 --warmup 0 --out $T/bad"
refuses "missing model file" "cannot open model .*none.onnx: no such file" \
    $TVM delta --model "$T/none.onnx" --opt-level 2 --inputs "$T/x.npy" $O
refuses "a model file that is no ONNX" "not an ONNX model" $TVM delta --model "$T/x.npy" --opt-level 2 --inputs "$T/x.npy" $O
refuses "inputs of the wrong shape" "shape \[1, 3, 32, 32\].*\[n, 3, 224, 224\]" \
    $TVM delta --model "$T/m.onnx" --opt-level 2 --inputs "$T/small.npy" $O
refuses "float64 inputs" "must be float32" $TVM delta --model "$T/m.onnx" --opt-level 2 --inputs "$T/f64.npy" $O
refuses "missing inputs file" "cannot open inputs" $TVM delta --model "$T/m.onnx" --opt-level 2 --inputs "$T/none.npy" $O
refuses "opt_level 5" "unknown --opt-level '5'" $TVM delta --model "$T/m.onnx" --opt-level 5 --inputs "$T/x.npy" $O
refuses "opt_level O2 (the level is a number)" "unknown --opt-level 'O2'" \
    $TVM delta --model "$T/m.onnx" --opt-level O2 --inputs "$T/x.npy" $O
refuses "--reps 0" "reps must be at least 1" \
    $TVM delta --model "$T/m.onnx" --opt-level 2 --inputs "$T/x.npy" --threads 1 --reps 0 --warmup 0 --out "$T/bad"
refuses "--warmup missing" "required: --warmup" \
    $TVM delta --model "$T/m.onnx" --opt-level 2 --inputs "$T/x.npy" --threads 1 --reps 1 --out "$T/bad"
check "no outputs left by the refused runs" test ! -e "$T/bad/times.json"

$TVMPY - "$T" <<'PY'
import json, statistics, sys
t = sys.argv[1]
for level in (0, 3):
    j = json.load(open(f"{t}/tvm{level}/times.json"))
    med = statistics.median(s for row in j["per_input_s"] for s in row)
    print(f"    mobilenet_v2 at opt_level {level}: compile {j['compile_s']:.1f} s, first call "
          f"{j['first_call_s'] * 1e3:.1f} ms, median {med * 1e3:.1f} ms ({j['target']}, {j['threads']} threads)")
PY
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
