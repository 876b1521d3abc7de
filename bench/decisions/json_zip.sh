#!/bin/bash
# Measures crossbind's JSON reader (src/core/json.c) and zip reader
# (src/formats/zip.c) against Debian 12's libraries: json-c, jansson, cJSON;
# libzip, minizip. The evidence behind docs/decisions/json-and-zip.md.
# Nothing here is part of crossbind's build.
#
# Usage: bench/decisions/json_zip.sh STEP...   (steps run in the order given)
#   deps     apt-get install the five -dev packages (needs root)
#   inputs   write the inputs (gen_inputs.py) into $WORK/data
#   bench    throughput: crossbind's readers and the installed libraries,
#            median of repeats, on those inputs
#   hostile  crossbind's hostile-input cases through every reader
#   sources  fetch the libraries' Debian 12 sources (apt-get source, with a
#            private deb-src list under $WORK; needs dpkg-dev)
#   fuzzbuild  build the libraries from those sources with libFuzzer,
#            AddressSanitizer and UBSan, and the targets of fuzz_lib_*.c
#   fuzz     run every target for $FUZZ_SECONDS (default 180) from
#            crossbind's corpora, one at a time at nice 19 (FUZZ_TARGETS=
#            "json-c libzip" runs only those)
#   all      all of the above
# WORK defaults to /tmp/crossbind-decisions; REPEATS (default 7) and
# SMALL_REPEATS (default 2000) set the repeats of the timing runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
WORK=${WORK:-/tmp/crossbind-decisions}
FUZZ_SECONDS=${FUZZ_SECONDS:-180}
mkdir -p "$WORK"
cpu=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -1)
CB_JSON_SRC="$root/src/core/json.c $root/src/core/names.c $root/src/core/status.c"
CB_ZIP_SRC="$root/src/formats/zip.c $root/src/core/status.c"

step_deps() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        libjson-c-dev libjansson-dev libcjson-dev libzip-dev libminizip-dev clang libclang-rt-dev cmake dpkg-dev
}

step_inputs() { /usr/bin/python3 "$here/gen_inputs.py" "$WORK/data" all; }

# One binary per library and reader (json-c and jansson share symbol names).
JSON_LIBS="CROSSBIND:-lpthread JSONC:-ljson-c JANSSON:-ljansson CJSON:-lcjson"
ZIP_LIBS="CROSSBIND:-lz LIBZIP:-lzip MINIZIP:-lminizip"
build_readers() { # KIND(json|zip) MAIN OUTPREFIX OPTFLAGS...
    local kind=$1 main=$2 out=$3; shift 3
    local libs=$JSON_LIBS src="$CB_JSON_SRC"
    [ "$kind" = zip ] && libs=$ZIP_LIBS src="$CB_ZIP_SRC"
    for l in $libs; do
        gcc -std=c11 -D_GNU_SOURCE -Wall "$@" -I"$root/include" -DLIB_${l%%:*} -o "${out}_${l%%:*}" \
            "$here/$main" "$here/${kind}_readers.c" $src ${l#*:} -lz
    done
}

step_bench() {
    local b=$WORK/bench
    mkdir -p "$b"
    # crossbind as its Makefile builds it (-O3 -march=native) and at the
    # Debian packages' flags (-O2, generic x86-64); the libraries are the
    # installed, Debian-built ones.
    build_readers json bench_json.c "$b/bench_json_O3" -O3 -march=native
    build_readers zip bench_zip.c "$b/bench_zip_O3" -O3 -march=native
    build_readers json bench_json.c "$b/bench_json_O2" -O2
    build_readers zip bench_zip.c "$b/bench_zip_O2" -O2
    echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), $cpu, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "# $(dpkg-query -W -f='${Package} ${Version}; ' libjson-c5 libjansson4 libcjson1 libzip4 libminizip1)"
    local r=${REPEATS:-7} sr=${SMALL_REPEATS:-2000} d=$WORK/data
    for tag in O3 O2; do
        local flags=-O2; [ $tag = O3 ] && flags="-O3 -march=native"
        echo; echo "crossbind built with $flags, libraries as Debian built them:"; echo
        { for l in $JSON_LIBS; do "$b/bench_json_${tag}_${l%%:*}" "$r" "$sr" "$d/run.json" "$d/export.json" "$d/synthetic.json"; done
          for l in $ZIP_LIBS; do "$b/bench_zip_${tag}_${l%%:*}" "$r" "$sr" "$d/lenet.pt" "$d/vgg16.pt" "$d/vgg16-deflated.pt"; done
        } | sort -s -t$'\t' -k1,1 | /usr/bin/python3 "$here/report.py" bench
    done
}

step_hostile() {
    local b=$WORK/bench
    mkdir -p "$b"
    /usr/bin/python3 "$here/gen_hostile_zips.py" "$WORK/hostile" >/dev/null
    build_readers json hostile_json.c "$b/hostile_json" -O2 -g
    build_readers zip hostile_zip.c "$b/hostile_zip" -O2 -g
    for l in $JSON_LIBS; do "$b/hostile_json_${l%%:*}" "$root/fuzz/corpus/json"; done | /usr/bin/python3 "$here/report.py" hostile
    echo
    for l in $ZIP_LIBS; do "$b/hostile_zip_${l%%:*}" "$WORK"/hostile/*.zip "$root"/fuzz/corpus/torch/*.pt; done |
        /usr/bin/python3 "$here/report.py" hostile
}

step_sources() {
    local s=$WORK/src
    mkdir -p "$s/lists/partial"
    printf 'deb-src http://deb.debian.org/debian bookworm main\n' >"$s/sources.list"
    local o=(-o Dir::Etc::SourceList="$s/sources.list" -o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists="$s/lists")
    apt-get "${o[@]}" update -qq
    # The versions Debian 12 installs (zlib's minizip: its 1.2.13 source;
    # the +deb12u1 update changes only minizip's writer, zip.c).
    (cd "$s" && apt-get "${o[@]}" source --download-only cjson jansson json-c libzip zlib=1:1.2.13.dfsg-1 &&
        for d in *.dsc; do dpkg-source -x --no-check "$d" >/dev/null; done)
}

step_fuzzbuild() {
    local s=$WORK/src f=$WORK/fuzz
    local flags="-O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
    mkdir -p "$f/lib"
    local cm=(-DCMAKE_C_COMPILER=clang -DCMAKE_C_FLAGS="$flags" -DBUILD_SHARED_LIBS=OFF -DCMAKE_BUILD_TYPE=None)
    cmake -S "$s"/jansson-2.14 -B "$f/jansson" "${cm[@]}" -DJANSSON_BUILD_DOCS=OFF -DJANSSON_WITHOUT_TESTS=ON -DJANSSON_EXAMPLES=OFF >/dev/null
    cmake -S "$s"/json-c-0.16 -B "$f/json-c" "${cm[@]}" -DDISABLE_WERROR=ON -DBUILD_TESTING=OFF -DBUILD_APPS=OFF >/dev/null
    cmake -S "$s"/libzip-1.7.3 -B "$f/libzip" "${cm[@]}" -DENABLE_BZIP2=OFF -DENABLE_LZMA=OFF -DENABLE_ZSTD=OFF \
        -DENABLE_GNUTLS=OFF -DENABLE_OPENSSL=OFF -DENABLE_MBEDTLS=OFF -DENABLE_COMMONCRYPTO=OFF -DENABLE_WINDOWS_CRYPTO=OFF \
        -DBUILD_TOOLS=OFF -DBUILD_REGRESS=OFF -DBUILD_EXAMPLES=OFF -DBUILD_DOC=OFF >/dev/null
    for d in jansson json-c libzip; do make -s -C "$f/$d" -j"$(nproc)" >/dev/null; done
    mkdir -p "$f/inc/json-c" "$f/inc/cjson" "$f/inc/minizip"
    cp "$s"/json-c-0.16/*.h "$f/json-c"/*.h "$f/inc/json-c/"
    local cjson_dir=$s/cjson-1.7.15
    cp "$cjson_dir/cJSON.h" "$f/inc/cjson/"
    cp "$s"/zlib-1.2.13.dfsg/contrib/minizip/{unzip.h,ioapi.h} "$f/inc/minizip/"
    local t="clang $flags -fsanitize=fuzzer"
    $t -I"$f/jansson/include" -DLIB_JANSSON -o "$f/fuzz_jansson" "$here/fuzz_lib_json.c" "$f/jansson/lib/libjansson.a"
    $t -I"$f/inc" -DLIB_JSONC -o "$f/fuzz_json-c" "$here/fuzz_lib_json.c" "$f/json-c/libjson-c.a"
    $t -I"$f/inc" -DLIB_CJSON -o "$f/fuzz_cjson" "$here/fuzz_lib_json.c" "$cjson_dir/cJSON.c" -lm
    $t -I"$s"/libzip-1.7.3/lib -I"$f/libzip" -DLIB_LIBZIP -o "$f/fuzz_libzip" "$here/fuzz_lib_zip.c" "$f/libzip/lib/libzip.a" -lz
    $t -I"$f/inc" -DLIB_MINIZIP -o "$f/fuzz_minizip" "$here/fuzz_lib_zip.c" \
        "$s"/zlib-1.2.13.dfsg/contrib/minizip/{unzip.c,ioapi.c} -lz
    # crossbind's own readers under the same conditions: fuzz/fuzz_json.c as
    # it is, and its zip reader alone (fuzz/fuzz_torch.c adds the pickle).
    $t -std=c11 -D_GNU_SOURCE -I"$root/include" -o "$f/fuzz_crossbind-json" "$root/fuzz/fuzz_json.c" $CB_JSON_SRC -lpthread
    $t -std=c11 -D_GNU_SOURCE -I"$root/include" -DLIB_CROSSBIND -o "$f/fuzz_crossbind-zip" "$here/fuzz_lib_zip.c" $CB_ZIP_SRC -lz
    ls "$f"/fuzz_*
}

step_fuzz() {
    local f=$WORK/fuzz
    mkdir -p "$f/artifacts" "$f/logs"
    echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), $cpu, $(nproc) cores, ${FUZZ_SECONDS}s per target, one at a time, nice 19"
    echo "| target | seeds | max input | executions | exec/s | coverage | peak RSS | result |"
    echo "|---|---|---:|---:|---:|---|---:|---|"
    for t in ${FUZZ_TARGETS:-crossbind-json json-c jansson cjson crossbind-zip libzip minizip}; do
        local corpus=json dict=(-dict="$root/fuzz/json.dict") max=4096
        case $t in *zip) corpus=torch dict=() max=65536 ;; esac
        local w; w=$(mktemp -d /dev/shm/jz-fuzz-XXXXXX 2>/dev/null || mktemp -d)
        local rc=0
        nice -n 19 "$f/fuzz_$t" -max_total_time="$FUZZ_SECONDS" "${dict[@]}" -max_len=$max -rss_limit_mb=2048 -timeout=10 \
            -print_final_stats=1 -artifact_prefix="$f/artifacts/$t-" "$w" "$root/fuzz/corpus/$corpus" \
            >"$f/logs/$t.log" 2>&1 || rc=$?
        rm -rf "$w"
        local log=$f/logs/$t.log execs rate cov rss result
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
        rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
        rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
        cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
        if [ $rc -eq 0 ]; then result=ok
        else result="FAIL: $(grep -Eo 'ERROR: [A-Za-z]+: [a-z-]+|SUMMARY: [A-Za-z]+: [a-z-]+|runtime error: [^:]*|ERROR: libFuzzer: [a-z-]+' "$log" | head -1)"; fi
        echo "| $t | fuzz/corpus/$corpus | $max | ${execs:-?} | ${rate:-?} | ${cov:-?} | ${rss:-?} MB | $result |"
    done
}

[ $# -gt 0 ] || { sed -n '2,22p' "$0"; exit 2; }
for s in "$@"; do
    case $s in
    all) step_deps; step_inputs; step_bench; step_hostile; step_sources; step_fuzzbuild; step_fuzz ;;
    deps|inputs|bench|hostile|sources|fuzzbuild|fuzz) "step_$s" ;;
    *) echo "unknown step $s" >&2; exit 2 ;;
    esac
done
