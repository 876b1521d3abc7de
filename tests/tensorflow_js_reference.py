#!/usr/bin/env python3
"""TensorFlow/Python's side of tests/runner_tensorflow-js_test.sh, in one
process (importing TensorFlow takes seconds):

  tensorflow_js_reference.py OUT_DIR MODEL:DATA_DIR[:tfjs] ...

For each model: random canonical weights OUT_DIR/w-MODEL.safetensors
(cb_tf_checks' random-init values; VGG-16's running variances made
positive), the outputs of TF/Python's Keras model from them on the first 16
test samples (OUT_DIR/py-MODEL.npy: logits before the softmax layer, the
sigmoid probability for the IMDb models), and with ":tfjs" the same Keras
model (runners/tensorflow/crossbind_tf.py build(), softmax layer included)
written in TF.js' layers-model format by TF/Python's own exporter
(runners/tensorflow/cb_tf_export.py, what a study's final.tfjs is), the
directory tf.loadLayersModel reads (OUT_DIR/MODEL.tfjs/).

Run with runners/tensorflow-python/.venv/bin/python (tensorflow-cpu 2.18.1,
tf-keras 2.18.0).
"""
import argparse
import os
import sys

os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "runners", "tensorflow"))
sys.path.insert(0, os.path.join(HERE, "..", "runners", "pytorch"))
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import cb_safetensors  # noqa: E402
import cb_tf_export  # noqa: E402
import cb_tf_checks  # noqa: E402
import crossbind_tf  # noqa: E402

crossbind_tf.tf = tf


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    out = sys.argv[1]
    tf.config.threading.set_intra_op_parallelism_threads(2)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    for job in sys.argv[2:]:
        name, data, *fmt = job.split(":")
        weights = os.path.join(out, f"w-{name}.safetensors")
        cb_tf_checks.random_init(name, weights)
        t, meta = cb_safetensors.read(weights)
        for k in t:
            if k.endswith("running_var"):
                t[k] = (np.abs(t[k]) + 0.5).astype(np.float32)
        cb_safetensors.write(weights, t, meta)
        model = crossbind_tf.build(name)
        crossbind_tf.set_canonical(model, name, crossbind_tf.read_canonical(weights))
        x, _ = crossbind_tf.load_data(argparse.Namespace(model=name, data=data, limit_test=16, limit_train=0), False)
        y = crossbind_tf.logits_model(model, name)(x, training=False).numpy().astype(np.float32)
        np.save(os.path.join(out, f"py-{name}.npy"), y)
        if "tfjs" in fmt:
            # TF/Python's own exporter (what a study's final.tfjs is).
            cb_tf_export.write_tfjs(tf, None, model, name, os.path.join(out, f"{name}.tfjs"))


if __name__ == "__main__":
    main()
