#!/bin/sh
# A misbehaving runner for the study tests: its manifest passes a mode,
# the harness appends the usual "train|eval MODEL ..." arguments.
#   crash    dies of SIGSEGV      hang     never answers
#   garbage  prints non-JSON      partial  a JSON line without the timed passes
mode="$1"
case "$mode" in
    crash) echo "fake runner: about to crash" >&2; kill -SEGV $$ ;;
    hang) exec sleep 600 ;;
    garbage) echo "this is { not json"; exit 0 ;;
    partial) echo '{"correct": 3, "total": 10}'; exit 0 ;;
esac
echo "fake runner: unknown mode $mode" >&2
exit 2
