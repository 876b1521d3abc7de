#!/usr/bin/env python3
"""Writes a TF.js layers model (the format tf.loadLayersModel reads: a
directory with model.json and one weight shard) of a study model: the
TensorFlow/Python binding's Keras model (runners/tensorflow/crossbind_tf.py
build(), softmax layer included) with canonical safetensors weights. The
layout is the one the tensorflowjs converter writes for a Keras 2 model:
modelTopology {keras_version, backend, model_config}, and a weightsManifest
naming each weight by its Keras name without the ":0" suffix.

  tfjs_layers_model.py MODEL WEIGHTS.safetensors OUT_DIR

Run with runners/tensorflow-python/.venv/bin/python (tensorflow-cpu 2.18.1,
tf-keras 2.18.0).
"""
import json
import os
import sys

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "runners", "tensorflow"))
sys.path.insert(0, os.path.join(HERE, "..", "runners", "pytorch"))
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402

import crossbind_tf  # noqa: E402

crossbind_tf.tf = tf


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    name, weights, out = sys.argv[1:]
    model = crossbind_tf.build(name)
    crossbind_tf.set_canonical(model, name, crossbind_tf.read_canonical(weights))
    os.makedirs(out, exist_ok=True)
    entries, blobs = [], []
    for w in model.weights:
        a = np.ascontiguousarray(w.numpy().astype("<f4"))
        entries.append({"name": w.name.split(":")[0], "shape": list(a.shape), "dtype": "float32"})
        blobs.append(a.tobytes())
    shard = "group1-shard1of1.bin"
    with open(os.path.join(out, shard), "wb") as f:
        f.write(b"".join(blobs))
    doc = {
        "format": "layers-model",
        "generatedBy": f"keras v{tf_keras.__version__}",
        "convertedBy": "crossbind tests/tfjs_layers_model.py",
        "modelTopology": {"keras_version": tf_keras.__version__, "backend": "tensorflow",
                          "model_config": json.loads(model.to_json())},
        "weightsManifest": [{"paths": [shard], "weights": entries}],
    }
    with open(os.path.join(out, "model.json"), "w") as f:
        json.dump(doc, f)
    print(f"{out}: {len(entries)} weights, {sum(map(len, blobs))} bytes")


if __name__ == "__main__":
    main()
