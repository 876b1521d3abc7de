#!/bin/sh
# A misbehaving benchmark worker for tests/bench_test.sh. The first argument
# is the mode; the rest are the harness's bench options.
# Modes: good (answers by the contract; FAKE_SPEED=slow|fast picks its times),
# garbage (prints no JSON), exit3 (fails), hang (never answers), short (too
# few times), hostile (answers, saying things full of markup), hostile-fail
# (fails with such a message), hostile-version (prints such a version),
# grow COUNT-FILE (good, each call of the process twice as slow as the
# one before: 0.1 s, 0.2 s, 0.4 s..., counted in COUNT-FILE), needs-tflite (good, after checking that it was given
# WORK/models/by-EXPORTER/MODEL.tflite holding exactly the canonical
# WORK/models/MODEL.safetensors, as the fake exporter of tests/bench_test.sh
# makes it).
mode=$1; shift
if [ "$mode" = grow ]; then
    calls=$(cat "$1" 2>/dev/null || echo 0)
    echo $((calls + 1)) > "$1"
    shift
fi
kind=; samples=1; repeat=1; weights=
while [ $# -gt 0 ]; do
    case $1 in
        --kind) kind=$2; shift ;;
        --weights) weights=$2; shift ;;
        --samples) samples=$2; shift ;;
        --repeat) repeat=$2; shift ;;
    esac
    shift
done
t=0.5; [ "${FAKE_SPEED:-}" = fast ] && t=0.1
if [ "$mode" = grow ]; then
    t=$(awk -v n="$calls" 'BEGIN { printf "%g", 0.1 * 2 ^ n }')
    mode=good
fi
series() { n=$1; s=""; i=0; while [ $i -lt "$n" ]; do s="$s${s:+, }$t"; i=$((i + 1)); done; echo "[$s]"; }
if [ "$mode" = needs-tflite ]; then
    case $weights in
        */by-*/*.tflite)
            canonical="$(dirname "$(dirname "$weights")")/$(basename "${weights%.tflite}").safetensors"
            cmp -s "$weights" "$canonical" || { echo "not the exported weights: $weights" >&2; exit 4; } ;;
        *) echo "given $weights, not a .tflite file" >&2; exit 4 ;;
    esac
    mode=good
fi
case $mode in
    good)
        if [ "$kind" = startup ]; then
            now=$(/usr/bin/python3 -c 'import time; print(time.clock_gettime(time.CLOCK_MONOTONIC))')
            echo "{\"label\": 1, \"monotonic_s\": $now}"
        elif [ "$kind" = latency ]; then echo "{\"times_s\": $(series "$samples"), \"speed\": \"${FAKE_SPEED:-}\"}"
        else echo "{\"times_s\": $(series "$repeat"), \"speed\": \"${FAKE_SPEED:-}\"}"; fi ;;
    garbage) echo "this is not JSON" ;;
    exit3) echo "fake worker: failing on purpose" >&2; exit 3 ;;
    hang) sleep 600 ;;
    short) echo '{"times_s": []}' ;;
    hostile)
        if [ "$kind" = startup ]; then
            now=$(/usr/bin/python3 -c 'import time; print(time.clock_gettime(time.CLOCK_MONOTONIC))')
            echo "{\"label\": 1, \"monotonic_s\": $now, \"said\": \"<script>alert(21)</script> | \\\"q\\\" [l](javascript:alert(22))\"}"
        else echo "{\"times_s\": $(series "$repeat"), \"said\": \"<script>alert(21)</script> | \\\"q\\\" [l](javascript:alert(22))\"}"; fi ;;
    hostile-fail) printf '%s\n' 'no | <img src=x onerror=alert(23)> `c` ![i](javascript:alert(24))' >&2; exit 3 ;;
    hostile-version) printf '%s\n' '`v9` | [x](javascript:alert(25)) <script>alert(26)</script>' ;;
esac
