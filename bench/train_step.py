#!/usr/bin/python3
"""Benchmark driver (not a test), the PyTorch side of bench/train_step.c:
training steps (forward, loss, backward, the protocol's optimizer step) and
inference passes of the runner's model on the same synthetic inputs, after
one warm-up step; one JSON object. OPENBLAS_NUM_THREADS is the caller's.
Usage: train_step.py MODEL BATCH STEPS THREADS"""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runners", "pytorch"))
import crossbind_torch as ct  # noqa: E402


def main():
    name, batch, steps, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(threads)
    torch.manual_seed(287426343)
    model = ct.build(name)
    kind, lr, _, _ = ct.PROTOCOL[name]
    opt = (torch.optim.Adam if kind == "adam" else torch.optim.SGD)(model.parameters(), lr=lr)
    sample = 1
    for d in ct.INPUT_SHAPES[name]:
        sample *= d
    i = torch.arange(batch * sample, dtype=torch.long)
    if ct.binary(name):
        x = ((i * 7919) % 10000).reshape((batch,) + ct.INPUT_SHAPES[name])
        y = (torch.arange(batch) % 2).float()
    else:
        x = ((i % 251).float() / 251.0).reshape((batch,) + ct.INPUT_SHAPES[name])
        y = torch.arange(batch) % 10
    ts, ti = [], []
    for s in range(-1, steps):  # step -1: warm-up
        model.train()
        t0 = time.perf_counter()
        opt.zero_grad()
        ct.loss_of(name, model(x), y).backward()
        opt.step()
        t1 = time.perf_counter()
        model.eval()
        with torch.no_grad():
            model(x)
        t2 = time.perf_counter()
        if s >= 0:
            ts.append(t1 - t0)
            ti.append(t2 - t1)
    print(json.dumps({"binding": "pytorch", "model": name, "batch": batch, "threads": threads,
                      "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""), "torch": torch.__version__,
                      "train_step_s": ts, "inference_batch_s": ti}))


if __name__ == "__main__":
    main()
