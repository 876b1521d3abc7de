#!/bin/bash
# ONNX against the pinned onnx package (1.18, of the pytorch-python
# environment): the importer's table of operator definitions against the
# package's schema history up to opset 23 (tests/onnx_package/versions.py);
# small models at opsets 13 to 23 against onnx's own reference evaluator at
# every optimisation level, and refused where a newer definition adds what
# crossbind does not implement (tests/onnx_package/cases.py); weights kept
# as external data, and hostile external-data entries
# (tests/onnx_package/external.py); and the ONNX backend node tests that
# the package ships (tests/onnx_exclude_onnx118.txt gives the reason for
# each case left out). Usage: tests/onnx_package_test.sh BUILD_DIR
set -u
cd "$(dirname "$0")/.."
BUILD=$1
BIN="$PWD/$BUILD/crossbind"
T=$(mktemp -d /tmp/crossbind-onnx-package-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=onnx-package
source tests/lib.sh
PY=runners/pytorch-python/.venv/bin/python
require_python $PY 'import onnx.reference' "the pytorch-python environment lacks onnx" \
    "bash runners/pytorch-python/install.sh"
check "the importer's operator versions are onnx's at every opset it reads" $PY tests/onnx_package/versions.py "$BIN"
expect_ok "cases written at opsets 18 to 24 with onnx's reference outputs" $PY tests/onnx_package/cases.py "$T"
# The node tests' rule (tests/README.md: atol 1e-7, rtol 1e-3), shapes equal.
close() {
    /usr/bin/python3 -c "
import numpy as np, sys
a, r = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(a.shape != r.shape or not np.allclose(a, r, rtol=1e-3, atol=1e-7))" "$1" "$2"
}
for m in "$T"/accept_*.onnx; do
    c=$(basename "$m" .onnx)
    for level in reference fast fused fastmath; do
        expect_ok "$c: runs at level $level" "$BIN" run --onnx "$m" --input "$T/${c}_x.npy" --output "$T/${c}_$level.npy" --level $level
        check "$c: ... to onnx's reference outputs" close "$T/${c}_$level.npy" "$T/${c}_ref.npy"
    done
done
refused() { expect_error "$1: refused, naming why" "$2" "$BIN" run --onnx "$T/$1.onnx" --input "$T/$1_x.npy" --output "$T/out.npy"; }
refused refuse_pad_axes_channels "only the height and width are padded"
refused refuse_pad_axes_twice "an axis named twice"
refused refuse_pad_axes_before_18 "an axes input before opset 18"
refused refuse_pad_wrap_mode "only modes constant, reflect and edge"
refused refuse_shape_start_of_computed "start and end other than the whole shape"
refused refuse_averagepool_dilations "dilated pooling windows are not implemented"
refused refuse_opset_24 "opset 24 is outside the 7-23 this importer reads"
refused refuse_reduce_mean_channels "only over the height and width"
refused refuse_pad_negative_reflect "negative (cropping) pads are implemented in constant mode only"
refused refuse_slice_channels "only the height and width are sliced, not the channels"
refused refuse_slice_steps "only steps of 1"
refused refuse_slice_batch "the batch is sliced"
refused refuse_slice_empty "selects nothing along an axis"
refused refuse_slice_nhwc_channels "only the height and width are sliced, not the channels"
refused refuse_reduce_mean_axes_input_before_18 "an axes input before opset 18"
# Keras' hard swish and hard sigmoid (Add 3, Clip 0 6, Mul by 1/6, Mul by x)
# are one node each where nothing else reads inside the chain.
check "accept_nhwc_keras_block_back: Keras' hard swish chain is one hardswish node" \
    bash -c '"$1" plan "$2" --batch 2 --level fast | grep -q "^[0-9]* hs hardswish" && ! "$1" plan "$2" --batch 2 | grep -q " t3 "' \
    _ "$BIN" "$T/accept_nhwc_keras_block_back.onnx"
check "accept_keras_hard_sigmoid_opset_10: Clip's attributes, one hardsigmoid node" \
    bash -c '"$1" plan "$2" --batch 2 | grep -q "^[0-9]* y hardsigmoid"' _ "$BIN" "$T/accept_keras_hard_sigmoid_opset_10.onnx"
check "accept_keras_hard_swish_clip_read_twice: the chain stays node by node" \
    bash -c '"$1" plan "$2" --batch 2 | grep -q "^[0-9]* r6 clip" && ! "$1" plan "$2" --batch 2 | grep -q "hardswish\|hardsigmoid"' \
    _ "$BIN" "$T/accept_keras_hard_swish_clip_read_twice.onnx"
# --dump: a value kept as [N,C,H,W] for the file's [N,H,W,C] names no ONNX
# value; the Transpose back's output names the node that holds it.
expect_ok "accept_nhwc_keras_block_back: crossbind run --dump" "$BIN" run --onnx "$T/accept_nhwc_keras_block_back.onnx" \
    --input "$T/accept_nhwc_keras_block_back_x.npy" --output "$T/dump_out.npy" --dump "$T/dump" --level fast
check "... its index pairs each file with the ONNX value it holds, none for one in the other layout" /usr/bin/python3 -c "
import json, sys
v = {n['name']: n.get('onnx_value', 'absent') for n in json.load(open(sys.argv[1]))['nodes']}
sys.exit(not (v['res'] == 'b' and v['n'] == 'n_t' and v['c'] == 'c' and v['hs'] is None and v['x'] is None))" "$T/dump/index.json"
refused refuse_nhwc_maxpool "reads a tensor in TensorFlow's layout"
refused refuse_nhwc_concat_height "only along the channels (the last axis of \[N,H,W,C\])"
refused refuse_nhwc_concat_mixed "mixes a tensor in TensorFlow's layout"
refused refuse_nhwc_concat_mixed_nhwc_second "mixes a tensor in TensorFlow's layout"
refused refuse_nhwc_flatten_spatial "reads a tensor in TensorFlow's layout"
refused refuse_nhwc_output "an image in TensorFlow's layout \[N,H,W,C\]"
refused refuse_nhwc_mixed_with_nchw "mixes a tensor in TensorFlow's layout"
/usr/bin/python3 -c "import numpy as np, sys; np.save(sys.argv[1], np.zeros((2, 3, 6, 6), np.float32))" "$T/x666.npy"
expect_error "a fixed dimension and an input of another size: refused, naming the file's shape" "must have shape \[batch,3,5,6\]" \
    "$BIN" run --onnx "$T/accept_cnn_opset_23.onnx" --input "$T/x666.npy" --output "$T/out.npy"
refused refuse_mul_broadcast_over_channels "neither of one shape nor \[N,C,H,W\] and \[N,C,1,1\]"
# External data: weights in files beside the model, named relative to it.
E=$T/external
mkdir -p "$E"
expect_ok "external-data cases written by onnx.save" $PY tests/onnx_package/external.py "$E"
for c in accept_one_file accept_subdirectory accept_link_inside; do
    for level in reference fastmath; do
        expect_ok "external data, $c: runs at level $level" "$BIN" run --onnx "$E/$c/model.onnx" --input "$E/x.npy" --output "$E/$c.npy" --level $level
        check "external data, $c: ... to onnx's reference outputs" close "$E/$c.npy" "$E/ref.npy"
    done
done
expect_ok "external data: a model named without a directory finds its data" bash -c \
    'cd "$1" && exec "$2" run --onnx model.onnx --input ../x.npy --output ../here.npy' _ "$E/accept_one_file" "$BIN"
ext_refused() { expect_error "external data: $1, refused" "$2" "$BIN" run --onnx "$E/$1/model.onnx" --input "$E/x.npy" --output "$E/out.npy"; }
ext_refused refuse_parent_directory "leaves the model's directory"
ext_refused refuse_absolute_path "is an absolute path"
ext_refused refuse_missing_file "cannot open its data"
ext_refused refuse_offset_not_a_number "not a number"
ext_refused refuse_range_past_the_end "lie outside"
ext_refused refuse_length_short_of_the_shape "declares 720 elements"
ext_refused refuse_directory_as_data "not a regular file"
ext_refused refuse_truncated_data_file "lie outside"
ext_refused refuse_link_leaving_directory "is a link that leaves the model's directory"
# The node tests of the onnx package itself, every level (onnx_conformance).
NODE=$(ls -d runners/pytorch-python/.venv/lib/python3*/site-packages/onnx/backend/test/data/node 2>/dev/null | head -1)
"./$BUILD/onnx_conformance" "${NODE:-missing}" tests/onnx_exclude_onnx118.txt >"$T/node" 2>&1
rc=$?
grep -E "^(FAIL|onnx node tests)" "$T/node"
read -r np nf < <(awk '/ passed, .* failed/ {print $1, $3}' "$T/node")
check "onnx 1.18's node tests: every case claimed passes at every level, every exclusion still claimed ($np passed)" \
    test "$rc" = 0 -a "${nf:-1}" = 0 -a "${np:-0}" -gt 80
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
