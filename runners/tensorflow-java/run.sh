#!/bin/bash
# Starts the TensorFlow/Java runner: TF-Java 1.1.0 on the TensorFlow 2.18.0 library that its
# native jar (tensorflow-core-native 1.1.0, linux-x86_64) bundles. JavaCPP extracts that library
# into target/javacpp-cache once (install.sh does it); nothing is downloaded.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
jar="$here/target/crossbind-tfjava.jar"
if [ ! -f "$jar" ] || { [ ! -f "$here/target/.crossbind-complete" ] && [ -z "${CROSSBIND_INSTALLING:-}" ]; }; then
    echo "crossbind-tfjava: error: the TensorFlow/Java runner is not installed; run: bash runners/tensorflow-java/install.sh" >&2
    exit 1
fi
# As the Python runner: TensorFlow's informational log off, deterministic kernels.
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}" TF_DETERMINISTIC_OPS="${TF_DETERMINISTIC_OPS:-1}"
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
exec java -Dorg.bytedeco.javacpp.cachedir="$here/target/javacpp-cache" -XX:+UseSerialGC -Xss8m \
    ${CROSSBIND_JAVA_OPTS:-} -jar "$jar" "$@"
