"""The LiteRT side of `crossbind delta`: one .tflite image model (float32,
or with dynamic-range int8 weights) in LiteRT's Interpreter, run on every
input alone (batch 1), timed, with its logits and, on request, every
tensor an operator computes for input 0.

  delta --model F.tflite --inputs X.npy --out DIR --threads N --reps R
        --warmup K [--capture]

X.npy: float32 [n, H, W, C] matching the model's input (NHWC, as
TFLiteConverter writes Keras models). Timing as the PyTorch runner's delta:
the process's first inference (input 0) alone (first_call_s), K untimed
ones on input 0, then R on each input in turn; time.perf_counter around
set_tensor + invoke + get_tensor (one prediction as LiteRT's Python API
makes it). Interpreter(num_threads=N) with its default delegate (XNNPACK).
Writes DIR/outputs.npy (float32 [n, classes], each input's first timed
pass), with --capture DIR/capture/, and DIR/times.json last; every file
under a temporary name, then renamed.

--capture: input 0 once more in a second interpreter made with
experimental_preserve_all_tensors=True and LiteRT's built-in kernels
without the default delegate (a delegate computes its subgraph's
intermediates out of the interpreter's sight, so they could not be read):
each operator's outputs in execution order as DIR/capture/NNNN.npy, listed
in DIR/capture/index.json as {"index", "name" (tensor name), "op", "shape",
"dtype", "file"}. Those kernels are not the timed run's, so a captured
value may differ from it by rounding; the last one is the logits.
"""
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


def add_parser(sub):
    d = sub.add_parser("delta", help="one .tflite image model on each input alone: logits, times, intermediates")
    d.add_argument("--model", required=True, help="a .tflite model with one float32 image input")
    d.add_argument("--inputs", required=True, help="float32 .npy [n, H, W, C], preprocessed")
    d.add_argument("--out", required=True, help="directory for outputs.npy, times.json and capture/")
    d.add_argument("--threads", type=int, required=True)
    d.add_argument("--reps", type=int, required=True)
    d.add_argument("--warmup", type=int, required=True)
    d.add_argument("--capture", action="store_true", help="also every operator's output for input 0")


def interpreter(path, threads, fail, **kw):
    from ai_edge_litert.interpreter import Interpreter
    try:
        it = Interpreter(model_path=path, num_threads=threads, **kw)
        it.allocate_tensors()
    except (ValueError, RuntimeError) as e:
        fail(f"{path}: LiteRT cannot load the model: {' '.join(str(e).split())[:300]}")
    return it


def quantisation(probe):
    """(quantised, int8 weights): the int8 tensors among the model's
    weights, the tensors that some operator reads and none writes (its
    input excepted), as the model's operator list has them before a
    delegate replaces parts of it (`probe`: an interpreter without one).
    A hybrid kernel's int8 scratch tensors (its input quantised on the fly)
    are written, so they do not count."""
    ops = probe._get_ops_details()
    read = {int(t) for op in ops for t in op["inputs"] if t >= 0}
    written = {int(t) for op in ops for t in op["outputs"]} | {d["index"] for d in probe.get_input_details()}
    n = sum(1 for t in probe.get_tensor_details()
            if t["dtype"] == np.int8 and t["index"] in read and t["index"] not in written)
    return n > 0, n


def capture(path, x0, out_dir, fail):
    from ai_edge_litert.interpreter import OpResolverType
    it = interpreter(path, 1, fail, experimental_preserve_all_tensors=True,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.set_tensor(it.get_input_details()[0]["index"], x0)
    it.invoke()
    details = {t["index"]: t for t in it.get_tensor_details()}
    os.makedirs(out_dir, exist_ok=True)
    index = []
    for op in it._get_ops_details():
        for t in op["outputs"]:
            value = it.get_tensor(int(t))
            file = f"{len(index):04d}.npy"
            cb_delta_files.save_npy(os.path.join(out_dir, file), value)
            index.append({"index": len(index), "name": details[int(t)]["name"], "op": op["op_name"],
                          "shape": list(value.shape), "dtype": value.dtype.name, "file": file})
    cb_delta_files.save_json(os.path.join(out_dir, "index.json"), index)


def run(args, fail):
    require_delta_common(fail)
    for opt, low in (("threads", 1), ("reps", 1), ("warmup", 0)):
        if getattr(args, opt) < low:
            fail(f"--{opt} must be at least {low}")
    try:
        with open(args.model, "rb") as f:
            head = f.read(8)
    except FileNotFoundError:
        fail(f"cannot open model {args.model}: no such file")
    except OSError as e:
        fail(f"cannot open model {args.model}: {e}")
    if len(head) < 8 or head[4:8] != b"TFL3":
        fail(f"{args.model}: not a TFLite model (no TFL3 identifier at byte 4)")
    if not os.path.isfile(args.inputs):
        fail(f"cannot open inputs {args.inputs}: no such file")
    # The model is checked in an interpreter without the default delegate
    # (XNNPACK announces itself on stderr when it is made; a refusal stays
    # one line), then run in one with it.
    from ai_edge_litert.interpreter import OpResolverType
    probe = interpreter(args.model, 1, fail,
                        experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    ins, outs = probe.get_input_details(), probe.get_output_details()
    if len(ins) != 1 or ins[0]["dtype"] != np.float32 or len(ins[0]["shape"]) != 4:
        fail(f"{args.model}: delta runs models with one float32 [N, H, W, C] input; this one takes "
             + ", ".join(f"{np.dtype(d['dtype']).name} {list(d['shape'])}" for d in ins))
    if outs[0]["dtype"] != np.float32 or len(outs[0]["shape"]) != 2:
        fail(f"{args.model}: its first output is {np.dtype(outs[0]['dtype']).name} {list(outs[0]['shape'])}, "
             "not float32 [N, classes]")
    x = cb_delta_files.read_inputs(args.inputs, [int(d) for d in ins[0]["shape"][1:]], fail)
    quantised, int8_weights = quantisation(probe)
    del probe
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        fail(f"cannot make {args.out}: {e}")
    it = interpreter(args.model, args.threads, fail)
    inp, out = it.get_input_details()[0], it.get_output_details()[0]
    if int(inp["shape"][0]) != 1:
        it.resize_tensor_input(inp["index"], [1] + list(x.shape[1:]))
        it.allocate_tensors()
    xs = [np.ascontiguousarray(x[i:i + 1]) for i in range(len(x))]  # made before any timing

    def predict(xi):
        it.set_tensor(inp["index"], xi)
        it.invoke()
        return it.get_tensor(out["index"])

    t0 = time.perf_counter()
    y = predict(xs[0])
    first = time.perf_counter() - t0
    logits = np.empty((len(xs), y.shape[1]), dtype=np.float32)
    for _ in range(args.warmup):
        predict(xs[0])
    times = []
    for i, xi in enumerate(xs):
        row = []
        for r in range(args.reps):
            t0 = time.perf_counter()
            y = predict(xi)
            row.append(time.perf_counter() - t0)
            if r == 0:
                logits[i] = y[0]
        times.append(row)
    cb_delta_files.save_npy(os.path.join(args.out, "outputs.npy"), logits)
    if args.capture:
        capture(args.model, xs[0], os.path.join(args.out, "capture"), fail)
    from ai_edge_litert import __version__ as litert_version
    cb_delta_files.save_json(os.path.join(args.out, "times.json"), {
        "first_call_s": first, "reps": args.reps, "warmup": args.warmup, "threads": args.threads,
        "per_input_s": times, "framework": "tflite", "version": litert_version, "quantised": quantised,
        "int8_weight_tensors": int8_weights, "python": platform.python_version(), "device": "cpu",
        "delegate": "default (XNNPACK)", "model": args.model, "inputs": len(xs)})
    print(f"{os.path.basename(args.model)}: {len(xs)} inputs x {args.reps} passes, first call {first * 1e3:.1f} ms, "
          f"median {np.median(times) * 1e3:.2f} ms (LiteRT {litert_version}, {args.threads} threads, "
          f"{'quantised' if quantised else 'float'}) -> {args.out}")
