#!/bin/bash
# Makes the TensorFlow/Java binding's environment: TF-Java 1.1.0 (TensorFlow 2.18.0) from Maven
# Central, every version exact in pom.xml: tensorflow-core-api, its native jar
# tensorflow-core-native 1.1.0 (classifier linux-x86_64, which bundles libtensorflow_cc.so.2 and
# libtensorflow_framework.so.2 of TensorFlow 2.18.0) and tensorflow-framework (optimizers,
# initializers). They are resolved once into .m2/ beside this file (the project's own local
# repository, about 220 MB) and the runner is built offline from there into
# target/crossbind-tfjava.jar with its dependencies in target/lib/; it compiles src/ and
# runners/java-common/src (the data readers, options and JSON shared with PyTorch/Java, a second
# source root in pom.xml). The runner is then started
# once: JavaCPP extracts the native library into target/javacpp-cache (about 650 MB); nothing
# is downloaded at run time.
#
# The native jar brings its own TensorFlow 2.18.0 build; this binding does not share the
# tensorflow-cpu 2.18.1 wheel of runners/tensorflow-python (TF-Java loads only the library of
# its native jar). Its test compares against that binding, so the test needs it installed;
# this install does not.
#
# Idempotent: returns at once when the build of these sources is complete (the marker, written
# last, holds a digest of pom.xml, run.sh and the sources, java-common's included).
set -euo pipefail
cd "$(dirname "$0")"
MARK=target/.crossbind-complete
# ../java-common/src too: it is compiled into this runner, so a change there rebuilds it
digest() { cat pom.xml run.sh $(find src ../java-common/src -type f | LC_ALL=C sort) | sha256sum | cut -d' ' -f1; }
if [ -f "$MARK" ] && [ "$(cat "$MARK")" = "$(digest)" ]; then exit 0; fi
NEED_MIB=1500
avail=$(df -Pk . | awk 'NR == 2 { print int($4 / 1024) }')
if [ "$avail" -lt "$NEED_MIB" ]; then
    echo "tensorflow-java install: needs $NEED_MIB MiB free in $(pwd) (Maven cache about 220 MB, the extracted native library about 650 MB), $avail MiB available; free some space and run again" >&2
    exit 1
fi
if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -qq --no-install-recommends openjdk-17-jdk-headless maven >/dev/null
fi
echo "tensorflow-java: building the TF-Java 1.1.0 runner in $(pwd) (Maven dependencies into .m2/, about 220 MB once)"
rm -f "$MARK"
MVN=(mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$PWD/.m2")
mkdir -p target
if ! "${MVN[@]}" dependency:go-offline >target/build.log 2>&1 ||
   ! nice -n 10 "${MVN[@]}" -o package >>target/build.log 2>&1; then
    echo "tensorflow-java install: the Maven build failed:" >&2
    grep -a "ERROR" target/build.log | head -20 >&2
    exit 1
fi
# The first start extracts the native library (run.sh refuses to start without the marker).
if ! version=$(CROSSBIND_INSTALLING=1 ./run.sh version 2>target/version.log) ||
   ! grep -q '^tensorflow 2\.18\.0$' <<<"$version"; then
    echo "tensorflow-java install: the runner does not start on TensorFlow 2.18.0:" >&2
    tail -3 target/version.log >&2
    exit 1
fi
digest > "$MARK"
