"""Writes small ONNX models at opsets 18 to 24, their inputs, and the outputs
of onnx's own reference evaluator (onnx.reference, the pinned onnx 1.18 of
the pytorch-python environment): what crossbind's importer must match where
it accepts a model, and the models it must refuse.

usage: cases.py OUT_DIR

Each case CASE writes OUT_DIR/CASE.onnx and OUT_DIR/CASE_x.npy; an accepted
case also OUT_DIR/CASE_ref.npy. The names say which.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

out = sys.argv[1]
rng = np.random.default_rng(20261205)
X = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)


def model(nodes, opset, inits, x_shape=("N", 3, 5, 6)):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph(nodes, "g", [x], [y], [numpy_helper.from_array(a, k) for k, a in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def write(name, m, reference=True, x=X, expected=None):
    """expected: the outputs worked out here, where onnx's evaluator does
    not implement the case."""
    onnx.save(m, f"{out}/{name}.onnx")
    np.save(f"{out}/{name}_x.npy", x)
    if expected is not None:
        np.save(f"{out}/{name}_ref.npy", expected)
    elif reference:
        np.save(f"{out}/{name}_ref.npy", ReferenceEvaluator(m).run(None, {"x": x})[0])


def pad(mode, pads, axes, opset=18, value=None):
    inputs = ["x", "pads", "value" if value is not None else "", "axes" if axes is not None else ""]
    inits = {"pads": np.array(pads, np.int64)}
    if value is not None:
        inits["value"] = np.array(value, np.float32)
    if axes is not None:
        inits["axes"] = np.array(axes, np.int64)
    while inputs[-1] == "":
        inputs.pop()
    return model([helper.make_node("Pad", inputs, ["y"], mode=mode)], opset, inits)


# Pad with the axes input (opset 18 on): pads only for the axes named.
write("accept_pad_axes_hw", pad("constant", [1, 2, 0, 3], [2, 3], value=0.5))
write("accept_pad_axes_negative_reversed", pad("reflect", [2, 1, 1, 2], [-1, -2]))
write("accept_pad_axes_width_only", pad("edge", [3, 1], [3], opset=23))
write("accept_pad_all_axes_opset_19", pad("constant", [0, 0, 1, 1, 0, 0, 2, 0], None, opset=19, value=-1.0))
write("refuse_pad_axes_channels", pad("constant", [1, 1], [1]), reference=False)
write("refuse_pad_axes_twice", pad("constant", [1, 1, 1, 1], [2, -2]), reference=False)
write("refuse_pad_axes_before_18", pad("constant", [1, 1, 1, 1], [2, 3], opset=17), reference=False)
write("refuse_pad_wrap_mode", pad("wrap", [1, 1, 1, 1], [2, 3], opset=19), reference=False)

# Shape's start and end (opset 15 on) on a constant: the target of a
# Reshape of x is [0] and the last two dims of a [1, 15, 6] constant.
shape_nodes = [
    helper.make_node("Shape", ["c"], ["s"], start=1),
    helper.make_node("Concat", ["zero", "s"], ["target"], axis=0),
    helper.make_node("Reshape", ["x", "target"], ["y"]),
]
shape_inits = {"c": np.zeros((1, 15, 6), np.float32), "zero": np.array([0], np.int64)}
write("accept_shape_start_of_constant", model(shape_nodes, 18, shape_inits))
shape_nodes[0] = helper.make_node("Shape", ["c"], ["s"], start=-2, end=3)
write("accept_shape_negative_start_of_constant", model(shape_nodes, 21, shape_inits))
# ... and of a computed tensor, whose shape crossbind tracks only whole.
computed = [
    helper.make_node("Shape", ["x"], ["s"], start=1),
    helper.make_node("ConstantOfShape", ["s"], ["y"]),
]
write("refuse_shape_start_of_computed", model(computed, 18, {}), reference=False)

# Operators whose definitions changed only in element types at opsets 21 to
# 23 (Conv, MaxPool, AveragePool, GlobalAveragePool and Flatten at 22-23).
w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
net = [
    helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
    helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[1, 1]),
    helper.make_node("AveragePool", ["p"], ["a"], kernel_shape=[2, 2], pads=[0, 0, 1, 1], count_include_pad=0),
    helper.make_node("GlobalAveragePool", ["a"], ["g"]),
    helper.make_node("Flatten", ["g"], ["y"]),
]
write("accept_cnn_opset_23", model(net, 23, {"w": w}))
# MobileNetV3's and EfficientNet's blocks: hard swish, a squeeze-and-
# excitation gate (SiLU inside, hard sigmoid at ONNX's default slope, the
# gate as Mul's first operand), at opsets 14 and 22.
se = [
    helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
    helper.make_node("HardSwish", ["c"], ["hs"]),
    helper.make_node("GlobalAveragePool", ["hs"], ["g"]),
    helper.make_node("Conv", ["g", "squeeze"], ["s"]),
    helper.make_node("Sigmoid", ["s"], ["sig"]),
    helper.make_node("Mul", ["s", "sig"], ["silu"]),
    helper.make_node("Conv", ["silu", "excite"], ["e"]),
    helper.make_node("HardSigmoid", ["e"], ["gate"]),
    helper.make_node("Mul", ["gate", "hs"], ["y"]),
]
se_inits = {"w": w, "squeeze": rng.standard_normal((2, 4, 1, 1)).astype(np.float32),
            "excite": rng.standard_normal((4, 2, 1, 1)).astype(np.float32)}
write("accept_se_gate_hardswish_opset_14", model(se, 14, se_inits))
write("accept_se_gate_hardswish_opset_22", model(se, 22, se_inits))
# A product broadcast other than by a channel gate: refused.
one_channel = [helper.make_node("Conv", ["x", "w1"], ["m"]), helper.make_node("Mul", ["x", "m"], ["y"])]
write("refuse_mul_broadcast_over_channels", model(one_channel, 18, {"w1": w[:1]}), reference=False)
# ReduceMean over the height and width (global average pooling, as the
# dynamo exporter and tf2onnx write it): axes as an attribute before opset
# 18, as an input from 18 on; without keepdims, [N,C].
def reduce_mean(opset, axes, keepdims, as_input):
    attrs = {"keepdims": keepdims}
    if not as_input:
        attrs["axes"] = axes
    node = helper.make_node("ReduceMean", ["x", "axes"] if as_input else ["x"], ["y"], **attrs)
    return model([node], opset, {"axes": np.array(axes, np.int64)} if as_input else {})


write("accept_reduce_mean_hw_opset_13", reduce_mean(13, [2, 3], 1, False))
write("accept_reduce_mean_hw_opset_18_no_keepdims", reduce_mean(18, [-1, -2], 0, True))
write("refuse_reduce_mean_channels", reduce_mean(18, [1, 2], 1, True), reference=False)
write("refuse_reduce_mean_axes_input_before_18", reduce_mean(13, [2, 3], 1, True), reference=False)
# Height and width left symbolic (an export with dynamic image sizes): the
# input given sizes them, one file run at two sizes.
free = model(net, 17, {"w": w}, x_shape=("N", 3, "H", "W"))
write("accept_symbolic_height_width", free)
write("accept_symbolic_height_width_other_size", free, x=rng.standard_normal((1, 3, 9, 7)).astype(np.float32))
# AveragePool's dilations (opset 19 on): refused, not ignored.
dilated = [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2, 2])]
write("refuse_averagepool_dilations", model(dilated, 19, {}), reference=False)
# Images in TensorFlow's layout between convolutions, as tf2onnx leaves them
# in Keras' MobileNetV3: an [N,H,W,C] input scaled per channel along its
# last axis, Transposes to and from [N,C,H,W] around each Conv, and between
# them Keras' hard swish (x * relu6(x + 3) / 6), Pad of the height and
# width, a squeeze-and-excitation gate from ReduceMean over axes 1 and 2,
# and a residual Add; the head averages without keepdims, or keeps them and
# flattens [N,1,1,C].
XN = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
T = helper.make_node
nhwc = [T("Mul", ["x", "scale"], ["s"]), T("Add", ["s", "shift"], ["n"]),
        T("Transpose", ["n"], ["n_t"], perm=[0, 3, 1, 2]), T("Conv", ["n_t", "w"], ["c"], pads=[1, 1, 1, 1]),
        T("Transpose", ["c"], ["t"], perm=[0, 2, 3, 1]),
        T("Add", ["t", "three"], ["t3"]), T("Clip", ["t3", "zero", "six"], ["r6"]),
        T("Mul", ["r6", "sixth"], ["hsig"]), T("Mul", ["t", "hsig"], ["hs"]),
        T("Pad", ["hs", "pads"], ["p"]),
        T("ReduceMean", ["p"], ["g"], axes=[1, 2], keepdims=1), T("Sigmoid", ["g"], ["gate"]),
        T("Mul", ["p", "gate"], ["m"]), T("Relu", ["m"], ["mr"]), T("Add", ["mr", "m"], ["res"])]
nhwc_inits = {"scale": np.array([0.5, 2.0, -1.0], np.float32),
              "shift": np.array([0.1, -0.2, 0.3], np.float32).reshape(1, 1, 1, 3),
              "w": w, "three": np.array(3.0, np.float32), "zero": np.array(0.0, np.float32),
              "six": np.array(6.0, np.float32), "sixth": np.array(1 / 6, np.float32),
              "pads": np.array([0, 1, 0, 0, 0, 0, 2, 0], np.int64)}
head_mean = [T("ReduceMean", ["res"], ["y"], axes=[1, 2], keepdims=0)]
head_flat = [T("ReduceMean", ["res"], ["k"], axes=[-3, -2], keepdims=1), T("Flatten", ["k"], ["y"])]
head_back = [T("Transpose", ["res"], ["b"], perm=[0, 3, 1, 2]), T("Conv", ["b", "w1"], ["y"])]
for opset in (13, 17):
    write(f"accept_nhwc_keras_block_mean_opset_{opset}", model(nhwc + head_mean, opset, nhwc_inits, ("N", 5, 6, 3)), x=XN)
write("accept_nhwc_keras_block_flatten", model(nhwc + head_flat, 13, nhwc_inits, ("N", 5, 6, 3)), x=XN)
write("accept_nhwc_keras_block_back", model(nhwc + head_back, 13, dict(nhwc_inits, w1=rng.standard_normal((2, 4, 1, 1)).astype(np.float32)), ("N", 5, 6, 3)), x=XN)
# Keras' hard sigmoid written with Clip's attributes (opset 10), one node in
# crossbind; and a chain whose Clip output is read twice, which stays node
# by node.
hsig10 = [T("Conv", ["x", "w"], ["t"]), T("Add", ["t", "three"], ["t3"]), T("Clip", ["t3"], ["r6"], min=0.0, max=6.0),
          T("Mul", ["r6", "sixth"], ["y"])]
write("accept_keras_hard_sigmoid_opset_10", model(hsig10, 10, {k: nhwc_inits[k] for k in ("w", "three", "sixth")}))
shared = [T("Conv", ["x", "w"], ["t"]), T("Add", ["three", "t"], ["t3"]), T("Clip", ["t3", "zero", "six"], ["r6"]),
          T("Mul", ["sixth", "r6"], ["h"]), T("Mul", ["h", "t"], ["hs"]), T("Add", ["hs", "r6"], ["y"])]
write("accept_keras_hard_swish_clip_read_twice", model(shared, 13, {k: nhwc_inits[k] for k in ("w", "three", "zero", "six", "sixth")}))
# ... and what is refused: another reader of the [N,H,W,C] tensor (a
# pooling, which would pool over the channels), a mix of
# the two layouts in one Add, a Flatten of [N,H,W,C] with H and W above 1,
# and an image in TensorFlow's layout as the graph's output.
write("refuse_nhwc_maxpool", model(nhwc + [T("MaxPool", ["res"], ["y"], kernel_shape=[2, 2])], 13, nhwc_inits,
                                  ("N", 5, 6, 3)), reference=False, x=XN)
write("refuse_nhwc_flatten_spatial", model(nhwc + [T("Flatten", ["res"], ["y"])], 13, nhwc_inits, ("N", 5, 6, 3)),
      reference=False, x=XN)
write("refuse_nhwc_output", model(nhwc + [T("Identity", ["res"], ["y"])], 13, nhwc_inits, ("N", 5, 6, 3)),
      reference=False, x=XN)
mixed = [T("Relu", ["x"], ["r"]), T("Transpose", ["r"], ["rt"], perm=[0, 2, 3, 1]), T("Add", ["rt", "r"], ["y"])]
write("refuse_nhwc_mixed_with_nchw", model(mixed, 13, {}, ("N", 3, 3, 3)), reference=False,
      x=rng.standard_normal((2, 3, 3, 3)).astype(np.float32))
# An opset beyond the versions the importer was written against.
write("refuse_opset_24", model(net, 24, {"w": w}), reference=False)
# Crops of the height and width: Pad with negative pads (ONNX's meaning of
# them), and Slice of a computed tensor (tf2onnx's Keras Cropping2D), on
# [N,C,H,W] and on an image in TensorFlow's layout; the batch and the
# channels only whole, steps of 1.
# (onnx's evaluator refuses negative pads: numpy's crop then pad instead)
crop_pad = np.pad(X[:, :, 1:, :-3], ((0, 0), (0, 0), (0, 1), (2, 0)), constant_values=0.5)
write("accept_pad_negative_crops", pad("constant", [0, 0, -1, 2, 0, 0, 1, -3], None, value=0.5), expected=crop_pad)
write("refuse_pad_negative_reflect", pad("reflect", [-1, 1], [2]), reference=False)


def slice_model(starts, ends, axes=None, steps=None, opset=13, before=(), after=(), x_shape=("N", 3, 5, 6)):
    inits = {"starts": np.array(starts, np.int64), "ends": np.array(ends, np.int64)}
    inputs = ["sx", "starts", "ends"]
    for k, v in (("axes", axes), ("steps", steps)):
        if v is not None:
            inits[k] = np.array(v, np.int64)
            inputs.append(k)
        elif k == "axes" and steps is not None:
            inputs.append("")
    nodes = list(before) or [T("Identity", ["x"], ["sx"])]
    nodes.append(T("Slice", inputs, ["sliced"]))
    nodes += list(after) or [T("Identity", ["sliced"], ["y"])]
    return model(nodes, opset, inits, x_shape)


BIG = np.iinfo(np.int64).max
write("accept_slice_height_width", slice_model([1, -4], [BIG, -1], [2, 3]))
write("accept_slice_default_axes_whole_batch_and_channels", slice_model([0, 0, 1, 0], [BIG, 100, 4, 5], opset=18))
write("accept_slice_negative_axes_steps_of_one", slice_model([2, -9], [100, 4], [-1, -2], [1, 1], opset=18))
to_nhwc = [T("Transpose", ["x"], ["sx"], perm=[0, 2, 3, 1])]
back = [T("Transpose", ["sliced"], ["y"], perm=[0, 3, 1, 2])]
write("accept_slice_nhwc_height_width", slice_model([1, 0], [5, -2], [1, 2], before=to_nhwc, after=back))
write("refuse_slice_channels", slice_model([1], [3], [1]), reference=False)
write("refuse_slice_steps", slice_model([0], [5], [2], [2]), reference=False)
write("refuse_slice_batch", slice_model([1], [BIG], [0]), reference=False)
write("refuse_slice_empty", slice_model([3], [2], [2]), reference=False)
write("refuse_slice_nhwc_channels", slice_model([0], [2], [3], before=to_nhwc, after=back), reference=False)
# Concat along the last axis and Softmax of images in TensorFlow's layout
# (channels: crossbind's axis 1; the height, at opset 13: its axis 2), and
# what they refuse: a Concat along another axis, or of the two layouts.
to_nhwc_r = [T("Relu", ["x"], ["r"]), T("Transpose", ["r"], ["rt"], perm=[0, 2, 3, 1]),
             T("Sigmoid", ["rt"], ["st"])]
cat_soft = [T("Concat", ["rt", "st", "rt"], ["cat"], axis=-1), T("Softmax", ["cat"], ["sm"], axis=3),
            T("Softmax", ["sm"], ["sh"], axis=1), T("Transpose", ["sh"], ["y"], perm=[0, 3, 1, 2])]
write("accept_nhwc_concat_channels_softmax", model(to_nhwc_r + cat_soft, 13, {}))
soft11 = [T("Softmax", ["rt"], ["sm"], axis=3), T("Transpose", ["sm"], ["y"], perm=[0, 3, 1, 2])]
write("accept_nhwc_softmax_last_axis_opset_11", model(to_nhwc_r + soft11, 11, {}))
write("refuse_nhwc_concat_height", model(to_nhwc_r + [T("Concat", ["rt", "st"], ["c"], axis=1),
                                                      T("Transpose", ["c"], ["y"], perm=[0, 3, 1, 2])], 13, {}),
      reference=False)
write("refuse_nhwc_concat_mixed", model(to_nhwc_r + [T("Concat", ["st", "x"], ["y"], axis=-1)], 13, {}),
      reference=False)
write("refuse_nhwc_concat_mixed_nhwc_second", model(to_nhwc_r + [T("Concat", ["x", "st"], ["y"], axis=1)], 13, {}),
      reference=False)
