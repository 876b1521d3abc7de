#!/usr/bin/python3
"""The PyTorch/Python binding of the study (the default binding): trains and
evaluates the study's models by the same protocol, options, data files and
JSON as `crossbind train` / `crossbind eval`, and writes the golden files the
C test suite checks against.

Run with Debian's interpreter: /usr/bin/python3 crossbind_torch.py ...
"""
import argparse
import json
import math
import os
import platform
import shutil
import sys
import time
import warnings

# The study's fair setting for convolution models: PyTorch's own threads
# only, BLAS single-threaded. Must be set before torch is imported.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cb_bench  # noqa: E402
import cb_delta  # noqa: E402
import cb_imagenet  # noqa: E402
import cb_data  # noqa: E402
from cb_metrics import auc_binary, auc_macro, f1_macro  # noqa: E402
import cb_safetensors  # noqa: E402

SEEDS = [287426343, 1850616268, 2068338201, 1202616822, 868822724]
DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
GOLDEN_FORMAT = "crossbind-golden/1"


class LeNet1(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 5, padding=2)
        self.conv2 = nn.Conv2d(4, 12, 5)
        self.fc = nn.Linear(300, 10)

    def forward(self, x):
        x = F.max_pool2d(torch.tanh(self.conv1(x)), 2)
        x = F.max_pool2d(torch.tanh(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.conv3 = nn.Conv2d(16, 120, 5)
        self.fc1 = nn.Linear(120, 84)
        self.fc2 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(torch.tanh(self.conv1(x)), 2)
        x = F.max_pool2d(torch.tanh(self.conv2(x)), 2)
        x = torch.tanh(self.conv3(x))
        x = torch.tanh(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


def lenet5_sequential():
    """LeNet-5 as a plain nn.Sequential: state-dict keys 0.weight ... 10.bias,
    the naming crossbind must load by order and shape."""
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.Tanh(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.Tanh(), nn.MaxPool2d(2),
        nn.Conv2d(16, 120, 5), nn.Tanh(), nn.Flatten(),
        nn.Linear(120, 84), nn.Tanh(), nn.Linear(84, 10))


VGG16_PLAN = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


class VGG16(nn.Module):
    """The protocol's VGG-16 for 32x32x3: 3x3 convs without bias, each with
    BatchNorm (PyTorch defaults) and ReLU; dense 512-4096-4096-10 with ReLU
    and dropout. The module layout (features / classifier) gives the
    state-dict names crossbind uses."""

    def __init__(self, dropout=0.5):
        super().__init__()
        layers, c = [], 3
        for v in VGG16_PLAN:
            if v == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                layers += [nn.Conv2d(c, v, 3, padding=1, bias=False), nn.BatchNorm2d(v), nn.ReLU()]
                c = v
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(512, 4096), nn.ReLU(), nn.Dropout(dropout),
                                        nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(dropout),
                                        nn.Linear(4096, 10))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class GRUResetBefore(nn.Module):
    """One GRU layer with the reset gate applied before the recurrent product
    (Keras reset_after=False), in PyTorch's parameter layout and names."""

    def __init__(self, d, h):
        super().__init__()
        k = 1.0 / h ** 0.5
        self.weight_ih_l0 = nn.Parameter(torch.empty(3 * h, d).uniform_(-k, k))
        self.weight_hh_l0 = nn.Parameter(torch.empty(3 * h, h).uniform_(-k, k))
        self.bias_ih_l0 = nn.Parameter(torch.empty(3 * h).uniform_(-k, k))
        self.bias_hh_l0 = nn.Parameter(torch.empty(3 * h).uniform_(-k, k))

    def forward(self, x):
        if torch.onnx.is_in_onnx_export():  # one ONNX GRU node, not 300 unrolled steps
            h = self.weight_hh_l0.shape[1]

            def zrh(t):  # PyTorch's gate blocks r,z,n in ONNX's order z,r,h
                return torch.cat([t[h:2 * h], t[:h], t[2 * h:]])
            b = torch.cat([zrh(self.bias_ih_l0), zrh(self.bias_hh_l0)])
            return GRUResetBeforeExport.apply(x, zrh(self.weight_ih_l0)[None], zrh(self.weight_hh_l0)[None],
                                              b[None]), None
        return gru_rb(x, self.weight_ih_l0, self.weight_hh_l0, self.bias_ih_l0, self.bias_hh_l0), None


class GRUResetBeforeExport(torch.autograd.Function):
    """Export only: ONNX GRU with linear_before_reset=0 is exactly GRU-rb.
    Takes ONNX's W, R, B (the exporter folds their reordering into
    initializers); X is made time major and Y back batch first, the pattern
    torch exports for nn.GRU. Its forward is never run for results."""

    @staticmethod
    def forward(ctx, x, w, r, b):
        h = r.shape[2]

        def rzn(t):
            return torch.cat([t[h:2 * h], t[:h], t[2 * h:]])
        return gru_rb(x, rzn(w[0]), rzn(r[0]), rzn(b[0, :3 * h]), rzn(b[0, 3 * h:]))

    @staticmethod
    def symbolic(g, x, w, r, b):
        axes = g.op("Constant", value_t=torch.tensor([1], dtype=torch.long))
        xt = g.op("Transpose", x, perm_i=[1, 0, 2])
        y, _ = g.op("GRU", xt, w, r, b, hidden_size_i=r.type().sizes()[2], linear_before_reset_i=0, outputs=2)
        return g.op("Transpose", g.op("Squeeze", y, axes), perm_i=[1, 0, 2])


class RNNClassifier(nn.Module):
    """The protocol's IMDb models: embedding 10,000 x 300, one recurrent layer
    (hidden 512, batch first), the last step, dropout, dense 512 -> 1, sigmoid."""

    def __init__(self, kind, dropout=0.5):
        super().__init__()
        self.embedding = nn.Embedding(10000, 300)
        self.rnn = {"lstm": lambda: nn.LSTM(300, 512, batch_first=True),
                    "gru": lambda: nn.GRU(300, 512, batch_first=True),
                    "gru-rb": lambda: GRUResetBefore(300, 512)}[kind]()
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(512, 1)

    def forward(self, x):
        h, _ = self.rnn(self.embedding(x))
        return torch.sigmoid(self.fc(self.dropout(h[:, -1])))


MODELS = {"lenet1": LeNet1, "lenet5": LeNet5, "vgg16": VGG16,
          "lstm": lambda: RNNClassifier("lstm"), "gru": lambda: RNNClassifier("gru"),
          "gru-rb": lambda: RNNClassifier("gru-rb")}
ARCHS = {"lenet5-sequential": lenet5_sequential}
INPUT_SHAPES = {"lenet1": (1, 28, 28), "lenet5": (1, 28, 28), "vgg16": (3, 32, 32),
                "lstm": (300,), "gru": (300,), "gru-rb": (300,)}
DATA_FORMATS = {"lenet1": "mnist", "lenet5": "mnist", "vgg16": "cifar", "lstm": "imdb", "gru": "imdb",
                "gru-rb": "imdb"}
DEFAULT_DIRS = {"mnist": DEFAULT_DATA, "cifar": "data/cifar-stand-in", "imdb": "data/imdb-prepared"}
# Protocol section 3 (the default study): optimizer, learning rate, batch, epochs.
PROTOCOL = {"lenet1": ("sgd", 0.05, 128, 200), "lenet5": ("sgd", 0.05, 128, 200), "vgg16": ("sgd", 0.05, 128, 200),
            "lstm": ("adam", 8e-5, 256, 30), "gru": ("adam", 3e-4, 256, 30), "gru-rb": ("adam", 3e-4, 256, 30)}


def binary(name):
    """The IMDb models output one sigmoid probability per sample."""
    return DATA_FORMATS[name] == "imdb"


def loss_of(name, out, y):
    if binary(name):
        return F.binary_cross_entropy(out.squeeze(1), y)
    return F.cross_entropy(out, y)


def build(name, arch=None):
    if arch:
        if arch not in ARCHS or not arch.startswith(name):
            fail(f"architecture {arch} is not a variant of {name} (known: {', '.join(ARCHS)})")
        return ARCHS[arch]()
    return MODELS[name]()


def fail(msg):
    print(f"crossbind-torch: error: {msg}", file=sys.stderr)
    sys.exit(1)


def file_kind(path):
    """The weights format by content: safetensors, pt (state dict), torchscript, onnx."""
    try:
        with open(path, "rb") as f:
            head = f.read(9)
    except OSError as e:
        fail(f"cannot open weights {path}: {e}")
    if head[:4] == b"PK\x03\x04":
        import zipfile
        try:
            names = zipfile.ZipFile(path).namelist()
        except zipfile.BadZipFile as e:
            fail(f"{path}: corrupt zip archive: {e}")
        return "torchscript" if any(n.endswith("/constants.pkl") for n in names) else "pt"
    if len(head) == 9 and head[8:9] == b"{" and head[5:8] == b"\0\0\0":
        return "safetensors"
    if len(head) >= 2 and head[0] == 0x08:
        return "onnx"
    return "unknown"


def load_model(name, path, arch=None):
    """(model, load mode): parameters for safetensors/.pt, serialization for TorchScript."""
    kind = file_kind(path)
    if kind == "torchscript":
        try:
            return torch.jit.load(path, map_location="cpu"), "serialization", kind
        except RuntimeError as e:
            fail(f"{path}: cannot load TorchScript: {e}")
    if kind == "onnx":
        fail(f"{path}: PyTorch cannot run ONNX models (unsupported load mode for this binding)")
    if kind not in ("pt", "safetensors"):
        fail(f"{path}: unrecognised weights format")
    model = build(name, arch)
    load_weights(model, path)
    return model, "parameters", kind


def load_weights(model, path):
    if file_kind(path) == "pt":
        try:
            sd = torch.load(path, map_location="cpu")
        except Exception as e:  # torch raises many types for bad files
            fail(f"cannot read weights {path}: {e}")
        tensors = {k: v.numpy() for k, v in sd.items()}
    else:
        try:
            tensors, _ = cb_safetensors.read(path)
        except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
            fail(f"cannot read weights {path}: {e}")
    state = model.state_dict()
    # BatchNorm's step counter is not a parameter crossbind keeps (momentum
    # is fixed): absent, it starts at 0.
    for k, v in state.items():
        if k.endswith("num_batches_tracked") and k not in tensors:
            tensors[k] = np.zeros(v.shape, dtype=np.int64)
        elif k.endswith("num_batches_tracked") and np.size(tensors[k]) == 1:
            tensors[k] = np.asarray(tensors[k]).reshape(v.shape)  # files from before 0-d tensors kept their shape
    missing = [k for k in state if k not in tensors]
    if missing:
        fail(f"{path}: parameters missing from the file: {', '.join(missing)}")
    for k, v in state.items():
        if tuple(tensors[k].shape) != tuple(v.shape):
            fail(f"{path}: parameter {k} has shape {list(tensors[k].shape)}, the model needs {list(v.shape)}")
    model.load_state_dict({k: torch.from_numpy(np.asarray(tensors[k]).astype(
        np.int64 if k.endswith("num_batches_tracked") else np.float32)) for k in state})


def save_weights(model, path, name):
    tensors = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    cb_safetensors.write(path, tensors, {"model": name, "format": "crossbind-weights/1"})


def save_all(model, out, stem, name):
    """The model in every load mode of this binding and for the others:
    safetensors and state dict (parameters), TorchScript and ONNX opset 13
    with a dynamic batch axis (serialization)."""
    save_weights(model, os.path.join(out, stem + ".safetensors"), name)
    torch.save(model.state_dict(), os.path.join(out, stem + ".pt"))
    model.eval()
    example = torch.zeros((1,) + INPUT_SHAPES[name], dtype=torch.long if binary(name) else torch.float32)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch 1.13's notice about g.op in symbolics
        torch.jit.trace(model, example).save(os.path.join(out, stem + ".ts"))
        torch.onnx.export(model, example, os.path.join(out, stem + ".onnx"), opset_version=13,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "N"}, "output": {0: "N"}})


# ---------------------------------------------------------------- evaluation

def evaluate(model, x, y, batch, with_metrics=False, name=None):
    """One pass in file order: (correct, accuracy, mean loss, f1, auc, seconds, pred, probs, logits).
    Binary models: prediction p >= 0.5, binary cross-entropy, F1 over both
    classes and the AUC of p."""
    model.eval()
    bin_ = name is not None and binary(name)
    t0 = time.perf_counter()
    logits = []
    loss_sum = 0.0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            out = model(x[i:i + batch])
            if bin_:
                loss_sum += F.binary_cross_entropy(out.squeeze(1), y[i:i + batch], reduction="sum").item()
            else:
                loss_sum += F.cross_entropy(out, y[i:i + batch], reduction="sum").item()
            logits.append(out)
    t = time.perf_counter() - t0
    logits = torch.cat(logits)
    labels = y.numpy().astype(np.int64)
    pred = (logits[:, 0] >= 0.5).long().numpy() if bin_ else logits.argmax(1).numpy()
    correct = int((pred == labels).sum())
    probs = None
    f1 = auc = float("nan")
    if with_metrics:
        if bin_:
            probs = logits.numpy().astype(np.float64)
            f1 = f1_macro(pred, labels, 2)
            auc = auc_binary(probs[:, 0], labels == 1)
        else:
            probs = torch.softmax(logits, 1).numpy()
            f1 = f1_macro(pred, labels, 10)
            auc = auc_macro(probs, labels, 10)
    return correct, correct / len(x), loss_sum / len(x), f1, auc, t, pred, probs, logits.numpy()


def load_data(args, train):
    limit = args.limit_train if train else args.limit_test
    fmt = DATA_FORMATS[args.model]
    directory = args.data or DEFAULT_DIRS[fmt]
    loader = {"cifar": cb_data.load_cifar, "mnist": cb_data.load_mnist, "imdb": cb_data.load_imdb}[fmt]
    try:
        x, y = loader(directory, train, limit)
    except (OSError, ValueError) as e:
        fail(str(e))
    return torch.from_numpy(x), torch.from_numpy(y)


# ------------------------------------------------------------------ train

def finite_or_null(obj):
    """JSON has no NaN: an undefined value (AUC with one class, a diverged loss) is null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: finite_or_null(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_or_null(v) for v in obj]
    return obj


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(finite_or_null(obj), f, indent=2, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


def cmd_train(args):
    if args.seed is not None and args.run is not None:
        fail("give --seed or --run, not both")
    seed = args.seed if args.seed is not None else SEEDS[(args.run or 1) - 1]
    # What the user left out comes from the protocol's configuration.
    proto = PROTOCOL[args.model]
    if args.optimizer is None:
        args.optimizer = proto[0]
        args.lr = proto[1] if args.lr is None else args.lr
    if args.lr is None:
        args.lr = 1e-3 if args.optimizer == "adam" else 0.05
    args.batch = args.batch or proto[2]
    args.epochs = args.epochs or proto[3]
    torch.set_num_threads(args.threads)
    out = args.out or f"runs/{args.model}-{seed}-torch"
    try:
        os.makedirs(out, exist_ok=True)
        probe = os.path.join(out, ".probe")
        open(probe, "w").close()
        os.remove(probe)
    except OSError as e:
        fail(f"output directory {out} is not writable: {e}")
    run_json = os.path.join(out, "run.json")
    if os.path.exists(run_json):
        os.remove(run_json)
    xtr, ytr = load_data(args, True)
    xte, yte = load_data(args, False)
    torch.manual_seed(seed)
    model = build(args.model, args.arch)
    if args.no_dropout:  # parity runs: each binding would draw its own masks
        for mod in model.modules():
            if isinstance(mod, nn.Dropout):
                mod.p = 0.0
    if args.init:
        load_weights(model, args.init)
    save_all(model, out, "init", args.model)
    if binary(args.model):  # the vocabulary the token ids refer to travels with the run
        shutil.copyfile(os.path.join(args.data or DEFAULT_DIRS["imdb"], "vocab.txt"), os.path.join(out, "vocab.txt"))
    if args.optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                              weight_decay=args.weight_decay)
    gen = torch.Generator().manual_seed(seed)
    info = {
        "format": "crossbind-run/1", "status": "incomplete", "binding": args.binding, "model": args.model,
        "seed": seed, "run": args.run or (0 if args.seed is not None else 1), "data": args.data or DEFAULT_DIRS[DATA_FORMATS[args.model]],
        "n_train": len(xtr), "n_test": len(xte), "batch": args.batch, "optimizer": args.optimizer,
        "lr": args.lr, "momentum": args.momentum, "weight_decay": args.weight_decay,
        "shuffle": args.shuffle, "dropout": not args.no_dropout, "init": args.init, "threads": args.threads,
        "versions": {"torch": torch.__version__, "python": platform.python_version(),
                     "numpy": np.__version__},
        "machine": f"{platform.system()} {platform.release()} {platform.machine()}",
        "epochs": [],
    }
    sub = {"load": 0.0, "forward": 0.0, "backward": 0.0}
    eval_total = 0.0
    n = len(xtr)
    t_start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        order = torch.randperm(n, generator=gen) if args.shuffle else None
        t_epoch = time.perf_counter()
        for i in range(0, n, args.batch):
            t0 = time.perf_counter()
            if order is None:
                xb, yb = xtr[i:i + args.batch], ytr[i:i + args.batch]
            else:
                idx = order[i:i + args.batch]
                xb, yb = xtr[idx], ytr[idx]
            t1 = time.perf_counter()
            opt.zero_grad()
            loss = loss_of(args.model, model(xb), yb)
            t2 = time.perf_counter()
            loss.backward()
            opt.step()
            if args.subactivities:
                t3 = time.perf_counter()
                sub["load"] += t1 - t0
                sub["forward"] += t2 - t1
                sub["backward"] += t3 - t2
        t_eval = time.perf_counter()
        _, tr_acc, tr_loss, *_ = evaluate(model, xtr, ytr, args.batch, name=args.model)
        last = epoch == args.epochs
        te = evaluate(model, xte, yte, args.batch, with_metrics=last, name=args.model)
        eval_s = time.perf_counter() - t_eval
        eval_total += eval_s
        info["epochs"].append({"epoch": epoch, "train_acc": tr_acc, "test_acc": te[1], "train_loss": tr_loss,
                               "test_loss": te[2], "train_time_s": t_eval - t_epoch, "eval_time_s": eval_s})
        if not args.quiet:
            print(f"epoch {epoch}/{args.epochs}  train acc {tr_acc:.4f} loss {tr_loss:.4f}  test acc {te[1]:.4f} "
                  f"loss {te[2]:.4f}  ({t_eval - t_epoch:.2f}s train, {eval_s:.2f}s eval)", file=sys.stderr)
        if not last:
            write_json(run_json, info)
    total = time.perf_counter() - t_start
    save_all(model, out, "final", args.model)
    info.update({"status": "complete", "training_time_s": total - eval_total, "eval_time_s": eval_total,
                 "total_time_s": total, "test_accuracy": te[1], "test_correct": te[0], "f1_macro": te[3],
                 "auc_macro": te[4]})
    if args.subactivities:
        info["subactivities_s"] = sub
    write_json(run_json, info)
    print(f"{args.model}: test accuracy {te[1]:.4f} ({te[0]}/{len(xte)}), macro F1 {te[3]:.4f}, AUC {te[4]:.4f}, "
          f"training {total - eval_total:.2f}s, eval {eval_total:.2f}s -> {run_json}")


# ------------------------------------------------------------------- eval

def cmd_eval(args):
    torch.set_num_threads(args.threads)
    model, mode, kind = load_model(args.model, args.weights, args.arch)
    xte, yte = load_data(args, False)
    evaluate(model, xte, yte, args.batch, name=args.model)  # warm-up
    times, counts = [], []
    for i in range(args.repeat):
        # F1 and AUC from the last timed pass; its time excludes the metrics
        r = evaluate(model, xte, yte, args.batch, with_metrics=i == args.repeat - 1, name=args.model)
        times.append(r[5])
        counts.append(r[0])
    if args.predictions:
        with open(args.predictions, "w") as f:
            f.write("index,label,prediction," + ",".join(f"p{j}" for j in range(r[7].shape[1])) + "\n")
            for i in range(len(xte)):
                f.write(f"{i},{int(yte[i])},{int(r[6][i])}," + ",".join(f"{v:.9g}" for v in r[7][i]) + "\n")
    if args.logits:
        np.save(args.logits, r[8].astype(np.float32))
    res = {"binding": args.binding, "model": args.model, "load_mode": mode, "format": kind,
           "weights": args.weights, "correct": r[0], "total": len(xte),
           "accuracy": r[1], "loss": r[2], "f1_macro": r[3], "auc_macro": r[4], "batch": args.batch,
           "threads": args.threads, "times_s": times, "correct_per_pass": counts,
           "mean_time_s": sum(times) / len(times)}
    if args.json:
        print(json.dumps(finite_or_null(res), allow_nan=False))
    else:
        print(f"{args.model}: {r[0]}/{len(xte)} correct, accuracy {r[1]:.4f}, loss {r[2]:.4f}, macro F1 {r[3]:.4f}, "
              f"AUC {r[4]:.4f}, mean time {res['mean_time_s']:.4f}s over {args.repeat} passes")


# ----------------------------------------------------------------- golden

def step_losses(model, opt, loss_of, steps):
    """The loss before each of `steps` optimizer steps, then the loss after
    the last one (the sequence the C golden tests replay)."""
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_of(model)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        losses.append(loss_of(model).item())
    return np.array(losses, dtype=np.float32)


def golden_for(name, steps=5, batch=16):
    """Fixed weights and inputs; outputs, gradients and optimizer-step losses."""
    torch.manual_seed(20240701)
    model = MODELS[name]()
    x = torch.rand(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))
    init = {k: v.clone() for k, v in model.state_dict().items()}
    out = {}
    for k, v in init.items():
        out[f"{name}.param.{k}"] = v.numpy()
    out[f"{name}.input"] = x.numpy()
    out[f"{name}.labels"] = y.numpy().astype(np.int64)
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    out[f"{name}.logits"] = logits.detach().numpy()
    out[f"{name}.loss"] = np.array([loss.item()], dtype=np.float32)
    for k, p in model.named_parameters():
        out[f"{name}.grad.{k}"] = p.grad.numpy().copy()
    optimizers = {
        "sgd": lambda ps: torch.optim.SGD(ps, lr=0.05),
        "sgdm": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=1e-3),
        "adam": lambda ps: torch.optim.Adam(ps, lr=1e-3),
        "adamw": lambda ps: torch.optim.Adam(ps, lr=1e-3, betas=(0.8, 0.99), eps=1e-6, weight_decay=1e-2),
    }
    for oname, make in optimizers.items():
        model.load_state_dict(init)
        out[f"{name}.{oname}_losses"] = step_losses(model, make(model.parameters()),
                                                    lambda mdl: F.cross_entropy(mdl(x), y), steps)
        # how far each parameter moved: catches update-rule errors too small
        # to show in the losses
        for k, v in model.state_dict().items():
            out[f"{name}.{oname}_delta.{k}"] = (v - init[k]).numpy()
    return out


def golden_batchnorm(steps=3):
    """nn.BatchNorm2d(3) with PyTorch's defaults on x [4,3,5,5]: training-mode
    outputs, the gradients of sum(y * r) for a fixed r, the running statistics
    after `steps` training passes, and evaluation-mode outputs with them."""
    torch.manual_seed(20240702)
    bn = nn.BatchNorm2d(3)
    with torch.no_grad():
        bn.weight.copy_(torch.rand(3) + 0.5)
        bn.bias.copy_(torch.rand(3) - 0.5)
    x = (torch.rand(4, 3, 5, 5) * 3 - 1).requires_grad_()
    r = torch.rand(4, 3, 5, 5)
    out = {"bn.input": x.detach().numpy().copy(), "bn.dy": r.numpy(), "bn.weight": bn.weight.detach().numpy().copy(),
           "bn.bias": bn.bias.detach().numpy().copy()}
    bn.train()
    y = bn(x)
    (y * r).sum().backward()
    out["bn.train_output"] = y.detach().numpy()
    out["bn.grad.input"] = x.grad.numpy()
    out["bn.grad.weight"] = bn.weight.grad.numpy()
    out["bn.grad.bias"] = bn.bias.grad.numpy()
    with torch.no_grad():
        for _ in range(steps - 1):
            bn(x)
    out["bn.running_mean"] = bn.running_mean.numpy().copy()
    out["bn.running_var"] = bn.running_var.numpy().copy()
    bn.eval()
    with torch.no_grad():
        out["bn.eval_output"] = bn(x).numpy()
    return out


def golden_vgg16(steps=3, batch=4):
    """VGG-16 with dropout 0 in training mode (batch statistics): logits, loss,
    every gradient, the losses of `steps` plain SGD steps (lr 0.01: at the
    protocol's 0.05 a batch of 4 through 13 batch normalisations turns float
    rounding into percent-level differences within 3 steps),
    the running statistics after them and evaluation-mode logits. No
    displacement tensors: the model has 33.6M parameters."""
    torch.manual_seed(20240703)
    model = VGG16(dropout=0.0)
    x = torch.rand(batch, 3, 32, 32)
    y = torch.randint(0, 10, (batch,))
    out = {f"vgg16.param.{k}": v.clone().numpy() for k, v in model.state_dict().items()
           if not k.endswith("num_batches_tracked")}
    out["vgg16.input"] = x.numpy()
    out["vgg16.labels"] = y.numpy().astype(np.int64)
    model.train()
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    out["vgg16.logits"] = logits.detach().numpy()
    out["vgg16.loss"] = np.array([loss.item()], dtype=np.float32)
    for k, p in model.named_parameters():
        out[f"vgg16.grad.{k}"] = p.grad.numpy().copy()
    out["vgg16.sgd_losses"] = step_losses(model, torch.optim.SGD(model.parameters(), lr=0.01),
                                          lambda mdl: F.cross_entropy(mdl(x), y), steps)
    with torch.no_grad():
        for k, v in model.state_dict().items():
            if k.endswith("running_mean") or k.endswith("running_var"):
                out[f"vgg16.after.{k}"] = v.numpy().copy()
        model.eval()
        out["vgg16.eval_logits"] = model(x).numpy()
    return out


def gru_rb(x, w_ih, w_hh, b_ih, b_hh):
    """The reset-before GRU (Keras reset_after=False) in PyTorch's layout:
    n = tanh(x W_in^T + b_in + (r * h) W_hn^T + b_hn). x: [N, T, D]."""
    H = w_hh.shape[1]
    h = x.new_zeros(x.shape[0], H)
    # The input side of every step in one product (as nn.GRU does): only the
    # recurrent products need the step before. unbind, not x[:, t]: the
    # backward of each indexing writes a gradient the size of the whole
    # sequence, unbind's one for all steps.
    steps = (x @ w_ih.t() + b_ih).unbind(1)
    w_rz, b_rz = w_hh[:2 * H].t(), b_hh[:2 * H]
    w_n, b_n = w_hh[2 * H:].t(), b_hh[2 * H:]
    out = []
    for xp in steps:
        hr = h @ w_rz + b_rz
        r = torch.sigmoid(xp[:, :H] + hr[:, :H])
        z = torch.sigmoid(xp[:, H:2 * H] + hr[:, H:])
        n = torch.tanh(xp[:, 2 * H:] + (r * h) @ w_n + b_n)
        h = (1 - z) * n + z * h
        out.append(h)
    return torch.stack(out, 1)


def golden_recurrent():
    """nn.Embedding(6, 3) then a recurrent layer with hidden 4 on token ids
    [2, 5]: nn.LSTM ("op_lstm"), nn.GRU ("op_gru") and the reset-before GRU
    with nn.GRU's weights ("op_grurb"); every hidden state and the gradients
    of sum(h * r) for a fixed r with respect to every parameter."""
    out = {}
    for variant, seed in (("op_lstm", 20240704), ("op_gru", 20240705), ("op_grurb", 20240705)):
        torch.manual_seed(seed)
        emb = nn.Embedding(6, 3)
        rnn = nn.LSTM(3, 4, batch_first=True) if variant == "op_lstm" else nn.GRU(3, 4, batch_first=True)
        ids = torch.tensor([[0, 5, 2, 2, 1], [4, 3, 0, 1, 5]])
        if variant == "op_grurb":
            h = gru_rb(emb(ids), rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0)
        else:
            h, _ = rnn(emb(ids))
        r = torch.rand(2, 5, 4)
        (h * r).sum().backward()
        out.update({f"{variant}.ids": ids.numpy().astype(np.float32), f"{variant}.dy": r.numpy(),
                    f"{variant}.output": h.detach().numpy(),
                    f"{variant}.param.emb.weight": emb.weight.detach().numpy().copy(),
                    f"{variant}.grad.emb.weight": emb.weight.grad.numpy()})
        for k, p in rnn.named_parameters():
            out[f"{variant}.param.rnn.{k}"] = p.detach().numpy().copy()
            out[f"{variant}.grad.rnn.{k}"] = p.grad.numpy()
    return out


def golden_rnn_models(steps=3, batch=2):
    """The three IMDb models with dropout 0 on random token ids: outputs
    (probabilities), the binary cross-entropy loss, every gradient and the
    losses of `steps` Adam steps at the protocol's learning rates."""
    out = {}
    for kind, lr in (("lstm", 8e-5), ("gru", 3e-4), ("gru-rb", 3e-4)):
        torch.manual_seed(20240706)
        model = RNNClassifier(kind, dropout=0.0)
        x = torch.randint(0, 10000, (batch, 300))
        y = torch.tensor([[1.0], [0.0]])[:batch]
        tag = kind
        for k, v in model.state_dict().items():
            out[f"{tag}.param.{k}"] = v.clone().numpy()
        out[f"{tag}.input"] = x.numpy().astype(np.float32)
        out[f"{tag}.labels"] = y.numpy().reshape(-1)
        prob = model(x)
        loss = F.binary_cross_entropy(prob, y)
        loss.backward()
        out[f"{tag}.output"] = prob.detach().numpy()
        out[f"{tag}.loss"] = np.array([loss.item()], dtype=np.float32)
        for k, p in model.named_parameters():
            out[f"{tag}.grad.{k}"] = p.grad.numpy().copy()
        out[f"{tag}.adam_losses"] = step_losses(model, torch.optim.Adam(model.parameters(), lr=lr),
                                                lambda mdl: F.binary_cross_entropy(mdl(x), y), steps)
        out[f"{tag}.adam_lr"] = np.array([lr], dtype=np.float32)
    return out


def cmd_golden(args):
    torch.set_num_threads(1)
    out = {}
    parts = [golden_for(name) for name in ("lenet1", "lenet5")]
    parts += [golden_batchnorm(), golden_vgg16(), golden_recurrent(), golden_rnn_models()]
    for part in parts:
        clash = set(out) & set(part)
        if clash:  # one golden section must never overwrite another's tensors
            fail(f"golden sections share names: {sorted(clash)[:5]}")
        out.update(part)
    cb_safetensors.write(args.out, out, {"format": GOLDEN_FORMAT, "torch": torch.__version__,
                                         "optimizers": "sgd: lr .05; sgdm: lr .05 momentum .9 wd 1e-3; "
                                                       "adam: lr 1e-3; adamw: lr 1e-3 betas .8,.99 eps 1e-6 wd 1e-2"})
    print(f"wrote {args.out} (torch {torch.__version__})")


def main():
    p = argparse.ArgumentParser(prog="crossbind_torch.py", description=__doc__)
    # One file serves two bindings (Debian's torch and PyPI's): the manifest
    # that runs it says which one its results belong to.
    p.add_argument("--binding", default="pytorch", help="the binding named in the results (default: pytorch)")
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("model", choices=sorted(MODELS))
    t.add_argument("--data", help="the model's data set (MNIST IDX or CIFAR-10 batches; default per model)")
    t.add_argument("--epochs", type=int, help="default: the protocol's (200 CNNs, 30 RNNs)")
    t.add_argument("--batch", type=int, help="default: the protocol's (128 CNNs, 256 RNNs)")
    t.add_argument("--optimizer", choices=["sgd", "adam"], help="default: the protocol's (SGD CNNs, Adam RNNs)")
    t.add_argument("--lr", type=float, help="default: the protocol's (0.05; LSTM 8e-5, GRU 3e-4)")
    t.add_argument("--momentum", type=float, default=0.0)
    t.add_argument("--weight-decay", type=float, default=0.0)
    t.add_argument("--seed", type=int)
    t.add_argument("--run", type=int, choices=range(1, 6))
    t.add_argument("--init")
    t.add_argument("--threads", type=int, default=os.cpu_count())
    t.add_argument("--limit-train", type=int, default=0)
    t.add_argument("--limit-test", type=int, default=0)
    t.add_argument("--shuffle", action="store_true")
    t.add_argument("--subactivities", action="store_true")
    t.add_argument("--out")
    t.add_argument("--quiet", action="store_true")
    t.add_argument("--no-dropout", action="store_true", help="dropout probability 0 (parity runs)")
    t.add_argument("--arch", help="a variant architecture of the model (lenet5-sequential)")
    e = sub.add_parser("eval")
    e.add_argument("model", choices=sorted(MODELS))
    e.add_argument("--weights", required=True)
    e.add_argument("--data", help="the model's data set (MNIST IDX or CIFAR-10 batches; default per model)")
    e.add_argument("--batch", type=int, default=128)
    e.add_argument("--repeat", type=int, default=5)
    e.add_argument("--limit-test", type=int, default=0)
    e.add_argument("--threads", type=int, default=os.cpu_count())
    e.add_argument("--predictions")
    e.add_argument("--logits", help="write the last pass's logits here (.npy, float32 [N,K])")
    e.add_argument("--arch", help="a variant architecture of the model (lenet5-sequential)")
    e.add_argument("--json", action="store_true")
    g = sub.add_parser("golden")
    g.add_argument("--out", required=True)
    cb_bench.add_parser(sub)
    cb_imagenet.add_parser(sub)
    cb_delta.add_parser(sub)
    args = p.parse_args()
    for opt in ("epochs", "batch", "threads", "repeat"):
        if getattr(args, opt, 1) is not None and getattr(args, opt, 1) < 1:
            fail(f"--{opt} must be at least 1")
    for opt in ("limit_train", "limit_test"):
        if getattr(args, opt, 0) < 0:
            fail(f"--{opt.replace('_', '-')} must be >= 0")
    if args.cmd == "delta":
        # PyTorch as its users run it: subnormal floats kept (no flush to
        # zero below), the other variants' default too.
        cb_delta.run(args, fail, study=(MODELS, INPUT_SHAPES, load_weights))
        return
    # Subnormal floats flushed to zero, as crossbind does: gradients vanishing
    # through 300 recurrent steps become subnormal, and each operation on one
    # costs a microcode assist (an LSTM training step ran 3x slower). Both
    # bindings then compute the same numbers and neither pays for them.
    torch.set_flush_denormal(True)
    if args.cmd == "bench":
        if args.model not in MODELS:
            fail(f"unknown model {args.model} (known: {', '.join(sorted(MODELS))})")
        cb_bench.check(args, fail)
        cb_bench.run(sys.modules[__name__], args)
        return
    if args.cmd == "imagenet-export":
        cb_imagenet.run(args, fail)
        return
    {"train": cmd_train, "eval": cmd_eval, "golden": cmd_golden}[args.cmd](args)


if __name__ == "__main__":
    main()
