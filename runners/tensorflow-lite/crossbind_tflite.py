#!/usr/bin/env python3
"""The TensorFlow Lite binding of the study: LiteRT's interpreter (PyPI
ai-edge-litert) running the float32 .tflite models that the TensorFlow/
Python binding writes (final.tflite, or `crossbind_tf.py export MODEL
--format tflite`). Inference only: LiteRT does not train.

A .tflite model of this study has one input `x` (float32 NHWC [N, 28, 28, 1]
for the MNIST models, [N, 32, 32, 3] for CIFAR, int32 [N, 300] for IMDb)
and one output: the multi-class models' logits, the IMDb models' sigmoid
probability [N, 1]. The input is resized to each batch.

  crossbind_tflite.py eval MODEL --weights FILE.tflite --data DIR [--batch B]
      [--repeat R] [--threads T] [--logits OUT.npy] [--json] [--limit-test N]
  crossbind_tflite.py bench --model M --kind infer|latency|startup
      --weights FILE.tflite [--batch B] [--samples N] [--repeat R] [--threads T]
  crossbind_tflite.py delta --model FILE.tflite --inputs X.npy --out DIR
      --threads N --reps R --warmup K [--capture]

`delta` (for `crossbind delta`) runs any single-input image model, float
or dynamic-range quantised (`crossbind_tf.py keras-export` writes both), on
each input alone; see cb_tflite_delta.py.

Run with the environment of runners/tensorflow-lite/install.sh.
"""
import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The project's own data readers and metrics (plain numpy): the same bytes
# and the same formulas every Python binding uses.
sys.path.insert(0, os.path.join(HERE, "..", "pytorch"))
import numpy as np  # noqa: E402
import cb_data  # noqa: E402
from cb_metrics import auc_binary, auc_macro, f1_macro  # noqa: E402
sys.path.insert(0, HERE)
import cb_tflite_delta  # noqa: E402

MODELS = {"lenet1": "mnist", "lenet5": "mnist", "vgg16": "cifar", "lstm": "imdb", "gru": "imdb", "gru-rb": "imdb"}
DEFAULT_DIRS = {"mnist": "/usr/share/datasets/fashion-mnist", "cifar": "data/cifar-stand-in",
                "imdb": "data/imdb-prepared"}
INPUTS = {"mnist": ((28, 28, 1), np.float32), "cifar": ((32, 32, 3), np.float32), "imdb": ((300,), np.int32)}
OUTPUTS = {"mnist": 10, "cifar": 10, "imdb": 1}


def fail(msg):
    print(f"crossbind-tflite: error: {msg}", file=sys.stderr)
    sys.exit(1)


class Model:
    """One .tflite model in LiteRT's interpreter, checked against what the
    study's model needs, its input resized to the batch on demand."""

    def __init__(self, name, path, threads):
        from ai_edge_litert.interpreter import Interpreter
        try:
            with open(path, "rb") as f:
                head = f.read(8)
        except OSError as e:
            fail(f"cannot open weights {path}: {e}")
        if len(head) < 8 or head[4:8] != b"TFL3":
            fail(f"{path}: not a TFLite model (no TFL3 identifier at byte 4; this binding loads .tflite only)")
        try:
            self.interp = Interpreter(model_path=path, num_threads=threads)
        except (ValueError, RuntimeError) as e:
            fail(f"{path}: LiteRT cannot load the model: {' '.join(str(e).split())[:300]}")
        ins, outs = self.interp.get_input_details(), self.interp.get_output_details()
        shape, dtype = INPUTS[MODELS[name]]
        if len(ins) != 1 or len(outs) != 1:
            fail(f"{path}: {len(ins)} inputs and {len(outs)} outputs; the study's models have one of each")
        self.inp, self.out = ins[0], outs[0]
        got = tuple(int(d) for d in self.inp["shape_signature"][1:])
        if got != shape or self.inp["dtype"] != dtype:
            fail(f"{path}: its input is {np.dtype(self.inp['dtype']).name} [N, {', '.join(map(str, got))}], "
                 f"{name} needs {np.dtype(dtype).name} [N, {', '.join(map(str, shape))}]")
        k = int(self.out["shape_signature"][-1])
        if k != OUTPUTS[MODELS[name]] or self.out["dtype"] != np.float32:
            fail(f"{path}: it outputs {np.dtype(self.out['dtype']).name} [N, {k}], {name} has "
                 f"float32 [N, {OUTPUTS[MODELS[name]]}] (only float models run here)")
        self.dtype, self.batch = dtype, None
        # A model converted at a fixed batch (the recurrent models: batch 1)
        # runs in chunks of that batch, the last one padded.
        self.fixed = int(self.inp["shape_signature"][0]) if self.inp["shape_signature"][0] > 0 else 0
        if self.fixed:
            self.interp.allocate_tensors()

    def __call__(self, x):
        if self.fixed:
            n, b = len(x), self.fixed
            outs = []
            for i in range(0, n, b):
                chunk = x[i:i + b]
                if len(chunk) < b:
                    chunk = np.concatenate([chunk, np.zeros((b - len(chunk),) + chunk.shape[1:], chunk.dtype)])
                self.interp.set_tensor(self.inp["index"], np.ascontiguousarray(chunk, dtype=self.dtype))
                self.interp.invoke()
                outs.append(self.interp.get_tensor(self.out["index"])[:min(b, n - i)].copy())
            return np.concatenate(outs)
        if self.batch != len(x):
            self.interp.resize_tensor_input(self.inp["index"], [len(x)] + list(x.shape[1:]))
            self.interp.allocate_tensors()
            self.batch = len(x)
        self.interp.set_tensor(self.inp["index"], np.ascontiguousarray(x, dtype=self.dtype))
        self.interp.invoke()
        return self.interp.get_tensor(self.out["index"]).copy()


def load_data(name, directory, limit):
    fmt = MODELS[name]
    directory = directory or DEFAULT_DIRS[fmt]
    loader = {"cifar": cb_data.load_cifar, "mnist": cb_data.load_mnist, "imdb": cb_data.load_imdb}[fmt]
    try:
        x, y = loader(directory, False, limit)
    except (OSError, ValueError) as e:
        fail(str(e))
    if fmt == "imdb":
        return x.astype(np.int32), y.astype(np.float32)
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)), y  # NCHW -> NHWC


def evaluate(model, name, x, y, batch, with_metrics):
    """One pass in file order: (correct, accuracy, loss, f1, auc, seconds, outputs)."""
    t0 = time.perf_counter()
    outs = [model(x[i:i + batch]) for i in range(0, len(x), batch)]
    t = time.perf_counter() - t0
    out = np.concatenate(outs).astype(np.float32)
    f1 = auc = float("nan")
    if MODELS[name] == "imdb":
        p = np.clip(out[:, 0].astype(np.float64), 1e-12, 1 - 1e-12)
        loss = float(np.mean(-(y * np.log(p) + (1 - y) * np.log(1 - p))))
        labels, pred = y.astype(np.int64), (out[:, 0] >= 0.5).astype(np.int64)
        if with_metrics:
            f1, auc = f1_macro(pred, labels, 2), auc_binary(out[:, 0].astype(np.float64), labels == 1)
    else:
        z = out.astype(np.float64)
        z = z - z.max(1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(1, keepdims=True))
        labels, pred = y, out.argmax(1)
        loss = float(-np.mean(logp[np.arange(len(y)), y]))
        if with_metrics:
            f1, auc = f1_macro(pred, labels, 10), auc_macro(np.exp(logp), labels, 10)
    correct = int((pred == labels).sum())
    return correct, correct / len(x), loss, f1, auc, t, out


def finite_or_null(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v


def cmd_eval(args):
    model = Model(args.model, args.weights, args.threads)
    x, y = load_data(args.model, args.data, args.limit_test)
    evaluate(model, args.model, x, y, args.batch, False)  # warm-up
    times, counts = [], []
    for i in range(args.repeat):
        r = evaluate(model, args.model, x, y, args.batch, i == args.repeat - 1)
        times.append(r[5])
        counts.append(r[0])
    if args.logits:
        np.save(args.logits, r[6])
    from ai_edge_litert import __version__ as litert_version
    res = {"binding": args.binding, "model": args.model, "load_mode": "serialization", "format": "tflite",
           "weights": args.weights, "correct": r[0], "total": len(x), "accuracy": r[1], "loss": r[2],
           "f1_macro": finite_or_null(r[3]), "auc_macro": finite_or_null(r[4]), "batch": args.batch,
           "threads": args.threads, "times_s": times, "correct_per_pass": counts,
           "mean_time_s": sum(times) / len(times), "litert": litert_version}
    if args.json:
        print(json.dumps(res, allow_nan=False))
    else:
        print(f"{args.model}: {r[0]}/{len(x)} correct, accuracy {r[1]:.4f}, loss {r[2]:.4f}, macro F1 {r[3]:.4f}, "
              f"AUC {r[4]:.4f}, mean time {res['mean_time_s']:.4f}s over {args.repeat} passes")


# ------------------------------------------------------------ bench worker
# runners/README.md, "Benchmark worker": the same synthetic inputs as every
# binding (flat index i of the NCHW input: pixel (i % 251) / 251, token
# (i * 7919) % 10000), made outside the timed region.

def bench_batch(name, s0, n):
    fmt = MODELS[name]
    chw = {"mnist": (1, 28, 28), "cifar": (3, 32, 32), "imdb": (300,)}[fmt]
    size = int(np.prod(chw))
    i = np.arange(s0 * size, (s0 + n) * size, dtype=np.int64)
    if fmt == "imdb":
        return ((i * 7919) % 10000).reshape((n,) + chw).astype(np.int32)
    x = ((i % 251).astype(np.float32) / np.float32(251.0)).reshape((n,) + chw)
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1))


def predict(model, name, x):
    out = model(x)
    return (out.reshape(-1) >= 0.5).astype(np.int64) if MODELS[name] == "imdb" else out.argmax(1)


def vmhwm_kib():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def cmd_bench(args):
    if args.model not in MODELS:
        fail(f"unknown model {args.model} (known: {', '.join(sorted(MODELS))})")
    if min(args.batch, args.samples, args.repeat, args.threads) < 1:
        fail("bench: --batch, --samples, --repeat and --threads must be at least 1")
    if args.kind == "train":
        fail("bench: LiteRT runs inference only (no train)")
    model = Model(args.model, args.weights, args.threads)
    if args.kind == "startup":
        label = int(predict(model, args.model, bench_batch(args.model, 0, 1))[0])
        print(json.dumps({"label": label, "monotonic_s": time.clock_gettime(time.CLOCK_MONOTONIC),
                          "vmhwm_kib": vmhwm_kib()}), flush=True)
        return
    times = []
    if args.kind == "infer":
        for r in range(args.repeat + 1):
            t = 0.0
            for s0 in range(0, args.samples, args.batch):
                x = bench_batch(args.model, s0, min(args.batch, args.samples - s0))
                t0 = time.perf_counter()
                predict(model, args.model, x)
                t += time.perf_counter() - t0
            if r:
                times.append(t)
    else:
        for s in range(args.samples + 5):
            x = bench_batch(args.model, s, 1)
            t0 = time.perf_counter()
            predict(model, args.model, x)
            if s >= 5:
                times.append(time.perf_counter() - t0)
    from ai_edge_litert import __version__ as litert_version
    print(json.dumps({"times_s": times, "litert": litert_version, "threads": args.threads,
                      "vmhwm_kib": vmhwm_kib()}), flush=True)


def main():
    p = argparse.ArgumentParser(prog="crossbind_tflite.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binding", default="tensorflow-lite", help="the binding named in the results")
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="not supported: LiteRT runs inference only")
    t.add_argument("rest", nargs=argparse.REMAINDER)
    e = sub.add_parser("eval")
    e.add_argument("model", choices=sorted(MODELS))
    e.add_argument("--weights", required=True, help="a .tflite model")
    e.add_argument("--data")
    e.add_argument("--batch", type=int, default=128)
    e.add_argument("--repeat", type=int, default=5)
    e.add_argument("--limit-test", type=int, default=0)
    e.add_argument("--threads", type=int, default=os.cpu_count())
    e.add_argument("--logits", help="write the last pass's outputs here (.npy, float32 [N,K])")
    e.add_argument("--json", action="store_true")
    e.add_argument("--device", default="cpu", choices=["cpu"])
    b = sub.add_parser("bench", help="one benchmark measurement (used by crossbind bench)")
    b.add_argument("--model", required=True)
    b.add_argument("--kind", required=True, choices=["train", "infer", "latency", "startup"])
    b.add_argument("--weights", required=True)
    b.add_argument("--batch", type=int, default=1)
    b.add_argument("--samples", type=int, default=1)
    b.add_argument("--repeat", type=int, default=1)
    b.add_argument("--threads", type=int, default=1)
    cb_tflite_delta.add_parser(sub)
    args = p.parse_args()
    if args.cmd == "train":
        fail("this binding does not train: LiteRT runs inference only (its manifest's \"train\" is [])")
    if args.cmd == "bench":
        cmd_bench(args)
        return
    if args.cmd == "delta":
        cb_tflite_delta.run(args, fail)
        return
    for opt in ("batch", "repeat", "threads"):
        if getattr(args, opt) < 1:
            fail(f"--{opt} must be at least 1")
    if args.limit_test < 0:
        fail("--limit-test must be >= 0")
    cmd_eval(args)


if __name__ == "__main__":
    main()
