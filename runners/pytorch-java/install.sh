#!/bin/bash
# Makes the PyTorch/Java binding's environment: the shared libtorch 2.7.1
# (runners/pytorch-python/install.sh), then DJL 0.36.0 and its PyTorch engine from
# Maven Central, every version exact in pom.xml, resolved once into .m2/ beside this
# file (the project's own local repository) and built offline from there into
# target/crossbind-djl.jar with its dependencies in target/lib/; it compiles src/ and
# runners/java-common/src (the data readers, options and JSON shared with TensorFlow/Java, a
# second source root in pom.xml). The engine is then
# started once: DJL extracts its JNI bridge from the pytorch-jni jar into
# target/djl-cache (offline mode: it downloads nothing, now or at run time).
# Idempotent: returns at once when the build of these sources is complete (the
# marker, written last, holds a digest of pom.xml and the sources, java-common's included).
set -euo pipefail
cd "$(dirname "$0")"
MARK=target/.crossbind-complete
# ../java-common/src too: it is compiled into this runner, so a change there rebuilds it
digest() { cat pom.xml run.sh $(find src ../java-common/src -type f | LC_ALL=C sort) | sha256sum | cut -d' ' -f1; }
NEED_MIB=600
avail=$(df -Pk . | awk 'NR == 2 { print int($4 / 1024) }')
if [ "$avail" -lt "$NEED_MIB" ]; then
    echo "pytorch-java install: needs $NEED_MIB MiB free in $(pwd), $avail MiB available; free some space and run again" >&2
    exit 1
fi
bash ../pytorch-python/install.sh
if [ -f "$MARK" ] && [ "$(cat "$MARK")" = "$(digest)" ]; then exit 0; fi
if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -qq --no-install-recommends openjdk-17-jdk-headless maven >/dev/null
fi
echo "pytorch-java: building the DJL 0.36.0 runner in $(pwd) (Maven dependencies into .m2/, about 65 MB once)"
rm -f "$MARK"
MVN=(mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$PWD/.m2")
mkdir -p target
if ! "${MVN[@]}" dependency:go-offline >target/build.log 2>&1 ||
   ! nice -n 10 "${MVN[@]}" -o package >>target/build.log 2>&1; then
    echo "pytorch-java install: the Maven build failed:" >&2
    grep -a "ERROR" target/build.log | head -20 >&2
    exit 1
fi
./run.sh version >/dev/null
digest > "$MARK"
