#!/bin/bash
# Whether two builds compute the same bits: trains each built-in model
# briefly from the same seed with both (a last batch shorter than the others
# included) and compares the final weights byte for byte, then runs LeNet-1,
# LeNet-5 and VGG-16 inference at several batch sizes (sliced, one chunk,
# whole) on the first build's weights and compares the outputs. For
# refactors that must not change results: build the base commit elsewhere
# (git worktree add ../base BASE && make -C ../base) and pass both builds.
# Usage: scripts/bit_identity.sh BASE_BUILD_DIR NEW_BUILD_DIR
# Prints one line per comparison and "N passed, N failed".
set -u
A=$(realpath "$1")/crossbind B=$(realpath "$2")/crossbind
cd "$(dirname "$0")/.."
T=$(mktemp -d /tmp/crossbind-bits-XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0 fail=0
same() { if cmp -s "$2" "$3"; then echo "same $1"; pass=$((pass + 1)); else echo "DIFF $1"; fail=$((fail + 1)); fi; }
[ -d data/cifar-stand-in ] || "$B" data cifar-stand-in --out data/cifar-stand-in >/dev/null
[ -d data/imdb-prepared ] || { "$B" data imdb-stand-in --out data/imdb-stand-in >/dev/null &&
                               "$B" data imdb-prepare --out data/imdb-prepared >/dev/null; }
for side in a b; do
    bin=$A; [ $side = b ] && bin=$B
    for m in lenet1 lenet5; do
        "$bin" train $m --epochs 2 --batch 100 --limit-train 1037 --limit-test 300 --threads 2 --quiet --out "$T/$side-$m" || exit 1
    done
    "$bin" train vgg16 --data data/cifar-stand-in --epochs 1 --batch 32 --limit-train 70 --limit-test 40 --threads 2 \
        --quiet --out "$T/$side-vgg16" || exit 1
    for m in lstm gru; do
        "$bin" train $m --data data/imdb-prepared --epochs 1 --batch 32 --limit-train 70 --limit-test 40 --threads 2 \
            --quiet --out "$T/$side-$m" || exit 1
    done
done
for m in lenet1 lenet5 vgg16 lstm gru; do same "$m: trained weights" "$T/a-$m/final.safetensors" "$T/b-$m/final.safetensors"; done
/usr/bin/python3 - "$T" <<'PY'
import sys, numpy as np
r = np.random.default_rng(0)
for n in (1, 37, 64, 100, 300):
    np.save(f"{sys.argv[1]}/x28_{n}.npy", r.standard_normal((n, 1, 28, 28)).astype(np.float32))
    np.save(f"{sys.argv[1]}/x32_{n}.npy", r.standard_normal((n, 3, 32, 32)).astype(np.float32))
PY
for m in lenet1 lenet5 vgg16; do
    x=x28; [ $m = vgg16 ] && x=x32
    for n in 1 37 64 100 300; do
        [ $m = vgg16 ] && [ $n = 300 ] && continue
        for side in a b; do
            bin=$A; [ $side = b ] && bin=$B
            "$bin" run $m --weights "$T/a-$m/final.safetensors" --input "$T/${x}_$n.npy" --output "$T/$side-$m-$n.npy" --threads 2
        done
        same "$m: inference outputs at batch $n" "$T/a-$m-$n.npy" "$T/b-$m-$n.npy"
    done
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
