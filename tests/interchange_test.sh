#!/bin/bash
# Model interchange end to end, against the other bindings:
#  - the cross-binding inference experiment (both directions, every binding
#    and load mode) must be "reproduced" everywhere it is supported;
#  - an nn.Sequential LeNet-5 state dict and its torch.onnx.export evaluate
#    in crossbind to PyTorch's exact correct count;
#  - files crossbind writes load in PyTorch (torch.load weights_only) and pass
#    onnx.checker, and `crossbind run` matches ONNX Runtime on an ONNX file;
#  - hostile and malformed files fail with one clear error, running nothing.
# Usage: tests/interchange_test.sh BUILD_DIR   (prints "N passed, N failed")
set -u
cd "$(dirname "$0")/.."
BIN="$PWD/$1/crossbind"
T=$(mktemp -d /tmp/crossbind-xchg-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=interchange
source tests/lib.sh
PY=/usr/bin/python3
TORCH="$PY runners/pytorch/crossbind_torch.py"
ORT="node runners/onnxruntime-node/crossbind_ort.js"
DATA=/usr/share/datasets/fashion-mnist
LIM="--limit-test 1000"

# 1. The cross-binding experiment, short schedule: `crossbind study` with the
#    three bindings, each alone in its framework, so that every binding loads
#    both trainers' models (PyTorch's, the reference, and crossbind's) in
#    every format it reads; each binding starts from its own initialisation.
cat > "$T/xb.json" <<'JSON'
{"models": ["lenet1", "lenet5"], "bindings": ["crossbind", "pytorch", "onnxruntime-node"], "reference": "pytorch",
 "runs": 2, "epochs": 1, "limit_train": 3000, "limit_test": 1000, "repeat": 2, "threads": 2, "timeout_s": 900}
JSON
expect_ok "cross-binding experiment (crossbind study): every supported cell reproduced" \
    "$BIN" study --profile "$T/xb.json" --store "$T/xb/study.sqlite" --report "$T/xb/report"
check "matrix covers 3 bindings x 2 models x 2 trainers with the expected support" $PY - "$T/xb/study.sqlite" <<'PY'
import sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute(
    "select trainer, binding, model, run, format, status, correct, reference_correct, stable, label_agreement, "
    "max_abs_logit_diff from inference").fetchall()
ok = {(t, b, m, f) for t, b, m, r, f, st, c, ref, stable, *_ in rows if st == "ok" and c == ref and stable == 1}
unsup = {(b, f) for t, b, m, r, f, st, *_ in rows if st == "unsupported"}
for t in ("pytorch", "crossbind"):
    for m in ("lenet1", "lenet5"):
        for b, f in (("crossbind", "pt"), ("crossbind", "safetensors"), ("crossbind", "onnx"),
                     ("pytorch", "pt"), ("pytorch", "safetensors"), ("onnxruntime-node", "onnx")):
            assert (t, b, m, f) in ok, (t, b, m, f)
        assert ("pytorch", "pytorch", m, "ts") in ok
assert ("pytorch", "onnx") in unsup and ("onnxruntime-node", "pt") in unsup and ("crossbind", "ts") in unsup, unsup
assert not [r for r in rows if r[5] not in ("ok", "unsupported")], "a failed evaluation"
for r in rows:
    if r[5] == "ok":
        assert r[9] == 1.0 and r[10] < 1e-4, r
assert len({r[3] for r in rows}) == 2, "two runs"
PY

# 2. nn.Sequential LeNet-5 (keys 0.weight ...): parameters by order, and its ONNX export.
expect_ok "PyTorch trains an nn.Sequential LeNet-5" $TORCH train lenet5 --arch lenet5-sequential --epochs 1 \
    --limit-train 3000 $LIM --out "$T/seq" --quiet --threads 2
want=$($PY -c "import json; print(json.load(open('$T/seq/run.json'))['test_correct'])")
check "its state dict has nn.Sequential keys" $PY -c "
import torch; k=list(torch.load('$T/seq/final.pt')); assert k[0]=='0.weight' and k[-1].endswith('.bias') and 'conv1.weight' not in k, k"
expect_ok "crossbind evaluates the nn.Sequential state dict" "$BIN" eval lenet5 --weights "$T/seq/final.pt" $LIM --repeat 1 --json
check "  ... to PyTorch's exact correct count ($want)" $PY -c "import json; assert json.load(open('$T/out'))['correct']==$want"
check "  ... with a notice that names were matched by order" grep -q "loaded by order" "$T/err"
expect_ok "crossbind evaluates torch.onnx.export's file" "$BIN" eval --weights "$T/seq/final.onnx" $LIM --repeat 1 --json
check "  ... to PyTorch's exact correct count ($want)" $PY -c "import json; assert json.load(open('$T/out'))['correct']==$want"
$PY - "$T/seq" <<'PY'
import sys, torch
sys.path.insert(0, "runners/pytorch")
import crossbind_torch as ct
m = ct.lenet5_sequential(); m.load_state_dict(torch.load(sys.argv[1] + "/final.pt")); m.eval()
torch.onnx.export(m, torch.zeros(1, 1, 28, 28), sys.argv[1] + "/static.onnx", opset_version=13)
PY
expect_error "a fixed-batch ONNX file asks for its batch size" "fixes the batch size to 1" \
    "$BIN" eval --weights "$T/seq/static.onnx" $LIM
expect_ok "  ... and evaluates at that batch size" "$BIN" eval lenet5 --weights "$T/seq/static.onnx" --limit-test 200 --batch 1 --repeat 1

# 3. crossbind's files in the other bindings.
expect_ok "crossbind trains and saves every format" "$BIN" train lenet1 --epochs 1 --limit-train 2000 $LIM --out "$T/cb" --quiet
check "torch.load(weights_only=True) reads crossbind's state dict, equal to its safetensors" $PY - "$T/cb" <<'PY'
import sys, numpy as np, torch
sys.path.insert(0, "runners/pytorch")
import cb_safetensors
sd = torch.load(sys.argv[1] + "/final.pt", weights_only=True)
st, _ = cb_safetensors.read(sys.argv[1] + "/final.safetensors")
assert list(sd) == list(st), (list(sd), list(st))
for k in sd:
    assert np.array_equal(sd[k].numpy(), st[k]), k
PY
check "onnx.checker (full check) accepts crossbind's ONNX export" $PY -c "
import onnx; m=onnx.load('$T/cb/final.onnx'); onnx.checker.check_model(m, full_check=True); assert m.opset_import[0].version==13"
$PY -c "import numpy as np; np.save('$T/x.npy', np.random.RandomState(5).rand(37,1,28,28).astype(np.float32))"
expect_ok "crossbind run on an ONNX file" "$BIN" run --onnx "$T/cb/final.onnx" --input "$T/x.npy" --output "$T/y_cb.npy"
expect_ok "ONNX Runtime runs crossbind's ONNX export" $ORT run --onnx "$T/cb/final.onnx" --input "$T/x.npy" --output "$T/y_ort.npy"
check "crossbind run matches ONNX Runtime within 1e-5" $PY -c "
import numpy as np; a=np.load('$T/y_cb.npy'); b=np.load('$T/y_ort.npy'); assert a.shape==b.shape==(37,10); d=np.abs(a-b).max(); print('    max abs diff', d); assert d<1e-5"
expect_ok "crossbind run in parameters mode agrees with the ONNX run" "$BIN" run lenet1 --weights "$T/cb/final.pt" --input "$T/x.npy" --output "$T/y_pt.npy"
check "  ... exactly" cmp -s "$T/y_pt.npy" "$T/y_cb.npy"
expect_ok "convert: state dict to ONNX to safetensors" "$BIN" convert lenet1 "$T/cb/final.pt" "$T/c.onnx" --to onnx
expect_ok "  ..." "$BIN" convert "$T/c.onnx" "$T/c.safetensors" --to safetensors
check "  ... keeps every parameter bit for bit" $PY - "$T/c.safetensors" "$T/cb/final.safetensors" <<'PY'
import sys, numpy as np
sys.path.insert(0, "runners/pytorch")
import cb_safetensors
a, _ = cb_safetensors.read(sys.argv[1]); b, _ = cb_safetensors.read(sys.argv[2])
assert sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)
PY

check "the PyTorch runner's safetensors keep 0-d tensors (BatchNorm's counters)" $PY -c "
import sys, numpy as np; sys.path.insert(0, 'runners/pytorch'); import cb_safetensors as s
s.write('$T/zero-d.safetensors', {'n': np.array(7, dtype=np.int64)}); t, _ = s.read('$T/zero-d.safetensors')
assert t['n'].shape == () and int(t['n']) == 7, t['n'].shape"

# 4. Hostile and malformed files.
$PY - "$T" <<'PY'
import os, pickle, sys, zipfile, numpy as np, torch, onnx
from onnx import helper, TensorProto
t = sys.argv[1]
class Evil:
    def __reduce__(self):
        return (os.system, (f"touch {t}/pwned",))
with zipfile.ZipFile(f"{t}/evil.pt", "w") as z:
    z.writestr("evil/data.pkl", pickle.dumps({"conv1.weight": Evil()}, protocol=2))
    z.writestr("evil/version", "3\n")
blob = open(f"{t}/cb/final.pt", "rb").read()
open(f"{t}/truncated.pt", "wb").write(blob[: len(blob) // 2])
import collections
torch.save(collections.OrderedDict(w=torch.ones(2)), f"{t}/legacy.pt", _use_new_zipfile_serialization=False)
sd = torch.load(f"{t}/cb/final.pt"); sd["conv1.weight"] = torch.zeros(8, 1, 5, 5)
torch.save(sd, f"{t}/wrong_shape.pt")
# safetensors whose offsets point past the end of the file
hdr = b'{"conv1.weight":{"dtype":"F32","shape":[4],"data_offsets":[400,416]}}'
open(f"{t}/outside.safetensors", "wb").write(len(hdr).to_bytes(8, "little") + hdr + b"\0" * 16)
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
cyc = helper.make_graph([helper.make_node("Tanh", ["b"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
                         helper.make_node("Sigmoid", ["b"], ["y"])], "cycle", [x], [y])
open(f"{t}/cycle.onnx", "wb").write(helper.make_model(cyc, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
unk = helper.make_graph([helper.make_node("Erf", ["x"], ["y"])], "unknown", [x], [y])
open(f"{t}/unknown_op.onnx", "wb").write(helper.make_model(unk, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
w = helper.make_tensor("w", TensorProto.FLOAT, [4, 4], np.zeros(16, np.float32).tobytes(), raw=True)
w.raw_data = np.zeros(4, np.float32).tobytes()  # the data now disagrees with the dims
g = helper.make_graph([helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)], "short", [x], [y], [w])
open(f"{t}/short_data.onnx", "wb").write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
np.save(f"{t}/wrong_shape.npy", np.zeros((3, 1, 27, 28), np.float32))
b = open(f"{t}/x.npy", "rb").read(); open(f"{t}/truncated.npy", "wb").write(b[:-100])
PY
expect_error "a pickle whose __reduce__ calls os.system is refused" "posix.system.*refused" \
    "$BIN" eval lenet5 --weights "$T/evil.pt" $LIM
check "  ... and nothing ran" test ! -e "$T/pwned"
expect_error "truncated state dict" "zip" "$BIN" eval lenet1 --weights "$T/truncated.pt" $LIM
expect_error "legacy (pre-1.6) torch.save file" "legacy" "$BIN" eval lenet1 --weights "$T/legacy.pt" $LIM
expect_error "state dict with the wrong channel count" "conv1.weight.*\[8,1,5,5\]" \
    "$BIN" eval lenet1 --weights "$T/wrong_shape.pt" $LIM
expect_error "safetensors offsets outside the file" "data_offsets" "$BIN" eval lenet1 --weights "$T/outside.safetensors" $LIM
expect_error "ONNX graph with a cycle" "cycle" "$BIN" run --onnx "$T/cycle.onnx" --input "$T/x.npy" --output "$T/o.npy"
expect_error "ONNX graph with an unknown op" "operator Erf" "$BIN" run --onnx "$T/unknown_op.onnx" --input "$T/x.npy" --output "$T/o.npy"
"$BIN" eval lenet1 --weights "$T/unknown_op.onnx" $LIM >"$T/out" 2>"$T/err"
rc=$?
check "eval of a sound file with an operator crossbind lacks exits 3 (a runner's 'cannot evaluate this file')" \
    test $rc = 3 -a -n "$(grep 'operator Erf' "$T/err")"
expect_error "ONNX tensor whose data disagrees with its dims" "declares 16 elements but holds 4" \
    "$BIN" run --onnx "$T/short_data.onnx" --input "$T/x.npy" --output "$T/o.npy"
expect_error "run: input of the wrong shape" "must have shape \[batch,1,28,28\]" \
    "$BIN" run --onnx "$T/cb/final.onnx" --input "$T/wrong_shape.npy" --output "$T/o.npy"
expect_error "run: truncated .npy" "truncated" "$BIN" run --onnx "$T/cb/final.onnx" --input "$T/truncated.npy" --output "$T/o.npy"
check "  ... and no output file was written" test ! -e "$T/o.npy"
expect_error "parameters file without a model name" "name the model" "$BIN" eval --weights "$T/cb/final.pt" $LIM
expect_error "convert: unknown target" "--to must be" "$BIN" convert lenet1 "$T/cb/final.pt" "$T/z" --to tflite
expect_error "ONNX Runtime runner refuses a state dict" "serialization mode only" $ORT eval lenet1 --weights "$T/cb/final.pt"
expect_error "PyTorch runner reports ONNX as unsupported" "unsupported load mode" $TORCH eval lenet1 --weights "$T/cb/final.onnx"

# torch_export_runs NAME LABEL OP...: $T/NAME.onnx, exported by PyTorch beside
# NAME_x.npy and PyTorch's logits NAME_torch.npy, runs at every level to
# those logits (tests/README.md: atol 1e-5, rtol 1e-4); its plan names each
# OP (a grep pattern); crossbind's own ONNX export of it passes onnx.checker
# and runs to the same bits.
torch_export_runs() {
    local name=$1 label=$2 level op
    shift 2
    for level in reference fast fused fastmath; do
        expect_ok "$label (torch.onnx.export) runs at level $level" \
            "$BIN" run --onnx "$T/$name.onnx" --input "$T/${name}_x.npy" --output "$T/${name}_$level.npy" --level $level
        check "  ... to PyTorch's logits" $PY -c "
import numpy as np; a = np.load('$T/${name}_$level.npy'); b = np.load('$T/${name}_torch.npy')
assert a.shape == b.shape and np.allclose(a, b, rtol=1e-4, atol=1e-5), np.abs(a - b).max()"
    done
    expect_ok "  ... its plan prints" "$BIN" plan "$T/$name.onnx" --batch 4 --threads 2
    for op in "$@"; do check "  ... and names '$op'" grep -q -- "$op" "$T/out"; done
    expect_ok "  ... it converts back to ONNX" "$BIN" convert "$T/$name.onnx" "$T/${name}2.onnx" --to onnx
    check "  ... which passes onnx.checker" $PY -c "import onnx; onnx.checker.check_model(onnx.load('$T/${name}2.onnx'))"
    expect_ok "  ... and runs" "$BIN" run --onnx "$T/${name}2.onnx" --input "$T/${name}_x.npy" --output "$T/${name}2.npy"
    check "  ... to the same logits, bit for bit" cmp "$T/${name}_fastmath.npy" "$T/${name}2.npy"
}

# 5. A residual network as PyTorch exports it (a small ResNet: stride-2
#    7x7 stem, basic blocks with identity and 1x1 stride-2 shortcuts, Add,
#    GlobalAveragePool), random weights and batch-norm statistics: crossbind
#    at every level against PyTorch's logits, as tests/README.md's rule.
$PY - "$T" <<'PYRES'
import sys, torch, numpy as np, torch.nn as nn
torch.manual_seed(7)
def bn(c):
    b = nn.BatchNorm2d(c); b.running_mean.uniform_(-0.5, 0.5); b.running_var.uniform_(0.5, 2.0)
    b.weight.data.uniform_(0.5, 1.5); b.bias.data.uniform_(-0.2, 0.2); return b
class Block(nn.Module):
    def __init__(s, cin, cout, stride):
        super().__init__()
        s.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False); s.bn1 = bn(cout)
        s.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False); s.bn2 = bn(cout)
        s.down = None if stride == 1 and cin == cout else nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), bn(cout))
    def forward(s, x):
        y = torch.relu(s.bn1(s.conv1(x)))
        y = s.bn2(s.conv2(y))
        return torch.relu(y + (x if s.down is None else s.down(x)))
class Net(nn.Module):
    def __init__(s):
        super().__init__()
        s.stem = nn.Sequential(nn.Conv2d(3, 8, 7, 2, 3, bias=False), bn(8), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        s.layer1 = Block(8, 8, 1); s.layer2 = Block(8, 16, 2)
        s.pool = nn.AdaptiveAvgPool2d((1, 1)); s.fc = nn.Linear(16, 10)
    def forward(s, x): return s.fc(torch.flatten(s.pool(s.layer2(s.layer1(s.stem(x)))), 1))
m = Net().eval()
x = torch.randn(5, 3, 64, 64)
np.save(sys.argv[1] + "/res_x.npy", x.numpy())
with torch.no_grad(): np.save(sys.argv[1] + "/res_torch.npy", m(x).numpy())
torch.onnx.export(m, x, sys.argv[1] + "/res.onnx", opset_version=13, input_names=["x"], output_names=["logits"],
                  dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
PYRES
torch_export_runs res "a small ResNet" " add " "global_avgpool"

# 6. MobileNetV2's building blocks as PyTorch exports them: inverted
#    residuals (1x1 expansion, 3x3 depthwise convolution, ReLU6 as Clip, 1x1
#    projection, the residual Add), a grouped (not depthwise) 3x3
#    convolution, global pooling, dropout and a final Softmax; every level
#    against PyTorch. (Padding modes are section 7's.)
$PY - "$T" <<'PYMOB'
import sys, torch, numpy as np, torch.nn as nn
torch.manual_seed(11)
def bn(c):
    b = nn.BatchNorm2d(c); b.running_mean.uniform_(-0.5, 0.5); b.running_var.uniform_(0.5, 2.0)
    b.weight.data.uniform_(0.5, 1.5); b.bias.data.uniform_(-0.2, 0.2); return b
class IR(nn.Module):
    def __init__(s, cin, cout, stride, t):
        super().__init__()
        hid = cin * t
        layers = [nn.Conv2d(cin, hid, 1, bias=False), bn(hid), nn.ReLU6()] if t != 1 else []
        layers += [nn.Conv2d(hid, hid, 3, stride, 1, groups=hid, bias=False), bn(hid), nn.ReLU6(),
                   nn.Conv2d(hid, cout, 1, bias=False), bn(cout)]
        s.conv = nn.Sequential(*layers); s.res = stride == 1 and cin == cout
    def forward(s, x): return x + s.conv(x) if s.res else s.conv(x)
m = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), bn(16), nn.ReLU6(), IR(16, 8, 1, 1), IR(8, 12, 2, 6),
                  IR(12, 12, 1, 6), nn.Conv2d(12, 12, 3, 1, 1, groups=3), nn.ReLU(), nn.Conv2d(12, 32, 1, bias=False),
                  bn(32), nn.ReLU6(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(32, 10),
                  nn.Softmax(dim=1)).eval()
x = torch.randn(4, 3, 48, 48) * 2
np.save(sys.argv[1] + "/mob_x.npy", x.numpy())
with torch.no_grad(): np.save(sys.argv[1] + "/mob_torch.npy", m(x).numpy())
torch.onnx.export(m, x, sys.argv[1] + "/mob.onnx", opset_version=13, input_names=["x"], output_names=["logits"],
                  dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
PYMOB
torch_export_runs mob "MobileNetV2's blocks" "grouped" " clip " " softmax "

# 7. Dilated convolutions (plain and grouped, unequal dilations) and the
#    reflect and edge (PyTorch: replicate) padding modes as PyTorch exports
#    them, every level against PyTorch. torch 1.13 writes F.pad's pads as a
#    chain of constant shape arithmetic (ConstantOfShape, Concat, Reshape,
#    Slice, Transpose, Cast), which the importer folds.
$PY - "$T" <<'PYDIL'
import sys, torch, numpy as np, torch.nn as nn
torch.manual_seed(13)
m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=2, dilation=2), nn.ReLU(), nn.ReflectionPad2d((1, 2, 3, 0)),
                  nn.Conv2d(8, 8, 3, dilation=(1, 2), groups=2), nn.Tanh(), nn.ReplicationPad2d((2, 1, 0, 1)),
                  nn.Conv2d(8, 6, 3, stride=2, dilation=3), nn.Flatten(), nn.Linear(6 * 6 * 7, 5)).eval()
x = torch.randn(4, 3, 17, 16)
assert m(x).shape == (4, 5)
np.save(sys.argv[1] + "/dil_x.npy", x.numpy())
with torch.no_grad(): np.save(sys.argv[1] + "/dil_torch.npy", m(x).numpy())
torch.onnx.export(m, x, sys.argv[1] + "/dil.onnx", opset_version=13, input_names=["x"], output_names=["logits"],
                  dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
import onnx
assert {"ConstantOfShape", "Slice", "Cast"} <= {n.op_type for n in onnx.load(sys.argv[1] + "/dil.onnx").graph.node}
PYDIL
torch_export_runs dil "dilated convolutions and reflect / edge padding" "grouped" " pad "

# 7b. Pooling with ceil_mode as PyTorch exports it: the last window reaches
#    past the end (a max pooling's -infinity border, an average pooling
#    leaving padding out of its count) where the output size rounds up,
#    and not where that window would start in the padding (the second max
#    pooling's width: 3 outputs, not 4); every level against PyTorch. An
#    average pooling counting its padding is refused where ceil_mode
#    would count the extra end too.
$PY - "$T" <<'PYCEIL'
import sys, torch, numpy as np, torch.nn as nn
torch.manual_seed(17)
m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.MaxPool2d(3, 2, ceil_mode=True), nn.ReLU(),
                  nn.AvgPool2d(3, 2, padding=1, ceil_mode=True, count_include_pad=False),
                  nn.MaxPool2d(2, 2, padding=1, ceil_mode=True), nn.Flatten(), nn.Linear(8 * 4 * 3, 5)).eval()
x = torch.randn(4, 3, 22, 21)
assert m[:5](x).shape == (4, 8, 4, 3) and m[:2](x).shape == (4, 8, 10, 9)
np.save(sys.argv[1] + "/ceil_x.npy", x.numpy())
with torch.no_grad(): np.save(sys.argv[1] + "/ceil_torch.npy", m(x).numpy())
torch.onnx.export(m, x, sys.argv[1] + "/ceil.onnx", opset_version=13, input_names=["x"], output_names=["logits"],
                  dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
# torch 1.13 writes an average pooling counting its padding as a Pad node
# and a pooling that counts no padding: PyTorch's divisor, which counts the
# padding but not ceil_mode's extra end
c = nn.Sequential(nn.AvgPool2d(3, 2, padding=1, ceil_mode=True, count_include_pad=True)).eval()
xc = torch.randn(2, 3, 10, 10)
np.save(sys.argv[1] + "/counted_x.npy", xc.numpy())
with torch.no_grad(): np.save(sys.argv[1] + "/counted_torch.npy", c(xc).numpy())
torch.onnx.export(c, xc, sys.argv[1] + "/counted.onnx", opset_version=13, input_names=["x"],
                  output_names=["logits"], dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
import onnx
from onnx import helper, TensorProto
node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                        ceil_mode=1, count_include_pad=1)
g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 10, 10])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1] + "/ceil_counting.onnx")
PYCEIL
torch_export_runs ceil "pooling with ceil_mode" "maxpool" "avgpool"
torch_export_runs counted "average pooling counting its padding with ceil_mode" " pad "
expect_error "an AveragePool counting its padding with ceil_mode past it: refused" "count_include_pad 1" \
    "$BIN" run --onnx "$T/ceil_counting.onnx" --input "$T/counted_x.npy" --output "$T/ceil_no.npy"

# 7c. A per-channel input normalisation written channel by channel, as
#    torchvision's Inception-v3 and GoogLeNet with transform_input (their
#    pretrained form) write it: Gather of one channel, Unsqueeze, Mul, Add,
#    Sub and Div of scalars (in any order), Concat; one 1x1 convolution (depthwise
#    with the channels in order; dense where they come back reordered, a
#    scalar first in a Mul), every level against PyTorch. A channel read
#    by anything else, or concatenated with another tensor's, is refused.
$PY - "$T" <<'PYCHAN'
import sys, torch, numpy as np, torch.nn as nn
torch.manual_seed(19)
class Norm(nn.Module):
    def __init__(s, order): super().__init__(); s.order = order
    def forward(s, x):
        c0 = torch.unsqueeze(x[:, 0], 1) * (0.229 / 0.5) + (0.485 - 0.5) / 0.5
        c1 = 0.1 - 1.5 * (x[:, [1]] + 0.25)  # an index of shape [1]: the channel axis kept
        c2 = (torch.unsqueeze(x[:, 2], 1) - 0.406) / 0.225
        return torch.cat([(c0, c1, c2)[k] for k in s.order], 1)
for name, order in (("chan", (0, 1, 2)), ("bgr", (2, 1, 0))):
    m = nn.Sequential(Norm(order), nn.Conv2d(3, 8, 3), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True), nn.Flatten(),
                      nn.Linear(8 * 7 * 7, 5)).eval()
    x = torch.randn(4, 3, 16, 16)
    np.save(f"{sys.argv[1]}/{name}_x.npy", x.numpy())
    with torch.no_grad(): np.save(f"{sys.argv[1]}/{name}_torch.npy", m(x).numpy())
    torch.onnx.export(m, x, f"{sys.argv[1]}/{name}.onnx", opset_version=13, input_names=["x"],
                      output_names=["logits"], dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
class Whole(nn.Module):  # the same maps of whole tensors: one value per channel, or a scalar
    def __init__(s):
        super().__init__()
        s.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        s.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1))
        s.conv = nn.Conv2d(3, 4, 3)
    def forward(s, x):
        y = s.conv((x - s.mean) / s.std)
        return 0.5 - torch.relu(y * 2.0 + 0.25) * s.mean.view(3, 1, 1)[:1]
m = nn.Sequential(Whole(), nn.Flatten(), nn.Linear(4 * 14 * 14, 5)).eval()
x = torch.randn(4, 3, 16, 16)
np.save(f"{sys.argv[1]}/whole_x.npy", x.numpy())
with torch.no_grad(): np.save(f"{sys.argv[1]}/whole_torch.npy", m(x).numpy())
torch.onnx.export(m, x, f"{sys.argv[1]}/whole.onnx", opset_version=13, input_names=["x"],
                  output_names=["logits"], dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
class Rows(nn.Module):
    def forward(s, x): return x * torch.arange(16.0)
class Stray(nn.Module):
    def forward(s, x): return torch.relu(torch.unsqueeze(x[:, 0], 1))
class Mixed(nn.Module):
    def forward(s, x): return torch.cat((torch.unsqueeze(x[:, 0], 1) * 2.0, torch.relu(x)), 1)
for name, m in (("stray", Stray()), ("mixed", Mixed()), ("rows", Rows())):
    torch.onnx.export(m, torch.randn(1, 3, 16, 16), f"{sys.argv[1]}/{name}.onnx", opset_version=13,
                      input_names=["x"], output_names=["y"])
PYCHAN
torch_export_runs chan "a per-channel input normalisation (torchvision's transform_input)" "grouped"
torch_export_runs bgr "... its channels reordered" "conv2d"
torch_export_runs whole "(x - mean) / std and scalar maps of whole tensors" "grouped"
expect_error "a constant of one value per column (not per channel): refused" "one value per channel" \
    "$BIN" run --onnx "$T/rows.onnx" --input "$T/chan_x.npy" --output "$T/no.npy"
expect_error "one channel of a tensor read by a ReLU: refused" "one channel of a tensor" \
    "$BIN" run --onnx "$T/stray.onnx" --input "$T/chan_x.npy" --output "$T/no.npy"
expect_error "one channel concatenated with another tensor: refused" "only with other channels of the same tensor" \
    "$BIN" run --onnx "$T/mixed.onnx" --input "$T/chan_x.npy" --output "$T/no.npy"

# 8. Constant shape arithmetic folded at import, checked against numpy: a
#    Pad whose pads come through Transpose, Reshape, Slice with negative
#    steps (twice, back to the original order), Gather, Unsqueeze, Squeeze,
#    ConstantOfShape, Concat and two Casts; reflect and edge modes. A
#    ConstantOfShape asking for 2^40 elements is refused with a message.
$PY - "$T" <<'PYFOLD'
import sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
T = sys.argv[1]
def const(name, arr): return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(arr), name))
def model(mode, huge=False):
    nodes = [const("base", np.array([[0, 0], [0, 0], [1, 2], [3, 1]], np.int64)),
             helper.make_node("Transpose", ["base"], ["t"], perm=[1, 0]),
             const("flat", np.array([-1], np.int64)), helper.make_node("Reshape", ["t", "flat"], ["r"]),
             const("s0", np.array([-1], np.int64)), const("e0", np.array([-100], np.int64)),
             const("ax", np.array([0], np.int64)), const("st", np.array([-1], np.int64)),
             helper.make_node("Slice", ["r", "s0", "e0", "ax", "st"], ["rev"]),
             helper.make_node("Slice", ["rev", "s0", "e0", "ax", "st"], ["rev2"]),
             const("idx", np.arange(8, dtype=np.int64)), helper.make_node("Gather", ["rev2", "idx"], ["g"], axis=0),
             helper.make_node("Unsqueeze", ["g", "ax"], ["u"]), helper.make_node("Squeeze", ["u", "ax"], ["sq"]),
             const("one", np.array([1 << 40 if huge else 1], np.int64)),
             helper.make_node("ConstantOfShape", ["one"], ["zero"], value=numpy_helper.from_array(np.array([0], np.int64))),
             helper.make_node("Concat", ["sq", "zero"], ["cat"], axis=0),
             const("b8", np.array([0], np.int64)), const("e8", np.array([8], np.int64)),
             helper.make_node("Slice", ["cat", "b8", "e8"], ["pads8"]),
             helper.make_node("Cast", ["pads8"], ["pf"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["pf"], ["pads"], to=TensorProto.INT64),
             helper.make_node("Pad", ["x", "pads"], ["y"], mode=mode)]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 5, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2, 8, 10])
    m = helper.make_model(helper.make_graph(nodes, "fold", [x], [y]), opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    return m
x = np.random.default_rng(5).standard_normal((3, 2, 5, 6)).astype(np.float32)
np.save(f"{T}/fold_x.npy", x)
for mode in ("reflect", "edge"):
    onnx.save(model(mode), f"{T}/fold_{mode}.onnx")
    np.save(f"{T}/fold_{mode}_want.npy", np.pad(x, ((0, 0), (0, 0), (1, 2), (3, 1)), mode=mode))
onnx.save(model("edge", huge=True), f"{T}/fold_huge.onnx")
bad = [const("pf", np.array([0, 0, 1e30, 0, 0, 0, 1, 0], np.float32)),
       helper.make_node("Cast", ["pf"], ["pads"], to=TensorProto.INT64), helper.make_node("Pad", ["x", "pads"], ["y"])]
g = helper.make_graph(bad, "badcast", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 5, 6])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{T}/fold_badcast.onnx")
PYFOLD
for mode in reflect edge; do
    expect_ok "folded pads, $mode mode: runs" "$BIN" run --onnx "$T/fold_$mode.onnx" --input "$T/fold_x.npy" --output "$T/fold_$mode.npy"
    check "  ... to numpy's pad, exactly" $PY -c "import numpy as np; assert np.array_equal(np.load('$T/fold_$mode.npy'), np.load('$T/fold_${mode}_want.npy'))"
done
expect_error "a folded Cast of 1e30 to int64 is refused" "out of range or NaN" \
    "$BIN" run --onnx "$T/fold_badcast.onnx" --input "$T/fold_x.npy" --output "$T/fold_badcast.npy"
expect_error "a folded constant of 2^40 elements is refused" "too large" \
    "$BIN" run --onnx "$T/fold_huge.onnx" --input "$T/fold_x.npy" --output "$T/fold_huge.npy"

# 9. The operator table in the docs is the one the importer has.
check "docs/onnx-ops.md is current (crossbind onnx-ops)" bash -c "'$BIN' onnx-ops | diff -q - docs/onnx-ops.md"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
