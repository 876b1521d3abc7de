#!/usr/bin/env python3
"""The Apache TVM side of `crossbind delta`: one ONNX image model imported
by TVM's Relax ONNX frontend, compiled for the host's CPU at one
PassContext opt_level, and run in the Relax virtual machine on every input
alone (batch 1), timed, with its logits and, on request, the values of the
graph outputs after the first (intermediates the caller added).

  crossbind_tvm.py delta --model F.onnx --inputs X.npy --out DIR
      --opt-level 0|1|2|3|4 --threads T --reps R --warmup K [--capture]

Import: the file's first graph input (one that is not an initializer),
its batch dimension bound to 1 and its other dimensions as the file gives
them (X.npy's where the file leaves them open); the weights become
constants of the module.

Compile: tvm.compile for the target {"kind": "llvm", "mcpu": <the host's
CPU as LLVM names it>} under tvm.transform.PassContext(opt_level=N) with
no pass disabled, the Relax pipeline relax.get_default_pipeline(target)
(TVM's CPU backend: library dispatch, LegalizeOps, FoldConstant, FuseOps,
FuseTIR, then lowering to the VM) and tvm.compile's default TIR pipeline.
No kernel is tuned or scheduled (no MetaSchedule database, no DLight
rules): the kernels are LegalizeOps' TIR as LLVM compiles it. What the
level changes in this pipeline, as TVM 0.27 runs it: FuseOps fuses nothing
at level 0 (every operator its own kernel) and groups operators from 1 on,
and FuseTIR's passes of opt_level 1 (CanonicalizeTIRVariables,
CanonicalizeRelaxBindings, DeadCodeElimination) run from level 1 on;
levels 1 to 4 run the same passes. times.json records what actually ran:
every pass a PassInstrument saw (run_before_pass) while compiling, and the
number of TIR kernels the Relax pipeline left.

Threads: TVM_NUM_THREADS=T in the environment before tvm is imported (the
runtime's thread pool reads it when it starts); times.json records it and
the pool's size (tvm.runtime.num_threads()). Kernels without parallel
loops (LegalizeOps' TIR has none) run on the calling thread whatever T is;
times.json counts the parallel loops in the compiled kernels.

Timing as the other runners' delta: the process's first call (input 0)
alone (first_call_s; the import and the compilation are before it, in
import_s and compile_s), K untimed calls on input 0, then R calls on each
input in turn, time.perf_counter around the VM's call of "main" alone (its
input a tvm Tensor made beforehand; the result is read after the clock
stops). Writes DIR/outputs.npy (float32 [n, classes], each input's first
timed call), with --capture DIR/capture/, and DIR/times.json last; every
file under a temporary name, then renamed.

--capture: the model's graph outputs after the first are intermediate
values (crossbind delta writes such a copy of an ONNX file; an output may
carry its name alone); input 0 runs once more and each of them is written
as DIR/capture/NNNN.npy in its own type, listed in DIR/capture/index.json
as {"index", "name", "shape", "dtype", "file"} as ONNX Runtime's runner
does. The outputs are part of the compiled graph, so FuseOps does not fuse
through them: a capturing run's kernels and times are not the plain
graph's.

Bad input (a missing or malformed file, inputs of another shape or type,
an unknown level): one `error:` line on stderr and exit status 1.

Run with the environment of runners/tvm/install.sh.
"""
import argparse
import collections
import os
import platform
import sys
import time
import warnings

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

OPT_LEVELS = (0, 1, 2, 3, 4)


def fail(msg):
    print(f"crossbind-tvm: error: {msg}", file=sys.stderr)
    sys.exit(1)


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one `error:` line (no usage text)."""

    def error(self, message):
        fail(message)


def load_onnx(path):
    import onnx
    from google.protobuf.message import DecodeError
    if not os.path.isfile(path):
        fail(f"cannot open model {path}: no such file")
    try:
        model = onnx.load(path)
    except (DecodeError, ValueError, RuntimeError) as e:
        fail(f"{path}: not an ONNX model: {' '.join(str(e).split())[:200]}")
    except OSError as e:
        fail(f"cannot open model {path}: {e}")
    if not model.graph.node or not model.graph.output:
        fail(f"{path}: not an ONNX model (no graph nodes or outputs)")
    return model


def first_input(model, path):
    """(name, dims, dtype) of the graph's first input that is not an
    initializer: a float32 [N, C, H, W] image or int64 token ids [N, L] (an
    embedding's, as crossbind exports its IMDb classifiers); dims are ints
    where the file fixes them, None where it leaves them open."""
    weights = {t.name for t in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in weights:
            continue
        tensor = vi.type.tensor_type
        elem = tensor.elem_type if vi.type.HasField("tensor_type") else 0
        if elem not in (1, 7):  # onnx.TensorProto.FLOAT, INT64
            fail(f"{path}: delta runs models whose first input is a float32 image or int64 token ids; {vi.name} is neither")
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
        if len(dims) != (4 if elem == 1 else 2):
            fail(f"{path}: its first input {vi.name} has {len(dims)} dimensions; delta runs [N, C, H, W] images "
                 "(float32) or [N, L] token ids (int64)")
        return vi.name, dims, np.float32 if elem == 1 else np.int64
    fail(f"{path}: the graph has no input besides its weights")


def add_parser(sub):
    d = sub.add_parser("delta", help="one ONNX image model compiled by TVM on each input alone: logits, times")
    d.add_argument("--model", required=True, help="an ONNX file with one float32 [N, C, H, W] image input "
                                                   "or int64 [N, L] token ids")
    d.add_argument("--inputs", required=True, help="float32 .npy [n, C, H, W], preprocessed (int64 [n, L] for token ids)")
    d.add_argument("--out", required=True, help="directory for outputs.npy, times.json and capture/")
    d.add_argument("--opt-level", required=True, help="TVM PassContext opt_level: 0 to 4")
    d.add_argument("--threads", type=int, required=True)
    d.add_argument("--reps", type=int, required=True)
    d.add_argument("--warmup", type=int, required=True)
    d.add_argument("--capture", action="store_true", help="also the graph's outputs after the first, for input 0")


def host_target(tvm):
    from tvm.target import codegen
    return tvm.target.Target({"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu()})


def compile_model(tvm, mod, target, level):
    """tvm.compile at `level`, every pass that runs recorded in order.
    Returns (executable, seconds, pass names in order of first run, runs per
    pass, the module the Relax pipeline left, the context's disabled
    passes)."""
    from tvm import relax

    runs = collections.Counter()

    @tvm.instrument.pass_instrument
    class RecordPasses:
        def run_before_pass(self, mod, info):
            runs[info.name] += 1  # a Counter keeps its keys in order of first insertion

    ctx = tvm.transform.PassContext(opt_level=level, instruments=[RecordPasses()])
    t0 = time.perf_counter()
    with ctx:
        with target:
            lowered = relax.get_default_pipeline(target)(mod)
        ex = tvm.compile(lowered, target, relax_pipeline=None)
    seconds = time.perf_counter() - t0
    return ex, seconds, list(runs), dict(runs), lowered, list(ctx.disabled_pass)


def kernels_of(tvm, lowered):
    """(the TIR kernels the Relax pipeline left, the parallel loops in them,
    counted in their TVMScript: this TVM exposes no TIR visitor to Python)."""
    kernels = [f for f in lowered.functions.values() if isinstance(f, tvm.tirx.PrimFunc)]
    return len(kernels), sum(f.script().count("T.parallel(") for f in kernels)


def as_numpy(value):
    """A VM result (a tvm Tensor, or a shape from a Shape node) as numpy."""
    if hasattr(value, "numpy"):
        return value.numpy()
    return np.asarray([int(v) for v in value], dtype=np.int64)


def run_delta(args):
    if args.opt_level not in [str(v) for v in OPT_LEVELS]:
        fail(f"unknown --opt-level '{args.opt_level}' ({', '.join(map(str, OPT_LEVELS))})")
    level = int(args.opt_level)
    for opt, low in (("threads", 1), ("reps", 1), ("warmup", 0)):
        if getattr(args, opt) < low:
            fail(f"--{opt} must be at least {low}")
    # The runtime's thread pool reads this when tvm starts it.
    os.environ["TVM_NUM_THREADS"] = str(args.threads)
    model = load_onnx(args.model)
    name, dims, dtype = first_input(model, args.model)
    x = cb_delta_files.read_inputs(args.inputs, dims[1:], fail, dtype=dtype)  # an open dimension takes any size
    import onnx
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx
    shape = [1] + [int(d) for d in x.shape[1:]]
    # An output added by name alone (as crossbind delta adds them for
    # --capture) fails onnx.checker, which the frontend reports as a warning
    # and then imports the graph all the same.
    warnings.filterwarnings("ignore", message="Field 'type' of 'value_info' is required but missing")
    t0 = time.perf_counter()
    try:
        mod = from_onnx(model, shape_dict={name: shape})
    except Exception as e:  # the frontend raises what its converters raise
        fail(f"{args.model}: TVM's ONNX frontend cannot import the model: {' '.join(str(e).split())[:300]}")
    import_s = time.perf_counter() - t0
    target = host_target(tvm)
    try:
        ex, compile_s, passes, pass_runs, lowered, disabled = compile_model(tvm, mod, target, level)
    except (RuntimeError, ValueError, TypeError) as e:  # what TVM's FFI raises for a failed pass or codegen
        fail(f"{args.model}: TVM cannot compile the model at opt_level {level}: {' '.join(str(e).split())[:300]}")
    kernels, parallel = kernels_of(tvm, lowered)
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        fail(f"cannot make {args.out}: {e}")
    dev = tvm.cpu()
    vm = relax.VirtualMachine(ex, dev)
    main = vm["main"]
    xs = [tvm.runtime.tensor(np.ascontiguousarray(x[i:i + 1]), dev) for i in range(len(x))]  # before any timing
    several = len(model.graph.output) > 1

    def logits_of(result):
        """The first output of one input as a row: [1, classes] logits, or
        any float32 value of a sub-model cut for bisection, flattened."""
        y = as_numpy(result[0] if several else result)
        if y.dtype != np.float32 or y.ndim < 1 or y.shape[0] != 1:
            fail(f"{args.model}: its first output is {y.dtype} {list(y.shape)}, not float32 [1, ...]")
        return y.reshape(-1)

    t0 = time.perf_counter()
    y = main(xs[0])
    first = time.perf_counter() - t0
    logits = np.empty((len(xs), len(logits_of(y))), dtype=np.float32)
    for _ in range(args.warmup):
        main(xs[0])
    times = []
    for i, xi in enumerate(xs):
        row = []
        for r in range(args.reps):
            t0 = time.perf_counter()
            y = main(xi)
            row.append(time.perf_counter() - t0)
            if r == 0:
                logits[i] = logits_of(y)
        times.append(row)
    cb_delta_files.save_npy(os.path.join(args.out, "outputs.npy"), logits)
    if args.capture:
        capture(model, main(xs[0]) if several else None, os.path.join(args.out, "capture"))
    cb_delta_files.save_json(os.path.join(args.out, "times.json"), {
        "first_call_s": first, "reps": args.reps, "warmup": args.warmup, "threads": args.threads,
        "per_input_s": times, "framework": "tvm", "version": tvm.__version__, "opt_level": level,
        "target": str(target), "passes": passes, "pass_runs": pass_runs,
        "passes_recorded_by": "a tvm.instrument.PassInstrument (run_before_pass) in the PassContext: every pass "
                              "that ran while compiling, nested ones included, in order of first run",
        "disabled_passes": disabled, "pipeline": "relax.get_default_pipeline(target) (CPU backend), "
                                                 "then tvm.compile's default TIR pipeline; no tuning",
        "tir_kernels": kernels, "parallel_loops": parallel, "import_s": import_s, "compile_s": compile_s,
        "thread_setting": f"TVM_NUM_THREADS={args.threads} (environment, before tvm is imported)",
        "runtime_threads": tvm.runtime.num_threads(), "executor": "relax.VirtualMachine", "onnx": onnx.__version__,
        "python": platform.python_version(), "device": "cpu", "model": args.model, "inputs": len(xs)})
    print(f"{os.path.basename(args.model)}: {len(xs)} inputs x {args.reps} runs at opt_level {level}, compile "
          f"{compile_s:.1f} s, first call {first * 1e3:.1f} ms, median {np.median(times) * 1e3:.2f} ms "
          f"(TVM {tvm.__version__}, {kernels} kernels, {args.threads} threads) -> {args.out}")


def capture(model, result, out_dir):
    """Every graph output after the first (input 0's values), in graph order."""
    os.makedirs(out_dir, exist_ok=True)
    names = [o.name for o in model.graph.output][1:]
    index = []
    for i, name in enumerate(names):
        value = as_numpy(result[i + 1])
        file = f"{i:04d}.npy"
        cb_delta_files.save_npy(os.path.join(out_dir, file), value)
        index.append({"index": i, "name": name, "shape": list(value.shape), "dtype": value.dtype.name,
                      "file": file})
    cb_delta_files.save_json(os.path.join(out_dir, "index.json"), index)


def main():
    p = Parser(prog="crossbind_tvm.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    add_parser(sub)
    args = p.parse_args()
    require_delta_common(fail)
    if args.cmd == "delta":
        run_delta(args)


if __name__ == "__main__":
    main()
