"""Exports a tf.keras.applications CNN with random weights to ONNX through
tf2onnx, with the input and TensorFlow's outputs in float32 and float64.

usage: export.py MODEL OPSETS SEED OUT_DIR [--nchw] [--softmax]

MODEL is a key of runners/tensorflow/cb_keras_apps.py's MODELS (Keras 2
through TF_USE_LEGACY_KERAS=1, weights=None: nothing is downloaded). The
classifier gives logits (classifier_activation=None, as torchvision's
models do) unless --softmax keeps Keras' default softmax. The file's input is Keras' NHWC
[N,H,W,3] (tf2onnx's default) unless --nchw asks tf2onnx for an NCHW input.
OPSETS is one opset or several, comma-separated (13,17): one file each from
the same model.

The weights are those of `crossbind_tf.py keras-export MODEL --seed SEED`
(runners/tensorflow/cb_keras_apps.py: the model's own initialisation,
moving statistics from one training-mode batch with momentum 0 so that
activations stay of order one through the depth as in a trained network,
and a N(0, 0.1^2) classifier bias, as a trained one is non-zero). The float64
outputs are the same model built with floatx float64 and the float32
weights: the truth both float32 engines are measured against (every layer's
compute dtype, every variable and the output are checked to be float64, and
the outputs not to be float32 numbers widened).

Writes OUT_DIR/NAME.onnx, NAME_x.npy (the file's input layout), NAME_tf.npy
and NAME_f64.npy for each opset, where NAME is MODEL with its options, e.g.
mobilenet_v2_o13 or mobilenet_v2_o17_softmax.
"""
import os
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "runners", "tensorflow"))

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf2onnx  # noqa: E402
import cb_keras_apps  # noqa: E402

args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = {a for a in sys.argv[1:] if a.startswith("--")}
assert len(args) == 4 and flags <= {"--nchw", "--softmax"}, __doc__
model_name, opsets, seed, out = args[0], [int(o) for o in args[1].split(",")], int(args[2]), args[3]
nchw, softmax = "--nchw" in flags, "--softmax" in flags
assert tf.keras.__name__.startswith("tf_keras"), tf.keras.__name__
assert model_name in cb_keras_apps.MODELS, __doc__
size = cb_keras_apps.MODELS[model_name][1]
names = {o: f"{model_name}_o{o}" + ("_nchw" if nchw else "") + ("_softmax" if softmax else "") for o in opsets}


def build():
    return cb_keras_apps.build(tf, model_name, softmax)


tf.keras.utils.set_random_seed(seed)
model = build()
rng = np.random.default_rng(seed)
cb_keras_apps.realistic(tf, model, rng, model_name)
x = cb_keras_apps.images(rng, model_name, (2, size, size, 3))
y = model(x, training=False).numpy()
assert np.isfinite(y).all()
spec = (tf.TensorSpec((None, size, size, 3), tf.float32, name="x"),)
for opset, name in names.items():
    np.save(f"{out}/{name}_tf.npy", y)
    np.save(f"{out}/{name}_x.npy", np.ascontiguousarray(x.transpose(0, 3, 1, 2)) if nchw else x)
    proto, _ = tf2onnx.convert.from_keras(model, input_signature=spec, opset=opset,
                                          inputs_as_nchw=["x"] if nchw else None)
    with open(f"{out}/{name}.onnx", "wb") as f:
        f.write(proto.SerializeToString())

# The float64 truth: the same weights in a model whose every layer computes in float64.
weights = model.get_weights()
tf.keras.backend.clear_session()
tf.keras.backend.set_floatx("float64")
model64 = build()
model64.set_weights([w.astype(np.float64) for w in weights])
bad = [layer.name for layer in model64.layers if getattr(layer, "compute_dtype", "float64") != "float64"]
assert not bad, f"layers not computing in float64: {bad[:5]}"
# (integer variables, such as a Normalization layer's sample count, are not values computed with)
assert all(w.dtype == tf.float64 for w in model64.weights if w.dtype.is_floating), "a float32 variable in the float64 model"
y64 = model64(x.astype(np.float64), training=False)
assert y64.dtype == tf.float64, y64.dtype
# Values computed in float32 and widened would all be exact float32 numbers.
exact = np.mean(y64.numpy().astype(np.float32).astype(np.float64) == y64.numpy())
assert exact < 0.01, f"{exact:.1%} of the float64 outputs are float32 numbers: not computed in float64"
for name in names.values():
    np.save(f"{out}/{name}_f64.npy", y64.numpy())
print(f"{model_name}: max |tf32 - f64| {np.abs(y - y64.numpy()).max():.2e}, max |f64| {np.abs(y64.numpy()).max():.2e}")
