"""Keras' ImageNet CNNs for differential testing (DeltaNN's MobileNetV2,
ResNet-101 and Inception-v3, with ResNet-50, MobileNetV3 small and large
and EfficientNet-B0, which scale the pixels inside the model; and more for
the importer's tests, MODELS) as tf.keras.applications builds them (Keras
2, weights=None: nothing is downloaded), with seeded random weights, their
exports for `crossbind delta`, and the Keras side of a delta run.

  keras-export NAME (--seed S | --weights-in W.h5) --out-dir DIR [--opset 13]
  delta --model DIR/model.h5 --inputs X.npy --out OUT --threads N --reps R
        --warmup K [--capture]

Weights from a seed: the model's own initialisation after
tf.keras.utils.set_random_seed(S); moving statistics from one
training-mode batch with momentum 0 (Keras: moving = momentum * moving +
(1 - momentum) * batch), so that activations stay of order one through the
depth as in a trained network; the classifier's bias (zero in a new Keras
model, and then dropped by tf2onnx) drawn N(0, 0.1^2), as a trained one is
non-zero. The classifier gives logits (classifier_activation=None), as
torchvision's models do. tests/keras/export.py makes its models with the
same `realistic`.

keras-export writes into DIR, each file under a temporary name and then
renamed, export.json last:
  model.h5            the Keras model with its weights (model.save, HDF5)
  model.onnx          tf2onnx of the model at the opset given, input `x`
                      NHWC [N, S, S, 3] as tf2onnx writes it
  model-float.tflite  TFLiteConverter.from_keras_model, no optimisation
  model-int8.tflite   the same with optimizations = [Optimize.DEFAULT] and no
                      representative data set: dynamic-range quantisation
  export.json         what they are, their SHA-256, the versions

delta: the Keras model from model.h5, each input alone (batch 1), through
one tf.function of model(x, training=False) with a fixed input signature
[1, S, S, 3] (traced once, in the process's first call, which is timed on
its own as first_call_s). Same timing and files as the PyTorch runner's
delta (runners/README.md, "Delta runs").
"""
import hashlib
import os
import platform
import sys
import time

import numpy as np

DELTA_COMMON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "delta_common")
sys.path.insert(0, DELTA_COMMON)
try:
    import cb_delta_files  # noqa: E402
except ImportError:  # this runner's folder was copied without its sibling: only delta's subcommands need it
    cb_delta_files = None


def require_delta_common(fail):
    if cb_delta_files is None:
        fail(f"{os.path.normpath(DELTA_COMMON)} is missing: delta's subcommands need runners/delta_common "
             "beside this runner's folder")

# name: (tf.keras.applications class, input side, Keras' preprocess_input mode,
# "raw" where the model takes pixels in [0, 255] and scales them itself)
MODELS = {
    "mobilenet_v2": ("MobileNetV2", 224, "tf"),
    "resnet50": ("ResNet50", 224, "caffe"),
    "resnet101": ("ResNet101", 224, "caffe"),
    "inception_v3": ("InceptionV3", 299, "tf"),
    # these scale the pixels themselves (Rescaling and Normalization layers
    # inside the model): their input is the image in [0, 255]
    "mobilenet_v3_small": ("MobileNetV3Small", 224, "raw"),
    "mobilenet_v3_large": ("MobileNetV3Large", 224, "raw"),
    "efficientnet_b0": ("EfficientNetB0", 224, "raw"),
    # more of Keras' CNNs for the importer's tests (no torchvision twin in delta)
    "mobilenet": ("MobileNet", 224, "tf"),
    "xception": ("Xception", 299, "tf"),
    "densenet121": ("DenseNet121", 224, "torch"),
    "resnet50_v2": ("ResNet50V2", 224, "tf"),
    "nasnet_mobile": ("NASNetMobile", 224, "tf"),
}
FILES = {  # export.json key: (file name, what it is)
    "h5": ("model.h5", "Keras 2 model with its weights (model.save, HDF5), outputs logits"),
    "onnx": ("model.onnx", "tf2onnx conversion of the Keras model, float32, input x NHWC"),
    "tflite_float": ("model-float.tflite", "TFLiteConverter.from_keras_model, float32 weights and activations "
                     "(no optimisation)"),
    "tflite_int8": ("model-int8.tflite", "dynamic-range quantised weights (Optimize.DEFAULT, no representative "
                    "data set): int8 weights with per-channel scales in the convolutions and the dense layer "
                    "(those of 1024 values or more), float32 inputs, outputs and tensors between operators; the "
                    "runtime's hybrid kernels may quantise a layer's input to int8 on the fly"),
}


def build(tf, name, softmax=False):
    """tf.keras.applications' `name`, weights=None, its own initialisation."""
    cls, side, _ = MODELS[name]
    return getattr(tf.keras.applications, cls)(weights=None, input_shape=(side, side, 3),
                                                classifier_activation="softmax" if softmax else None)


def images(rng, name, shape):
    """Random float32 images for MODELS[name]: N(0, 1), as preprocess_input
    leaves them; for a model that takes pixels and scales them itself
    ("raw"), N(127.5, 63.75^2), which its scaling brings to the same order.
    One draw of rng either way."""
    x = rng.standard_normal(shape).astype(np.float32)
    return np.float32(127.5) + np.float32(63.75) * x if MODELS[name][2] == "raw" else x


def realistic(tf, model, rng, name):
    """Moving statistics of MODELS[name] from one training-mode batch of 4 `images`
    (momentum 0, then each layer's own again: 0.999 in MobileNetV2, 0.99
    elsewhere) and a N(0, 0.1^2) classifier bias, both drawn from `rng`
    (numpy Generator), in this order. The classifier is the last Dense or
    convolution with a bias (MobileNet's and MobileNetV3's are 1x1
    convolutions)."""
    side = model.input_shape[1]
    bns = [layer for layer in model.layers if isinstance(layer, tf.keras.layers.BatchNormalization)]
    assert bns, "no batch normalisation layers"
    momenta = [layer.momentum for layer in bns]
    for layer in bns:
        layer.momentum = 0.0
    model(images(rng, name, (4, side, side, 3)), training=True)
    for layer, m in zip(bns, momenta):
        layer.momentum = m
    dense = [layer for layer in model.layers if isinstance(layer, (tf.keras.layers.Dense, tf.keras.layers.Conv2D))
             and layer.use_bias][-1]
    dense.bias.assign(0.1 * rng.standard_normal(dense.bias.shape).astype(np.float32))


def seeded(tf, name, seed, softmax=False):
    """The model with the weights of `seed` (see the module's docstring)."""
    tf.keras.utils.set_random_seed(seed)
    model = build(tf, name, softmax)
    realistic(tf, model, np.random.default_rng(seed), name)
    return model


# ------------------------------------------------------------------ files

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ----------------------------------------------------------------- export

def add_parsers(sub):
    x = sub.add_parser("keras-export", help="a tf.keras.applications CNN as .h5, ONNX and .tflite (float, int8)")
    x.add_argument("name", metavar="NAME", help=", ".join(MODELS))
    g = x.add_mutually_exclusive_group(required=True)
    g.add_argument("--seed", type=int)
    g.add_argument("--weights-in", help="a .h5 file of the same model (model.h5 of an earlier keras-export)")
    x.add_argument("--out-dir", required=True)
    x.add_argument("--opset", type=int, default=13)
    d = sub.add_parser("delta", help="a Keras model, or an ONNX file through onnx2tf, on each input alone: "
                                     "logits, times, every layer's output")
    g = d.add_mutually_exclusive_group(required=True)
    g.add_argument("--model", help="model.h5 (keras-export)")
    g.add_argument("--onnx", help="an ONNX file, converted into TensorFlow by onnx2tf (cb_onnx2tf.py)")
    d.add_argument("--inputs", required=True, help="float32 .npy [n, S, S, 3], preprocessed (for --onnx: the "
                                                   "file's own input layout, or int64 token ids)")
    d.add_argument("--out", required=True, help="directory for outputs.npy, times.json and capture/")
    d.add_argument("--threads", type=int, required=True)
    d.add_argument("--reps", type=int, required=True)
    d.add_argument("--warmup", type=int, required=True)
    d.add_argument("--capture", action="store_true",
                   help="also every layer's output for input 0, and every layer's weights (--onnx: the file's "
                        "outputs after the first)")


def check_export_args(args, fail):
    if args.name not in MODELS:
        fail(f"unknown model {args.name} (known: {', '.join(MODELS)})")
    if args.weights_in is not None and not os.path.isfile(args.weights_in):
        fail(f"cannot open weights {args.weights_in}: no such file")
    if not 9 <= args.opset <= 18:
        fail(f"--opset {args.opset}: tf2onnx 1.17 writes opsets 9 to 18")


def _tflite(tf, model, quantise):
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]  # no Flex ops: plain LiteRT runs it
    conv.optimizations = [tf.lite.Optimize.DEFAULT] if quantise else []
    return conv.convert()


def keras_export(tf, args, fail):
    require_delta_common(fail)
    import tf2onnx
    import onnx
    import tf_keras
    name = args.name
    cls, side, mode = MODELS[name]
    out = args.out_dir
    t_start = time.perf_counter()
    if args.weights_in is not None:
        model = build(tf, name)
        try:
            model.load_weights(args.weights_in)
        except Exception as e:  # h5py and Keras raise their own kinds for a file that does not fit
            fail(f"{args.weights_in}: not weights of {name} ({cls}): {type(e).__name__}: "
                 f"{' '.join(str(e).split())[:300]}")
        origin = {"weights_sha256": sha256(args.weights_in)}
    else:
        model = seeded(tf, name, args.seed)
        origin = {"seed": args.seed}
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        fail(f"cannot make {out}: {e}")
    paths = {k: os.path.join(out, f) for k, (f, _) in FILES.items()}
    seconds = {}

    t0 = time.perf_counter()
    tmp = f"{paths['h5']}.tmp.{os.getpid()}.h5"
    try:
        model.save(tmp, save_format="h5")
        os.replace(tmp, paths["h5"])
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    seconds["h5"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    spec = (tf.TensorSpec((None, side, side, 3), tf.float32, name="x"),)
    try:
        proto, _ = tf2onnx.convert.from_keras(model, input_signature=spec, opset=args.opset)
    except Exception as e:  # tf2onnx raises many kinds
        fail(f"tf2onnx cannot convert {name} at opset {args.opset}: {type(e).__name__}: {' '.join(str(e).split())[:300]}")
    onnx.checker.check_model(proto)
    data = proto.SerializeToString()
    cb_delta_files.atomic(paths["onnx"], lambda f: f.write(data))
    seconds["onnx"] = time.perf_counter() - t0

    for key, quantise in (("tflite_float", False), ("tflite_int8", True)):
        t0 = time.perf_counter()
        data = _tflite(tf, model, quantise)
        cb_delta_files.atomic(paths[key], lambda f: f.write(data))
        seconds[key] = time.perf_counter() - t0

    files = {k: {"file": FILES[k][0], "sha256": sha256(p), "bytes": os.path.getsize(p), "what": FILES[k][1]}
             for k, p in paths.items()}
    doc = {"format": "crossbind-keras-export/1", "model": name, "keras_application": cls, "keras_name": model.name,
           **origin, "preprocessing": mode, "input": [side, side, 3], "layout": "NHWC",
           "classes": int(model.output_shape[-1]), "output": "logits (classifier_activation=None)",
           "opset": args.opset,
           "versions": {"tensorflow": tf.__version__, "tf_keras": tf_keras.__version__,
                        "tf2onnx": tf2onnx.__version__, "onnx": onnx.__version__,
                        "python": platform.python_version()},
           "files": files, "seconds": seconds}
    cb_delta_files.save_json(os.path.join(out, "export.json"), doc, indent=1)
    print(f"{name}: {', '.join(f for f, _ in FILES.values())} and export.json written to {out} in "
          f"{time.perf_counter() - t_start:.1f}s (" + ", ".join(f"{k} {s:.1f}s" for k, s in seconds.items()) + ")")


# ------------------------------------------------------------------ delta

def load_keras(tf, path, fail):
    if not os.path.isfile(path):
        fail(f"cannot open model {path}: no such file")
    try:
        model = tf.keras.models.load_model(path, compile=False)
    except Exception as e:  # h5py, zipfile and Keras each raise their own kinds
        fail(f"{path}: cannot load the Keras model: {type(e).__name__}: {' '.join(str(e).split())[:300]}")
    shape = model.input_shape
    if not isinstance(shape, tuple) or len(shape) != 4 or None in shape[1:] or len(model.outputs) != 1:
        fail(f"{path}: the model takes {shape} and has {len(model.outputs)} outputs; "
             "delta runs image models with one [N, H, W, C] input and one output")
    return model


def _short(weight_name):
    """A weight's own name: `kernel` of `Conv1/kernel:0`."""
    n = weight_name[:-2] if weight_name.endswith(":0") else weight_name
    return n.rsplit("/", 1)[-1]


def capture(tf, model, x0, out_dir):
    """Input 0 once more through a model whose outputs are every layer's
    output (InputLayer left out), in the model's layer order; and every
    layer's weights (trainable and moving statistics) as `layer/weight`."""
    layers = [layer for layer in model.layers if not isinstance(layer, tf.keras.layers.InputLayer)]
    probe = tf.keras.Model(model.inputs, [layer.output for layer in layers])
    values = probe(x0, training=False)
    os.makedirs(out_dir, exist_ok=True)
    index = []
    for i, (layer, value) in enumerate(zip(layers, values)):
        a = value.numpy()
        file = f"{i:04d}.npy"
        cb_delta_files.save_npy(os.path.join(out_dir, file), a)
        index.append({"index": i, "name": layer.name, "type": type(layer).__name__, "shape": list(a.shape),
                      "file": file})
    params = []
    for layer in model.layers:
        for w in layer.weights:
            a = np.asarray(w.numpy()).astype(np.float32)
            file = f"param-{len(params):04d}.npy"
            cb_delta_files.save_npy(os.path.join(out_dir, file), a)
            params.append({"name": f"{layer.name}/{_short(w.name)}", "shape": list(a.shape), "file": file})
    cb_delta_files.save_json(os.path.join(out_dir, "params.json"), params)
    cb_delta_files.save_json(os.path.join(out_dir, "index.json"), index)


def check_delta_args(args, fail):
    """The counts and the inputs file every delta run needs (--model or --onnx)."""
    require_delta_common(fail)
    for opt, low in (("threads", 1), ("reps", 1), ("warmup", 0)):
        if getattr(args, opt) < low:
            fail(f"--{opt} must be at least {low}")
    if not os.path.isfile(args.inputs):
        fail(f"cannot open inputs {args.inputs}: no such file")


def timed_passes(fwd, xs, args, row_of):
    """The delta timing of a TensorFlow function at batch 1: the first call
    on its own, --warmup untimed calls of input 0, then --reps timed calls
    of each input. The clock surrounds the call and reading its result
    (TensorFlow runs a function synchronously on the CPU; `row_of` turns the
    result into one [1, K] numpy row). Returns (first call s, [n, K] rows of
    each input's first timed call, per-input lists of seconds)."""
    t0 = time.perf_counter()
    y = row_of(fwd(xs[0]))
    first = time.perf_counter() - t0
    logits = np.empty((len(xs), y.shape[1]), dtype=np.float32)
    for _ in range(args.warmup):
        row_of(fwd(xs[0]))
    times = []
    for i, xi in enumerate(xs):
        row = []
        for r in range(args.reps):
            t0 = time.perf_counter()
            y = row_of(fwd(xi))
            row.append(time.perf_counter() - t0)
            if r == 0:
                logits[i] = y[0]
        times.append(row)
    return first, logits, times


def delta(tf, args, fail):
    """The runner's threads are set by the caller before TensorFlow runs anything."""
    check_delta_args(args, fail)
    import tf_keras
    if not os.path.isfile(args.model):
        fail(f"cannot open model {args.model}: no such file")
    model = load_keras(tf, args.model, fail)
    x = cb_delta_files.read_inputs(args.inputs, model.input_shape[1:], fail, layout="NHWC")
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        fail(f"cannot make {args.out}: {e}")
    fwd = tf.function(lambda t: model(t, training=False),
                      input_signature=[tf.TensorSpec((1,) + tuple(x.shape[1:]), tf.float32)])
    xs = [tf.constant(x[i:i + 1]) for i in range(len(x))]  # batch-1 tensors made before any timing
    first, logits, times = timed_passes(fwd, xs, args, lambda y: y.numpy())
    cb_delta_files.save_npy(os.path.join(args.out, "outputs.npy"), logits)
    if args.capture:
        capture(tf, model, xs[0], os.path.join(args.out, "capture"))
    cb_delta_files.save_json(os.path.join(args.out, "times.json"), {
        "first_call_s": first, "reps": args.reps, "warmup": args.warmup, "threads": args.threads,
        "inter_op_threads": 1, "per_input_s": times, "framework": "keras", "version": tf_keras.__version__,
        "tensorflow": tf.__version__, "python": platform.python_version(), "device": "cpu",
        "call": "tf.function(model(x, training=False)), input signature [1, H, W, 3]",
        "model": args.model, "keras_name": model.name, "inputs": len(xs)})
    print(f"{model.name}: {len(xs)} inputs x {args.reps} passes, first call {first * 1e3:.1f} ms, "
          f"median {np.median(times) * 1e3:.2f} ms (tf-keras {tf_keras.__version__}, TensorFlow {tf.__version__}, "
          f"{args.threads} threads) -> {args.out}")


if __name__ == "__main__":
    sys.exit("run through crossbind_tf.py")
