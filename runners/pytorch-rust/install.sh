#!/bin/bash
# Builds the PyTorch/Rust runner: tch 0.20.0 (libtorch 2.7) compiled against
# the shared libtorch 2.7.1 of runners/pytorch-python/.venv, so that every
# PyTorch 2.x binding of the study runs the same library.
#
# Crates come from crates.io through cargo, pinned by Cargo.lock (--locked);
# torch-sys finds libtorch with LIBTORCH_USE_PYTORCH=1 (it asks the
# environment's python for torch's include and lib directories), and the
# download-libtorch feature is off, so nothing else is fetched, at build or
# at run time. torch-sys 0.20.0 expects libtorch 2.7.0 and refuses other
# versions unless told otherwise: the wheel is 2.7.1, a patch release of the
# same ABI, hence LIBTORCH_BYPASS_VERSION_CHECK. The binary finds libtorch
# through its run path (build.rs). Idempotent: returns at once when the
# build of these sources against this libtorch is complete (the marker is
# written last).
set -euo pipefail
cd "$(dirname "$0")"
HERE=$(pwd)
VENV=$(cd ../pytorch-python && pwd)/.venv
BIN=target/release/crossbind-tch
MARK=target/.crossbind-complete

bash ../pytorch-python/install.sh

[ -d "$HOME/.cargo/bin" ] && PATH="$HOME/.cargo/bin:$PATH"
# Cargo.lock's newest crates (time 0.3.55 under zip) need Rust 1.88.
cargo_minor=$(cargo --version 2>/dev/null | awk '{ split($2, v, "."); print (v[1] == 1 ? v[2] : 999) }')
if [ -z "$cargo_minor" ] || [ "$cargo_minor" -lt 88 ]; then
    echo "pytorch-rust install: needs Rust's cargo 1.88 or newer on PATH or in ~/.cargo/bin (found: $(cargo --version 2>/dev/null || echo none)); install a Rust toolchain and run again" >&2
    exit 1
fi

stamp() {
    {
        cat Cargo.toml Cargo.lock build.rs src/*.rs
        cat "$VENV/.crossbind-complete"
        cargo --version
    } | sha256sum | cut -d' ' -f1
}
if [ -x "$BIN" ] && [ -f "$MARK" ] && [ "$(cat "$MARK")" = "$(stamp)" ]; then exit 0; fi

NEED_GIB=2
avail=$(df -Pk . | awk 'NR == 2 { print int($4 / 1048576) }')
if [ "$avail" -lt "$NEED_GIB" ]; then
    echo "pytorch-rust install: needs $NEED_GIB GiB free in $HERE (crates and the build), $avail GiB available; free some space and run again" >&2
    exit 1
fi

echo "pytorch-rust: building the tch runner against $VENV's libtorch (crates from crates.io, a few minutes once)"
rm -f "$MARK"
env -u LIBTORCH -u LIBTORCH_INCLUDE -u LIBTORCH_LIB -u LIBTORCH_STATIC \
    VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" \
    LIBTORCH_USE_PYTORCH=1 LIBTORCH_BYPASS_VERSION_CHECK=1 CARGO_TARGET_DIR="$HERE/target" \
    cargo build --release --locked --quiet
"$BIN" version >/dev/null
stamp > "$MARK"
