#!/bin/bash
# A wall-clock A/B of two crossbind builds in one `crossbind bench`
# invocation: this tree's build (binding "crossbind") against a base build
# (binding "crossbind-base"), measured alternately after warm-up like any
# two bindings, with the ratios (this / base) on the bench page. BASE is a
# build directory holding `crossbind`, or a git revision, which is built
# first in a scratch worktree. The remaining arguments go to crossbind bench
# (default: --out runs/bench-ab).
# Usage: scripts/bench_ab.sh BASE [crossbind bench options]
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/bench_ab.sh BASE_BUILD_DIR|REVISION [crossbind bench options]" >&2; exit 2; }
base=$1; shift
[ -x build/crossbind ] || { echo "bench_ab: error: build/crossbind is missing: run make first" >&2; exit 1; }
scratch=$(mktemp -d /tmp/crossbind-ab-XXXXXX)
cleanup() {
    [ -d "$scratch/tree" ] && git worktree remove --force "$scratch/tree" >/dev/null 2>&1
    rm -rf "$scratch"
}
trap cleanup EXIT
if [ -x "$base/crossbind" ]; then
    bin=$(realpath "$base/crossbind")
elif git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
    echo "bench_ab: building $base in a scratch worktree"
    git worktree add --detach --quiet "$scratch/tree" "$base"
    make -s -C "$scratch/tree" -j"$(nproc)" build/crossbind >/dev/null
    bin="$scratch/tree/build/crossbind"
else
    echo "bench_ab: error: '$base' is neither a build directory with crossbind nor a revision" >&2
    exit 1
fi
# The runners: crossbind's own, and the base build as a binding of its own.
mkdir -p "$scratch/runners/crossbind-base" "$scratch/runners/crossbind"
cp runners/crossbind/manifest.json "$scratch/runners/crossbind/"
python3 - runners/crossbind/manifest.json "$bin" "$scratch/runners/crossbind-base/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m.update(binding="crossbind-base", command=[sys.argv[2]], version_command=[sys.argv[2], "version"],
         bench_command=[sys.argv[2], "bench-worker", "--sgemm"])
json.dump(m, open(sys.argv[3], "w"), indent=1)
PY
out=()
case " $* " in *" --out "*) ;; *) out=(--out runs/bench-ab) ;; esac
build/crossbind bench --runners "$scratch/runners" --bindings crossbind,crossbind-base "${out[@]}" "$@"
