#!/bin/bash
# Makes the environment of the TensorFlow/JavaScript binding:
# @tensorflow/tfjs-node 4.22.0 and its dependencies from npm (package-lock.json,
# `npm ci --ignore-scripts`: the package's own install script would download
# a TensorFlow 2.9.1 library and a prebuilt addon from storage.googleapis.com),
# then its native addon (tfjs_binding.node) built from source with node-gyp
# against the TensorFlow C library and headers of the tensorflow-cpu 2.18.1
# wheel that runners/tensorflow-python/install.sh installs (run first, here):
#   deps/include -> the wheel's tensorflow/include
#   deps/lib/libtensorflow.so, libtensorflow_cc.so.2 -> the wheel's libtensorflow_cc.so.2
#   deps/lib/libtensorflow_framework.so{,.2} -> the wheel's libtensorflow_framework.so.2
# (relative links; the addon finds them through its rpath). Node's headers
# come from the nodejs package (/usr/include/node).
#
# About 60 MB to download from npm, 300 MB installed, under a minute to build.
# Idempotent: returns at once when the marker (written last) matches the lock
# file, Node's version and the TensorFlow library; an interrupted install is
# redone, not trusted.
set -euo pipefail
cd "$(dirname "$0")"
if ! bash ../tensorflow-python/install.sh; then
    echo "tensorflow-js install: the TensorFlow C library comes from runners/tensorflow-python's tensorflow-cpu wheel, whose install failed (above); fix that first" >&2
    exit 1
fi
TFDIR=$(ls -d ../tensorflow-python/.venv/lib/python3*/site-packages/tensorflow 2>/dev/null | head -1)
if [ -z "$TFDIR" ] || [ ! -f "$TFDIR/libtensorflow_cc.so.2" ] || [ ! -f "$TFDIR/libtensorflow_framework.so.2" ] ||
   [ ! -f "$TFDIR/include/tensorflow/c/c_api.h" ]; then
    echo "tensorflow-js install: runners/tensorflow-python/.venv has no tensorflow/libtensorflow_cc.so.2, libtensorflow_framework.so.2 and include/ (run: bash runners/tensorflow-python/install.sh)" >&2
    exit 1
fi
for tool in node npm g++ make; do
    if ! command -v $tool >/dev/null; then
        echo "tensorflow-js install: $tool is missing (Node.js 18 or newer with npm, g++ and make are needed)" >&2
        exit 1
    fi
done
NODEDIR=/usr
if [ ! -f $NODEDIR/include/node/node_api.h ] || [ ! -f $NODEDIR/include/node/common.gypi ]; then
    echo "tensorflow-js install: Node.js' headers are missing from $NODEDIR/include/node (they come with the nodejs package; Debian's own Node needs libnode-dev)" >&2
    exit 1
fi
NODE_GYP="$(npm prefix -g)/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js"
if [ ! -f "$NODE_GYP" ]; then
    echo "tensorflow-js install: npm's node-gyp is missing ($NODE_GYP)" >&2
    exit 1
fi
PKG=node_modules/@tensorflow/tfjs-node
MARK=node_modules/.crossbind-complete
want=$({ cat package-lock.json; node --version; "$TFDIR/../../../../bin/python" -c 'import importlib.metadata as m; print(m.version("tensorflow-cpu"))'; } | sha256sum | cut -d' ' -f1)
if [ -f "$MARK" ] && [ "$(cat "$MARK")" = "$want" ] && [ -f $PKG/lib/napi-v8/tfjs_binding.node ]; then exit 0; fi
NEED_MIB=1024
avail=$(df -Pk . | awk 'NR == 2 { print int($4 / 1024) }')
if [ "$avail" -lt "$NEED_MIB" ]; then
    echo "tensorflow-js install: needs $NEED_MIB MiB free in $(pwd) (about 300 MB installed), $avail MiB available; free some space and run again" >&2
    exit 1
fi
echo "tensorflow-js: installing @tensorflow/tfjs-node 4.22.0 from npm into $(pwd)/node_modules and building its addon against $TFDIR"
rm -f "$MARK"
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
mkdir -p $PKG/deps/lib
rm -rf $PKG/deps/include
ln -s "$(realpath --relative-to=$PKG/deps "$TFDIR/include")" $PKG/deps/include
rel=$(realpath --relative-to=$PKG/deps/lib "$TFDIR")
for name in libtensorflow.so libtensorflow_cc.so.2; do ln -sfn "$rel/libtensorflow_cc.so.2" "$PKG/deps/lib/$name"; done
for name in libtensorflow_framework.so libtensorflow_framework.so.2; do ln -sfn "$rel/libtensorflow_framework.so.2" "$PKG/deps/lib/$name"; done
if ! (cd $PKG && JOBS=2 npm_config_nodedir=$NODEDIR npm_config_node_gyp="$NODE_GYP" \
    nice -n 10 ../../.bin/node-pre-gyp install --build-from-source) >node_modules/.addon-build.log 2>&1; then
    tail -20 node_modules/.addon-build.log >&2
    echo "tensorflow-js install: building the tfjs-node addon failed (log: $(pwd)/node_modules/.addon-build.log)" >&2
    exit 1
fi
# The addon must take TensorFlow from the wheel and run ops on it.
if ldd $PKG/lib/napi-v8/tfjs_binding.node | grep -q 'libtensorflow.*not found'; then
    echo "tensorflow-js install: the addon does not find the wheel's TensorFlow libraries:" >&2
    ldd $PKG/lib/napi-v8/tfjs_binding.node | grep tensorflow >&2
    exit 1
fi
TF_CPP_MIN_LOG_LEVEL=2 node -e '
const tf = require("@tensorflow/tfjs-node");
const v = tf.backend().binding.TF_Version;
if (tf.getBackend() !== "tensorflow" || v !== "2.18.1") { console.error("backend " + tf.getBackend() + ", TensorFlow " + v); process.exit(1); }
if (tf.tensor([1, 2]).mul(3).dataSync()[1] !== 6) process.exit(1);'
echo "$want" > "$MARK"
