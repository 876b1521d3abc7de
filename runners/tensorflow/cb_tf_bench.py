"""The TensorFlow side of `crossbind bench` (runners/README.md, "Benchmark
worker"): one measurement of one model, printed as one JSON line.

Inputs are synthetic and the same in every binding: sample s of a batch is
the flat index range [s * size, (s + 1) * size) of the input (in PyTorch's
NCHW order, then moved to Keras' NHWC), with pixel i = (i % 251) / 251 for
images and token i = (i * 7919) % 10000 for text; the label of sample s is
s % 10 (s % 2 for the binary models). Batches are made outside the timed
region. Training steps run through Keras' train_on_batch (one compiled
graph per step, as fit runs them); predictions through one tf.function of
the model in inference mode.
"""
import json
import time

import numpy as np

INPUT_SHAPES = {"lenet1": (1, 28, 28), "lenet5": (1, 28, 28), "vgg16": (3, 32, 32),
                "lstm": (300,), "gru": (300,), "gru-rb": (300,)}


def batch_of(ct, name, s0, n):
    shape = INPUT_SHAPES[name]
    size = int(np.prod(shape))
    i = np.arange(s0 * size, (s0 + n) * size, dtype=np.int64)
    s = np.arange(s0, s0 + n)
    if ct.binary(name):
        return ((i * 7919) % 10000).reshape((n,) + shape).astype(np.int32), (s % 2).astype(np.float32)
    x = ((i % 251).astype(np.float32) / np.float32(251.0)).reshape((n,) + shape)
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)), (s % 10).astype(np.int64)


def predict(ct, name, fwd, x):
    out = fwd(x).numpy()
    if ct.binary(name):
        return (out.reshape(-1) >= 0.5).astype(np.int64)
    return out.argmax(1)


def train_units(ct, args, model):
    kind, lr, _, _ = ct.PROTOCOL[args.model]
    opt = (ct.tf.keras.optimizers.Adam if kind == "adam" else ct.tf.keras.optimizers.SGD)(learning_rate=lr)
    model.compile(optimizer=opt, loss=ct.loss_fn(args.model))

    def step(x, y):
        t0 = time.perf_counter()
        model.train_on_batch(x, y)
        return time.perf_counter() - t0

    step(*batch_of(ct, args.model, 0, args.batch))
    times = []
    for _ in range(args.repeat):
        t = 0.0
        for s0 in range(0, args.samples, args.batch):
            t += step(*batch_of(ct, args.model, s0, min(args.batch, args.samples - s0)))
        times.append(t)
    return times


def infer_units(ct, args, fwd):
    times = []
    for r in range(args.repeat + 1):
        t = 0.0
        for s0 in range(0, args.samples, args.batch):
            x, _ = batch_of(ct, args.model, s0, min(args.batch, args.samples - s0))
            t0 = time.perf_counter()
            predict(ct, args.model, fwd, x)
            t += time.perf_counter() - t0
        if r:
            times.append(t)
    return times


def latency_units(ct, args, fwd):
    times = []
    for s in range(args.samples + 5):
        x, _ = batch_of(ct, args.model, s, 1)
        t0 = time.perf_counter()
        predict(ct, args.model, fwd, x)
        if s >= 5:
            times.append(time.perf_counter() - t0)
    return times


def vmhwm_kib():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def run(ct, args):
    tf = ct.tf
    ct.set_threads(args.threads)
    ct.seed_all(ct.SEEDS[0])  # determinism (TF_DETERMINISTIC_OPS) needs a seed for dropout
    model, _, _ = ct.load_model(args.model, args.weights)
    fwd = ct.make_forward(model)
    if args.kind == "startup":
        label = int(predict(ct, args.model, fwd, batch_of(ct, args.model, 0, 1)[0])[0])
        print(json.dumps({"label": label, "monotonic_s": time.clock_gettime(time.CLOCK_MONOTONIC),
                          "vmhwm_kib": vmhwm_kib()}), flush=True)
        return
    if args.kind == "train":
        times = train_units(ct, args, model)
    else:
        times = {"infer": infer_units, "latency": latency_units}[args.kind](ct, args, fwd)
    print(json.dumps({"times_s": times, "tensorflow": tf.__version__,
                      "intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
                      "inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads(),
                      "vmhwm_kib": vmhwm_kib()}), flush=True)


def add_parser(sub):
    b = sub.add_parser("bench", help="one benchmark measurement (used by crossbind bench)")
    b.add_argument("--model", required=True)
    b.add_argument("--kind", required=True, choices=["train", "infer", "latency", "startup"])
    b.add_argument("--weights", required=True)
    b.add_argument("--batch", type=int, default=1)
    b.add_argument("--samples", type=int, default=1)
    b.add_argument("--repeat", type=int, default=1)
    b.add_argument("--threads", type=int, default=1)
    return b


def check(args, fail):
    if args.model not in INPUT_SHAPES:
        fail(f"unknown model {args.model} (known: {', '.join(sorted(INPUT_SHAPES))})")
    if args.batch < 1 or args.samples < 1 or args.repeat < 1 or args.threads < 1:
        fail("bench: --batch, --samples, --repeat and --threads must be at least 1")
    if args.kind == "train" and args.samples < args.batch:
        fail("bench: a training unit needs at least one whole batch (--samples >= --batch)")
