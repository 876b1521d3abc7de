#!/bin/bash
# Makes the environment of the TVM runner: a virtual environment of
# Debian's Python 3.11 with PyPI's apache-tvm 0.27.0.post1 (Apache TVM: the
# Relax ONNX frontend, the compiler with its bundled LLVM, the Relax VM),
# apache-tvm-ffi, onnx 1.23.2 and numpy, every package pinned with its hash
# (requirements.lock). Wheels only: nothing is built here.
#
# About 130 MB to download (apache-tvm 101 MB), about 600 MB installed; the
# script refuses with less than 3 GiB free where the environment goes.
# Idempotent: returns at once when the environment is complete (the marker
# file is written last, so an interrupted install is redone).
set -euo pipefail
cd "$(dirname "$0")"
VENV=.venv
MARK=$VENV/.crossbind-complete
if [ -f "$MARK" ] && cmp -s requirements.lock "$MARK"; then exit 0; fi
NEED_MIB=3072
avail=$(df -Pk . | awk 'NR == 2 { print int($4 / 1024) }')
if [ "$avail" -lt "$NEED_MIB" ]; then
    echo "tvm install: needs $NEED_MIB MiB free in $(pwd) (about 600 MB installed plus the 130 MB download and pip's unpacking), $avail MiB available; free some space and run again" >&2
    exit 1
fi
if ! /usr/bin/python3 -c 'import ensurepip' 2>/dev/null; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
fi
echo "tvm: installing apache-tvm 0.27.0.post1 and onnx 1.23.2 from PyPI into $(pwd)/$VENV (about 130 MB to download once)"
rm -rf "$VENV"
/usr/bin/python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --only-binary=:all: --require-hashes \
    -r requirements.lock
"$VENV/bin/python" -c '
import tvm, onnx, numpy
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx
assert tvm.__version__ == "0.27.0.post1", tvm.__version__
assert onnx.__version__ == "1.23.2", onnx.__version__
assert numpy.__version__ == "2.4.6", numpy.__version__
assert tvm.target.Target("llvm").kind.name == "llvm"'
cp requirements.lock "$MARK"
