#!/usr/bin/env python3
"""The TensorFlow/Python binding of the study (TensorFlow's default binding):
trains and evaluates the study's six models in Keras 2 (tf-keras, through
TF_USE_LEGACY_KERAS=1) as the original TensorFlow code defines them, with
the same command line, data files and JSON as crossbind_torch.py.

Weights go in and out as crossbind's canonical safetensors (PyTorch names
and layouts) through cb_keras_map. A training also writes the model in
TensorFlow's serialization formats (cb_tf_export: .h5, .keras, SavedModel,
TFLite, ONNX through tf2onnx, TF.js layers model); `export` writes one of
them from given weights. `eval` loads safetensors, .h5, .keras, SavedModel
and TF.js directories.

For `crossbind delta` (cb_keras_apps): `keras-export` writes a
tf.keras.applications ImageNet CNN (MobileNetV2, ResNet50/101, InceptionV3)
as .h5, ONNX and .tflite (float32, and dynamic-range int8 as its own file);
`delta` runs such a .h5 on each input alone, timed, with every layer's output.

Run with the environment of runners/tensorflow-python/install.sh:
  runners/tensorflow-python/.venv/bin/python runners/tensorflow/crossbind_tf.py ...
"""
import argparse
import json
import math
import os
import platform
import random
import shutil
import sys
import time
import warnings

warnings.filterwarnings("ignore", message=".*HDF5 file.*")

os.environ["TF_USE_LEGACY_KERAS"] = "1"  # tf.keras = tf-keras (Keras 2), as the study's code
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Deterministic ops for training and eval; `delta` measures TensorFlow's
# ordinary inference path and turns them on only when the caller asked.
DETERMINISM_ASKED = "TF_DETERMINISTIC_OPS" in os.environ
os.environ.setdefault("TF_DETERMINISTIC_OPS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# The project's own readers of the data files and of safetensors (plain
# numpy, no framework): the same bytes every Python binding reads.
sys.path.insert(0, os.path.join(HERE, "..", "pytorch"))
import numpy as np  # noqa: E402
import cb_data  # noqa: E402
from cb_metrics import auc_binary, auc_macro, f1_macro  # noqa: E402
import cb_tf_bench  # noqa: E402
import cb_tf_export  # noqa: E402
import cb_keras_map  # noqa: E402
import cb_keras_apps  # noqa: E402
import cb_onnx2tf  # noqa: E402
import cb_safetensors  # noqa: E402

SEEDS = [287426343, 1850616268, 2068338201, 1202616822, 868822724]
DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
MODEL_NAMES = ["gru", "gru-rb", "lenet1", "lenet5", "lstm", "vgg16"]
DATA_FORMATS = {"lenet1": "mnist", "lenet5": "mnist", "vgg16": "cifar", "lstm": "imdb", "gru": "imdb",
                "gru-rb": "imdb"}
DEFAULT_DIRS = {"mnist": DEFAULT_DATA, "cifar": "data/cifar-stand-in", "imdb": "data/imdb-prepared"}
PROTOCOL = {"lenet1": ("sgd", 0.05, 128, 200), "lenet5": ("sgd", 0.05, 128, 200), "vgg16": ("sgd", 0.05, 128, 200),
            "lstm": ("adam", 8e-5, 256, 30), "gru": ("adam", 3e-4, 256, 30), "gru-rb": ("adam", 3e-4, 256, 30)}

tf = None  # imported in main(), after the argument checks (importing TensorFlow takes seconds)


def fail(msg):
    print(f"crossbind-tf: error: {msg}", file=sys.stderr)
    sys.exit(1)


def binary(name):
    return DATA_FORMATS[name] == "imdb"


# ----------------------------------------------------------------- models

def build(name, dropout=0.5, l2=0.0):
    """The protocol's models in Keras (section 2a). Layer names are the ones
    cb_keras_map maps. The multi-class models end in a separate softmax
    layer, so that the logits before it can be read out (`logits_model`)."""
    K = tf.keras
    L = K.layers
    if name in ("lenet1", "lenet5"):
        x = inp = K.Input((28, 28, 1), name="image")
        x = L.ZeroPadding2D(2, name="pad")(x)  # 28x28 -> 32x32, then valid convolutions
        chans = (4, 12) if name == "lenet1" else (6, 16)
        for i, c in enumerate(chans, 1):
            x = L.Conv2D(c, 5, activation="tanh", name=f"conv{i}")(x)
            x = L.MaxPooling2D(2, name=f"pool{i}")(x)
        if name == "lenet5":
            x = L.Conv2D(120, 5, activation="tanh", name="conv3")(x)
        x = L.Flatten(name="flatten")(x)
        if name == "lenet1":
            x = L.Dense(10, name="fc")(x)
        else:
            x = L.Dense(84, activation="tanh", name="fc1")(x)
            x = L.Dense(10, name="fc2")(x)
        out = L.Softmax(name="softmax")(x)
        return K.Model(inp, out, name=name)
    if name == "vgg16":
        x = inp = K.Input((32, 32, 3), name="image")
        i = 0
        for v in cb_keras_map.VGG16_PLAN:
            if v == "M":
                x = L.MaxPooling2D(2, name=f"features_{i}")(x)
                i += 1
            else:
                x = L.Conv2D(v, 3, padding="same", use_bias=False, name=f"features_{i}")(x)
                x = L.BatchNormalization(name=f"features_{i + 1}")(x)  # Keras defaults: momentum .99, eps 1e-3
                x = L.ReLU(name=f"features_{i + 2}")(x)
                i += 3
        x = L.Flatten(name="flatten")(x)
        x = L.Dense(4096, activation="relu", name="classifier_0")(x)
        x = L.Dropout(dropout, name="classifier_2")(x)
        x = L.Dense(4096, activation="relu", name="classifier_3")(x)
        x = L.Dropout(dropout, name="classifier_5")(x)
        reg = K.regularizers.l2(l2) if l2 else None
        x = L.Dense(10, name="classifier_6", kernel_regularizer=reg, bias_regularizer=reg)(x)
        out = L.Softmax(name="softmax")(x)
        return K.Model(inp, out, name=name)
    inp = K.Input((300,), dtype="int32", name="tokens")
    x = L.Embedding(10000, 300, name="embedding")(inp)
    if name == "lstm":
        x = L.LSTM(512, name="rnn")(x)
    else:
        x = L.GRU(512, reset_after=(name == "gru"), name="rnn")(x)
    x = L.Dropout(dropout, name="dropout")(x)
    out = L.Dense(1, activation="sigmoid", name="fc")(x)
    return K.Model(inp, out, name=name)


def logits_model(model, name):
    """The multi-class models' outputs before the softmax; the IMDb models'
    sigmoid probability (what crossbind and the PyTorch runner report)."""
    if binary(name) or isinstance(model, cb_tf_export.SignatureModel):
        return model  # a SavedModel's signature computes these already
    return tf.keras.Model(model.inputs, model.get_layer("softmax").input)


def set_canonical(model, name, tensors):
    try:
        weights = cb_keras_map.to_keras(name, tensors)
    except KeyError as e:
        fail(f"parameters missing from the weights: {e.args[0]}")
    for layer, arrs in weights.items():
        want = [tuple(w.shape) for w in model.get_layer(layer).get_weights()]
        got = [tuple(a.shape) for a in arrs]
        if want != got:
            fail(f"layer {layer}: the weights give shapes {got}, the model needs {want}")
        model.get_layer(layer).set_weights(arrs)


def get_canonical(model, name, reference=None):
    k = {layer: model.get_layer(layer).get_weights() for layer in cb_keras_map.keras_layers(name)}
    return cb_keras_map.to_canonical(name, k, reference)


def read_canonical(path):
    try:
        tensors, _ = cb_safetensors.read(path)
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
        fail(f"cannot read weights {path}: {e}")
    return tensors


def save_canonical(model, name, path, reference=None):
    cb_safetensors.write(path, get_canonical(model, name, reference),
                         {"model": name, "format": "crossbind-weights/1", "framework": "tensorflow"})


def file_kind(path):
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "saved_model.pb")):
            return "savedmodel"
        if os.path.isfile(os.path.join(path, "model.json")):
            return "tfjs"
        return "unknown"
    try:
        with open(path, "rb") as f:
            head = f.read(9)
    except OSError as e:
        fail(f"cannot open weights {path}: {e}")
    if head[:8] == b"\x89HDF\r\n\x1a\n":
        return "h5"
    if len(head) == 9 and head[8:9] == b"{" and head[5:8] == b"\0\0\0":
        return "safetensors"
    if head[:4] == b"PK\x03\x04":
        return "keras"
    return "unknown"


KERAS_KINDS = ("safetensors", "h5", "keras")


def load_model(name, path):
    kind = file_kind(path)
    if kind == "safetensors":
        model = build(name)
        set_canonical(model, name, read_canonical(path))
        return model, "parameters", kind
    if kind in ("h5", "keras"):
        try:
            model = tf.keras.models.load_model(path, compile=False)
        except Exception as e:  # h5py, zipfile and Keras each raise their own kinds
            fail(f"{path}: cannot load the Keras model ({kind}): {type(e).__name__}: {' '.join(str(e).split())[:300]}")
    elif kind == "savedmodel":
        return cb_tf_export.read_savedmodel(tf, sys.modules[__name__], name, path, fail), "serialization", kind
    elif kind == "tfjs":
        model = cb_tf_export.read_tfjs(tf, name, path, fail)
    else:
        fail(f"{path}: unrecognised weights format (this binding loads safetensors, .h5, .keras, "
             "a SavedModel directory and a TF.js layers-model directory)")
    want = tuple(cb_tf_export.INPUT_SPECS[DATA_FORMATS[name]][0])
    if tuple(model.input_shape) != want:
        fail(f"{path}: the model's input is {model.input_shape}, {name} needs {want}")
    return model, "serialization", kind


def export_formats(model, name, paths, fail_hard=False):
    """Writes each {format: path}; returns ({format: seconds} written,
    {format: error} not written). Each failure is printed as one error
    line (and ends the program with fail_hard)."""
    done, errors = {}, {}
    tf.random.set_seed(SEEDS[0])  # tracing Keras' dropout for a SavedModel needs one (TF_DETERMINISTIC_OPS)
    for fmt, path in paths.items():
        try:
            done[fmt] = cb_tf_export.write(tf, sys.modules[__name__], model, name, fmt, path)
        except (cb_tf_export.ExportError, OSError) as e:
            if fail_hard:
                fail(f"cannot write {fmt} to {path}: {e}")
            errors[fmt] = str(e)
            print(f"crossbind-tf: error: {os.path.basename(path)} not written: {e}", file=sys.stderr)
    return done, errors


# ------------------------------------------------------------------- data

def load_data(args, train):
    limit = args.limit_train if train else args.limit_test
    fmt = DATA_FORMATS[args.model]
    directory = args.data or DEFAULT_DIRS[fmt]
    loader = {"cifar": cb_data.load_cifar, "mnist": cb_data.load_mnist, "imdb": cb_data.load_imdb}[fmt]
    try:
        x, y = loader(directory, train, limit)
    except (OSError, ValueError) as e:
        fail(str(e))
    if fmt == "imdb":
        return x.astype(np.int32), y.astype(np.float32)
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)), y.astype(np.int64)  # NCHW -> NHWC


# ---------------------------------------------------------------- evaluation

def make_forward(model):
    f = tf.function(lambda x: model(x, training=False), reduce_retracing=True)
    return f


def evaluate(fwd, x, y, batch, name, with_metrics=False):
    """One pass in file order, inference mode: (correct, accuracy, mean loss,
    f1, auc, seconds, pred, probs, outputs) as crossbind_torch.py's evaluate."""
    t0 = time.perf_counter()
    outs = [fwd(x[i:i + batch]).numpy() for i in range(0, len(x), batch)]
    t = time.perf_counter() - t0
    out = np.concatenate(outs).astype(np.float32)
    if binary(name):
        p = np.clip(out[:, 0].astype(np.float64), 1e-12, 1 - 1e-12)
        loss = float(np.mean(-(y * np.log(p) + (1 - y) * np.log(1 - p))))
        labels = y.astype(np.int64)
        pred = (out[:, 0] >= 0.5).astype(np.int64)
    else:
        z = out.astype(np.float64)
        z = z - z.max(1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(1, keepdims=True))
        labels = y
        loss = float(-np.mean(logp[np.arange(len(y)), y]))
        pred = out.argmax(1)
    correct = int((pred == labels).sum())
    probs = None
    f1 = auc = float("nan")
    if with_metrics:
        if binary(name):
            probs = out.astype(np.float64)
            f1 = f1_macro(pred, labels, 2)
            auc = auc_binary(probs[:, 0], labels == 1)
        else:
            probs = np.exp(logp)
            f1 = f1_macro(pred, labels, 10)
            auc = auc_macro(probs, labels, 10)
    return correct, correct / len(x), loss, f1, auc, t, pred, probs, out


# ------------------------------------------------------------------ train

def finite_or_null(obj):
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


def set_threads(n):
    tf.config.threading.set_intra_op_parallelism_threads(n)
    tf.config.threading.set_inter_op_parallelism_threads(1)


def seed_all(seed):
    random.seed(seed)
    np.random.seed(seed % 2 ** 32)
    tf.random.set_seed(seed)


def make_optimizer(args):
    if args.optimizer == "adam":
        return tf.keras.optimizers.Adam(learning_rate=args.lr)  # Keras defaults (epsilon 1e-7)
    return tf.keras.optimizers.SGD(learning_rate=args.lr, momentum=args.momentum)


def loss_fn(name):
    if binary(name):
        return tf.keras.losses.BinaryCrossentropy()
    return tf.keras.losses.SparseCategoricalCrossentropy()


class SubactivityTrainer:
    """A plain training loop, used only with --subactivities: batch loading,
    forward (incl. the loss) and backward (gradients and the optimizer step)
    timed separately. Eager execution, so that the two halves of a step can
    be timed apart (fit runs the whole step as one graph: slower here)."""

    def __init__(self, model, opt, loss):
        self.model, self.opt, self.loss = model, opt, loss

    def forward(self, x, y):
        self.tape = tf.GradientTape()
        with self.tape:
            lv = self.loss(y, self.model(x, training=True))
            if self.model.losses:
                lv = lv + tf.add_n(self.model.losses)
        return lv

    def backward(self, lv):
        grads = self.tape.gradient(lv, self.model.trainable_variables)
        self.opt.apply_gradients(zip(grads, self.model.trainable_variables))


def cmd_train(args):
    if args.seed is not None and args.run is not None:
        fail("give --seed or --run, not both")
    seed = args.seed if args.seed is not None else SEEDS[(args.run or 1) - 1]
    if args.weight_decay and args.model != "vgg16":
        fail("--weight-decay is the L2 penalty on VGG-16's last dense layer (the TensorFlow code's form); "
             "other models have none")
    proto = PROTOCOL[args.model]
    if args.optimizer is None:
        args.optimizer = proto[0]
        args.lr = proto[1] if args.lr is None else args.lr
    if args.lr is None:
        args.lr = 1e-3 if args.optimizer == "adam" else 0.05
    args.batch = args.batch or proto[2]
    args.epochs = args.epochs or proto[3]
    out = args.out or f"runs/{args.model}-{seed}-tf"
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
    init = read_canonical(args.init) if args.init else None
    set_threads(args.threads)
    seed_all(seed)
    # L2 on the last dense layer instead of weight decay: what the original
    # TensorFlow code does in the momentum variant (protocol 2a).
    model = build(args.model, dropout=0.0 if args.no_dropout else 0.5, l2=args.weight_decay)
    if init is not None:
        set_canonical(model, args.model, init)
    reference = init if init is not None else get_canonical(model, args.model)
    save_canonical(model, args.model, os.path.join(out, "init.safetensors"), reference)
    model.save(os.path.join(out, "init.h5"))
    if binary(args.model):
        shutil.copyfile(os.path.join(args.data or DEFAULT_DIRS["imdb"], "vocab.txt"), os.path.join(out, "vocab.txt"))
    opt = make_optimizer(args)
    loss = loss_fn(args.model)
    model.compile(optimizer=opt, loss=loss)
    fwd = make_forward(logits_model(model, args.model))
    info = {
        "format": "crossbind-run/1", "status": "incomplete", "binding": args.binding, "model": args.model,
        "seed": seed, "run": args.run or (0 if args.seed is not None else 1),
        "data": args.data or DEFAULT_DIRS[DATA_FORMATS[args.model]],
        "n_train": len(xtr), "n_test": len(xte), "batch": args.batch, "optimizer": args.optimizer,
        "lr": args.lr, "momentum": args.momentum, "weight_decay": args.weight_decay,
        "weight_decay_form": "l2 on the last dense layer" if args.weight_decay else None,
        "shuffle": args.shuffle, "dropout": not args.no_dropout, "init": args.init, "threads": args.threads,
        "versions": {"tensorflow": tf.__version__, "tf_keras": __import__("tf_keras").__version__,
                     "python": platform.python_version(), "numpy": np.__version__},
        "machine": f"{platform.system()} {platform.release()} {platform.machine()}",
        "epochs": [],
    }
    sub = {"load": 0.0, "forward": 0.0, "backward": 0.0}
    trainer = SubactivityTrainer(model, opt, loss) if args.subactivities else None
    rng = np.random.default_rng(seed)
    eval_total = 0.0
    n = len(xtr)
    t_start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        order = rng.permutation(n) if args.shuffle else None
        t_epoch = time.perf_counter()
        if trainer is None:
            xe, ye = (xtr, ytr) if order is None else (xtr[order], ytr[order])
            model.fit(xe, ye, batch_size=args.batch, epochs=1, shuffle=False, verbose=0)
        else:
            for i in range(0, n, args.batch):
                t0 = time.perf_counter()
                idx = slice(i, i + args.batch) if order is None else order[i:i + args.batch]
                xb, yb = tf.constant(xtr[idx]), tf.constant(ytr[idx])
                t1 = time.perf_counter()
                lv = trainer.forward(xb, yb)
                lv.numpy()
                t2 = time.perf_counter()
                trainer.backward(lv)
                model.trainable_variables[-1].numpy()
                t3 = time.perf_counter()
                sub["load"] += t1 - t0
                sub["forward"] += t2 - t1
                sub["backward"] += t3 - t2
        t_eval = time.perf_counter()
        _, tr_acc, tr_loss, *_ = evaluate(fwd, xtr, ytr, args.batch, args.model)
        last = epoch == args.epochs
        te = evaluate(fwd, xte, yte, args.batch, args.model, with_metrics=last)
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
    save_canonical(model, args.model, os.path.join(out, "final.safetensors"), reference)
    written, errors = export_formats(model, args.model,
                                     {f: os.path.join(out, f"final.{f}") for f in cb_tf_export.FORMATS})
    info.update({"formats": ["safetensors"] + list(written), "export_time_s": written})
    if errors:
        info["export_errors"] = errors
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
    set_threads(args.threads)
    model, mode, kind = load_model(args.model, args.weights)
    xte, yte = load_data(args, False)
    fwd = make_forward(logits_model(model, args.model))
    evaluate(fwd, xte, yte, args.batch, args.model)  # warm-up
    times, counts = [], []
    for i in range(args.repeat):
        r = evaluate(fwd, xte, yte, args.batch, args.model, with_metrics=i == args.repeat - 1)
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


# ----------------------------------------------------------------- export

def cmd_export(args):
    kind = file_kind(args.weights)
    if kind not in KERAS_KINDS:
        fail(f"{args.weights}: export reads canonical .safetensors, .h5 or .keras weights "
             f"(this is {'a ' + kind if kind != 'unknown' else 'an unrecognised'} file)")
    model, _, _ = load_model(args.model, args.weights)
    parent = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(parent):
        fail(f"cannot write {args.out}: no directory {parent}")
    # What is replaced must be a model of the same format, never some other directory.
    if os.path.isdir(args.out) and file_kind(args.out) != args.format:
        fail(f"{args.out} is a directory but no {args.format} model: it is not replaced")
    done, _ = export_formats(model, args.model, {args.format: args.out}, fail_hard=True)
    print(f"{args.model}: {args.format} written to {args.out} in {done[args.format]:.2f}s")


def main():
    global tf
    p = argparse.ArgumentParser(prog="crossbind_tf.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binding", default="tensorflow-python", help="the binding named in the results")
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("model", choices=MODEL_NAMES)
    t.add_argument("--data", help="the model's data set (MNIST IDX, CIFAR-10 batches, prepared IMDb)")
    t.add_argument("--epochs", type=int, help="default: the protocol's (200 CNNs, 30 RNNs)")
    t.add_argument("--batch", type=int, help="default: the protocol's (128 CNNs, 256 RNNs)")
    t.add_argument("--optimizer", choices=["sgd", "adam"], help="default: the protocol's (SGD CNNs, Adam RNNs)")
    t.add_argument("--lr", type=float, help="default: the protocol's (0.05; LSTM 8e-5, GRU 3e-4)")
    t.add_argument("--momentum", type=float, default=0.0)
    t.add_argument("--weight-decay", type=float, default=0.0,
                   help="VGG-16 only: L2 penalty on the last dense layer (the original TensorFlow code's form)")
    t.add_argument("--seed", type=int)
    t.add_argument("--run", type=int, choices=range(1, 6))
    t.add_argument("--init", help="start from these canonical safetensors weights")
    t.add_argument("--threads", type=int, default=os.cpu_count())
    t.add_argument("--limit-train", type=int, default=0)
    t.add_argument("--limit-test", type=int, default=0)
    t.add_argument("--shuffle", action="store_true")
    t.add_argument("--subactivities", action="store_true")
    t.add_argument("--out")
    t.add_argument("--quiet", action="store_true")
    t.add_argument("--no-dropout", action="store_true", help="dropout probability 0 (parity runs)")
    t.add_argument("--device", default="cpu", choices=["cpu"])
    e = sub.add_parser("eval")
    e.add_argument("model", choices=MODEL_NAMES)
    e.add_argument("--weights", required=True)
    e.add_argument("--data")
    e.add_argument("--batch", type=int, default=128)
    e.add_argument("--repeat", type=int, default=5)
    e.add_argument("--limit-test", type=int, default=0)
    e.add_argument("--threads", type=int, default=os.cpu_count())
    e.add_argument("--predictions")
    e.add_argument("--logits", help="write the last pass's outputs here (.npy, float32 [N,K])")
    e.add_argument("--json", action="store_true")
    e.add_argument("--device", default="cpu", choices=["cpu"])
    x = sub.add_parser("export", help="write one format from given weights")
    x.add_argument("model", choices=MODEL_NAMES)
    x.add_argument("--weights", required=True, help="canonical .safetensors, .h5 or .keras")
    x.add_argument("--format", required=True, help=", ".join(cb_tf_export.FORMATS))
    x.add_argument("--out", required=True, help="the file (or directory, for savedmodel and tfjs) to write")
    cb_tf_bench.add_parser(sub)
    cb_keras_apps.add_parsers(sub)
    args = p.parse_args()
    for opt in ("epochs", "batch", "threads", "repeat"):
        if getattr(args, opt, 1) is not None and getattr(args, opt, 1) < 1:
            fail(f"--{opt} must be at least 1")
    if args.cmd == "export" and args.format not in cb_tf_export.FORMATS:
        fail(f"unknown format {args.format} (known: {', '.join(cb_tf_export.FORMATS)})")
    for opt in ("limit_train", "limit_test"):
        if getattr(args, opt, 0) < 0:
            fail(f"--{opt.replace('_', '-')} must be >= 0")
    if args.cmd == "bench":
        cb_tf_bench.check(args, fail)
    if args.cmd == "keras-export":
        cb_keras_apps.check_export_args(args, fail)
    if args.cmd in ("delta", "keras-export") and not DETERMINISM_ASKED:
        del os.environ["TF_DETERMINISTIC_OPS"]
    import tensorflow
    tf = tensorflow
    tf.get_logger().setLevel("ERROR")
    if os.environ.get("TF_DETERMINISTIC_OPS") == "1":
        tf.config.experimental.enable_op_determinism()
    if args.cmd == "bench":
        cb_tf_bench.run(sys.modules[__name__], args)
        return
    if args.cmd == "delta":
        set_threads(args.threads)  # before TensorFlow runs anything
        if args.onnx is not None:
            cb_onnx2tf.delta(tf, args, fail)
        else:
            cb_keras_apps.delta(tf, args, fail)
        return
    if args.cmd == "keras-export":
        cb_keras_apps.keras_export(tf, args, fail)
        return
    {"train": cmd_train, "eval": cmd_eval, "export": cmd_export}[args.cmd](args)


if __name__ == "__main__":
    main()
