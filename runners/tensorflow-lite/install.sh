#!/bin/bash
# Makes the environment of the TensorFlow Lite binding: a virtual
# environment of Debian's Python 3.11 with PyPI's ai-edge-litert 2.3.0
# (LiteRT, TensorFlow Lite's interpreter) and numpy 2.0.2, every package
# pinned with its hash (requirements.lock). It needs no TensorFlow: the
# .tflite models come from the TensorFlow/Python binding (its training
# writes final.tflite; `crossbind_tf.py export MODEL --format tflite` writes
# one from given weights).
#
# About 41 MB to download (ai-edge-litert 22 MB, numpy 20 MB), about 150 MB
# installed. Idempotent: returns at once when the environment is complete
# (the marker file is written last, so an interrupted install is redone).
set -euo pipefail
cd "$(dirname "$0")"
VENV=.venv
MARK=$VENV/.crossbind-complete
if [ -f "$MARK" ] && cmp -s requirements.lock "$MARK"; then exit 0; fi
NEED_MIB=500
avail=$(df -Pk . | awk 'NR == 2 { print int($4 / 1024) }')
if [ "$avail" -lt "$NEED_MIB" ]; then
    echo "tensorflow-lite install: needs $NEED_MIB MiB free in $(pwd) (about 150 MB installed plus the download), $avail MiB available; free some space and run again" >&2
    exit 1
fi
if ! /usr/bin/python3 -c 'import ensurepip' 2>/dev/null; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
fi
echo "tensorflow-lite: installing ai-edge-litert 2.3.0 from PyPI into $(pwd)/$VENV (about 41 MB to download once)"
rm -rf "$VENV"
/usr/bin/python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --require-hashes -r requirements.lock
"$VENV/bin/python" -c '
from ai_edge_litert.interpreter import Interpreter
import ai_edge_litert, numpy
assert ai_edge_litert.__version__ == "2.3.0", ai_edge_litert.__version__
assert numpy.__version__ == "2.0.2", numpy.__version__'
cp requirements.lock "$MARK"
