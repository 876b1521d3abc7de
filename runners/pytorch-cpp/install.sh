#!/bin/bash
# Builds the PyTorch/C++ runner (build/crossbind-torch-cpp) against the
# libtorch that every PyTorch 2.x binding of the study shares: PyPI's torch
# 2.7.1 wheel in runners/pytorch-python/.venv, installed first by that
# runner's install.sh. Plain g++ flags (see the Makefile): the wheel is a
# CUDA build, and its CMake files want a CUDA toolkit. g++, make and zlib's
# headers come from apt when missing.
#
# Idempotent: returns at once when the marker (written last) matches the
# sources and the libtorch; an interrupted build is redone, not trusted.
set -euo pipefail
cd "$(dirname "$0")"
bash ../pytorch-python/install.sh
PY=../pytorch-python/.venv/bin/python
MARK=build/.crossbind-complete
stamp() {
    { "$PY" -c 'import torch; print(torch.__version__, int(torch._C._GLIBCXX_USE_CXX11_ABI))'
      cat Makefile src/*; } | sha256sum | cut -d' ' -f1
}
want=$(stamp)
if [ -f "$MARK" ] && [ -x build/crossbind-torch-cpp ] && [ "$(cat "$MARK")" = "$want" ]; then exit 0; fi
NEED_MIB=1024
avail=$(df -Pk . | awk 'NR == 2 { print int($4 / 1024) }')
if [ "$avail" -lt "$NEED_MIB" ]; then
    echo "pytorch-cpp install: needs $NEED_MIB MiB free in $(pwd) to build, $avail MiB available; free some space and run again" >&2
    exit 1
fi
if ! command -v g++ >/dev/null || ! command -v make >/dev/null || [ ! -f /usr/include/zlib.h ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    echo "pytorch-cpp: installing g++, make and zlib1g-dev from apt"
    $SUDO apt-get install -y -qq --no-install-recommends g++ make zlib1g-dev >/dev/null ||
        { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends g++ make zlib1g-dev >/dev/null; }
fi
abi=$("$PY" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
echo "pytorch-cpp: building build/crossbind-torch-cpp against $("$PY" -c 'import torch; print("libtorch", torch.__version__)') (C++11 ABI $abi; a few minutes)"
rm -f "$MARK"
nice -n 10 make -s -j2 CXX11_ABI="$abi"
build/crossbind-torch-cpp --version >/dev/null
echo "$want" > "$MARK"
