#!/bin/bash
# The blocked-layout rewrite of inference (src/graph/blocked.c) on a network
# made to reach every branch of it (tests/blocked/export.py, exported by
# Debian's torch 1.13): the plan names its members, post-ops (batch
# normalisation among them), the convolutions Winograd's method runs and copy-outs;
# every level and CROSSBIND_CONV=blas give PyTorch's outputs; a dump
# captures blocked values through copy-out steps without changing the plan,
# equal to the reference level's values, and lists post-op'd values as not
# materialised; MobileNetV3's block (hard swish, a padded depthwise layer, a
# squeeze-and-excitation gate, SiLU) blocked at every level.
# Usage: tests/blocked_test.sh BUILD_DIR
set -u
cd "$(dirname "$0")/.."
BIN="$PWD/$1/crossbind"
T=$(mktemp -d /tmp/crossbind-blocked-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=blocked
source tests/lib.sh
PY=/usr/bin/python3
if ! "$BIN" plan lenet5 --batch 1 | grep -q "oneDNN in use"; then
    echo "ok   $SUITE: skipped, this build has no oneDNN (the rewrite needs it)"
    echo "1 passed, 0 failed"
    exit 0
fi
expect_ok "the network exports" $PY tests/blocked/export.py "$T"
close() { # close A B: within atol 1e-4 + rtol 1e-4
    $PY -c "import numpy as np, sys; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); assert a.shape == b.shape and np.allclose(a, b, atol=1e-4, rtol=1e-4), np.abs(a - b).max()" "$1" "$2"
}
for level in reference fast fused fastmath; do
    expect_ok "runs at level $level" "$BIN" run --onnx "$T/blk.onnx" --input "$T/blk_x.npy" --output "$T/y_$level.npy" --level $level --threads 2
    check "  ... to PyTorch's outputs" close "$T/y_$level.npy" "$T/blk_torch.npy"
done
CROSSBIND_CONV=blas expect_ok "runs with oneDNN turned off" "$BIN" run --onnx "$T/blk.onnx" --input "$T/blk_x.npy" --output "$T/y_blas.npy" --threads 2
check "  ... to PyTorch's outputs" close "$T/y_blas.npy" "$T/blk_torch.npy"

"$BIN" plan "$T/blk.onnx" --batch 3 --threads 2 >"$T/plan"
node_says() { # node_says ID PATTERN: the plan's forward line of node ID matches PATTERN
    grep -A1 "^$1 " "$T/plan" | sed -n 2p | grep -q "$2"
}
check "plan: the stem reads the 3-channel image plain, with ReLU as a post-op" grep -q "^  forward: conv2d: onednn-blocked nChw[0-9]*c, input plain +relu" "$T/plan"
check "plan: Clip as a post-op" grep -q "nChw[0-9]*c +clip" "$T/plan"
# Winograd's method: fastmath only, for the 3x3 stride-1 convolutions with channels of the block and output
# channels of 16 (on nChw16c, with at least 16 tiles of 2x2 outputs at the plan's batch: 3 samples give 192 at
# 16x16): /a/ (its Clip), /d/ (input reordered in), /e/ (its batch normalisation folded, then transformed); not the
# stem (3 channels), depthwise, grouped or 1x1 ones.
check "plan: at fastmath the 3x3 stride-1 convolutions /a/, /d/, /e/ run Winograd's method, no other" \
    bash -c "[ \"\$(grep -B1 winograd '$T/plan' | grep -o '^[0-9]* /[a-z]*/Conv' | tr '\n' ' ')\" = '8 /a/Conv 31 /d/Conv 45 /e/Conv ' ]"
check "plan: at batch 1, /e/ (64 tiles: 16 or more) still runs Winograd's method at fastmath" \
    bash -c "'$BIN' plan '$T/blk.onnx' --batch 1 --threads 2 >'$T/plan1'; grep -A1 ' /e/Conv' '$T/plan1' | grep -q winograd"
check "plan: ... at fused (no Winograd), the direct 3x3 kernel exactly where this build has it (AVX-512, nChw16c), oneDNN's elsewhere" \
    bash -c "'$BIN' plan '$T/blk.onnx' --batch 1 --threads 2 --level fused >'$T/plan1f'; if grep -q 'build: avx512' '$T/plan1f' && grep -q nChw16c '$T/plan1f'; then grep -A1 ' /e/Conv' '$T/plan1f' | grep -q 'direct 3x3 nChw16c'; else grep -A1 ' /e/Conv' '$T/plan1f' | grep -q onednn-blocked && ! grep -q 'direct 3x3' '$T/plan1f'; fi"
check "plan: no Winograd's method at level fused (it rounds otherwise)" \
    bash -c "! '$BIN' plan '$T/blk.onnx' --batch 3 --level fused | grep -q winograd"
check "plan: a residual Add as a sum into its operand's buffer" grep -q "+sum(node 5, in its buffer)" "$T/plan"
check "plan: an Add whose operand is read again runs on its own" node_says 21 "add: onednn-blocked"
check "plan: tanh runs on blocked values" node_says 22 "activation: onednn-blocked"
check "plan: fused nodes are not materialised" node_says 17 "fused into node 16's convolution (not materialised)"
check "plan: a value read outside is copied out" node_says 23 "copied out"
check "plan: a concatenation of blocked values stays blocked" node_says 32 "concat: onednn-blocked"
check "plan: 12 channels (not a multiple of the block) padded to 16, ReLU a post-op" node_says 35 "+relu, channels padded to 16, buffer"
check "plan: a padded value (20 channels) through tanh on its own" node_says 65 "activation: onednn-blocked nChw[0-9]*c, channels padded to [0-9]*, buffer"
check "plan: ... an Add on its own" node_says 69 "add: onednn-blocked nChw[0-9]*c, channels padded to [0-9]*, buffer"
check "plan: ... the 2x2 max loop, copied out for the batch normalisation outside" node_says 71 "2x2 max loop, channels padded to [0-9]*, buffer [0-9]*, copied out"
check "plan: a batch normalisation of padded channels stays outside" node_says 76 "batchnorm.fast"
check "plan: its plain 20 channels are reordered in, padded, for the next convolution" node_says 79 "conv2d: onednn-blocked nChw[0-9]*c, input reordered in, buffer"
check "plan: global pooling of a padded value" node_says 85 "global_avgpool: onednn-blocked nChw[0-9]*c (plain output)"
check "plan: a 3x3 convolution with 12 outputs per channel runs the few-output product, its ReLU a post-op" \
    node_says 83 "conv2d: few-output product nChw[0-9]*c +relu, buffer"
check "plan: a batch normalisation folded into its convolution's weights, its ReLU a post-op" grep -q "+batchnorm(node [0-9]*) folded into the weights +relu, buffer" "$T/plan"
check "plan: at level fused the batch normalisation after a convolution is not folded (it rounds otherwise), it runs blocked on its own" \
    bash -c "'$BIN' plan '$T/blk.onnx' --batch 3 --level fused | grep -A1 '/bn1/' | grep -q 'batchnorm: onednn-blocked'"
check "plan: a batch normalisation whose operand is read again runs on its own, blocked" grep -q "^  forward: batchnorm: onednn-blocked nChw[0-9]*c, buffer" "$T/plan"
check "plan: a 2x2 max pooling runs crossbind's blocked loop" grep -q "pooling: onednn-blocked nChw[0-9]*c, 2x2 max loop" "$T/plan"
check "plan: the memory line counts the blocked buffers" grep -q "blocked buffers [0-9.]* MiB" "$T/plan"
check "plan: none of it at level fast (no rewrites)" bash -c "! '$BIN' plan '$T/blk.onnx' --batch 3 --level fast | grep -q onednn-blocked"
check "plan: none of it with CROSSBIND_CONV=blas" bash -c "! CROSSBIND_CONV=blas '$BIN' plan '$T/blk.onnx' --batch 3 | grep -q onednn-blocked"
check "plan: none of it in training" bash -c "! '$BIN' plan '$T/blk.onnx' --batch 3 --train 2>/dev/null | grep -q onednn-blocked"

# MobileNetV3's block (tests/blocked/export_se.py): hard swish and SiLU's
# product on blocked values, a depthwise layer of 72 channels (padded), and
# the squeeze-and-excitation gate multiplied into the blocked planes.
expect_ok "a MobileNetV3 block exports" $PY tests/blocked/export_se.py "$T"
for level in reference fast fused fastmath; do
    expect_ok "MobileNetV3 block: runs at level $level" "$BIN" run --onnx "$T/se.onnx" --input "$T/se_x.npy" --output "$T/se_$level.npy" --level $level --threads 2
    check "  ... to PyTorch's outputs" close "$T/se_$level.npy" "$T/se_torch.npy"
done
"$BIN" plan "$T/se.onnx" --batch 3 --threads 2 >"$T/plan_se"
se_says() { grep -A1 " $1 " "$T/plan_se" | sed -n 2p | grep -q "$2"; }
# 72 channels: padded to 80 on nChw16c (AVX-512), a whole number of blocks on nChw8c
if grep -q nChw16c "$T/plan_se"; then P72="nChw16c, channels padded to 80"; else P72="nChw8c, buffer"; fi
check "plan: hard swish runs on blocked values, padded channels too" se_says "/HardSwish_1_output_0 hardswish" "activation: onednn-blocked $P72"
check "plan: the depthwise layer of 72 channels joins, padded" se_says "/dw/Conv conv2d" "conv2d: onednn-blocked $P72"
check "plan: the gate multiplies the blocked planes" se_says "/Mul_output_0 mul" "mul: onednn-blocked $P72"
check "plan: SiLU's product of one shape runs blocked" se_says "/Mul_1_output_0 mul" "mul: onednn-blocked"
expect_ok "MobileNetV3 block: run --dump" "$BIN" run --onnx "$T/se.onnx" --input "$T/se_x.npy" --output "$T/sed.npy" --dump "$T/sd" --threads 2
expect_ok "MobileNetV3 block: run --dump at the reference level" "$BIN" run --onnx "$T/se.onnx" --input "$T/se_x.npy" --output "$T/ser.npy" --dump "$T/sr" --level reference --threads 2
check "  ... the blocked hard swish, depthwise, gated and SiLU values, copied out, equal the reference level's" $PY -c "
import json, numpy as np
fast = {n['name']: n for n in json.load(open('$T/sd/index.json'))['nodes']}
ref = {n['name']: n for n in json.load(open('$T/sr/index.json'))['nodes']}
for name in ('/HardSwish_1_output_0', '/dw/Conv', '/HardSwish_2_output_0', '/Mul_output_0', '/Mul_1_output_0'):
    a, b = np.load('$T/sd/' + fast[name]['file']), np.load('$T/sr/' + ref[name]['file'])
    assert a.shape == b.shape and np.allclose(a, b, atol=1e-4, rtol=1e-4), (name, np.abs(a - b).max())
"

expect_ok "run --dump" "$BIN" run --onnx "$T/blk.onnx" --input "$T/blk_x.npy" --output "$T/yd.npy" --dump "$T/d" --threads 2
"$BIN" plan "$T/blk.onnx" --batch 3 --threads 2 --hash >"$T/want"
check "  ... records the plan's hash, the same as without capture" \
    $PY -c "import json; assert json.load(open('$T/d/index.json'))['plan_sha256'] == open('$T/want').read().strip()"
check "  ... the output equals the run's without capture" cmp "$T/yd.npy" "$T/y_fastmath.npy"
expect_ok "run --dump at the reference level" "$BIN" run --onnx "$T/blk.onnx" --input "$T/blk_x.npy" --output "$T/yr.npy" --dump "$T/r" --level reference --threads 2
check "  ... blocked values captured (pooling, Add, tanh, Concat, post-op results), each equal to the reference level's; values inside a fused group not materialised" $PY -c "
import json, numpy as np
fast = {n['name']: n for n in json.load(open('$T/d/index.json'))['nodes']}
ref = {n['name']: n for n in json.load(open('$T/r/index.json'))['nodes']}
for name in ('/MaxPool_output_0', '/Add_1_output_0', '/Tanh_output_0', '/Concat_output_0', '/Relu_output_0',
             '/Clip_output_0', '/Add_output_0', '/Relu_3_output_0', '/bn2/BatchNormalization_output_0', '/MaxPool_1_output_0',
             '/Relu_2_output_0', '/odd2/Conv', '/Tanh_1_output_0', '/Add_5_output_0', '/MaxPool_2_output_0',
             '/Relu_4_output_0'):
    a, b = np.load('$T/d/' + fast[name]['file']), np.load('$T/r/' + ref[name]['file'])
    assert a.shape == b.shape and np.allclose(a, b, atol=1e-4, rtol=1e-4), (name, np.abs(a - b).max())
for name in ('/stem/Conv', '/a/Conv', '/dw/Conv', '/b/Conv', '/e/Conv', '/bn1/BatchNormalization_output_0', '/few/Conv'):
    assert fast[name]['file'] is None and fast[name]['not_materialised'], fast[name]
"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
