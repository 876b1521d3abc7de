"""The files of the runners' `delta` command (runners/README.md), one
implementation for every Python runner, whatever its environment: it needs
only the standard library and numpy. Each runner keeps its own model
loading and its own timing; this module writes what they measured (every
file under a temporary name, then renamed, so a reader never sees half a
file) and reads the inputs every variant of an experiment shares.

A runner imports it by path:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "delta_common"))
    import cb_delta_files
"""
import json
import os

import numpy as np


def atomic(path, write):
    """write(f) into a temporary file beside `path`, then rename it to `path`."""
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            write(f)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def save_npy(path, array):
    atomic(path, lambda f: np.save(f, array, allow_pickle=False))


def save_json(path, obj, indent=None):
    """JSON; a list one item a line."""
    if isinstance(obj, list):
        text = "[\n" + ",\n".join(json.dumps(v, allow_nan=False) for v in obj) + "\n]\n"
    else:
        text = json.dumps(obj, allow_nan=False, indent=indent) + "\n"
    atomic(path, lambda f: f.write(text.encode()))


def read_inputs(path, shape, fail, layout="", dtype=np.float32):
    """The inputs, `dtype` [n, *shape] with n >= 1 (float32 images, or int64
    token ids for a model whose input is an embedding's); an entry of
    `shape` that is None takes any size. `layout` (e.g. "NHWC") is named in
    the message."""
    if not os.path.isfile(path):
        fail(f"cannot open inputs {path}: no such file")
    try:
        x = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        fail(f"{path}: not a readable .npy file: {e}")
    if x.dtype != dtype:
        fail(f"{path}: inputs must be {np.dtype(dtype).name}, not {x.dtype}")
    shape = tuple(shape)
    if (x.ndim != 1 + len(shape) or x.shape[0] < 1
            or any(w is not None and w != d for w, d in zip(shape, x.shape[1:]))):
        shown = ", ".join("?" if w is None else str(w) for w in shape)
        fail(f"{path}: inputs have shape {list(x.shape)}, the model needs [n, {shown}] with n >= 1"
             + (f" ({layout})" if layout else ""))
    return x
