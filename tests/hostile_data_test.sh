#!/bin/bash
# Hostile data and weights through the command line: IDX files that a sample
# limit would hide (lying headers, truncation, mismatched counts, bad labels
# after the limit, plain and gzip), and a model whose weights are NaN, whose
# evaluation must finish and report its non-finite outputs. Commands that
# could hang run under `timeout`, so a hang fails a test instead of the suite.
# Usage: tests/hostile_data_test.sh BUILD_DIR   (prints "N passed, N failed")
set -u
BIN="$1/crossbind"
T=$(mktemp -d /tmp/crossbind-hostile-data-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=hostile-data
source "$(dirname "$0")/lib.sh"
LIMIT=${CB_TEST_TIMEOUT:-120} # seconds for any one command: generous for the sanitizer build

# mnist DIR N_TRAIN_IMAGES CLAIMED_IMAGES N_TRAIN_LABELS CLAIMED_LABELS [BAD_LABEL_AT] [gz]
mnist() {
    python3 - "$@" <<'PY'
import gzip, os, struct, sys, random
d, ni, ci, nl, cl = sys.argv[1], *map(int, sys.argv[2:6])
bad = int(sys.argv[6]) if len(sys.argv) > 6 and sys.argv[6] != "-" else -1
gz = len(sys.argv) > 7 and sys.argv[7] == "gz"
os.makedirs(d, exist_ok=True)
random.seed(1)
def put(name, data):
    if gz:
        with gzip.open(f"{d}/{name}.gz", "wb") as f: f.write(data)
    else:
        with open(f"{d}/{name}", "wb") as f: f.write(data)
labels = bytearray(i % 10 for i in range(nl))
if 0 <= bad < nl: labels[bad] = 200
put("train-images-idx3-ubyte", struct.pack(">IIII", 0x803, ci, 28, 28) + bytes(random.randrange(256) for _ in range(ni * 784)))
put("train-labels-idx1-ubyte", struct.pack(">II", 0x801, cl) + bytes(labels))
put("t10k-images-idx3-ubyte", struct.pack(">IIII", 0x803, 20, 28, 28) + bytes(random.randrange(256) for _ in range(20 * 784)))
put("t10k-labels-idx1-ubyte", struct.pack(">II", 0x801, 20) + bytes(i % 10 for i in range(20)))
PY
}

Q="--quiet --threads 1 --epochs 1 --limit-train 10 --limit-test 10"
mnist "$T/good" 40 40 40 40
expect_ok "a sound data set trains with a limit" timeout $LIMIT "$BIN" train lenet1 --data "$T/good" --out "$T/r0" $Q
for gz in plain gz; do
    mnist "$T/claims-$gz" 300 100000000 300 300 - $gz
    expect_error "a header claiming 10^8 images in a 300-image file ($gz)" "header promises 100000000 items, the data holds 300" \
        timeout $LIMIT "$BIN" train lenet1 --data "$T/claims-$gz" --out "$T/r1" $Q
    mnist "$T/trunc-$gz" 39 40 40 40 - $gz
    expect_error "images truncated after the limit ($gz)" "truncated" \
        timeout $LIMIT "$BIN" train lenet1 --data "$T/trunc-$gz" --out "$T/r2" $Q
    mnist "$T/mismatch-$gz" 40 40 30 30 - $gz
    expect_error "40 images but 30 labels ($gz)" "has 40 images but .* has 30 labels" \
        timeout $LIMIT "$BIN" train lenet1 --data "$T/mismatch-$gz" --out "$T/r3" $Q
    mnist "$T/label-$gz" 40 40 40 40 33 $gz
    expect_error "a label of 200 after the limit ($gz)" "label 200 of sample 33" \
        timeout $LIMIT "$BIN" train lenet1 --data "$T/label-$gz" --out "$T/r4" $Q
    mnist "$T/long-$gz" 41 40 40 40 - $gz
    expect_error "images after the promised ones ($gz)" "trailing bytes" \
        timeout $LIMIT "$BIN" train lenet1 --data "$T/long-$gz" --out "$T/r5" $Q
done
check "no run.json after a refused data set" test ! -e "$T/r1/run.json" -a ! -e "$T/r3/run.json"
mnist "$T/test-trunc" 40 40 40 40
python3 -c "
import struct; f=open('$T/test-trunc/t10k-labels-idx1-ubyte','wb'); f.write(struct.pack('>II',0x801,20)); f.write(bytes(15))"
expect_error "eval --limit-test on truncated test labels" "t10k-labels-idx1-ubyte: truncated" \
    timeout $LIMIT "$BIN" eval lenet1 --weights "$T/r0/final.safetensors" --data "$T/test-trunc" --limit-test 5 --repeat 1

# LeNet-1's trained weights with every float replaced by NaN.
python3 - "$T/r0/final.safetensors" "$T/nan.safetensors" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n]); data = bytearray(b[8 + n:])
for k, v in h.items():
    if k == "__metadata__": continue
    assert v["dtype"] == "F32"
    lo, hi = v["data_offsets"]
    data[lo:hi] = struct.pack("<f", float("nan")) * ((hi - lo) // 4)
open(sys.argv[2], "wb").write(b[:8 + n] + bytes(data))
PY
expect_ok "eval of NaN weights finishes" timeout $LIMIT "$BIN" eval lenet1 --weights "$T/nan.safetensors" --data "$T/good" --repeat 1 --json --threads 1
check "eval JSON counts the non-finite outputs and leaves AUC undefined" python3 -c "
import json; d=json.load(open('$T/out')); assert d['nonfinite_outputs']==20 and d['total']==20 and d['auc_macro'] is None and d['correct']==2, d"
check "eval gives a notice naming the weights" grep -q "notice: .*nan.safetensors gave outputs that are not finite (NaN or infinity) for 20 of 20 test samples" "$T/err"
expect_ok "eval of sound weights reports no non-finite output" timeout $LIMIT "$BIN" eval lenet1 --weights "$T/r0/final.safetensors" --data "$T/good" --repeat 1 --json --threads 1
check "... nonfinite_outputs is 0 and there is no notice" python3 -c "
import json; d=json.load(open('$T/out')); assert d['nonfinite_outputs']==0, d" && ! grep -q "not finite" "$T/err"
expect_error "training from NaN weights stops as diverged" "training diverged: loss is nan" \
    timeout $LIMIT "$BIN" train lenet1 --data "$T/good" --init "$T/nan.safetensors" --out "$T/r6" $Q
check "the complete run.json reports nonfinite_outputs" grep -q '"nonfinite_outputs": 0' "$T/r0/run.json"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
