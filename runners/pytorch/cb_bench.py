"""The PyTorch side of `crossbind bench` (runners/README.md, "Benchmark
worker"): one measurement of one model, printed as one JSON line.

Inputs are synthetic and the same in every binding: sample s of a batch is
the flat index range [s * size, (s + 1) * size) of the input, with pixel i =
(i % 251) / 251 for images and token i = (i * 7919) % 10000 for text; the
label of sample s is s % 10 (s % 2 for the binary models). Batches are made
outside the timed region, so the times are the binding's own calls only.
"""
import json
import os
import time

import torch


def batch_of(ct, name, s0, n):
    shape = ct.INPUT_SHAPES[name]
    size = 1
    for d in shape:
        size *= d
    i = torch.arange(s0 * size, (s0 + n) * size, dtype=torch.long)
    s = torch.arange(s0, s0 + n)
    if ct.binary(name):
        return ((i * 7919) % 10000).reshape((n,) + shape), (s % 2).float()
    return ((i % 251).float() / 251.0).reshape((n,) + shape), s % 10


def predict(ct, name, model, x):
    out = model(x)
    if ct.binary(name):  # the IMDb models end in a sigmoid: out is already a probability
        return (out.reshape(-1) >= 0.5).long()
    return out.argmax(1)


def train_units(ct, args, model):
    """Training passes over args.samples samples in batches of args.batch
    (one pass of one batch = one step), after 1 warm-up step."""
    kind, lr, _, _ = ct.PROTOCOL[args.model]
    opt = (torch.optim.Adam if kind == "adam" else torch.optim.SGD)(model.parameters(), lr=lr)
    model.train()

    def step(x, y):
        t0 = time.perf_counter()
        opt.zero_grad()
        ct.loss_of(args.model, model(x), y).backward()
        opt.step()
        return time.perf_counter() - t0

    for w in range(1):
        step(*batch_of(ct, args.model, w * args.batch, args.batch))
    times = []
    for _ in range(args.repeat):
        t = 0.0
        for s0 in range(0, args.samples, args.batch):
            t += step(*batch_of(ct, args.model, s0, min(args.batch, args.samples - s0)))
        times.append(t)
    return times


def infer_units(ct, args, model):
    """Inference passes over args.samples samples, after one warm-up pass."""
    model.eval()
    times = []
    with torch.no_grad():
        for r in range(args.repeat + 1):
            t = 0.0
            for s0 in range(0, args.samples, args.batch):
                x, _ = batch_of(ct, args.model, s0, min(args.batch, args.samples - s0))
                t0 = time.perf_counter()
                predict(ct, args.model, model, x)
                t += time.perf_counter() - t0
            if r:
                times.append(t)
    return times


def latency_units(ct, args, model):
    """Seconds per single-sample prediction, args.samples of them after 5 warm-up ones."""
    model.eval()
    times = []
    with torch.no_grad():
        for s in range(args.samples + 5):
            x, _ = batch_of(ct, args.model, s, 1)
            t0 = time.perf_counter()
            predict(ct, args.model, model, x)
            if s >= 5:
                times.append(time.perf_counter() - t0)
    return times


def vmhwm_kib():
    """This process's peak resident memory (VmHWM), KiB; -1 if unknown."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def run(ct, args):
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)  # as the study's runner and crossbind's threads
    model, _, _ = ct.load_model(args.model, args.weights)
    if args.kind == "startup":
        model.eval()
        with torch.no_grad():
            label = int(predict(ct, args.model, model, batch_of(ct, args.model, 0, 1)[0])[0])
        # When the answer was ready, on the clock the harness started us by.
        print(json.dumps({"label": label, "monotonic_s": time.clock_gettime(time.CLOCK_MONOTONIC),
                          "vmhwm_kib": vmhwm_kib()}), flush=True)
        return
    units = {"train": train_units, "infer": infer_units, "latency": latency_units}[args.kind]
    times = units(ct, args, model)
    print(json.dumps({"times_s": times, "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
                      "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""), "vmhwm_kib": vmhwm_kib()}),
          flush=True)


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
    if args.batch < 1 or args.samples < 1 or args.repeat < 1 or args.threads < 1:
        fail("bench: --batch, --samples, --repeat and --threads must be at least 1")
    if args.kind == "train" and args.samples < args.batch:
        fail("bench: a training unit needs at least one whole batch (--samples >= --batch)")
