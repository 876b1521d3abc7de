"""TensorFlow's serialization formats for the TensorFlow/Python binding:
writers of one trained Keras model to each format, and the readers that
`crossbind_tf.py eval` uses for the formats it loads.

| format        | written as                                   | what it computes            |
|---------------|----------------------------------------------|-----------------------------|
| `h5`          | `model.save(path)`: whole Keras 2 model      | the Keras model (softmax)   |
| `keras`       | `model.save(path)`: Keras-2 `.keras` zip     | the Keras model (softmax)   |
| `savedmodel`  | `tf.saved_model.save`, one signature         | logits (`logits_model`)     |
| `tflite`      | `TFLiteConverter` of that signature, float32 | logits                      |
| `onnx`        | `tf2onnx` of that signature, input NCHW (1)  | logits                      |
| `tfjs`        | TF.js layers-model: model.json + shards      | the Keras model (softmax)   |

"Logits" means what `crossbind_tf.logits_model` returns: the multi-class
models' outputs before the softmax, the IMDb models' sigmoid probability
[N, 1]. The SavedModel's signature `serving_default` takes one input `x`
(float32 NHWC [None, 28, 28, 1] for the MNIST models, [None, 32, 32, 3] for
CIFAR, int32 [None, 300] for IMDb) and returns one output `output`; the
TFLite model has the same input and output; the ONNX model's input `x` is
NCHW ([N, 1, 28, 28] / [N, 3, 32, 32], as PyTorch's exports; the IMDb
models' tokens int64 [N, 300], as PyTorch's too) and its output is `output`.

(1) The CNNs' dense layers are then rewritten to PyTorch's form
(`plain_dense`): same function, Gemm instead of MatMul + Add, and no
NHWC Transpose before the Flatten.

The TF.js layers-model format (model.json: `format` "layers-model",
`modelTopology` with the Keras `model_config`, and `weightsManifest`
naming each weight as `layer/weight` with its shape and dtype, the values
little-endian float32 in shards of at most 4 MiB, in manifest order) is
written here directly: the `tensorflowjs` PyPI package imports JAX, TF
Decision Forests and TF Hub at start-up (gigabytes of dependencies for a
JSON file and a byte dump).
"""
import json
import os
import re
import shutil
import time
import zipfile

import numpy as np

FORMATS = ["h5", "keras", "savedmodel", "tflite", "onnx", "tfjs"]
INPUT_SPECS = {"mnist": ([None, 28, 28, 1], "float32"), "cifar": ([None, 32, 32, 3], "float32"),
               "imdb": ([None, 300], "int32")}
TFJS_SHARD_BYTES = 4 * 1024 * 1024
# Layers a TF.js model of this study may contain: model.json is read back
# only through these (no Lambda or other code-carrying layer is rebuilt).
TFJS_LAYERS = {"InputLayer", "ZeroPadding2D", "Conv2D", "MaxPooling2D", "Flatten", "Dense", "Softmax",
               "BatchNormalization", "ReLU", "Dropout", "Embedding", "LSTM", "GRU"}
ONNX_OPSET = 17


class ExportError(Exception):
    """A format could not be written; the message says which and why."""


def input_spec(tf, ct, name):
    shape, dtype = INPUT_SPECS[ct.DATA_FORMATS[name]]
    return tf.TensorSpec(shape, getattr(tf, dtype), name="x")


def serving_module(tf, ct, model, name):
    """A tf.Module holding the logits model and its one signature."""
    logits = ct.logits_model(model, name)
    module = tf.Module()
    module.model = logits

    @tf.function(input_signature=[input_spec(tf, ct, name)])
    def serve(x):
        return {"output": logits(x, training=False)}

    module.serve = serve
    return module


def _fresh(path):
    """Removes whatever is at path (file or directory) so it can be written anew."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


def _publish(tmp, path):
    _fresh(path)
    os.replace(tmp, path)


def write_keras(tf, ct, model, name, path, fmt):
    tmp = path + ".tmp." + fmt  # Keras picks the format from the extension
    _fresh(tmp)
    model.save(tmp, save_format="h5" if fmt == "h5" else "keras")
    _publish(tmp, path)


def write_savedmodel(tf, ct, model, name, path):
    module = serving_module(tf, ct, model, name)
    tmp = path + ".tmp"
    _fresh(tmp)
    tf.saved_model.save(module, tmp, signatures={"serving_default": module.serve})
    _publish(tmp, path)


def tflite_bytes(tf, ct, model, name):
    module = serving_module(tf, ct, model, name)
    fn = module.serve.get_concrete_function()
    if ct.binary(name):
        # The recurrent models at a fixed batch of 1: with a free batch the
        # converter cannot lower Keras' RNN loop (its tensor lists need a
        # static element shape) and its fused LSTM keeps the state at the
        # converted batch, so no resize would work either.
        logits = module.model
        one = tf.function(lambda x: {"output": logits(x, training=False)},
                          input_signature=[tf.TensorSpec([1, 300], tf.int32, name="x")])
        fn = one.get_concrete_function()
    conv = tf.lite.TFLiteConverter.from_concrete_functions([fn], module)
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]  # no Flex ops: plain LiteRT runs it
    conv.optimizations = []  # float32, never quantised
    return conv.convert()


def write_tflite(tf, ct, model, name, path):
    data = tflite_bytes(tf, ct, model, name)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    _publish(path + ".tmp", path)


def write_onnx(tf, ct, model, name, path):
    try:
        import tf2onnx
        import onnx
    except ImportError as e:
        raise ExportError(f"tf2onnx is not installed in this environment ({e}); "
                          "run: bash runners/tensorflow-python/install.sh")
    image = not ct.binary(name)
    if image:
        fn, spec = serving_module(tf, ct, model, name).serve, input_spec(tf, ct, name)
    else:
        # int64 token ids, as PyTorch's exports and the ONNX bindings' IMDb readers have them
        logits = ct.logits_model(model, name)
        spec = tf.TensorSpec([None, 300], tf.int64, name="x")
        fn = tf.function(lambda x: {"output": logits(tf.cast(x, tf.int32), training=False)}, input_signature=[spec])
    proto, _ = tf2onnx.convert.from_function(fn, input_signature=[spec], opset=ONNX_OPSET,
                                             inputs_as_nchw=["x:0"] if image else None)
    # One input `x`, one output `output`, whatever tf2onnx called them.
    renames = {proto.graph.input[0].name: "x", proto.graph.output[0].name: "output"}
    for value in list(proto.graph.input) + list(proto.graph.output):
        value.name = renames.get(value.name, value.name)
    for node in proto.graph.node:
        for i, n in enumerate(node.input):
            if n in renames:
                node.input[i] = renames[n]
        for i, n in enumerate(node.output):
            if n in renames:
                node.output[i] = renames[n]
    if image:
        plain_dense(proto)
    onnx.checker.check_model(proto)
    with open(path + ".tmp", "wb") as f:
        f.write(proto.SerializeToString())
    _publish(path + ".tmp", path)


def plain_dense(proto):
    """Two rewrites of tf2onnx's graph that keep its function and give the
    dense layers the form PyTorch's exports have (and crossbind's ONNX
    import reads): Keras' Flatten of an NHWC value (Transpose [0,2,3,1] then
    Reshape [-1, K]) becomes a Reshape of the NCHW value with the next
    MatMul's weight rows permuted to match; MatMul by a weight followed by
    Add of a bias becomes one Gemm."""
    import onnx
    from onnx import numpy_helper
    g = proto.graph
    inits = {t.name: t for t in g.initializer}
    shapes = {}
    for v in onnx.shape_inference.infer_shapes(proto).graph.value_info:
        shapes[v.name] = [d.dim_value if d.HasField("dim_value") else None for d in v.type.tensor_type.shape.dim]

    def users(name):
        return [n for n in g.node if name in n.input]
    drop = []
    for t in list(g.node):
        perm = [a.ints for a in t.attribute if a.name == "perm"]
        if t.op_type != "Transpose" or not perm or list(perm[0]) != [0, 2, 3, 1]:
            continue
        chw = shapes.get(t.input[0], [None])[1:]
        after = users(t.output[0])
        if len(chw) != 3 or None in chw or len(after) != 1 or after[0].op_type != "Reshape":
            continue
        reshape = after[0]
        mm = users(reshape.output[0])
        if len(mm) != 1 or mm[0].op_type != "MatMul" or mm[0].input[1] not in inits:
            continue
        c, h, w = chw
        wt = numpy_helper.to_array(inits[mm[0].input[1]])
        if wt.shape[0] != c * h * w or len(users(mm[0].input[1])) != 1:
            continue
        # row (h, w, c) of the NHWC flattening is row (c, h, w) of the NCHW one
        wt = wt.reshape(h, w, c, -1).transpose(2, 0, 1, 3).reshape(c * h * w, -1)
        inits[mm[0].input[1]].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(wt), mm[0].input[1]))
        reshape.input[0] = t.input[0]
        drop.append(t)
    for n in list(g.node):
        if n.op_type != "MatMul" or n.input[1] not in inits or len(inits[n.input[1]].dims) != 2:
            continue
        after = users(n.output[0])
        if (len(after) == 1 and after[0].op_type == "Add" and after[0].input[0] == n.output[0]
                and after[0].input[1] in inits and len(inits[after[0].input[1]].dims) == 1):
            add = after[0]
            gemm = onnx.helper.make_node("Gemm", [n.input[0], n.input[1], add.input[1]], [add.output[0]], name=add.name)
            g.node.insert(list(g.node).index(add), gemm)
            drop += [n, add]
        else:  # tf2onnx drops the Add of an all-zero bias: a Gemm with a zero C
            zero = n.name + "/zero_bias"
            g.initializer.append(numpy_helper.from_array(np.zeros(inits[n.input[1]].dims[1], np.float32), zero))
            g.node.insert(list(g.node).index(n), onnx.helper.make_node("Gemm", [n.input[0], n.input[1], zero],
                                                                       list(n.output), name=n.name))
            drop.append(n)
    for n in drop:
        g.node.remove(n)


def _weight_name(w):
    """`layer/weight` as Keras' .h5 files and TF.js name it: without the
    `:0`, and the recurrent cell as `lstm_cell`/`gru_cell` even when Keras
    numbered it (a second model of the same kind in one process)."""
    n = w.name[:-2] if w.name.endswith(":0") else w.name
    return "/".join(re.sub(r"^(lstm_cell|gru_cell)_\d+$", r"\1", part) for part in n.split("/"))


def write_tfjs(tf, ct, model, name, path):
    import tf_keras
    tmp = path + ".tmp"
    _fresh(tmp)
    os.makedirs(tmp)
    weights = model.weights  # layer order, each layer's weights in Keras' order
    specs, blob = [], bytearray()
    for w in weights:
        a = np.asarray(w.numpy())
        if a.dtype != np.float32:
            raise ExportError(f"weight {w.name} is {a.dtype}; the TF.js writer handles float32 only")
        specs.append({"name": _weight_name(w), "shape": list(a.shape), "dtype": "float32"})
        blob += a.astype("<f4").tobytes()
    n = max(1, -(-len(blob) // TFJS_SHARD_BYTES))
    paths = []
    for i in range(n):
        shard = f"group1-shard{i + 1}of{n}.bin"
        with open(os.path.join(tmp, shard), "wb") as f:
            f.write(blob[i * TFJS_SHARD_BYTES:(i + 1) * TFJS_SHARD_BYTES])
        paths.append(shard)
    doc = {"format": "layers-model", "generatedBy": f"keras v{tf_keras.__version__}",
           "convertedBy": "crossbind (runners/tensorflow/cb_tf_export.py)",
           "modelTopology": {"keras_version": tf_keras.__version__, "backend": "tensorflow",
                             "model_config": json.loads(model.to_json())},
           "weightsManifest": [{"paths": paths, "weights": specs}]}
    with open(os.path.join(tmp, "model.json"), "w") as f:
        json.dump(doc, f)
    _publish(tmp, path)


def write(tf, ct, model, name, fmt, path):
    """Writes one format; returns the seconds it took. Raises ExportError
    with the reason when the format cannot be written."""
    t0 = time.perf_counter()
    try:
        if fmt in ("h5", "keras"):
            write_keras(tf, ct, model, name, path, fmt)
        elif fmt == "savedmodel":
            write_savedmodel(tf, ct, model, name, path)
        elif fmt == "tflite":
            write_tflite(tf, ct, model, name, path)
        elif fmt == "onnx":
            write_onnx(tf, ct, model, name, path)
        elif fmt == "tfjs":
            write_tfjs(tf, ct, model, name, path)
        else:
            raise ExportError(f"unknown format {fmt} (known: {', '.join(FORMATS)})")
    except ExportError:
        raise
    except Exception as e:  # the converters raise many kinds; each is one clear line
        for leftover in (path + ".tmp", path + ".tmp." + fmt):
            try:
                _fresh(leftover)
            except OSError:
                pass
        msg = " ".join(str(e).split())
        raise ExportError(f"{type(e).__name__}: {msg[:400]}") from e
    return time.perf_counter() - t0


# ------------------------------------------------------------------ readers

class SignatureModel:
    """A SavedModel's `serving_default` signature, called as a Keras model is."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, x, training=False):
        return self.fn(x=x)["output"]


def read_savedmodel(tf, ct, name, path, fail):
    try:
        loaded = tf.saved_model.load(path)
    except Exception as e:
        fail(f"{path}: cannot load the SavedModel: {type(e).__name__}: {' '.join(str(e).split())[:300]}")
    sig = getattr(loaded, "signatures", {}).get("serving_default")
    if sig is None:
        fail(f"{path}: the SavedModel has no serving_default signature")
    args = sig.structured_input_signature[1]
    if list(args) != ["x"] or list(sig.structured_outputs) != ["output"]:
        fail(f"{path}: serving_default takes {sorted(args)} and returns {sorted(sig.structured_outputs)}; "
             "expected one input x and one output output")
    want = input_spec(tf, ct, name)
    got = args["x"]
    if got.dtype != want.dtype or not got.shape.is_compatible_with(want.shape):
        fail(f"{path}: its input is {got.dtype.name} {got.shape}, {name} needs {want.dtype.name} {want.shape}")
    m = SignatureModel(sig)
    m._keep = loaded  # the signature needs its object alive
    return m


def read_tfjs(tf, name, path, fail):
    """Reads a TF.js layers model back into Keras: topology from model.json
    (only the layers in TFJS_LAYERS), weights from the shards by name."""
    try:
        with open(os.path.join(path, "model.json")) as f:
            doc = json.load(f)
        topo = doc["modelTopology"]["model_config"]
        groups = doc["weightsManifest"]
        if doc.get("format") != "layers-model":
            raise ValueError(f"format is {doc.get('format')!r}, not 'layers-model'")
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail(f"{path}: not a TF.js layers model: {type(e).__name__}: {e}")
    bad = [layer.get("class_name") for layer in topo.get("config", {}).get("layers", [])
           if layer.get("class_name") not in TFJS_LAYERS]
    if bad:
        fail(f"{path}: layer classes {sorted(set(map(str, bad)))} are not this study's")
    try:
        model = tf.keras.models.model_from_json(json.dumps(topo))
    except Exception as e:
        fail(f"{path}: cannot rebuild the Keras model from model.json: {type(e).__name__}: {e}")
    values = {}
    for g in groups:
        blob = bytearray()
        for p in g["paths"]:
            if os.path.basename(p) != p:
                fail(f"{path}: shard path {p!r} leaves the model directory")
            try:
                with open(os.path.join(path, p), "rb") as f:
                    blob += f.read()
            except OSError as e:
                fail(f"{path}: cannot read weight shard {p}: {e}")
        off = 0
        for s in g["weights"]:
            if s.get("dtype") != "float32":
                fail(f"{path}: weight {s.get('name')} is {s.get('dtype')}; only float32 is read")
            n = int(np.prod(s["shape"], dtype=np.int64)) * 4
            if off + n > len(blob):
                fail(f"{path}: the shards end before weight {s['name']} (truncated)")
            values[s["name"]] = np.frombuffer(bytes(blob[off:off + n]), "<f4").reshape(s["shape"])
            off += n
        if off != len(blob):
            fail(f"{path}: {len(blob) - off} bytes of the shards belong to no weight")
    for w in model.weights:
        key = _weight_name(w)
        if key not in values:
            fail(f"{path}: the shards have no weight {key}")
        if tuple(values[key].shape) != tuple(w.shape):
            fail(f"{path}: weight {key} is {values[key].shape}, the model needs {tuple(w.shape)}")
        w.assign(values[key])
    return model


def is_keras_zip(path):
    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False
