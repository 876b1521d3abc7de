#!/bin/bash
# Makes the TensorFlow 2.18 environment of the TensorFlow/Python binding: a
# virtual environment of Debian's Python with PyPI's tensorflow-cpu 2.18.1
# and tf-keras 2.18.0 (Keras 2 semantics through TF_USE_LEGACY_KERAS=1),
# numpy and h5py, tf2onnx 1.17.0 and onnx 1.21.0 (the ONNX export), onnx2tf
# 1.29.24 (ONNX -> TensorFlow, for crossbind delta) with what it imports, every
# package pinned with its hash (requirements.lock).
# 2.18 is the TensorFlow version TF-Java 1.1.0 and the Rust crate target, so
# the other TensorFlow bindings can share this wheel's library.
#
# About 370 MB to download (tensorflow-cpu alone is 230 MB, onnx 18 MB) and about 1.6 GB
# installed. pip keeps the downloads in its cache, so a second install on the
# same machine downloads nothing. Idempotent: returns at once when the
# environment is complete (the marker file is written last, so an
# interrupted install is redone, not trusted).
set -euo pipefail
cd "$(dirname "$0")"
VENV=.venv
MARK=$VENV/.crossbind-complete
if [ -f "$MARK" ] && cmp -s requirements.lock "$MARK"; then exit 0; fi
NEED_GIB=3
avail=$(df -Pk . | awk 'NR == 2 { print int($4 / 1048576) }')
if [ "$avail" -lt "$NEED_GIB" ]; then
    echo "tensorflow-python install: needs $NEED_GIB GiB free in $(pwd) (about 1.6 GB installed plus the download), $avail GiB available; free some space and run again" >&2
    exit 1
fi
if ! /usr/bin/python3 -c 'import ensurepip' 2>/dev/null; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
fi
echo "tensorflow-python: installing tensorflow-cpu 2.18.1, tf-keras 2.18.0, tf2onnx 1.17.0 and onnx2tf 1.29.24 from PyPI into $(pwd)/$VENV (about 370 MB to download once)"
rm -rf "$VENV"
/usr/bin/python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --require-hashes -r requirements.lock
TF_USE_LEGACY_KERAS=1 TF_CPP_MIN_LOG_LEVEL=2 "$VENV/bin/python" -c '
import tensorflow as tf, tf_keras, numpy, h5py, onnx, tf2onnx, onnx2tf
assert tf2onnx.__version__ == "1.17.0" and onnx.__version__ == "1.21.0", (tf2onnx.__version__, onnx.__version__)
assert onnx2tf.__version__ == "1.29.24", onnx2tf.__version__
assert tf.__version__ == "2.18.1", tf.__version__
assert tf_keras.__version__ == "2.18.0", tf_keras.__version__
assert tf.keras.__name__.startswith("tf_keras"), tf.keras.__name__'
cp requirements.lock "$MARK"
