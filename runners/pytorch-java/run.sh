#!/bin/bash
# Starts the PyTorch/Java runner: DJL's PyTorch engine on the libtorch 2.7.1 of the
# shared PyTorch environment (runners/pytorch-python/.venv), offline. DJL extracts its JNI
# bridge from the pytorch-jni jar into target/djl-cache once; it downloads nothing (offline
# mode also stops its EC2 metadata call).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
jar="$here/target/crossbind-djl.jar"
torch_lib="$(cd "$here/../pytorch-python/.venv/lib" 2>/dev/null && echo "$PWD"/python3*/site-packages/torch/lib)"
if [ ! -f "$jar" ] || [ ! -f "$torch_lib/libtorch.so" ]; then
    echo "crossbind-djl: error: the PyTorch/Java runner is not installed; run: bash runners/pytorch-java/install.sh" >&2
    exit 1
fi
export PYTORCH_LIBRARY_PATH="$torch_lib" PYTORCH_VERSION=2.7.1 PYTORCH_FLAVOR=cpu
export DJL_OFFLINE=true OPT_OUT_TRACKING=true DJL_CACHE_DIR="$here/target/djl-cache"
# The study's fair setting for convolution models, as the Python runner: libtorch's own
# threads only, BLAS single-threaded (the wheel's MKL ignores it; kept for the same environment).
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
exec java -Dai.djl.offline=true -XX:+UseSerialGC -Xss4m ${CROSSBIND_JAVA_OPTS:-} -jar "$jar" "$@"
