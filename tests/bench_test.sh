#!/bin/bash
# crossbind bench: option errors, the worker contract in every real binding
# (same synthetic inputs: the same prediction from the same weights),
# misbehaving workers (garbage, failure, hang, too few values) recorded
# without losing the other measurements, the fastest-setting probe, an
# interruption that keeps what was measured, and the written pages.
# Usage: tests/bench_test.sh BUILD_DIR   (prints "N passed, N failed")
set -u
cd "$(dirname "$0")/.."
BIN="$PWD/$1/crossbind"
T=$(mktemp -d /tmp/crossbind-bench-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$T"' EXIT
SUITE=bench
source tests/lib.sh
PY=/usr/bin/python3
# json_check NAME FILE PYTHON-EXPR: the expression over d (the parsed file) is true.
json_check() {
    if $PY -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($3) else 1)" "$2" 2>"$T/jerr"; then
        echo "ok   $SUITE: $1"; pass=$((pass + 1))
    else echo "FAIL $SUITE: $1"; head -3 "$T/jerr"; fail=$((fail + 1)); fi
}

expect_error "unknown option" "unknown option" "$BIN" bench --bogus
expect_error "unknown model" "unknown model\|not found\|known" "$BIN" bench --models nosuch
expect_error "unknown binding" "no runner manifest for binding 'nosuch'" "$BIN" bench --bindings crossbind,nosuch --out "$T/x"
expect_error "rounds 0" "rounds" "$BIN" bench --rounds 0
expect_error "model listed twice" "twice" "$BIN" bench --models lenet1,lenet1
expect_error "unknown kind" "unknown kind 'fly'" "$BIN" bench --kinds infer,fly
expect_error "worker: unknown kind" "unknown kind" "$BIN" bench-worker --model lenet1 --kind fly
expect_error "worker: training needs a whole batch" "samples >= --batch" "$BIN" bench-worker --model lenet1 --kind train --batch 8 --samples 4
expect_error "worker: missing weights" "nosuch.safetensors" "$BIN" bench-worker --model lenet1 --kind infer --weights "$T/nosuch.safetensors"

# One quick round of every real binding on LeNet-5.
expect_ok "quick bench of lenet5 in three bindings" "$BIN" bench --models lenet5 --bindings crossbind,pytorch,onnxruntime-node --quick --rounds 1 --out "$T/q" --doc "$T/doc/page.md" --quiet
J="$T/q/bench.json"
json_check "every cell measured" "$J" "len(d['cells']) == 11 and all(c['status'] == 'ok' for c in d['cells'])"
json_check "ONNX Runtime measures inference only" "$J" \
    "sorted(c['kind'] for c in d['cells'] if c['binding'] == 'onnxruntime-node') == ['infer', 'latency', 'startup']"
json_check "value counts: units x rounds, latency per sample" "$J" \
    "all(len(c['times_s']) == (c['samples'] if c['kind'] == 'latency' else c['repeat']) for c in d['cells'])"
json_check "times are positive, start-up under 60 s" "$J" \
    "all(0 < t < 60 for c in d['cells'] for t in c['times_s'])"
json_check "crossbind's inference cells record their plan's operations per sample (LeNet-5: 0.81 MFLOP without padding taps, no Winograd)" "$J" \
    "all(abs(c.get('flops_done_per_sample', 0) - 813312) < 1 for c in d['cells'] if c['binding'] == 'crossbind' and c['kind'] in ('infer', 'latency'))"
json_check "peak memory recorded for every process" "$J" "all(c['peak_rss_kib'] > 1000 for c in d['cells'])"
json_check "peak memory is the worker's own (crossbind's LeNet-5 under 60 MiB, PyTorch's over 100)" "$J" \
    "all((c['peak_rss_kib'] < 60 * 1024) if c['binding'] == 'crossbind' else (c['peak_rss_kib'] > 100 * 1024 or c['binding'] != 'pytorch') for c in d['cells'])"
json_check "crossbind's convolution time is part of its step" "$J" \
    "all(0 < cv <= t for c in d['cells'] if c['binding'] == 'crossbind' and c['kind'] == 'train' for cv, t in zip(c['conv_s'], c['times_s']))"
json_check "crossbind's training worker measures SGEMM beside its units" "$J" \
    "all(len(c['conv_sgemm_gflops']) == len(c['conv_s']) > 0 and all(g > 1 for g in c['conv_sgemm_gflops']) and 'sgemm' not in c['worker'] for c in d['cells'] if c['binding'] == 'crossbind' and c['kind'] == 'train')"
# The page's paired share: the median over units of convolution GFLOP/s over that unit's SGEMM.
paired=$($PY - "$J" <<'PY'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
conv = next(m['conv_forward_gflop_per_sample'] for m in d['models'] if m['name'] == 'lenet5')
c = next(c for c in d['cells'] if c['binding'] == 'crossbind' and c['kind'] == 'train')
print(round(100 * statistics.median(3 * conv * c['samples'] / t / g for t, g in zip(c['conv_s'], c['conv_sgemm_gflops']))))
PY
)
check "the page: the convolutions' share of the SGEMM beside them ($paired%)" \
    grep -q "^| lenet5 | crossbind |.*; $paired% \[[0-9]*, [0-9]*\] of the SGEMM measured beside each unit |" "$T/q/bench.md"
# (the harness's median interpolates between the middle two of an even count, as statistics.median does)
json_check "PyTorch's settings both tried, the faster used" "$J" \
    "all(len(c['round1_by_setting']) == 2 and c['setting'] == min(c['round1_by_setting'], key=lambda k: __import__('statistics').median(c['round1_by_setting'][k])) for c in d['cells'] if c['binding'] == 'pytorch' and c['kind'] in ('train', 'infer'))"
json_check "SGEMM measured before and after" "$J" "all(d['sgemm_gflops'][w]['2'] > 1 for w in ('before', 'after'))"
json_check "versions of every binding" "$J" "all(b['version'] and b['version'] != 'not reported' for b in d['bindings'])"
check "the page: times, memory, SGEMM share, machine" grep -q "^| lenet5 | inference, 2000 samples, batch 128 | .* ms" "$T/q/bench.md"
# "AMD EPYC" alone covers processors whose speeds differ a lot: the family,
# model and widest vector instructions are named too.
fam=$(grep -m1 '^cpu family' /proc/cpuinfo | sed 's/.*: *//') mod=$(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | sed 's/.*: *//')
check "the page: the machine line names the processor's family $fam and model $mod, and its vector instructions" \
    grep -qE "^- Machine: .* \(family $fam, model $mod; (AVX-512|AVX2|AVX)\), [0-9]+ cores online" "$T/q/bench.md"
check "the page: ratios to both peers" grep -q "crossbind / pytorch | crossbind / onnxruntime-node" "$T/q/bench.md"
check "the page copied to --doc, with its box plots" test -s "$T/doc/page.md" -a -s "$T/doc/page.html"
check "box plots: one figure per measured kind" test "$(grep -o '<figure' "$T/q/bench.html" | wc -l)" -eq 4

# Same weights and the same synthetic inputs: every binding predicts the same.
for model in lenet5 gru; do
    "$BIN" bench --models "$model" --bindings crossbind --quick --rounds 1 --out "$T/w-$model" --quiet >/dev/null 2>&1
    W="$T/w-$model/work/models/$model"
    a=$("$BIN" bench-worker --model "$model" --kind startup --weights "$W.safetensors" | $PY -c "import json,sys; print(json.load(sys.stdin)['label'])")
    b=$($PY runners/pytorch/crossbind_torch.py bench --model "$model" --kind startup --weights "$W.safetensors" | $PY -c "import json,sys; print(json.load(sys.stdin)['label'])")
    c=$(node runners/onnxruntime-node/crossbind_ort.js bench --model "$model" --kind startup --weights "$W.onnx" | $PY -c "import json,sys; print(json.load(sys.stdin)['label'])")
    check "$model: the same first prediction in all bindings ($a $b $c)" test -n "$a" -a "$a" = "$b" -a "$b" = "$c"
done

# An ImageNet CNN: torchvision's file (the pytorch-python runner's export),
# run by crossbind and ONNX Runtime, the same first prediction in both.
expect_ok "mobilenet_v2: crossbind and ONNX Runtime, inference and latency" "$BIN" bench --models mobilenet_v2 \
    --bindings crossbind,onnxruntime-node --kinds infer,latency,startup --quick --rounds 1 --out "$T/in" --quiet
json_check "  ... every cell measured, none in training" "$T/in/bench.json" \
    "len(d['cells']) == 6 and all(c['status'] == 'ok' and c['kind'] != 'train' for c in d['cells'])"
json_check "  ... inference in batches of 32" "$T/in/bench.json" \
    "all(c['batch'] == 32 for c in d['cells'] if c['kind'] == 'infer')"
check "  ... the page's Reproduce line names the kinds measured" \
    grep -q "^Reproduce: crossbind bench --models mobilenet_v2 --bindings crossbind,onnxruntime-node --kinds infer,latency,startup --threads" "$T/in/bench.md"
W="$T/in/work/models/mobilenet_v2.onnx"
a=$("$BIN" bench-worker --model mobilenet_v2 --kind startup --weights "$W" | $PY -c "import json,sys; print(json.load(sys.stdin)['label'])")
b=$(node runners/onnxruntime-node/crossbind_ort.js bench --model mobilenet_v2 --kind startup --weights "$W" | $PY -c "import json,sys; print(json.load(sys.stdin)['label'])")
check "  ... the same first prediction in both ($a $b)" test -n "$a" -a "$a" = "$b"
expect_error "  ... training it is refused by crossbind's worker" "inference only" \
    "$BIN" bench-worker --model mobilenet_v2 --kind train --weights "$W" --batch 2 --samples 2
expect_error "an unknown model names the ImageNet ones too" "mobilenet_v2, resnet18" "$BIN" bench --models alexnet --quiet

# A model of the user's (--onnx FILE): named after its file, measured where
# ONNX loads, its input's shape read from the file by each worker.
mkdir -p "$T/mine"
cp "$T/w-lenet5/work/models/lenet5.onnx" "$T/mine/tiny-net.onnx"
# Measured from a folder whose name a shell would split.
mkdir -p "$T/my models"
cp "$T/mine/tiny-net.onnx" "$T/my models/tiny-net.onnx"
expect_ok "--onnx: a file of the user's, in crossbind and ONNX Runtime" "$BIN" bench --onnx "$T/my models/tiny-net.onnx" \
    --bindings crossbind,onnxruntime-node --kinds infer,latency,startup --quick --rounds 1 --out "$T/o" --quiet
json_check "  ... only that model (no --models: not the study's), named after the file, where it was read" "$T/o/bench.json" \
    "[m['name'] for m in d['models']] == ['tiny-net'] and d['models'][0]['onnx_file'] == '$T/my models/tiny-net.onnx'"
json_check "  ... every cell measured in both bindings, inference in batches of 32, its FLOPs counted" "$T/o/bench.json" \
    "len(d['cells']) == 6 and all(c['status'] == 'ok' for c in d['cells']) and all(c['batch'] == 32 for c in d['cells'] if c['kind'] == 'infer') and d['models'][0]['forward_gflop_per_sample'] > 0"
check "  ... the page gives the ratio" grep -q "^| tiny-net | inference, 32 samples, batch 32 | .* | .* | \*\*[0-9.]*x\*\*" "$T/o/bench.md"
check "  ... its Reproduce line names the file as one shell word, no --models" \
    grep -qF "Reproduce: crossbind bench --onnx '$T/my models/tiny-net.onnx' --bindings crossbind,onnxruntime-node --kinds" "$T/o/bench.md"
W="$T/o/work/models/tiny-net.onnx"
check "  ... the workers read a copy of it" cmp "$W" "$T/my models/tiny-net.onnx"
a=$("$BIN" bench-worker --model tiny-net --kind startup --weights "$W" | $PY -c "import json,sys; print(json.load(sys.stdin)['label'])")
b=$(node runners/onnxruntime-node/crossbind_ort.js bench --model tiny-net --kind startup --weights "$W" | $PY -c "import json,sys; print(json.load(sys.stdin)['label'])")
c=$("$BIN" bench-worker --model lenet5 --kind startup --weights "$T/w-lenet5/work/models/lenet5.safetensors" | $PY -c "import json,sys; print(json.load(sys.stdin)['label'])")
check "  ... the same first prediction in both, and as LeNet-5's own ($a $b $c)" test -n "$a" -a "$a" = "$b" -a "$b" = "$c"
expect_error "--onnx: training is not measured (nothing else asked: refused)" "nothing to measure" \
    "$BIN" bench --onnx "$T/mine/tiny-net.onnx" --kinds train --bindings crossbind --quiet --out "$T/o2"
cp "$T/mine/tiny-net.onnx" "$T/mine/vgg16.onnx"
expect_error "--onnx: a file named as a model crossbind knows is refused" "'vgg16' is a model crossbind knows" \
    "$BIN" bench --onnx "$T/mine/vgg16.onnx" --quiet --out "$T/o2"
expect_error "--onnx: the same name twice" "listed already" \
    "$BIN" bench --onnx "$T/mine/tiny-net.onnx" --onnx "$T/mine/tiny-net.onnx" --quiet --out "$T/o2"
head -c 300 "$T/mine/tiny-net.onnx" >"$T/mine/cut.onnx"
expect_error "--onnx: a truncated file, refused before any measurement" "cut.onnx" \
    "$BIN" bench --onnx "$T/mine/cut.onnx" --quiet --out "$T/o2"
expect_error "--onnx: a missing file, refused at once" "nosuch.onnx: cannot read it" "$BIN" bench --onnx "$T/mine/nosuch.onnx" --quiet --out "$T/o2"
check "  ... none of them measured anything" test ! -e "$T/o2/bench.json"
cp "$T/w-gru/work/models/gru.onnx" "$T/mine/my-rnn.onnx"
expect_error "--onnx: a file whose input is token ids is refused by crossbind's worker" "holds token ids" \
    "$BIN" bench-worker --model my-rnn --kind latency --weights "$T/mine/my-rnn.onnx" --samples 2
expect_error "  ... and by ONNX Runtime's" "must be float32" \
    node runners/onnxruntime-node/crossbind_ort.js bench --model my-rnn --kind latency --weights "$T/mine/my-rnn.onnx" --samples 2

# Misbehaving workers beside crossbind: each failure recorded, nothing else lost.
mkdir -p "$T/runners"
cp -r runners/crossbind "$T/runners/"
for mode in good garbage exit3 hang short; do
    mkdir -p "$T/runners/fake-$mode"
    env=''
    [ "$mode" = good ] && env=', "bench_env": ["FAKE_SPEED=slow", "FAKE_SPEED=fast"]'
    cat > "$T/runners/fake-$mode/manifest.json" <<JSON
{"format": "crossbind-runner/1", "binding": "fake-$mode", "framework": "Fake", "language": "sh",
 "command": ["/bin/sh", "$PWD/tests/fake_bench_worker.sh", "$mode"], "infer": ["lenet1"], "loads": ["onnx"],
 "devices": ["cpu"], "bench": ["infer", "latency", "startup"]$env}
JSON
done
# The time limit kills the hanging worker; it is 10 s because a real worker (crossbind's
# quick LeNet-1 inference) once passed 3 s on a machine busy with other jobs.
"$BIN" bench --models lenet1 --bindings crossbind,fake-good,fake-garbage,fake-exit3,fake-hang,fake-short --quick \
    --kinds infer,latency,startup \
    --rounds 2 --timeout 10 --runners "$T/runners" --out "$T/f" --quiet >"$T/out" 2>"$T/err"
rc=$?
check "failures make the exit status 1, with a count" test $rc -eq 1 -a -n "$(grep 'error: bench: 12 measurement(s) failed' "$T/err")"
J="$T/f/bench.json"
json_check "crossbind's cells all measured despite the failures" "$J" \
    "all(c['status'] == 'ok' and c['times_s'] for c in d['cells'] if c['binding'] == 'crossbind')"
json_check "garbage: not a JSON object" "$J" \
    "all('not a JSON object' in c['error'] for c in d['cells'] if c['binding'] == 'fake-garbage')"
json_check "exit 3: the status and the worker's message" "$J" \
    "all('exit status 3: fake worker: failing on purpose' in c['error'] for c in d['cells'] if c['binding'] == 'fake-exit3')"
json_check "hang: timed out" "$J" "all('timed out after 10 s' in c['error'] for c in d['cells'] if c['binding'] == 'fake-hang')"
json_check "too few values: refused" "$J" "all('lacks the expected times_s' in c['error'] for c in d['cells'] if c['binding'] == 'fake-short' and c['kind'] != 'startup')"
json_check "the faster setting chosen and kept in round 2" "$J" \
    "all(c['setting'] == 'FAKE_SPEED=fast' and (c['kind'] == 'startup' or set(c['times_s']) == {0.1}) for c in d['cells'] if c['binding'] == 'fake-good')"
json_check "start-up measured from the clock the worker reports" "$J" \
    "[c for c in d['cells'] if c['binding'] == 'fake-good' and c['kind'] == 'startup'][0]['times_s'][0] < 3"
check "the page lists the failures" grep -q "^- lenet1 infer fake-hang: timed out" "$T/f/bench.md"

# Without --bindings: crossbind, then each framework's default binding, then
# every other installed binding with a worker; one not installed is named and
# left out, one without a worker is not asked; listed by hand, a missing one
# is refused with its install command. A default binding gets its own table.
mkdir -p "$T/sel"
cp -r runners/crossbind "$T/sel/"
fake_manifest() { # NAME FRAMEWORK DEFAULT(true|false) VERSION-COMMAND-PROGRAM BENCH-KINDS
    mkdir -p "$T/sel/$1"
    cat > "$T/sel/$1/manifest.json" <<JSON
{"format": "crossbind-runner/1", "binding": "$1", "framework": "$2", "language": "sh", "framework_default": $3,
 "command": ["/bin/sh", "$PWD/tests/fake_bench_worker.sh", "good"], "version_command": ["$4"],
 "install": "bash runners/$1/install.sh", "infer": ["lenet1"], "loads": ["onnx"], "devices": ["cpu"], "bench": [$5]}
JSON
}
fake_manifest a-peer Fake false /bin/true '"infer"'
fake_manifest b-missing Fake false /bin/false '"infer"'
fake_manifest c-noworker Fake false /bin/true ''
fake_manifest z-default Fake true /bin/true '"infer"'
"$BIN" bench --models lenet1 --quick --kinds infer --rounds 1 --runners "$T/sel" --out "$T/sel-out" --quiet >"$T/out" 2>"$T/err"
check "default bindings: the bench runs (exit 0)" test $? -eq 0
json_check "default bindings: crossbind, the framework's default, then the installed others" "$T/sel-out/bench.json" \
    "[b['name'] for b in d['bindings']] == ['crossbind', 'z-default', 'a-peer']"
check "default bindings: the one not installed is named with its install command" \
    grep -q "binding b-missing left out: not installed here.*install it with: bash runners/b-missing/install.sh" "$T/err"
check "the page: speed relative to the framework's default binding" \
    grep -q "^## Speed relative to z-default" "$T/sel-out/bench.md"
check "the page: its table has every other binding, as the default's median over theirs" \
    grep -q "^| lenet1 | infer | \*\*[0-9.]*x\*\* | \*\*1.00x\*\* |" "$T/sel-out/bench.md"
# Ratios paired by round: the peer slows down 2x a round (0.1, 0.2, 0.4 s),
# the first binding stays at 0.5 s. Overall medians give 0.5 / 0.2; within
# each round the ratios are 5, 2.5 and 1.25.
fake_manifest g-grow Fake false /bin/true '"infer"'
sed -i "s|\"good\"\]|\"grow\", \"$T/grow.count\"]|" "$T/sel/g-grow/manifest.json"
"$BIN" bench --models lenet1 --quick --kinds infer --rounds 3 --runners "$T/sel" --out "$T/grow-out" --quiet \
    --bindings a-peer,g-grow >"$T/out" 2>"$T/err"
check "rounds paired: the bench runs (exit 0)" test $? -eq 0
check "rounds paired: the page gives the overall ratio and the range of the ratios within each round" \
    grep -q "^| lenet1 | inference, [0-9]* samples, batch [0-9]* | .* | \*\*2.50x\*\* (1.25x-5.00x by round) |$" "$T/grow-out/bench.md"
json_check "rounds paired: bench.json keeps each round's median" "$T/grow-out/bench.json" \
    "[c['round_medians_s'] for c in d['cells'] if c['binding'] == 'g-grow'] == [[0.1, 0.2, 0.4]]"
expect_error "a listed binding that is not installed is refused with its install command" \
    "binding 'b-missing' is not installed here.*install it with: bash runners/b-missing/install.sh" \
    "$BIN" bench --models lenet1 --quick --kinds infer --rounds 1 --runners "$T/sel" --out "$T/sel-out2" --bindings crossbind,b-missing

# A binding that loads neither safetensors nor ONNX gets the same initial
# weights converted by the export command of a binding of its framework that
# writes the format it loads; a failed export is the cell's error.
mkdir -p "$T/xp"
cp -r runners/crossbind "$T/xp/"
cat > "$T/export.sh" <<'SH'
#!/bin/sh
# MODE MODEL --weights FILE --format FMT --out PATH
[ "$1" = fail ] && { echo "cannot convert $2 to $6: failing on purpose" >&2; exit 1; }
[ "$3" = --weights ] && [ "$5" = --format ] && [ "$7" = --out ] || { echo "bad arguments: $*" >&2; exit 2; }
cp "$4" "$8"
SH
xp_manifest() { # NAME FRAMEWORK EXPORT-MODE
    mkdir -p "$T/xp/$1-exporter" "$T/xp/$1-lite"
    cat > "$T/xp/$1-exporter/manifest.json" <<JSON
{"format": "crossbind-runner/1", "binding": "$1-exporter", "framework": "$2", "language": "sh",
 "command": ["/bin/true"], "export_command": ["/bin/sh", "$T/export.sh", "$3"], "infer": [],
 "writes": ["safetensors", "tflite"], "loads": [], "devices": ["cpu"]}
JSON
    cat > "$T/xp/$1-lite/manifest.json" <<JSON
{"format": "crossbind-runner/1", "binding": "$1-lite", "framework": "$2", "language": "sh",
 "command": ["/bin/sh", "$PWD/tests/fake_bench_worker.sh", "needs-tflite"], "version_command": ["/bin/true"],
 "infer": ["lenet1"], "loads": ["tflite"], "devices": ["cpu"], "bench": ["infer"]}
JSON
}
xp_manifest ok Xok ok
xp_manifest bad Xbad fail
"$BIN" bench --models lenet1 --quick --kinds infer --rounds 1 --runners "$T/xp" --out "$T/xp-out" \
    --bindings crossbind,ok-lite,bad-lite >"$T/out" 2>"$T/err"
check "exported weights: the bench finishes, with one failed cell (exit 1)" test $? -eq 1
json_check "the binding that loads .tflite was measured on the exported copy of the shared weights" "$T/xp-out/bench.json" \
    "[c['status'] for c in d['cells'] if c['binding'] == 'ok-lite'] == ['ok']"
check "the export is said in the progress" grep -q "bench: lenet1's tflite file for ok-lite, by ok-exporter's export" "$T/err"
json_check "a failed export is the cell's error, with the exporter's message" "$T/xp-out/bench.json" \
    "[c['error'] for c in d['cells'] if c['binding'] == 'bad-lite'][0].startswith(\"bad-exporter's export of lenet1 to tflite failed: cannot convert lenet1 to tflite: failing on purpose\")"

# Hostile strings from manifests, version commands and workers: text only on both pages.
for mode in hostile hostile-fail; do
    mkdir -p "$T/runners/$mode"
    cat > "$T/runners/$mode/manifest.json" <<JSON
{"format": "crossbind-runner/1", "binding": "$mode", "framework": "<script>alert(\"fw\")</script>",
 "language": "\"onmouseover=alert(1)|\`x\`", "command": ["/bin/sh", "$PWD/tests/fake_bench_worker.sh", "$mode"],
 "version_command": ["/bin/sh", "$PWD/tests/fake_bench_worker.sh", "hostile-version"],
 "infer": ["lenet1"], "loads": ["onnx"], "devices": ["cpu"], "bench": ["infer"], "bench_env": ["X=<b>|\`y\`[z](j:1)"]}
JSON
done
"$BIN" bench --models lenet1 --bindings crossbind,hostile,hostile-fail --quick --kinds infer --rounds 1 --timeout 10 \
    --runners "$T/runners" --out "$T/h" --quiet >"$T/out" 2>"$T/err"
check "a bench with hostile runners writes its pages" test -s "$T/h/bench.md" -a -s "$T/h/bench.html"
FW='<script>alert("fw")</script>' LANG_='"onmouseover=alert(1)|`x`' VER='`v9` | [x](javascript:alert(25)) <script>alert(26)</script>'
SAID='said <script>alert(21)</script> | "q" [l](javascript:alert(22))'
ERR='no | <img src=x onerror=alert(23)> `c` ![i](javascript:alert(24))'
check "bench.html: framework, language and version as text, under a CSP forbidding script" \
    $PY tests/check_escaped.py html "$T/h/bench.html" "$FW" "$LANG_" "$VER"
check "bench.md: the same, the worker's words, the setting and the failure escaped" \
    $PY tests/check_escaped.py md "$T/h/bench.md" "$FW" "$LANG_" "$VER" "$SAID" "$ERR" 'X=<b>|`y`[z](j:1)'

# Interrupted: what was measured is kept, the exit says so.
"$BIN" bench --models lenet1,lenet5 --bindings crossbind --kinds startup,latency --rounds 50 --out "$T/i" --quiet >"$T/out" 2>"$T/err" &
pid=$!
for _ in $(seq 1 100); do
    [ -s "$T/i/bench.json" ] && grep -q '"status": "ok"' "$T/i/bench.json" && break
    sleep 0.2
done
kill -INT $pid
wait $pid
rc=$?
check "interrupted: exit 130, says where the results are" test $rc -eq 130 -a -n "$(grep "bench interrupted; the results measured so far are in $T/i" "$T/err")"
json_check "interrupted: the measured cells are in the file" "$T/i/bench.json" \
    "any(c['status'] == 'ok' for c in d['cells']) and d['rounds_done'] < 50"

# A/B of two builds (scripts/bench_ab.sh): here the same build twice, as
# bindings crossbind and crossbind-base side by side.
expect_ok "bench_ab.sh: a build against a base build, in one bench" \
    bash scripts/bench_ab.sh "$(dirname "$BIN")" --models lenet5 --kinds latency --rounds 1 --quick --out "$T/ab" --quiet
json_check "  ... both measured, the base as its own binding" "$T/ab/bench.json" \
    "sorted({c['binding'] for c in d['cells'] if c['status'] == 'ok'}) == ['crossbind', 'crossbind-base']"
expect_error "  ... a base that is neither a build nor a revision is refused" "neither a build directory" \
    bash scripts/bench_ab.sh /nonexistent --quiet

# The goals check (scripts/speed_goals.py and .sh) on the first quick
# bench's results above, made deterministic: crossbind's LeNet-5 latency 2 s a
# sample, ONNX Runtime's 1 s, PyTorch's 4 s (medians: the times differ, and
# crossbind's even count has 2 s between its middle two, so a mean, a
# minimum or the first time would read otherwise); peak memory 100, 50 and
# 400 MiB.
G="$T/goals"; mkdir -p "$G/r/fixed"
$PY - "$T/q/bench.json" "$G/r/fixed/bench.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
speed = {"crossbind": 2.0, "onnxruntime-node": 1.0, "pytorch": 4.0}
times = {"crossbind": [9.0, 1.0, 2.5, 1.5], "onnxruntime-node": [3.0, 0.5, 1.0], "pytorch": [4.0] * 3}
rounds = {"crossbind": [2.0, 3.0], "onnxruntime-node": [1.0, 2.25], "pytorch": [4.0, 4.0]}
for c in d["cells"]:
    if c["model"] == "lenet5" and c["kind"] == "latency":
        c["times_s"] = times[c["binding"]]
        c["round_medians_s"] = rounds[c["binding"]]
        c["peak_rss_kib"] = int(speed[c["binding"]] * 50 * 1024) if c["binding"] != "pytorch" else 400 * 1024
json.dump(d, open(sys.argv[2], "w"))
PY
printf 'lenet5\tlatency\ttime\t*\t2.0\n' > "$G/met.tsv"
printf 'lenet5\tlatency\ttime\t*\t1.99\n' > "$G/missed.tsv"
printf 'lenet5\tlatency\ttime\tframework=PyTorch\t0.5\nlenet5\tlatency\tmemory\tpytorch\t0.25\n' > "$G/pytorch.tsv"
printf 'lenet5\tlatency\tmemory\tonnxruntime-node\t1.5\n' > "$G/memory.tsv"
printf 'lenet5\ttrain\ttime\tonnxruntime-node\t9\nresnet50\tlatency\ttime\tonnxruntime-node\t1.0\n' > "$G/unmeasured.tsv"
printf 'lenet5\tlatency\ttime\t*\n' > "$G/short.tsv"
printf 'lenet5\tfly\ttime\t*\t1\n' > "$G/kind.tsv"
printf 'lenet5\tlatency\ttime\t*\tfast\n' > "$G/limit.tsv"
SG="python3 scripts/speed_goals.py"
expect_ok "goals: ratio to the best peer (2 s over ONNX Runtime's 1 s) at most 2.0: met" $SG "$G/met.tsv" "$G/r/fixed/bench.json"
check "  ... the table gives the ratio, the best peer and each round's" grep -q "| lenet5 | latency time | 2.000 s | onnxruntime-node 1.000 s | 2.00x (2.00x) | 1.33x-2.00x | \*\*met\*\* |" "$T/out"
$SG "$G/missed.tsv" "$G/r/fixed/bench.json" > "$T/out" 2>&1
check "goals: the same at most 1.99: missed, exit 1" test $? -eq 1 -a -n "$(grep -F '**missed**' "$T/out")"
$SG "$G/pytorch.tsv" "$G/r/fixed/bench.json" > "$T/out" 2>&1
check "goals: framework=PyTorch and a named peer (0.50x of PyTorch's time and 0.25x its memory: met)" \
    test $? -eq 0 -a "$(grep -c '| pytorch .* \*\*met\*\* |' "$T/out")" = 2
$SG "$G/memory.tsv" "$G/r/fixed/bench.json" > "$T/out" 2>&1
check "goals: memory compares peak resident sets (100 against 50 MiB: 2.00x, missed)" \
    test $? -eq 1 -a -n "$(grep -F '| 100 MiB | onnxruntime-node 50 MiB | 2.00x (1.50x)' "$T/out")"
$SG "$G/unmeasured.tsv" "$G/r/fixed/bench.json" > "$T/out" 2>&1
check "goals: a cell no peer measured, and a model not benched: unmeasured, exit 1" \
    test $? -eq 1 -a "$(grep -c '\*\*unmeasured\*\*' "$T/out")" = 2
expect_error "goals: a line without its limit" "short.tsv:1: expected 5 tab-separated columns" $SG "$G/short.tsv" "$G/r/fixed/bench.json"
expect_error "goals: an unknown kind" "kind.tsv:1: unknown kind 'fly'" $SG "$G/kind.tsv" "$G/r/fixed/bench.json"
expect_error "goals: a limit that is not a number" "at_most must be a positive number, not 'fast'" $SG "$G/limit.tsv" "$G/r/fixed/bench.json"
head -c 300 "$G/r/fixed/bench.json" > "$G/truncated.json"
expect_error "goals: truncated results" "truncated.json is not a bench results file" $SG "$G/met.tsv" "$G/truncated.json"
expect_error "goals: missing results" "cannot read $G/none.json" $SG "$G/met.tsv" "$G/none.json"
expect_error "goals: an unknown option" "unknown option '--bogus'" $SG "$G/met.tsv" "$G/r/fixed/bench.json" --bogus
$SG scripts/speed_goals.tsv "$T/q/bench.json" > "$T/out" 2>&1
check "goals: the project's goals file reads (exit 1: a quick LeNet-5 bench measures few of them)" \
    test $? -eq 1 -a "$(grep -c '^| [a-z0-9_]* | [a-z]* \(time\|memory\) |' "$T/out")" = "$(grep -vc '^#' scripts/speed_goals.tsv)"
bash scripts/speed_goals.sh --from "$G/r" > "$T/out" 2>"$T/err"
check "speed_goals.sh --from: checks results measured before, writes goals.md" \
    test $? -eq 1 -a -s "$G/r/goals.md" -a -n "$(grep -F "speed_goals: $G/r/goals.md" "$T/out")"
expect_error "speed_goals.sh: an unknown option" "unknown option '--fast'" bash scripts/speed_goals.sh --fast
expect_error "speed_goals.sh: rounds must be a number" "whole number of at least 1, not '0'" bash scripts/speed_goals.sh --rounds 0
expect_error "speed_goals.sh: a folder without results" "no bench results" bash scripts/speed_goals.sh --from "$G/r/fixed"

echo "$pass passed, $fail failed"
