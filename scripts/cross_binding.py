#!/usr/bin/python3
"""The cross-binding inference experiment (study protocol, section 4).

Each trainer binding (PyTorch/Python by default, and crossbind for the other
direction) trains the protocol's runs of each model and saves them in every
format it writes. Every binding then loads every model in every load mode it
supports and evaluates it on CPU: one warm-up pass, then timed passes. A
(trainer, binding, model, load mode, format, device) cell is

  reproduced   when every run gives the reference's correct count in every
               timed pass,
  failed       otherwise (including a binding that errors on a file it claims),
  unsupported  when the binding cannot load that format.

The reference is the trainer's own final test count (run.json). Beyond the
count the matrix records the per-sample label agreement and the largest
absolute logit difference against the trainer's own evaluation.

Completed trainings and evaluations are kept under --out and reused when the
command runs again, so an interrupted experiment resumes where it stopped.

  /usr/bin/python3 scripts/cross_binding.py --epochs 1 --limit-train 6000 --out runs/xbind
  /usr/bin/python3 scripts/cross_binding.py --models vgg16,lstm,gru,gru-rb --runs 1 --epochs 1 \
      --limit-train 512 --limit-test 512 --out runs/xbind-all
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_RUNNER = os.path.join(ROOT, "runners", "pytorch", "crossbind_torch.py")
ORT_RUNNER = os.path.join(ROOT, "runners", "onnxruntime-node", "crossbind_ort.js")

# Formats each trainer writes, and the load mode each format means.
FORMATS = {"pt": "parameters", "safetensors": "parameters", "ts": "serialization", "onnx": "serialization"}
# What each binding can load (the others are "unsupported").
BINDINGS = {
    "pytorch": {"pt", "safetensors", "ts"},
    "crossbind": {"pt", "safetensors", "onnx"},
    "onnxruntime-node": {"onnx"},
}
TRAINERS = ("pytorch", "crossbind")
# Each model's data set format, and the protocol's inference batch per format.
DATA_FORMATS = {"lenet1": "mnist", "lenet5": "mnist", "vgg16": "cifar", "lstm": "imdb", "gru": "imdb",
                "gru-rb": "imdb"}
EVAL_BATCH = {"mnist": 128, "cifar": 128, "imdb": 256}


def log(msg):
    print(f"[cross-binding] {msg}", file=sys.stderr, flush=True)


def run(cmd):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr.strip(), time.time() - t0


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def train(args, trainer, model, run_index, out):
    done = read_json(os.path.join(out, "run.json"))
    if done and done.get("status") == "complete" and os.path.exists(os.path.join(out, "final.onnx")):
        return done
    common = ["--run", str(run_index), "--epochs", str(args.epochs), "--data", data_dir(args, model), "--out", out,
              "--threads", str(args.threads), "--quiet"]
    if args.limit_train:
        common += ["--limit-train", str(args.limit_train)]
    if args.limit_test:
        common += ["--limit-test", str(args.limit_test)]
    if trainer == "pytorch":
        cmd = [args.python, TORCH_RUNNER, "train", model] + common
    else:
        cmd = [args.crossbind, "train", model] + common
    rc, _, err, secs = run(cmd)
    if rc != 0:
        raise SystemExit(f"cross-binding: {trainer} failed to train {model} run {run_index}: {err}")
    log(f"trained {model} run {run_index} with {trainer} in {secs:.1f}s")
    return read_json(os.path.join(out, "run.json"))


def evaluate(args, binding, model, weights, out_json, logits):
    cached = read_json(out_json)
    if cached and os.path.exists(logits):
        return cached
    fmt = DATA_FORMATS[model]
    common = ["--weights", weights, "--data", data_dir(args, model),
              "--batch", str(args.batch or EVAL_BATCH[fmt]), "--repeat", str(args.repeat),
              "--threads", str(args.threads), "--logits", logits, "--json"]
    if args.limit_test:
        common += ["--limit-test", str(args.limit_test)]
    if binding == "pytorch":
        cmd = [args.python, TORCH_RUNNER, "eval", model] + common
    elif binding == "crossbind":
        cmd = [args.crossbind, "eval", model] + common
    else:
        cmd = [args.node, ORT_RUNNER, "eval", model] + common
    rc, stdout, err, _ = run(cmd)
    if rc != 0:
        res = {"error": err or f"exit status {rc}"}
    else:
        try:
            res = json.loads(stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            res = {"error": f"unreadable output: {stdout[:200]}"}
    if "error" not in res:
        write_json(out_json, res)
    return res


def data_dir(args, model):
    return {"mnist": args.data, "cifar": args.data_cifar, "imdb": args.data_imdb}[DATA_FORMATS[model]]


def labels(outputs):
    """Predicted labels: argmax, or p >= 0.5 for a binary model's one output."""
    return outputs[:, 0] >= 0.5 if outputs.shape[1] == 1 else outputs.argmax(1)


def compare(ref_logits, logits):
    a, b = np.load(ref_logits), np.load(logits)
    if a.shape != b.shape:
        return float("nan"), float("inf")
    return float((labels(a) == labels(b)).mean()), float(np.abs(a - b).max())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="lenet1,lenet5")
    ap.add_argument("--runs", type=int, default=5, help="runs per model (the protocol's seeds, in order)")
    ap.add_argument("--epochs", type=int, default=200, help="training epochs (the protocol: 200)")
    ap.add_argument("--limit-train", type=int, default=0)
    ap.add_argument("--limit-test", type=int, default=0)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist", help="MNIST-format data (LeNets)")
    ap.add_argument("--data-cifar", default="data/cifar-stand-in", help="CIFAR-10-format data (VGG-16)")
    ap.add_argument("--data-imdb", default="data/imdb-prepared", help="prepared IMDb-format data (RNNs)")
    ap.add_argument("--batch", type=int, default=0, help="inference batch (default: the protocol's, 128 images, "
                    "256 text)")
    ap.add_argument("--repeat", type=int, default=5, help="timed passes after one warm-up")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--trainers", default=",".join(TRAINERS))
    ap.add_argument("--bindings", default=",".join(BINDINGS))
    ap.add_argument("--out", default="runs/cross-binding")
    ap.add_argument("--crossbind", default=os.path.join(ROOT, "build", "crossbind"))
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--node", default="node")
    args = ap.parse_args()
    if not 1 <= args.runs <= 5:
        ap.error("--runs must be 1 to 5")
    models = [m for m in args.models.split(",") if m]
    trainers = [t for t in args.trainers.split(",") if t]
    bindings = [b for b in args.bindings.split(",") if b]
    for t in trainers:
        if t not in TRAINERS:
            ap.error(f"unknown trainer {t} (known: {', '.join(TRAINERS)})")
    for b in bindings:
        if b not in BINDINGS:
            ap.error(f"unknown binding {b} (known: {', '.join(BINDINGS)})")
    for m in models:
        if m not in DATA_FORMATS:
            ap.error(f"unknown model {m} (known: {', '.join(DATA_FORMATS)})")
    os.makedirs(args.out, exist_ok=True)
    # Results are reused only for the same experiment: anything that changes
    # a measurement is part of the configuration kept beside them.
    config = {k: getattr(args, k) for k in ("epochs", "limit_train", "limit_test", "data", "data_cifar",
                                             "data_imdb", "batch", "repeat", "threads")}
    config_path = os.path.join(args.out, "config.json")
    old = read_json(config_path)
    if old is not None and old != config:
        raise SystemExit(f"cross-binding: {args.out} holds results of another configuration ({old}); "
                         "use another --out or remove it")
    write_json(config_path, config)

    cells = []
    total = len(trainers) * len(models) * args.runs
    step = 0
    t_start = time.time()
    results = {}  # (trainer, model, run, binding, fmt) -> eval result
    refs = {}
    for trainer in trainers:
        for model in models:
            for r in range(1, args.runs + 1):
                step += 1
                base = os.path.join(args.out, trainer, model, f"run{r}")
                info = train(args, trainer, model, r, base)
                refs[(trainer, model, r)] = info
                for binding in bindings:
                    for fmt in sorted(BINDINGS[binding]):
                        weights = os.path.join(base, f"final.{fmt}")
                        if not os.path.exists(weights):
                            continue  # the trainer does not write this format
                        stem = os.path.join(base, f"eval-{binding}-{fmt}")
                        results[(trainer, model, r, binding, fmt)] = (
                            evaluate(args, binding, model, weights, stem + ".json", stem + ".npy"), stem + ".npy")
                elapsed = time.time() - t_start
                log(f"{step}/{total} trained and evaluated; about {elapsed / step * (total - step):.0f}s left")

    for trainer in trainers:
        # The trainer's own evaluation of its native parameters file is the logit reference.
        native = "pt" if trainer == "pytorch" else "safetensors"
        for model in models:
            for binding in bindings:
                for fmt in FORMATS:
                    cell = {"trainer": trainer, "binding": binding, "model": model, "load_mode": FORMATS[fmt],
                            "format": fmt, "device": "cpu", "runs": []}
                    present = [r for r in range(1, args.runs + 1)
                               if os.path.exists(os.path.join(args.out, trainer, model, f"run{r}", f"final.{fmt}"))]
                    if not present:
                        continue  # the trainer never writes this format: no cell
                    if fmt not in BINDINGS[binding]:
                        cell["status"] = "unsupported"
                        cells.append(cell)
                        continue
                    ok = True
                    for r in present:
                        res, logits = results[(trainer, model, r, binding, fmt)]
                        ref_count = refs[(trainer, model, r)]["test_correct"]
                        entry = {"run": r, "reference_correct": ref_count}
                        if "error" in res:
                            entry["error"] = res["error"]
                            ok = False
                        else:
                            counts = res.get("correct_per_pass", [res["correct"]])
                            _, ref_logits = results.get((trainer, model, r, trainer, native), (None, None))
                            agree, diff = compare(ref_logits, logits) if ref_logits else (float("nan"),) * 2
                            entry.update({"correct": res["correct"], "correct_per_pass": counts,
                                          "stable": len(set(counts)) == 1, "label_agreement": agree,
                                          "max_abs_logit_diff": diff, "mean_time_s": res["mean_time_s"]})
                            ok = ok and entry["stable"] and res["correct"] == ref_count
                        cell["runs"].append(entry)
                    cell["status"] = "reproduced" if ok else "failed"
                    cells.append(cell)

    report = {"experiment": "cross-binding inference",
              "data": {"mnist": args.data, "cifar": args.data_cifar, "imdb": args.data_imdb}, "epochs": args.epochs,
              "limit_train": args.limit_train, "limit_test": args.limit_test, "runs": args.runs,
              "batch": args.batch, "repeat": args.repeat, "threads": args.threads, "cells": cells}
    write_json(os.path.join(args.out, "matrix.json"), report)
    lines = ["| trained by | binding | model | load mode | format | device | status | correct (per run) "
             "| label agreement (min) | max abs logit diff |", "|" + "---|" * 10]
    for c in cells:
        runs = c["runs"]
        if c["status"] == "unsupported":
            lines.append(f"| {c['trainer']} | {c['binding']} | {c['model']} | {c['load_mode']} | {c['format']} "
                         f"| {c['device']} | unsupported | | | |")
            continue
        counts = " ".join(str(e.get("correct", "error")) + ("" if e.get("correct") == e["reference_correct"]
                                                            else f"≠{e['reference_correct']}") for e in runs)
        agree = min((e.get("label_agreement", float("nan")) for e in runs), default=float("nan"))
        diff = max((e.get("max_abs_logit_diff", float("nan")) for e in runs), default=float("nan"))
        lines.append(f"| {c['trainer']} | {c['binding']} | {c['model']} | {c['load_mode']} | {c['format']} "
                     f"| {c['device']} | **{c['status']}** | {counts} | {agree:.4f} | {diff:.3g} |")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "matrix.md"), "w") as f:
        f.write(f"# Cross-binding inference matrix\n\nData: MNIST format {args.data}, CIFAR format {args.data_cifar}, "
                f"IMDb format {args.data_imdb} (test limit {args.limit_test or 'none'}); "
                f"{args.runs} runs per model, {args.epochs} epochs; CPU, {args.threads} threads.\n\n" + table)
    print(table, end="")
    failed = [c for c in cells if c["status"] == "failed"]
    if failed:
        log(f"{len(failed)} cell(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
