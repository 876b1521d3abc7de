"""ONNX files into TensorFlow through onnx2tf, for crossbind delta's
"onnx2tf" variant: `crossbind_tf.py delta --onnx FILE.onnx ...` converts the
file in this process (onnx2tf.convert returns a tf-keras model) and times it
the way the Keras variant is timed (a tf.function at batch 1).

The model keeps the ONNX file's input layout: an NCHW image input stays
NCHW (keep_ncw_or_nchw_or_ncdhw_input_names), an NHWC one (tf2onnx's
Keras exports) stays NHWC, and int64 token ids stay [N, L], so every
variant of an experiment reads the same input file. onnx2tf works in NHWC
inside; the logits come out in the ONNX file's order.

Offline: onnx2tf downloads sample images from GitHub for its check run when
every input is a fixed-batch NHWC image. The copy converted here gives such
an input a free batch dimension, which never asks for them; should onnx2tf
still try, the runner fails with one message instead of reaching out. Its
other downloads are behind options left off (int8 quantisation, schema
copies), and onnxsim, which would rewrite the file in place, is not used.
"""
import os
import platform
import shutil
import tempfile
import time

import numpy as np

from cb_keras_apps import cb_delta_files, check_delta_args, timed_passes


class _DownloadRefused(Exception):
    """onnx2tf reached for its sample images (module note)."""


def _input_of(onnx, m, path, fail):
    """(name, dims, kind) of the graph's one input besides its weights:
    kind "nchw", "nhwc" (float32 images) or "tokens" (int64 [N, L])."""
    weights = {t.name for t in m.graph.initializer}
    inputs = [i for i in m.graph.input if i.name not in weights]
    if len(inputs) != 1:
        fail(f"{path}: has {len(inputs)} inputs; delta runs models with one input")
    i = inputs[0]
    elem = i.type.tensor_type.elem_type
    dims = [d.dim_value if d.HasField("dim_value") else None for d in i.type.tensor_type.shape.dim]
    if elem == onnx.TensorProto.INT64 and len(dims) == 2 and dims[1]:
        return i.name, dims, "tokens"
    if elem == onnx.TensorProto.FLOAT and len(dims) == 4 and all(dims[1:]):
        if dims[1] in (1, 3):
            return i.name, dims, "nchw"
        if dims[3] in (1, 3):
            return i.name, dims, "nhwc"
    fail(f"{path}: input {i.name} is {onnx.TensorProto.DataType.Name(elem).lower() if elem else 'untyped'} "
         f"{dims}; delta runs a float32 image [N, C, H, W] or [N, H, W, C], or int64 token ids [N, L]")


def _without_colons(m):
    """Renames every value whose name holds ':' (tf2onnx's "conv/Relu6:0")
    in place: onnx2tf finds a graph output of such a name only when no other
    output is found, so intermediate values added as outputs would vanish.
    Returns {new name: file's name}."""
    names = {v for n in m.graph.node for v in list(n.input) + list(n.output)}
    names |= {v.name for v in list(m.graph.input) + list(m.graph.output)} | {t.name for t in m.graph.initializer}
    new = {}
    for name in sorted(n for n in names if ":" in n):
        candidate = name.replace(":", "__")
        while candidate in names or candidate in new:
            candidate += "_"
        new[candidate] = name
    old_to_new = {o: n for n, o in new.items()}
    for n in m.graph.node:
        n.input[:] = [old_to_new.get(v, v) for v in n.input]
        n.output[:] = [old_to_new.get(v, v) for v in n.output]
    for v in list(m.graph.input) + list(m.graph.output) + list(m.graph.value_info):
        v.name = old_to_new.get(v.name, v.name)
    for t in m.graph.initializer:
        t.name = old_to_new.get(t.name, t.name)
    return new


def _onnx_shapes(onnx, m):
    """Every value's ONNX shape (ints, None where open) and element type, by
    shape inference."""
    shapes, types = {}, {}
    try:
        inferred = onnx.shape_inference.infer_shapes(m)
    except Exception:  # noqa: BLE001 - inference is a help for the capture's layouts, not required
        return shapes, types
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        if not vi.type.HasField("tensor_type"):
            continue
        types[vi.name] = vi.type.tensor_type.elem_type
        if vi.type.tensor_type.HasField("shape"):
            shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else None
                               for d in vi.type.tensor_type.shape.dim]
    return shapes, types


def _as_onnx_layout(value, dims):
    """An intermediate value in the ONNX file's layout: onnx2tf hands some
    back channels-last. None when neither layout matches the ONNX shape."""
    def fits(shape):
        return len(shape) == len(dims) and all(d is None or d == s for d, s in zip(dims, shape))
    if dims is None:
        return value if value.ndim < 3 else None
    if fits(value.shape):
        return value
    if value.ndim >= 3:
        moved = np.moveaxis(value, -1, 1)  # [N, ..., C] -> [N, C, ...]
        if fits(moved.shape):
            return np.ascontiguousarray(moved)
    return None


def convert(path, work, fail):
    """The ONNX file as a tf-keras model, with what describes the conversion."""
    import onnx
    try:
        import onnx2tf
        import onnx2tf.onnx2tf as converter_module
    except ImportError as e:  # an environment made before onnx2tf joined its lock file
        fail(f"onnx2tf cannot be imported ({e}); run: bash runners/tensorflow-python/install.sh")
    if not os.path.isfile(path):
        fail(f"cannot open model {path}: no such file")
    try:
        m = onnx.load(path)
    except Exception as e:  # noqa: BLE001 - protobuf raises many types for a damaged file
        fail(f"{path}: not an ONNX model: {' '.join(str(e).split())[:300]}")
    if not m.graph.node:
        fail(f"{path}: not an ONNX model: its graph has no nodes")
    shapes, types = _onnx_shapes(onnx, m)  # by the file's names
    file_names = [o.name for o in m.graph.output]
    _without_colons(m)
    name, dims, kind = _input_of(onnx, m, path, fail)
    for o, file_name in zip(m.graph.output, file_names):  # an output added by name alone is dropped unless typed
        if not o.type.tensor_type.elem_type:
            o.type.tensor_type.elem_type = types.get(file_name) or onnx.TensorProto.FLOAT
    # The batch: fixed at 1 (the only one delta runs; onnx2tf converts an
    # LSTM only with a fixed batch), except for an NHWC image, which keeps a
    # free one (see the module's note on downloads).
    for vi in m.graph.input:
        if vi.name == name:
            if kind == "nhwc":
                vi.type.tensor_type.shape.dim[0].dim_param = "batch"
            else:
                vi.type.tensor_type.shape.dim[0].dim_value = 1

    def no_download():
        raise _DownloadRefused()
    converter_module.download_test_image_data = no_download
    os.makedirs(work, exist_ok=True)
    copy = os.path.join(work, "model.onnx")
    onnx.save(m, copy)
    keep = ({"keep_ncw_or_nchw_or_ncdhw_input_names": [name]} if kind == "nchw"
            else {"keep_nwc_or_nhwc_or_ndhwc_input_names": [name]} if kind == "nhwc" else {})
    here = os.getcwd()
    t0 = time.perf_counter()
    try:
        os.chdir(work)  # onnx2tf reads and writes helper files in the current directory
        model = onnx2tf.convert(input_onnx_file_path=copy, output_folder_path=os.path.join(work, "saved"),
                                not_use_onnxsim=True, non_verbose=True, disable_model_save=True, **keep)
    except _DownloadRefused:
        fail(f"{path}: onnx2tf asked to download its sample images from GitHub; crossbind runs offline and "
             "never lets it")
    except SystemExit as e:  # onnx2tf exits on some unsupported graphs
        fail(f"{path}: onnx2tf {onnx2tf.__version__} cannot convert it (it exited with {e.code})")
    except Exception as e:  # noqa: BLE001 - an op or attribute onnx2tf does not convert
        fail(f"{path}: onnx2tf {onnx2tf.__version__} cannot convert it: {type(e).__name__}: "
             f"{' '.join(str(e).split())[:300]}")
    finally:
        os.chdir(here)
    convert_s = time.perf_counter() - t0
    if model is None or len(model.outputs) != len(m.graph.output):
        fail(f"{path}: onnx2tf gave {0 if model is None else len(model.outputs)} outputs for the file's "
             f"{len(m.graph.output)}")
    info = {"conversion": "onnx2tf", "onnx2tf": onnx2tf.__version__, "onnx": onnx.__version__,
            "convert_s": convert_s, "input_layout": kind,
            "onnx2tf_options": sorted(keep) + ["not_use_onnxsim", "disable_model_save"]}
    outputs = [(n, shapes.get(n)) for n in file_names]
    return model, dims, kind, outputs, info


def delta(tf, args, fail):
    """Like cb_keras_apps.delta for an ONNX file; threads are set by the caller."""
    check_delta_args(args, fail)
    work = tempfile.mkdtemp(prefix="crossbind-onnx2tf-")
    try:
        model, dims, kind, outputs, info = convert(args.onnx, work, fail)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    tokens = kind == "tokens"
    x = cb_delta_files.read_inputs(args.inputs, dims[1:], fail, layout=kind.upper() if not tokens else "",
                                   dtype=np.int64 if tokens else np.float32)
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        fail(f"cannot make {args.out}: {e}")
    fwd = tf.function(lambda t: model(t, training=False),
                      input_signature=[tf.TensorSpec((1,) + tuple(x.shape[1:]), tf.int64 if tokens else tf.float32)])
    several = len(outputs) > 1

    def logits_of(result):
        """The first output as a row: [1, classes] logits, or the value a
        sub-model cut for bisection ends at, in the file's layout, flattened."""
        y = (result[0] if several else result).numpy()
        if y.ndim != 2:
            y = _as_onnx_layout(y, outputs[0][1])
            if y is None:
                fail(f"{args.onnx}: the first output's layout cannot be told from its ONNX shape {outputs[0][1]}")
            y = y.reshape(len(y), -1)
        if y.shape[0] != 1:
            fail(f"{args.onnx}: the first output is {list(y.shape)} for one input; delta needs [1, ...]")
        return y

    xs = [tf.constant(x[i:i + 1]) for i in range(len(x))]  # batch-1 tensors made before any timing
    first, logits, times = timed_passes(fwd, xs, args, logits_of)
    cb_delta_files.save_npy(os.path.join(args.out, "outputs.npy"), logits)
    skipped = capture(fwd(xs[0]), outputs, os.path.join(args.out, "capture")) if args.capture and several else 0
    cb_delta_files.save_json(os.path.join(args.out, "times.json"), {
        "first_call_s": first, "reps": args.reps, "warmup": args.warmup, "threads": args.threads,
        "inter_op_threads": 1, "per_input_s": times, "framework": "tensorflow", "version": tf.__version__,
        "tensorflow": tf.__version__, "python": platform.python_version(), "device": "cpu",
        "call": "tf.function(model(x, training=False)) of onnx2tf's tf-keras model, input signature [1, ...]",
        "capture_skipped": skipped, "model": args.onnx, "inputs": len(xs), **info})
    print(f"{os.path.basename(args.onnx)}: onnx2tf {info['onnx2tf']} in {info['convert_s']:.1f} s, {len(xs)} inputs x "
          f"{args.reps} passes, first call {first * 1e3:.1f} ms, median {np.median(times) * 1e3:.2f} ms "
          f"(TensorFlow {tf.__version__}, {args.threads} threads) -> {args.out}")


def capture(result, outputs, out_dir):
    """Every output after the first (values crossbind added to the file), in
    the file's layout; values whose layout cannot be told apart are left out
    (their count is returned)."""
    os.makedirs(out_dir, exist_ok=True)
    index, skipped = [], 0
    for (name, dims), value in zip(outputs[1:], result[1:]):
        a = _as_onnx_layout(value.numpy(), dims)
        if a is None or a.dtype != np.float32:
            skipped += 1
            continue
        file = f"{len(index):04d}.npy"
        cb_delta_files.save_npy(os.path.join(out_dir, file), a)
        index.append({"index": len(index), "name": name, "shape": list(a.shape), "dtype": a.dtype.name, "file": file})
    cb_delta_files.save_json(os.path.join(out_dir, "index.json"), index)
    return skipped
