#!/bin/bash
# Builds the TensorFlow/Rust runner: the tensorflow crate 0.21.0
# (tensorflow-sys 0.24, the TensorFlow 2.18 C API) compiled against the C
# library of the tensorflow-cpu 2.18.1 wheel in runners/tensorflow-python/.venv,
# so that the TensorFlow bindings of the study run one library build.
#
# Needs runners/tensorflow-python/install.sh done first (it is run here and
# does nothing when complete). Crates come from crates.io through cargo,
# pinned by Cargo.lock: `cargo fetch --locked`, then an offline build.
# tensorflow-sys's build script looks for pkg-config's `tensorflow` first and
# otherwise downloads a prebuilt library from storage.googleapis.com; this
# script gives it tflib/ (libtensorflow.so -> the wheel's libtensorflow_cc.so.2,
# libtensorflow_framework.so -> libtensorflow_framework.so.2) and a generated
# tflib/tensorflow.pc, and builds with every proxy pointed at a closed local
# port, so a download could not succeed even if the probe failed; the build
# is then checked to have taken the pkg-config route. The binary finds the
# libraries through its run path (build.rs). Idempotent: returns at once
# when the build of these sources against this wheel is complete (the marker
# is written last).
set -euo pipefail
cd "$(dirname "$0")"
HERE=$(pwd)
PYDIR=$(cd ../tensorflow-python && pwd)
VENV=$PYDIR/.venv
BIN=target/release/crossbind-tfrs
MARK=target/.crossbind-complete

if [ ! -f "$VENV/.crossbind-complete" ]; then
    echo "tensorflow-rust install: needs the TensorFlow/Python environment (its wheel's C library); running bash runners/tensorflow-python/install.sh first" >&2
fi
bash ../tensorflow-python/install.sh
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
TFDIR=$SITE/tensorflow
for f in libtensorflow_cc.so.2 libtensorflow_framework.so.2 include/tensorflow/c/c_api.h; do
    if [ ! -e "$TFDIR/$f" ]; then
        echo "tensorflow-rust install: $TFDIR/$f is missing: the tensorflow-cpu wheel in $VENV is incomplete; remove $VENV and run bash runners/tensorflow-python/install.sh" >&2
        exit 1
    fi
done

[ -d "$HOME/.cargo/bin" ] && PATH="$HOME/.cargo/bin:$PATH"
# Cargo.lock's crates (zerocopy 0.8, the 2021 edition and Option::is_none_or
# in the sources) need Rust 1.82.
cargo_minor=$(cargo --version 2>/dev/null | awk '{ split($2, v, "."); print (v[1] == 1 ? v[2] : 999) }')
if [ -z "$cargo_minor" ] || [ "$cargo_minor" -lt 82 ]; then
    echo "tensorflow-rust install: needs Rust's cargo 1.82 or newer on PATH or in ~/.cargo/bin (found: $(cargo --version 2>/dev/null || echo none)); install a Rust toolchain and run again" >&2
    exit 1
fi

stamp() {
    {
        cat Cargo.toml Cargo.lock build.rs src/*.rs ../pytorch-rust/src/cli.rs
        cat "$VENV/.crossbind-complete"
        echo "$TFDIR"
        cargo --version
    } | sha256sum | cut -d' ' -f1
}
if [ -x "$BIN" ] && [ -f "$MARK" ] && [ "$(cat "$MARK")" = "$(stamp)" ]; then exit 0; fi

NEED_GIB=1
avail=$(df -Pk . | awk 'NR == 2 { print int($4 / 1048576) }')
if [ "$avail" -lt "$NEED_GIB" ]; then
    echo "tensorflow-rust install: needs $NEED_GIB GiB free in $HERE (crates and the build), $avail GiB available; free some space and run again" >&2
    exit 1
fi
# pkg-config finds the library; libssl-dev is for tensorflow-sys's build
# dependencies (curl, built from source with OpenSSL, for the download route
# that is never taken but is compiled all the same).
need=()
command -v pkg-config >/dev/null || need+=(pkg-config)
dpkg-query -W -f='${Status}' libssl-dev 2>/dev/null | grep -q "install ok installed" || need+=(libssl-dev)
if [ ${#need[@]} -gt 0 ]; then
    echo "tensorflow-rust: installing ${need[*]} (Debian)"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

echo "tensorflow-rust: building the tensorflow-crate runner against $TFDIR (crates from crates.io, a few minutes once)"
rm -f "$MARK"
# tflib/: the names the crate links (-ltensorflow -ltensorflow_framework) and
# the sonames the binary then needs at run time, all links into the wheel.
rm -rf tflib
mkdir tflib
ln -s "$TFDIR/libtensorflow_cc.so.2" tflib/libtensorflow.so
ln -s "$TFDIR/libtensorflow_cc.so.2" tflib/libtensorflow_cc.so.2
ln -s "$TFDIR/libtensorflow_framework.so.2" tflib/libtensorflow_framework.so
ln -s "$TFDIR/libtensorflow_framework.so.2" tflib/libtensorflow_framework.so.2
cat >tflib/tensorflow.pc <<PC
libdir=$HERE/tflib
includedir=$TFDIR/include

Name: tensorflow
Description: TensorFlow C library (libtensorflow_cc of the tensorflow-cpu 2.18.1 wheel in $VENV)
Version: 2.18.1
Libs: -L\${libdir} -ltensorflow -ltensorflow_framework
Cflags: -I\${includedir}
PC
export PKG_CONFIG_PATH=$HERE/tflib
pkg-config --exists tensorflow || { echo "tensorflow-rust install: pkg-config does not accept $HERE/tflib/tensorflow.pc" >&2; exit 1; }

export CARGO_TARGET_DIR=$HERE/target
cargo fetch --locked --quiet
# No network for the build itself: cargo offline, and any HTTP(S) client in
# a build script (tensorflow-sys's curl) sent to a closed port.
env -u TF_RUST_BUILD_FROM_SRC -u TF_RUST_DOWNLOAD_DIR \
    http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 \
    HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9 no_proxy= NO_PROXY= \
    cargo build --release --locked --offline --quiet
# tensorflow-sys must have taken the pkg-config route, and the binary must
# load the wheel's library.
if ! grep -qs "Returning early because tensorflow was already found" target/release/build/tensorflow-sys-*/output; then
    echo "tensorflow-rust install: tensorflow-sys did not find the library through pkg-config (see target/release/build/tensorflow-sys-*/output)" >&2
    exit 1
fi
want=$(readlink -f "$TFDIR/libtensorflow_cc.so.2")
got=$(ldd "$BIN" | awk '$1 == "libtensorflow_cc.so.2" { print $3 }')
if [ -z "$got" ] || [ "$(readlink -f "$got")" != "$want" ]; then
    echo "tensorflow-rust install: $BIN resolves libtensorflow_cc.so.2 to '${got:-nothing}', not the wheel's $want" >&2
    exit 1
fi
TF_CPP_MIN_LOG_LEVEL=2 "$BIN" version >/dev/null
stamp > "$MARK"
