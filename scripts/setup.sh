#!/bin/bash
# Installs what crossbind needs from Debian's packages, only when missing.
# Build: a C compiler, make, OpenBLAS (CBLAS), zlib, OpenMP (with gcc).
# Reference binding and data: python3-torch, numpy, dataset-fashion-mnist.
set -euo pipefail
need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in gcc make libc6-dev libopenblas-dev zlib1g-dev python3-numpy python3-torch dataset-fashion-mnist gzip; do
    have_pkg "$p" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "setup: installing ${need[*]}"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
