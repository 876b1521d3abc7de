"""MNIST IDX reading (plain or gzip), the same files and scaling as crossbind."""
import gzip
import os
import struct

import numpy as np


def _open(directory, base):
    for name in (base, base + ".gz"):
        path = os.path.join(directory, name)
        if os.path.exists(path):
            with open(path, "rb") as f:
                magic = f.read(2)
            return (gzip.open if magic == b"\x1f\x8b" else open)(path, "rb"), path
    raise FileNotFoundError(f"cannot open {os.path.join(directory, base)}[.gz]")


def _read_idx(directory, base, ndim, limit):
    f, path = _open(directory, base)
    with f:
        blob = f.read()
    if len(blob) < 4 + 4 * ndim or blob[:4] != bytes([0, 0, 8, ndim]):
        raise ValueError(f"{path}: wrong IDX magic or truncated header")
    dims = struct.unpack(">" + "I" * ndim, blob[4:4 + 4 * ndim])
    count = int(np.prod(dims))
    data = np.frombuffer(blob, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != count:
        raise ValueError(f"{path}: header promises {count} bytes, file has {data.size}")
    data = data.reshape(dims)
    return data[:limit] if limit else data


def load_mnist(directory, train, limit=0):
    """Returns (images float32 [n,1,28,28] in [0,1], labels int64 [n])."""
    prefix = "train" if train else "t10k"
    x = _read_idx(directory, f"{prefix}-images-idx3-ubyte", 3, limit)
    y = _read_idx(directory, f"{prefix}-labels-idx1-ubyte", 1, limit)
    if len(x) != len(y):
        raise ValueError(f"{directory}: {len(x)} images but {len(y)} labels")
    images = x.astype(np.float32)[:, None, :, :] / np.float32(255.0)
    return images, y.astype(np.int64)


CIFAR_RECORD = 1 + 3 * 32 * 32


def load_cifar(directory, train, limit=0):
    """CIFAR-10 binary batches (data_batch_1..5.bin or test_batch.bin), as
    crossbind reads them: (images float32 [n,3,32,32] in [0,1], labels int64 [n])."""
    names = [f"data_batch_{i}.bin" for i in range(1, 6)] if train else ["test_batch.bin"]
    xs, ys, total = [], [], 0
    for name in names:
        if limit and total >= limit:
            break
        path = os.path.join(directory, name)
        with open(path, "rb") as f:
            blob = f.read()
        if not blob or len(blob) % CIFAR_RECORD:
            raise ValueError(f"{path}: {len(blob)} bytes is not a whole number of {CIFAR_RECORD}-byte records")
        rec = np.frombuffer(blob, dtype=np.uint8).reshape(-1, CIFAR_RECORD)
        if limit:
            rec = rec[: limit - total]
        if (rec[:, 0] > 9).any():
            raise ValueError(f"{path}: a label is outside 0-9")
        xs.append(rec[:, 1:].reshape(-1, 3, 32, 32))
        ys.append(rec[:, 0])
        total += len(rec)
    x = np.concatenate(xs).astype(np.float32) / np.float32(255.0)
    return x, np.concatenate(ys).astype(np.int64)


def load_imdb(directory, train, limit=0):
    """Prepared IMDb-format data (crossbind data imdb-prepare): int64 token ids
    [n, 300] and labels as float32 (1 pos, 0 neg), so that every binding
    trains on the tensors crossbind's tokeniser made."""
    split = "train" if train else "test"
    if not os.path.exists(os.path.join(directory, "vocab.txt")):
        raise ValueError(f"{directory} is not prepared IMDb data (no vocab.txt): make it with "
                         f"crossbind data imdb-prepare --from ACLIMDB_DIR --out {directory}")
    x = np.load(os.path.join(directory, f"x_{split}.npy"), allow_pickle=False)
    y = np.load(os.path.join(directory, f"y_{split}.npy"), allow_pickle=False)
    if x.dtype != np.int64 or x.ndim != 2 or y.dtype != np.int64 or y.shape != (x.shape[0],):
        raise ValueError(f"{directory}: expected int64 x_{split}.npy [n, L] and y_{split}.npy [n]")
    if limit:
        x, y = x[:limit], y[:limit]
    return np.ascontiguousarray(x), y.astype(np.float32)
