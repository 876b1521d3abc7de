"""A small safetensors reader and writer (the format: an 8-byte little-endian
header length, a JSON header, raw little-endian data), so that the PyTorch
runner exchanges weights with crossbind without extra packages."""
import json
import struct

import numpy as np

_DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "U8": np.uint8}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}


def read(path):
    """Returns (dict name -> numpy array, metadata dict)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: too short to be a safetensors file")
    (hlen,) = struct.unpack("<Q", blob[:8])
    if hlen > len(blob) - 8:
        raise ValueError(f"{path}: header length {hlen} exceeds the file (truncated?)")
    header = json.loads(blob[8:8 + hlen])
    data = memoryview(blob)[8 + hlen:]
    meta = header.pop("__metadata__", {}) or {}
    out = {}
    for name, e in header.items():
        dtype = _DTYPES.get(e["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name} has unsupported dtype {e['dtype']}")
        begin, end = e["data_offsets"]
        shape = tuple(e["shape"])
        count = int(np.prod(shape)) if shape else 1
        if end > len(data) or end - begin != count * np.dtype(dtype).itemsize:
            raise ValueError(f"{path}: tensor {name} lies outside the file or mismatches its shape")
        out[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(shape).copy()
    return out, meta


def write(path, tensors, metadata=None):
    """Writes name -> numpy array (in the given order) atomically."""
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    offset = 0
    arrays = []
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr).reshape(np.shape(arr))  # ascontiguousarray turns 0-d into [1]
        if arr.dtype not in _NAMES:
            raise ValueError(f"tensor {name}: unsupported dtype {arr.dtype}")
        nbytes = arr.nbytes
        header[name] = {"dtype": _NAMES[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
        arrays.append(arr)
    hbytes = json.dumps(header, separators=(",", ":")).encode()
    hbytes += b" " * (-len(hbytes) % 8)
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hbytes)))
        f.write(hbytes)
        for arr in arrays:
            f.write(arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes())
    import os
    os.replace(tmp, path)
