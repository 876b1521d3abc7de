"""The PyTorch side of `crossbind delta`: one ImageNet CNN from a state dict,
or an ONNX file brought back into torch.nn modules by onnx2torch (DeltaNN's
PyTorch -> ONNX -> PyTorch conversion), run natively on every input alone
(batch 1), timed, with its logits and, on request, every leaf module's
output for input 0 and every tensor of the state dict.

  delta (--model NAME --weights W.pt | --onnx F.onnx) --inputs X.npy
        --out DIR --threads N --reps R --warmup K [--capture]

X.npy: float32 [n, 3, S, S] (S the model's side: 299 for inception_v3,
224 for the others; with --onnx the side of the file's NCHW input). Timing: the process's first forward (input 0) alone
(first_call_s), K untimed passes on input 0, then R passes on each input
in turn, time.perf_counter around the forward call alone. Writes
DIR/outputs.npy (float32 [n, classes], each input's first timed pass),
with --capture DIR/capture/ (index.json, params.json and their .npy
files), and DIR/times.json last; every file under a temporary name, then
renamed.
"""
import os
import platform
import sys
import time

import numpy as np
import torch

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
import cb_imagenet


def add_parser(sub):
    p = sub.add_parser("delta", help="one model (an ImageNet CNN or the study's) on each input alone: outputs, times, leaf outputs")
    p.add_argument("--model", help="torchvision's NAME (with --weights)")
    p.add_argument("--weights", help="state dict (torch.save), e.g. imagenet-export --weights-out")
    p.add_argument("--onnx", help="instead of --model and --weights: an ONNX file with one float32 image input "
                                  "(NCHW or NHWC) or int64 token ids, converted by onnx2torch")
    p.add_argument("--inputs", required=True, help="float32 .npy [n, 3, S, S] (int64 [n, L] for token ids)")
    p.add_argument("--out", required=True, help="directory for outputs.npy, times.json and capture/")
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--reps", type=int, required=True)
    p.add_argument("--warmup", type=int, required=True)
    p.add_argument("--capture", action="store_true",
                   help="also every leaf module's output for input 0, and the state dict's tensors")



def leaf_modules(model):
    """(dotted name, module) of every module without children, in registration order."""
    return [(n, m) for n, m in model.named_modules() if not any(True for _ in m.children())]


def capture(model, x0, out_dir):
    """Input 0 through the model once more with a forward hook on every leaf
    module: each call's output, in execution order (a module called twice
    appears twice); a module that returns a tuple (an LSTM's output and
    state) gives its first tensor. Outputs are copied in the hook: an
    in-place activation that follows (ReLU6(inplace=True)) would otherwise
    overwrite them."""
    records = []

    def hook_for(name):
        def hook(module, inputs, output):
            output = _first(output)
            if isinstance(output, torch.Tensor):
                records.append((name, type(module).__name__, output.detach().numpy().copy()))
        return hook

    handles = [m.register_forward_hook(hook_for(n)) for n, m in leaf_modules(model)]
    try:
        with torch.inference_mode():
            model(x0)
    finally:
        for h in handles:
            h.remove()
    os.makedirs(out_dir, exist_ok=True)
    index = []
    for i, (name, kind, value) in enumerate(records):
        file = f"{i:04d}.npy"
        cb_delta_files.save_npy(os.path.join(out_dir, file), value)
        index.append({"index": i, "module": name, "type": kind, "shape": list(value.shape), "file": file})
    # The state dict's floating-point tensors (parameters and running
    # statistics); BatchNorm's step counters are no weights.
    params = []
    for i, (key, value) in enumerate((k, v) for k, v in model.state_dict().items() if v.is_floating_point()):
        file = f"param-{i:04d}.npy"
        cb_delta_files.save_npy(os.path.join(out_dir, file), value.detach().numpy().astype(np.float32))
        params.append({"name": key, "shape": list(value.shape), "file": file})
    cb_delta_files.save_json(os.path.join(out_dir, "params.json"), params)
    cb_delta_files.save_json(os.path.join(out_dir, "index.json"), index)


def onnx2torch_or_exit():
    """(onnx, onnx2torch), or one error line and exit status 2: onnx2torch is
    in the environment of runners/pytorch-python only (Debian has no
    package of it)."""
    try:
        import onnx
        import onnx2torch
    except ImportError as e:
        print(f"crossbind-torch: error: --onnx needs onnx2torch, which is not installed for {sys.executable} "
              f"(torch {torch.__version__}): {e}; run it in the pytorch-python environment, made by: "
              f"bash runners/pytorch-python/install.sh", file=sys.stderr)
        sys.exit(2)
    return onnx, onnx2torch


def _dims(value_info):
    """An ONNX value's shape as a list: an int per fixed dimension, its
    parameter name or "?" per free one; None when it has no shape."""
    t = value_info.type.tensor_type
    if not t.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim]


def onnx_model(path, fail):
    """The ONNX file at `path` as onnx2torch converts it, in evaluation mode,
    with its input's per-sample shape and type and the versions that made
    it. One input is taken, in the forms torch.onnx, tf2onnx and crossbind
    export: a float32 image, NCHW [N, C, H, W] or NHWC [N, H, W, C] (N free
    or 1; C 1 or 3), or int64 token ids [N, L] (an embedding's, as crossbind
    exports its IMDb classifiers); anything else (several inputs, another
    type or rank) is refused with one line."""
    onnx, onnx2torch = onnx2torch_or_exit()
    from importlib import metadata
    try:
        o2t_version = metadata.version("onnx2torch")
    except metadata.PackageNotFoundError:
        o2t_version = "unknown"
    if not os.path.isfile(path):
        fail(f"cannot open model {path}: no such file")
    try:
        m = onnx.load(path)
        onnx.checker.check_model(m)
    except Exception as e:  # protobuf and the checker raise many types for bad files
        fail(f"{path}: not an ONNX model: {' '.join(str(e).split())[:300]}")
    if not m.graph.node:
        fail(f"{path}: not an ONNX model: its graph has no nodes")
    init = {t.name for t in m.graph.initializer}
    inputs = [i for i in m.graph.input if i.name not in init]
    if len(inputs) != 1:
        fail(f"{path}: has {len(inputs)} inputs ({', '.join(i.name for i in inputs)}); "
             f"--onnx takes one float32 NCHW image input [N, C, H, W], as torch.onnx exports")
    i = inputs[0]
    dims = _dims(i)
    elem = i.type.tensor_type.elem_type
    image = (elem == onnx.TensorProto.FLOAT and dims is not None and len(dims) == 4
             and (not isinstance(dims[0], int) or dims[0] in (0, 1)) and all(isinstance(d, int) and d > 0 for d in dims[1:]))
    nchw = image and dims[1] in (1, 3)
    nhwc = image and dims[3] in (1, 3)  # tf2onnx's Keras files
    tokens = (elem == onnx.TensorProto.INT64 and dims is not None and len(dims) == 2
              and (not isinstance(dims[0], int) or dims[0] in (0, 1)) and isinstance(dims[1], int) and dims[1] > 0)
    if not nchw and not nhwc and not tokens:
        kind = onnx.TensorProto.DataType.Name(elem).lower() if elem else "untyped"
        shape = "no shape" if dims is None else str(dims).replace("'", "")
        fail(f"{path}: input {i.name} is {kind} {shape}; --onnx takes one float32 image input, [N, C, H, W] as "
             f"torch.onnx exports or [N, H, W, C] as tf2onnx does (N free or 1, C 1 or 3), or int64 token ids [N, L]")
    try:
        model = onnx2torch.convert(m)
    except Exception as e:  # an operator or attribute onnx2torch does not convert
        fail(f"{path}: onnx2torch {o2t_version} cannot convert it: {type(e).__name__}: "
             f"{' '.join(str(e).split())[:300]}")
    return (model.eval(), tuple(dims[1:]), np.int64 if tokens else np.float32,
            {"conversion": "onnx2torch", "onnx2torch": o2t_version, "onnx": onnx.__version__})


def _first(y):
    """The first output of a model that returns several (a tuple or list)."""
    return y[0] if isinstance(y, (tuple, list)) else y


def run(args, fail, study=None):
    """`study`: (models, input shapes, load_weights) of the study's own models
    (crossbind_torch.py's), which delta also runs with their trained weights."""
    require_delta_common(fail)
    models, shapes, load_weights = study or ({}, {}, None)
    if args.onnx is not None:
        if args.model is not None or args.weights is not None:
            fail("--onnx F.onnx takes the place of --model NAME --weights W.pt: give one or the other, not both")
    elif args.model is None or args.weights is None:
        fail("give --model NAME with --weights W.pt, or --onnx F.onnx")
    elif args.model not in cb_imagenet.SIDES and args.model not in models:
        fail(f"unknown model {args.model} (known: {', '.join(sorted(set(cb_imagenet.SIDES) | set(models)))})")
    for opt, low in (("threads", 1), ("reps", 1), ("warmup", 0)):
        if getattr(args, opt) < low:
            fail(f"--{opt} must be at least {low}")
    torchvision = cb_imagenet.torchvision_or_exit(fail)
    if args.onnx is not None:
        name = args.onnx
        model, shape, dtype, extra = onnx_model(args.onnx, fail)
        x = cb_delta_files.read_inputs(args.inputs, shape, fail, dtype=dtype)
    elif args.model in models:  # the study's model with its trained weights (safetensors or state dict)
        name, extra = args.model, {"study_model": True}
        tokens = len(shapes[name]) == 1  # the IMDb classifiers: int64 token ids [n, 300]
        x = cb_delta_files.read_inputs(args.inputs, shapes[name], fail, dtype=np.int64 if tokens else np.float32)
        model = models[name]()
        load_weights(model, args.weights)
        model.eval()
    else:
        name, extra = args.model, {}
        side = cb_imagenet.SIDES[name]
        x = cb_delta_files.read_inputs(args.inputs, (3, side, side), fail)
        torch.manual_seed(0)  # the skeleton's own initialisation, replaced at once
        model = cb_imagenet.load_into(cb_imagenet.skeleton(name, fail), name, args.weights, fail)
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        fail(f"cannot make {args.out}: {e}")
    torch.set_num_threads(args.threads)
    # Batch-1 tensors made before any timing; the timed region is the call alone.
    xs = [torch.from_numpy(np.ascontiguousarray(x[i:i + 1])) for i in range(len(x))]
    times = []
    with torch.inference_mode():
        t0 = time.perf_counter()
        y = model(xs[0])
        first = time.perf_counter() - t0
        y = _first(y)
        if not isinstance(y, torch.Tensor) or y.dim() != 2 or y.shape[0] != 1:
            fail(f"{name}: the first output is {list(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__} "
                 f"for one input; delta needs logits [1, classes]")
        logits = np.empty((len(xs), y.shape[1]), dtype=np.float32)
        for _ in range(args.warmup):
            model(xs[0])
        for i, xi in enumerate(xs):
            row = []
            for r in range(args.reps):
                t0 = time.perf_counter()
                y = model(xi)
                row.append(time.perf_counter() - t0)
                if r == 0:
                    logits[i] = _first(y)[0].numpy()
            times.append(row)
    cb_delta_files.save_npy(os.path.join(args.out, "outputs.npy"), logits)
    if args.capture:
        capture(model, xs[0], os.path.join(args.out, "capture"))
    cb_delta_files.save_json(os.path.join(args.out, "times.json"), {
        "first_call_s": first, "reps": args.reps, "warmup": args.warmup, "threads": args.threads,
        "per_input_s": times, "framework": "pytorch", "version": torch.__version__,
        "torchvision": torchvision.__version__, "python": platform.python_version(), "device": "cpu",
        "model": name, "inputs": len(xs), "flush_denormal": False, **extra})
    print(f"{name}: {len(xs)} inputs x {args.reps} passes, first call {first * 1e3:.1f} ms, "
          f"median {np.median(times) * 1e3:.2f} ms (torch {torch.__version__}, {args.threads} threads) -> {args.out}")
