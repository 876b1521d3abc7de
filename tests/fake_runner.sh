#!/bin/sh
# A misbehaving runner for the study tests: its manifest passes a mode,
# the harness appends the usual "train|eval MODEL ..." arguments.
#   crash    dies of SIGSEGV      hang     never answers
#   garbage  prints non-JSON      partial  a JSON line without the timed passes
#   hostile  fails with a message full of markup; hostile-version prints a
#            version string full of it (the report must show both as text)
mode="$1"
case "$mode" in
    crash) echo "fake runner: about to crash" >&2; kill -SEGV $$ ;;
    hang) exec sleep 600 ;;
    garbage) echo "this is { not json"; exit 0 ;;
    partial) echo '{"correct": 3, "total": 10}'; exit 0 ;;
    hostile) printf '%s\n' 'fail | <script>alert(3)</script> `code` ![i](javascript:alert(4)) "onerror=alert(5)' >&2; exit 1 ;;
    hostile-version) printf '%s\r\n%s\n' '`v1` | [x](javascript:alert(1)) <img src=x onerror=alert(2)>' '# 2. <script>alert(8)</script>'; exit 0 ;;
esac
echo "fake runner: unknown mode $mode" >&2
exit 2
