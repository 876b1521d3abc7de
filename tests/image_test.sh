#!/bin/bash
# The ImageNet input pipeline (crossbind data images) against Pillow +
# torchvision.transforms (Resize, CenterCrop, ToTensor, Normalize) run in
# runners/pytorch-python's environment, and Keras' 'tf' and 'caffe'
# formulas in NumPy: on every stand-in image (Debian's python3-skimage and
# python3-sklearn photographs) and on generated images that reach every
# decoding and resizing path (tests/image_reference.py says which, and the
# tolerance: the uint8 image after resize and crop identical to Pillow's,
# every float within 1e-6, which today means bit-identical). Then the error
# paths: truncated, empty, misnamed, CMYK and hostile files, bad options.
# Usage: tests/image_test.sh BUILD_DIR   (prints "N passed, N failed")
set -u
BIN="$(cd "$1" && pwd)/crossbind"
PY=runners/pytorch-python/.venv/bin/python
T=$(mktemp -d /tmp/crossbind-image-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=image
cd "$(dirname "$0")/.."
source tests/lib.sh
LIMIT=${CB_TEST_TIMEOUT:-300} # seconds for any one command: generous for the sanitizer build
SKIMAGE=/usr/lib/python3/dist-packages/skimage/data

if [ ! -x "$PY" ]; then
    echo "FAIL $SUITE: $PY is missing (runners/pytorch-python/install.sh makes it)"
    echo "0 passed, 1 failed"; exit 1
fi
"$PY" tests/image_reference.py gen "$T/gen" "$T/bad" || { echo "FAIL $SUITE: generating the images"; echo "0 passed, 1 failed"; exit 1; }

# same NAME NORM LAYOUT RESIZE CROP INPUTS...: crossbind's output equals the reference's.
same() {
    local name=$1 norm=$2 layout=$3 resize=$4 crop=$5; shift 5
    if timeout $LIMIT "$BIN" data images "$@" --out "$T/o.npy" --list "$T/o.json" --norm "$norm" --layout "$layout" \
            --resize "$resize" --crop "$crop" >"$T/out" 2>"$T/err" &&
        "$PY" tests/image_reference.py check "$T/o.npy" "$T/o.json" "$norm" "$layout" "$resize" "$crop" >"$T/cmp" 2>&1; then
        echo "ok   $SUITE: $name: $(tail -1 "$T/cmp")"; pass=$((pass + 1))
    else
        echo "FAIL $SUITE: $name"; sed 's/^/    /' "$T/err" "$T/cmp" 2>/dev/null | head -8; fail=$((fail + 1))
    fi
}

same "stand-in set, torchvision (Resize 256, CenterCrop 224, Normalize)" torchvision nchw 256 224 --stand-in
same "stand-in set, [0, 1], uint8 identical to Pillow's" none nchw 256 224 --stand-in
same "stand-in set, Keras tf mode, nhwc" tf nhwc 256 224 --stand-in
same "stand-in set, Keras caffe mode (BGR)" caffe nchw 256 224 --stand-in
same "stand-in set, Inception-v3 (Resize 342, CenterCrop 299)" torchvision nchw 342 299 --stand-in
same "generated images, torchvision" torchvision nchw 256 224 "$T/gen"
same "generated images, [0, 1], uint8 identical to Pillow's" none nhwc 256 224 "$T/gen"
same "generated images, tf mode" tf nchw 256 224 "$T/gen"
same "generated images, caffe mode, nhwc" caffe nhwc 256 224 "$T/gen"
same "generated images, the pixels themselves (Keras' MobileNetV3, EfficientNet), nhwc" pixels nhwc 256 224 "$T/gen"
same "generated images, resize 257 (crop offsets rounded half to even)" none nchw 257 224 "$T/gen"
same "generated images, crop larger than the resize (zero padding)" torchvision nchw 200 224 "$T/gen"
same "files and directories mixed, in argument order" none nchw 256 224 "$T/gen/k_small_200x200.png" \
    "$SKIMAGE/rocket.jpg" "$T/gen"
check "the list keeps the arguments' order" \
    bash -c "grep -o '\"path\": \"[^\"]*' '$T/o.json' | head -3 | sed 's/.*\\///' | tr '\\n' ' ' | grep -qx 'k_small_200x200.png rocket.jpg a_landscape_333x257.png '"

# The checker itself sees a one-level change.
"$BIN" data images "$T/gen/a_landscape_333x257.png" --out "$T/one.npy" --list "$T/one.json" --norm none >/dev/null 2>&1
"$PY" -c "import numpy as np; x = np.load('$T/one.npy'); x[0, 1, 100, 100] += np.float32(1 / 255); np.save('$T/one.npy', x)"
check "the reference check fails on a one-level change" \
    bash -c "! '$PY' tests/image_reference.py check '$T/one.npy' '$T/one.json' none nchw 256 224 >/dev/null 2>&1"

expect_ok "a directory run" "$BIN" data images "$T/gen" --out "$T/d.npy" --list "$T/d.json"
check "non-images in a directory are skipped and counted" \
    bash -c "grep -q 'skipped 1 directory entries' '$T/out' && grep -q '\"skipped\": 1' '$T/d.json'"
check "files in name order" \
    bash -c "grep -o '\"path\": \"[^\"]*' '$T/d.json' | sed 's/.*\\///' | LC_ALL=C sort -c"
check "nhwc is nchw transposed" "$PY" -c "
import numpy as np, subprocess, sys
subprocess.run(['$BIN', 'data', 'images', '$T/gen', '--out', '$T/h.npy', '--layout', 'nhwc'], check=True, stdout=subprocess.DEVNULL)
a, b = np.load('$T/d.npy'), np.load('$T/h.npy')
sys.exit(0 if np.array_equal(a.transpose(0, 2, 3, 1), b) else 1)"

# Error paths: one "error:" line, a non-zero exit, no output file left behind.
B="$T/bad"
expect_error "a truncated JPEG (skimage's truncated.jpg)" "truncated" "$BIN" data images "$SKIMAGE/truncated.jpg" --out "$T/e.npy"
expect_error "a truncated PNG" "truncated" "$BIN" data images "$B/cut.png" --out "$T/e.npy"
expect_error "a zero-byte file" "empty file" "$BIN" data images "$B/empty.png" --out "$T/e.npy"
expect_error "a text file named x.jpg" "not a JPEG or PNG" "$BIN" data images "$B/x.jpg" --out "$T/e.npy"
expect_error "a PNG declaring 100000 x 100000 pixels" "more than the 67108864 pixels" "$BIN" data images "$B/huge.png" --out "$T/e.npy"
expect_error "a CMYK JPEG" "CMYK" "$BIN" data images "$B/cmyk.jpg" --out "$T/e.npy"
expect_error "JPEG magic then junk" "not a readable JPEG" "$BIN" data images "$B/junk.jpg" --out "$T/e.npy"
expect_error "a resize beyond the pixel limit" "gives 16384x65536000, more than" \
    "$BIN" data images "$B/strip_1x4000.png" --resize 16384 --out "$T/e.npy"
check "no output or partial file after the failures" bash -c "! ls '$T'/e.npy* >/dev/null 2>&1"
mkdir -p "$T/mixed" && cp "$T/gen/i_1x1.png" "$B/cut.png" "$T/mixed/"
expect_error "a corrupt image in a directory is named" "mixed/cut.png" "$BIN" data images "$T/mixed" --out "$T/e.npy"
check "no output after a failure half-way" bash -c "! ls '$T'/e.npy* >/dev/null 2>&1"
expect_error "an unknown option" "unknown option '--bogus'" "$BIN" data images "$T/gen" --bogus 1 --out "$T/e.npy"
expect_error "a missing directory" "cannot find '$T/nowhere'" "$BIN" data images "$T/nowhere" --out "$T/e.npy"
mkdir -p "$T/noimg" && echo text >"$T/noimg/a.jpg"
expect_error "a directory without images" "no JPEG or PNG files in the directory" "$BIN" data images "$T/noimg" --out "$T/e.npy"
expect_error "no inputs" "which images" "$BIN" data images --out "$T/e.npy"
expect_error "no --out" "needs --out" "$BIN" data images "$T/gen"
expect_error "an unknown normalisation" "unknown normalisation 'imagenet'" "$BIN" data images "$T/gen" --norm imagenet --out "$T/e.npy"
expect_error "an unknown layout" "nchw or nhwc" "$BIN" data images "$T/gen" --layout chw --out "$T/e.npy"
expect_error "a zero resize" "--resize must be an integer" "$BIN" data images "$T/gen" --resize 0 --out "$T/e.npy"
expect_error "an option without its value" "needs a value" "$BIN" data images "$T/gen" --out
check "every error is one line" bash -c "[ \$(wc -l <'$T/err') -eq 1 ]"
echo "$pass passed, $fail failed"
