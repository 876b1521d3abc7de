#!/bin/bash
# Makes the PyTorch 2.7.1 environment that every PyTorch 2.x binding of the
# study shares: a virtual environment of Debian's Python with PyPI's torch
# wheel, every package pinned with its hash (requirements.lock). The C++,
# Rust and Java runners build and run against the libtorch inside it
# (.venv/lib/python3*/site-packages/torch/lib), so that a difference between
# them is the binding's and not the library's.
#
# PyPI's Linux torch wheel is the CUDA build: it pulls the nvidia-* wheels
# (about 3 GB to download, about 7 GB installed) and runs on the CPU. pip
# keeps the downloads in its cache, so a second install on the same machine
# downloads nothing. Idempotent: returns at once when the environment is
# complete (the marker file is written last, so an interrupted install is
# redone, not trusted). An environment completed for an earlier lock file
# (the marker holds the lock it was made from) is brought up to this one in
# place: pip keeps every package already at its pinned version and installs
# the ones added or changed (onnx2torch, for one), so neither torch nor the
# libtorch the other bindings link against is downloaded or replaced again.
set -euo pipefail
cd "$(dirname "$0")"
VENV=.venv
MARK=$VENV/.crossbind-complete
PIP=("$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --require-hashes -r requirements.lock)
check() {
    "$VENV/bin/python" -c 'import torch, numpy, torchvision, onnx, onnx2torch, onnxscript; assert torch.__version__.startswith("2.7.1"), torch.__version__'
}
if [ -f "$MARK" ] && cmp -s requirements.lock "$MARK"; then exit 0; fi
if [ -f "$MARK" ] && [ -x "$VENV/bin/python" ]; then
    echo "pytorch-python: bringing $(pwd)/$VENV up to requirements.lock"
    rm -f "$MARK"
    "${PIP[@]}"
    check
    cp requirements.lock "$MARK"
    exit 0
fi
NEED_GIB=10
avail=$(df -Pk . | awk 'NR == 2 { print int($4 / 1048576) }')
if [ "$avail" -lt "$NEED_GIB" ]; then
    echo "pytorch-python install: needs $NEED_GIB GiB free in $(pwd), $avail GiB available; free some space and run again" >&2
    exit 1
fi
if ! /usr/bin/python3 -c 'import ensurepip' 2>/dev/null; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
fi
echo "pytorch-python: installing torch 2.7.1 from PyPI into $(pwd)/$VENV (about 3 GB to download once)"
rm -rf "$VENV"
/usr/bin/python3 -m venv "$VENV"
"${PIP[@]}"
check
cp requirements.lock "$MARK"
