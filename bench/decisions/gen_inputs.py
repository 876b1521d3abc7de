#!/usr/bin/python3
"""Inputs for bench/decisions/json_zip.sh, written into DIR (deterministic:
a fixed seed, no clock).

JSON:
  run.json       a training run as a runner writes it (crossbind-run/1, 30 epochs)
  export.json    a study export as `crossbind results export --json` writes it
                 (crossbind-results/1: tables of flat rows), about 20 MB
  synthetic.json nested records with escapes, non-ASCII text, numbers of every
                 shape, about 40 MB
zip (PyTorch 1.13 torch.save, stored entries):
  vgg16.pt       a VGG-16-sized state dict (138 million float32 parameters)
  lenet.pt       a LeNet-sized state dict (61,706 parameters)
  vgg16-deflated.pt  vgg16.pt re-zipped with deflate (zipfile, level 6), for
                 the inflate path (torch.save itself never compresses)

Usage: /usr/bin/python3 gen_inputs.py DIR [json|torch|all]
"""
import json
import os
import random
import sys
import zipfile


def run_json(rng):
    epochs = [{"epoch": e, "train_acc": rng.random(), "test_acc": rng.random(),
               "train_loss": rng.uniform(0, 3), "test_loss": rng.uniform(0, 3),
               "train_time_s": rng.uniform(0, 2), "eval_time_s": rng.uniform(0, 1)} for e in range(1, 31)]
    return {"format": "crossbind-run/1", "status": "complete", "binding": "pytorch-python", "model": "lenet5",
            "seed": 287426343, "run": 1, "data": "/usr/share/datasets/fashion-mnist", "n_train": 60000,
            "n_test": 10000, "batch": 128, "optimizer": "sgd", "lr": 0.05, "momentum": 0.9,
            "weight_decay": 0.0005, "shuffle": True, "dropout": True, "init": "/tmp/w/init/lenet5/run1.safetensors",
            "threads": 2, "kernels": "fast",
            "versions": {"crossbind": "0.1.0", "blas": "OpenBLAS 0.3.21 DYNAMIC_ARCH Haswell MAX_THREADS=64",
                         "convolutions": "oneDNN 2.6.3", "compiler": "12.2.0"},
            "machine": "Linux 6.1.0 x86_64", "epochs": epochs, "training_time_s": 31.5, "eval_time_s": 4.2,
            "total_time_s": 35.7, "subactivities_s": {"load": 0.0005, "forward": 12.5, "backward": 19.0},
            "test_accuracy": 0.9012, "test_correct": 9012, "f1_macro": 0.9001, "auc_macro": 0.993,
            "nonfinite_outputs": 0}


def export_json(rng, target):
    bindings = ["crossbind", "pytorch-python", "pytorch-cpp", "pytorch-java", "pytorch-rust", "tensorflow-python",
                "tensorflow-js", "tensorflow-java", "tensorflow-lite", "onnxruntime-node"]
    models = ["lenet1", "lenet5", "mlp", "vgg16", "resnet18", "mobilenetv2", "textcnn"]
    out = ['{"format": "crossbind-results/1", "study": 7']
    size = 0
    tables = {"runs": [], "epochs": [], "evaluations": []}
    rid = 0
    while size < target:
        rid += 1
        b, m = rng.choice(bindings), rng.choice(models)
        run = {"id": rid, "study": 7, "binding": b, "model": m, "run": rid % 10 + 1, "device": "cpu",
               "seed": rng.randrange(2**31), "status": "complete", "started": "2026-12-03T10:%02d:%02dZ" % (rid % 60, rid % 59),
               "total_time_s": rng.uniform(1, 500), "test_accuracy": rng.random(), "f1_macro": rng.random(),
               "auc_macro": rng.random(), "versions": json.dumps({"torch": "1.13.0", "python": "3.11.2"}),
               "error": None}
        tables["runs"].append(run)
        size += len(json.dumps(run))
        for e in range(1, 11):
            row = {"run": rid, "epoch": e, "train_acc": rng.random(), "test_acc": rng.random(),
                   "train_loss": rng.uniform(0, 3), "test_loss": rng.uniform(0, 3),
                   "train_time_s": rng.uniform(0, 50), "eval_time_s": rng.uniform(0, 5)}
            tables["epochs"].append(row)
            size += len(json.dumps(row))
        ev = {"run": rid, "reference": "pytorch-python", "max_abs_diff": rng.uniform(0, 1e-5),
              "argmax_agree": rng.random(), "n": 10000, "latency_ms_p50": rng.uniform(0.1, 30),
              "latency_ms_p95": rng.uniform(0.1, 60)}
        tables["evaluations"].append(ev)
        size += len(json.dumps(ev))
    for name, rows in tables.items():
        out.append(',\n "%s": [' % name)
        out.append(",".join("\n  " + json.dumps(r) for r in rows))
        out.append("]")
    out.append("}\n")
    return "".join(out)


def synthetic_json(rng, target):
    words = ["alpha", "beta", "gamma", "caf\u00e9", "na\u00efve", "\u65e5\u672c\u8a9e", "emoji \U0001F600",
             "tab\there", "quote\"d", "back\\slash", "line\nbreak", "\u00fcber", "plain text of some length"]

    def value(depth):
        r = rng.random()
        if depth > 6 or r < 0.35:
            k = rng.randrange(6)
            if k == 0: return rng.randrange(-10**6, 10**6)
            if k == 1: return rng.uniform(-1e6, 1e6)
            if k == 2: return rng.uniform(-1, 1) * 10 ** rng.randrange(-300, 300)
            if k == 3: return " ".join(rng.choice(words) for _ in range(rng.randrange(1, 6)))
            if k == 4: return rng.choice([True, False, None])
            return rng.random()
        if r < 0.65:
            return [value(depth + 1) for _ in range(rng.randrange(1, 8))]
        return {"k%d_%s" % (i, rng.choice(words)[:5]): value(depth + 1) for i in range(rng.randrange(1, 8))}

    items, size = [], 0
    while size < target:
        v = value(0)
        s = json.dumps(v, ensure_ascii=rng.random() < 0.3)
        items.append(s)
        size += len(s.encode()) + 2
    return "[\n" + ",\n".join(items) + "\n]\n"


def vgg16_state_dict(torch):
    sd, cin = {}, 3
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]
    i = 0
    for c in cfg:
        if c == "M":
            i += 1
            continue
        sd["features.%d.weight" % i] = torch.randn(c, cin, 3, 3)
        sd["features.%d.bias" % i] = torch.randn(c)
        cin, i = c, i + 2
    for j, (o, n) in enumerate([(4096, 25088), (4096, 4096), (1000, 4096)]):
        sd["classifier.%d.weight" % (3 * j)] = torch.randn(o, n)
        sd["classifier.%d.bias" % (3 * j)] = torch.randn(o)
    return sd


def lenet_state_dict(torch):
    shapes = {"conv1.weight": (6, 1, 5, 5), "conv1.bias": (6,), "conv2.weight": (16, 6, 5, 5), "conv2.bias": (16,),
              "fc1.weight": (120, 256), "fc1.bias": (120,), "fc2.weight": (84, 120), "fc2.bias": (84,),
              "fc3.weight": (10, 84), "fc3.bias": (10,)}
    return {k: torch.randn(*s) for k, s in shapes.items()}


def main():
    d = sys.argv[1]
    what = sys.argv[2] if len(sys.argv) > 2 else "all"
    os.makedirs(d, exist_ok=True)
    if what in ("json", "all"):
        rng = random.Random(20261203)
        with open(os.path.join(d, "run.json"), "w") as f:
            json.dump(run_json(rng), f, indent=2)
        with open(os.path.join(d, "export.json"), "w") as f:
            f.write(export_json(rng, 20 << 20))
        with open(os.path.join(d, "synthetic.json"), "w", encoding="utf-8") as f:
            f.write(synthetic_json(rng, 40 << 20))
    if what in ("torch", "all"):
        import torch
        torch.manual_seed(20261203)
        torch.save(vgg16_state_dict(torch), os.path.join(d, "vgg16.pt"))
        torch.save(lenet_state_dict(torch), os.path.join(d, "lenet.pt"))
        with zipfile.ZipFile(os.path.join(d, "vgg16.pt")) as src, \
                zipfile.ZipFile(os.path.join(d, "vgg16-deflated.pt"), "w", zipfile.ZIP_DEFLATED, compresslevel=6) as dst:
            for info in src.infolist():
                zi = zipfile.ZipInfo(info.filename, date_time=(2026, 12, 3, 0, 0, 0))
                zi.compress_type = zipfile.ZIP_DEFLATED
                dst.writestr(zi, src.read(info.filename), compresslevel=6)
    print("inputs in", d)


if __name__ == "__main__":
    main()
