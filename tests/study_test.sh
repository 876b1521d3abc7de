#!/bin/bash
# crossbind study, report and results: the experiment on a tiny profile
# with every real binding, misbehaving runners (crash, hang, malformed
# output, failed training), bad stores, a full disk, resuming without
# repeats, SIGKILL at a random point and rerun (same rows as an
# uninterrupted study, apart from timings), a reader while the study
# writes, exports, and the report in headless Chromium.
# Usage: tests/study_test.sh BUILD_DIR   (prints "N passed, N failed")
set -u
cd "$(dirname "$0")/.."
BIN="$PWD/$1/crossbind"
T=$(mktemp -d /tmp/crossbind-study-XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; umount "$T/small" 2>/dev/null; rm -rf "$T"' EXIT
SUITE=study
source tests/lib.sh
PY=/usr/bin/python3

# The real runners plus misbehaving ones: adding a binding is adding a
# directory with a manifest, nothing else.
mkdir -p "$T/runners"
cp -r runners/crossbind runners/pytorch runners/onnxruntime-node "$T/runners/"
fake() { # fake NAME MODE TRAINS(0|1)
    mkdir -p "$T/runners/$1"
    local train='[]' writes='' native=''
    [ "$3" = 1 ] && train='["lenet1"]' writes=', "writes": ["onnx"]' native=', "native_format": "onnx"'
    cat > "$T/runners/$1/manifest.json" <<JSON
{"format": "crossbind-runner/1", "binding": "$1", "framework": "Fake", "language": "sh",
 "command": ["/bin/sh", "$PWD/tests/fake_runner.sh", "$2"], "train": $train, "infer": ["lenet1"],
 "loads": ["onnx"], "devices": ["cpu"]$writes$native}
JSON
}
fake crashy crash 0; fake hangy hang 0; fake garbage garbage 0; fake partial partial 0; fake badtrainer crash 1
R="--runners $T/runners"

# ---- configuration errors: refused before anything runs ----
cfg() { echo "$2" > "$T/$1.json"; }
cfg unknown-model '{"models": ["lenet7"]}'
cfg unknown-binding '{"models": ["lenet1"], "bindings": ["crossbind", "tensorflow-rust"]}'
cfg unknown-key '{"models": ["lenet1"], "epoch": 3}'
cfg bad-runs '{"models": ["lenet1"], "runs": 9}'
cfg not-json '{"models": ["lenet1"'
expect_error "unknown model named" 'unknown model "lenet7"' "$BIN" study --profile "$T/unknown-model.json" --store "$T/c/s.sqlite" $R
expect_error "unknown binding named" 'unknown binding "tensorflow-rust"' "$BIN" study --profile "$T/unknown-binding.json" --store "$T/c/s.sqlite" $R
expect_error "unknown setting named" 'unknown setting "epoch"' "$BIN" study --profile "$T/unknown-key.json" --store "$T/c/s.sqlite" $R
expect_error "runs out of range" '"runs" must be an integer in \[1, 5\]' "$BIN" study --profile "$T/bad-runs.json" --store "$T/c/s.sqlite" $R
expect_error "malformed configuration" 'not-json' "$BIN" study --profile "$T/not-json.json" --store "$T/c/s.sqlite" $R
expect_error "missing profile file" 'neither quick, paper nor a readable' "$BIN" study --profile "$T/none.json" --store "$T/c/s.sqlite" $R
check "no store was created for refused configurations" test ! -e "$T/c/s.sqlite"
mkdir -p "$T/badrunners/x" && echo '{"format": "crossbind-runner/1", "binding": "x"}' > "$T/badrunners/x/manifest.json"
expect_error "a manifest without a command is refused" 'the manifest has no "framework"' "$BIN" study --profile quick --store "$T/c/s.sqlite" --runners "$T/badrunners"

# ---- stores that are not crossbind stores ----
echo "hello, not a database" > "$T/text.sqlite"
expect_error "a text file is not a store" 'not a crossbind results store' "$BIN" report --store "$T/text.sqlite"
$PY -c "import sqlite3; c = sqlite3.connect('$T/other.sqlite'); c.execute('create table t(x)'); c.commit()"
expect_error "another application's SQLite file" 'another application' "$BIN" results export --store "$T/other.sqlite" --json "$T/x.json"
expect_error "a missing store" 'no such results store' "$BIN" report --store "$T/none.sqlite"

# ---- the tiny study with every real binding, uninterrupted ----
cat > "$T/tiny.json" <<'JSON'
{"models": ["lenet1"], "bindings": ["crossbind", "pytorch", "onnxruntime-node"], "runs": 2, "epochs": 2,
 "limit_train": 512, "limit_test": 256, "threads": 1, "repeat": 2, "timeout_s": 300}
JSON
start=$(date +%s.%N)
expect_ok "the tiny study runs end to end" "$BIN" study --profile "$T/tiny.json" --store "$T/a/study.sqlite" $R
secs=$($PY -c "import time; print(time.time() - $start)")
check "it prints where the report is" grep -q "report: $T/a/report/index.html" "$T/out"
check "progress shows an estimate of the time left" grep -q 'elapsed, about .* left\] infer' "$T/err"
q() { $PY - "$@" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("\n".join("|".join("" if v is None else str(v) for v in row) for row in db.execute(sys.argv[2])))
PY
}
check "every training run complete" test "$(q "$T/a/study.sqlite" "select count(*) from train_run where status='complete'")" = 4
check "an epoch row per run and epoch" test "$(q "$T/a/study.sqlite" "select count(*) from epoch")" = 8
check "7 evaluations per trained model, all ok" test "$(q "$T/a/study.sqlite" "select count(*) from inference where status='ok'")" = 14
check "2 timed passes per evaluation" test "$(q "$T/a/study.sqlite" "select count(*) from inference_pass")" = 28
check "unsupported cells recorded, not run" test "$(q "$T/a/study.sqlite" "select count(*) from inference where status='unsupported' and wall_s = 0")" = 10
check "every supported cell reproduced" test "$(q "$T/a/study.sqlite" "select count(*) from inference where status='ok' and correct = reference_correct and stable = 1")" = 14
check "label agreement measured against the reference" test "$(q "$T/a/study.sqlite" "select count(*) from inference where status='ok' and label_agreement = 1.0")" = 14
check "bindings and versions recorded" test "$(q "$T/a/study.sqlite" "select count(*) from binding where version like '%torch%' or version like '%crossbind%' or version like '%onnxruntime%'")" = 3
check "the study is marked complete" test "$(q "$T/a/study.sqlite" "select status from study")" = complete

# Resuming a complete study repeats nothing.
before=$(q "$T/a/study.sqlite" "select group_concat(finished) from (select finished from inference order by 1)")
expect_ok "rerunning a complete study" "$BIN" study --profile "$T/tiny.json" --store "$T/a/study.sqlite" $R
check "it finds everything in the store" grep -q "18 measurements planned, 18 already in the store, 0 to do" "$T/err"
check "no measurement repeated" test "$(q "$T/a/study.sqlite" "select group_concat(finished) from (select finished from inference order by 1)")" = "$before"

# Exports.
expect_ok "results export --json" "$BIN" results export --store "$T/a/study.sqlite" --json "$T/a/all.json"
check "JSON export holds every row" $PY -c "
import json; d = json.load(open('$T/a/all.json'))
assert len(d['train_run']) == 4 and len(d['epoch']) == 8 and len(d['inference']) == 24 and len(d['inference_pass']) == 28, d.keys()"
expect_ok "results export --csv" "$BIN" results export --store "$T/a/study.sqlite" --csv "$T/a/csv"
check "CSV export: a file per table with a header and the rows" test "$(wc -l < "$T/a/csv/inference_pass.csv")" = 29
expect_error "an unknown study id is refused" 'no study 42 in this store' "$BIN" results export --store "$T/a/study.sqlite" --study 42 --json "$T/a/none.json"
check "and nothing is written for it" test ! -e "$T/a/none.json"
expect_error "export never replaces a device file" 'not a regular file' "$BIN" results export --store "$T/a/study.sqlite" --json /dev/full
check "/dev/full is still a device" test -c /dev/full

# Report tables.
check "report tables written" test -s "$T/a/report/tables/reproduction.csv" -a -s "$T/a/report/report.md"
check "Table 3 lists every binding from its manifest" test "$(tail -n +2 "$T/a/report/tables/supported_features.csv" | wc -l)" = 3
check "the reproduction table says reproduced" grep -q "crossbind,serialization,cpu,reproduced" "$T/a/report/tables/reproduction.csv"
check "DTW row for the binding pair" grep -q "lenet1,cpu,crossbind,pytorch,2," "$T/a/report/tables/dtw.csv"

# ---- SIGKILL at a random point, then the same command ----
kill_at=$($PY -c "import random; print(round(random.uniform(0.2, 0.8) * $secs, 1))")
"$BIN" study --profile "$T/tiny.json" --store "$T/b/study.sqlite" $R >"$T/b.out" 2>"$T/b.err" &
pid=$!
sleep "$kill_at"
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
partial=$(q "$T/b/study.sqlite" "select (select count(*) from train_run) + (select count(*) from inference where status='ok')" 2>/dev/null || echo 0)
echo "    killed after ${kill_at}s of ${secs%.*}s: ${partial:-0} of 18 measurements stored"
# No process may still run with the killed study's files on its command line
# (the bracket keeps this grep from matching its own command line).
check "the kill left no runner behind" bash -c "! grep -qas '$T/b/[s]tudy-files' /proc/[0-9]*/cmdline"
# A reader while the resumed study writes.
"$BIN" study --profile "$T/tiny.json" --store "$T/b/study.sqlite" $R >"$T/b2.out" 2>"$T/b2.err" &
pid=$!
sleep 2
expect_ok "the report can be written while the study runs" "$BIN" report --store "$T/b/study.sqlite" --out "$T/b/live"
wait $pid
check "the resumed study completes" test $? -eq 0
check "it resumed rather than restarted" grep -q "resuming study 1" "$T/b2.err"
# Equal rows apart from timings (and the times the trained models took).
dump() { q "$1" "
select 'train', binding, model, run, device, seed, status, epochs, n_train, n_test, test_correct, round(test_accuracy, 9), round(f1_macro, 9), round(auc_macro, 9) from train_run
union all select 'epoch', binding, model, run, device, epoch, round(train_acc, 9), round(test_acc, 9), round(train_loss, 6), round(test_loss, 6), '', '', '', '' from epoch
union all select 'infer', trainer || '>' || binding, model, run, device, format, load_mode, status, correct, total, reference_correct, stable, round(label_agreement, 9), max_abs_logit_diff < 1e-4 from inference
union all select 'pass', trainer || '>' || binding, model, run, device, format, pass, correct, '', '', '', '', '', '' from inference_pass
order by 1, 2, 3, 4, 5, 6, 7"; }
dump "$T/a/study.sqlite" > "$T/a.rows"
dump "$T/b/study.sqlite" > "$T/b.rows"
check "interrupted + resumed store equals the uninterrupted one (apart from timings)" cmp -s "$T/a.rows" "$T/b.rows"
cmp -s "$T/a.rows" "$T/b.rows" || diff "$T/a.rows" "$T/b.rows" | head -10
check "no duplicated rows" test "$(wc -l < "$T/b.rows")" = "$(wc -l < "$T/a.rows")"

# ---- misbehaving runners: each failure named, the rest goes on ----
cat > "$T/bad.json" <<'JSON'
{"models": ["lenet1"], "bindings": ["crossbind", "crashy", "hangy", "garbage", "partial", "badtrainer"],
 "reference": "crossbind", "runs": 1, "epochs": 1, "limit_train": 256, "limit_test": 128, "threads": 1,
 "repeat": 2, "timeout_s": 5}
JSON
"$BIN" study --profile "$T/bad.json" --store "$T/f/study.sqlite" $R >"$T/out" 2>"$T/err"
rc=$?
check "failures give a non-zero exit" test $rc = 1
check "and say how many failed (4 evaluations, the failed training and its binding's evaluation)" grep -q "6 measurement(s) failed" "$T/err"
check "the crash is named" test "$(q "$T/f/study.sqlite" "select error from inference where binding='crashy'" | grep -c 'crashed (signal 11)')" = 1
check "the hang is killed at the time limit" test "$(q "$T/f/study.sqlite" "select error from inference where binding='hangy'" | grep -c 'timed out after 5 s')" = 1
check "malformed output is refused" test "$(q "$T/f/study.sqlite" "select error from inference where binding='garbage'" | grep -c 'malformed output')" = 1
check "output without the timed passes is refused" test "$(q "$T/f/study.sqlite" "select error from inference where binding='partial'" | grep -c 'malformed output')" = 1
check "a crashing trainer is recorded as a failed run" test "$(q "$T/f/study.sqlite" "select status || ':' || error from train_run where binding='badtrainer'" | grep -c '^failed:the runner crashed')" = 1
check "the good binding's measurements are all there" test "$(q "$T/f/study.sqlite" "select count(*) from inference where binding='crossbind' and status='ok'")" = 3
check "the report shows the failures" grep -q "crashy,serialization,cpu,failed" "$T/f/report/tables/reproduction.csv"
check "the report's Table 3 flags a binding that never worked" grep -q "badtrainer.*declares training, no run completed" "$T/f/report/tables/supported_features.csv"

# ---- runners' answers: every value checked, a bad one is "malformed output" naming the key ----
# Each fake binding answers with one bad value (tests/fake_runner.sh); the
# good ones check that valid answers, a flood of output before the answer
# and non-finite logits (a model's own result) are still measurements.
vmodes_eval="eval-good flood nan-logits correct-above-total wrong-total fractional-correct negative-time null-time
 infinite-time absurd-time short-times accuracy-above-one accuracy-mismatch auc-negative f1-above-one pass-contradicts
 duplicate-key no-json no-logits truncated-logits wrong-shape-logits float64-logits"
vmodes_train="train-good train-correct-above train-wrong-ntest train-wrong-ntrain train-short-epochs train-acc-above-one
 train-negative-time train-duplicate-key train-epoch-number"
vfake() { # vfake DIR NAME TRAINS(0|1) [EXTRA-MANIFEST-KEYS]
    mkdir -p "$1/$2"
    local train='[]' writes=''
    [ "$3" = 1 ] && train='["lenet1"]' writes=', "writes": ["onnx"], "native_format": "onnx"'
    cat > "$1/$2/manifest.json" <<JSON
{"format": "crossbind-runner/1", "binding": "$2", "framework": "Fake", "language": "sh",
 "command": ["/bin/sh", "$PWD/tests/fake_runner.sh", "$2"], "train": $train, "infer": ["lenet1"],
 "loads": ["onnx"], "devices": ["cpu"]$writes${4:-}}
JSON
}
# Groups of 7 fakes beside crossbind (a study takes at most 8 bindings).
all_v=""
for m in $vmodes_eval; do all_v="$all_v e:$m"; done
for m in $vmodes_train; do all_v="$all_v t:$m"; done
all_v="$all_v u:absent"
g=0; n=0; names=""
vstudy() { # runs the study of group $g with the fakes in $names
    local list='"crossbind"'
    for b in $names; do list="$list, \"$b\""; done
    echo "{\"models\": [\"lenet1\"], \"bindings\": [$list], \"reference\": \"crossbind\", \"runs\": 1, \"epochs\": 1,
 \"limit_train\": 256, \"limit_test\": 128, \"threads\": 1, \"repeat\": 2, \"timeout_s\": 120}" > "$T/v$g.json"
    "$BIN" study --profile "$T/v$g.json" --store "$T/v/s$g.sqlite" --work "$T/v/w$g" --runners "$T/vr$g" \
        >"$T/v$g.out" 2>"$T/v$g.err"
}
for item in $all_v; do
    kind=${item%%:*} name=${item#*:}
    if [ $n = 0 ]; then mkdir -p "$T/vr$g"; cp -r runners/crossbind "$T/vr$g/"; fi
    case $kind in
        e) vfake "$T/vr$g" "$name" 0 ;;
        t) vfake "$T/vr$g" "$name" 1 ;;
        u) vfake "$T/vr$g" "$name" 0 ', "version_command": ["/bin/sh", "-c", "echo \"ModuleNotFoundError: No module named fakelib\" >&2; exit 1"], "install": "apt-get install python3-fakelib"' ;;
    esac
    eval "vgroup_$(echo "$name" | tr - _)=$g"
    names="$names $name"; n=$((n + 1))
    if [ $n = 7 ]; then vstudy; g=$((g + 1)); n=0; names=""; fi
done
[ $n -gt 0 ] && vstudy
vrow() { # vrow NAME TABLE: "status|error" of the fake's measurement
    local gi; eval "gi=\$vgroup_$(echo "$1" | tr - _)"
    if [ "$2" = train_run ]; then q "$T/v/s$gi.sqlite" "select status || '|' || coalesce(error, '') from train_run where binding='$1'"
    else q "$T/v/s$gi.sqlite" "select status || '|' || coalesce(error, '') from inference where binding='$1' and format='onnx'"; fi
}
vexpect() { # vexpect NAME TABLE STATUS NEEDLE
    local row; row=$(vrow "$1" "$2")
    local err="${row#*|}"
    if [ "${row%%|*}" = "$3" ] && { [ "$4" = '^$' ] && [ -z "$err" ] || printf '%s\n' "$err" | grep -q -- "$4"; }; then
        echo "ok   $SUITE: runner answer $1: $3 naming $4"; pass=$((pass + 1))
    else
        echo "FAIL $SUITE: runner answer $1: expected $3 naming $4, got: $row"; fail=$((fail + 1))
    fi
}
vexpect eval-good inference ok '^$'
vexpect flood inference ok '^$'
vexpect nan-logits inference ok 'non-finite outputs: 1 of 1280'
vexpect correct-above-total inference "malformed output" '"correct" is 133: expected an integer in \[0, 128\]'
vexpect wrong-total inference "malformed output" '"total" is 129: expected an integer equal to 128'
vexpect fractional-correct inference "malformed output" '"correct" is 64.5'
vexpect negative-time inference "malformed output" '"times_s\[0\]" is -0.5'
vexpect null-time inference "malformed output" '"times_s\[1\]" is null'
vexpect infinite-time inference "malformed output" '"times_s\[0\]" is inf'
vexpect absurd-time inference "malformed output" '"times_s\[0\]" is 1e+09'
vexpect short-times inference "malformed output" '"times_s" is a list of 1: expected a list of 2'
vexpect accuracy-above-one inference "malformed output" '"accuracy" is 1.5'
vexpect accuracy-mismatch inference "malformed output" '"accuracy" is 0.9 but "correct" / "total" is 64 / 128'
vexpect auc-negative inference "malformed output" '"auc_macro" is -0.1'
vexpect f1-above-one inference "malformed output" '"f1_macro" is 2'
vexpect pass-contradicts inference "malformed output" '"correct_per_pass"\[1\] (the last pass) is 63'
vexpect duplicate-key inference "malformed output" 'the key "correct" appears twice'
vexpect no-json inference "malformed output" 'printed nothing on stdout'
vexpect no-logits inference "malformed output" 'no logits file'
vexpect truncated-logits inference "malformed output" 'the logits file is not a readable .npy: .*truncated'
vexpect wrong-shape-logits inference "malformed output" 'logits file holds float32 \[128, 11\]'
vexpect float64-logits inference "malformed output" 'another type than float32'
vexpect train-good train_run complete '^$'
vexpect train-correct-above train_run "malformed output" '"test_correct" is 129'
vexpect train-wrong-ntest train_run "malformed output" '"n_test" is 135: expected an integer equal to 128'
vexpect train-wrong-ntrain train_run "malformed output" '"n_train" is 512: expected an integer equal to 256'
vexpect train-short-epochs train_run "malformed output" '"epochs" is a list of 0: expected a list of 1'
vexpect train-acc-above-one train_run "malformed output" '"epochs\[0\].test_acc" is 1.2'
vexpect train-negative-time train_run "malformed output" '"training_time_s" is -3'
vexpect train-duplicate-key train_run "malformed output" 'the key "test_correct" appears twice'
vexpect train-epoch-number train_run "malformed output" '"epochs\[0\].epoch" is 5: expected an integer equal to 1'
vexpect absent inference unavailable 'No module named fakelib.*install it with: apt-get install python3-fakelib'
check "a malformed answer stores none of its values" test "$(q "$T/v/s0.sqlite" "select count(*) from inference where status='malformed output' and (correct is not null or total is not null or accuracy is not null)") $(q "$T/v/s0.sqlite" "select count(*) from inference_pass where binding in ('correct-above-total', 'wrong-total')")" = "0 0"
check "a malformed training stores no epochs" test "$(q "$T/v/s3.sqlite" "select count(*) from epoch where binding<>'crossbind' and binding<>'train-good'")" = 0
check "the unavailable binding is named once at the start" grep -q "binding absent is unavailable" "$T/v$g.err"

# ---- names that would leave the work directory are refused where they are read ----
for bad in '../../x' 'a/b' '..' '.hidden' '' 'x y' "$(printf 'a%.0s' $(seq 40))"; do
    rm -rf "$T/nr" && mkdir -p "$T/nr/x" && cp -r runners/crossbind "$T/nr/"
    cat > "$T/nr/x/manifest.json" <<JSON
{"format": "crossbind-runner/1", "binding": "$bad", "framework": "Fake", "language": "sh",
 "command": ["/bin/sh", "-c", "touch $T/nr-ran"], "train": [], "infer": ["lenet1"], "loads": ["onnx"], "devices": ["cpu"]}
JSON
    needle='"binding" holds .* which is not a valid name'
    [ -z "$bad" ] || [ ${#bad} -gt 31 ] && needle='"binding" must be a non-empty string of under 32 characters'
    expect_error "a manifest with binding \"$bad\" is refused, naming the manifest" "$T/nr/x/manifest.json: $needle" \
        "$BIN" study --profile "$T/tiny.json" --store "$T/nr/s.sqlite" --work "$T/nr/w" --runners "$T/nr"
done
check "and nothing ran or was created for it" test ! -e "$T/nr-ran" -a ! -e "$T/nr/s.sqlite" -a ! -e "$T/nr/w"
rm -rf "$T/nr" && mkdir -p "$T/nr/x" && cp -r runners/crossbind "$T/nr/"
sed -e 's/"binding": "[^"]*"/"binding": "x"/' -e 's/"train": \[\]/"train": ["..\/..\/lenet1"]/' "$T/vr0/eval-good/manifest.json" > "$T/nr/x/manifest.json"
expect_error "a model name that is a path is refused in a manifest" '"train" holds "../../lenet1"' \
    "$BIN" study --profile "$T/tiny.json" --store "$T/nr/s.sqlite" --runners "$T/nr"
cfg bad-name '{"models": ["lenet1"], "bindings": ["crossbind", "../pytorch"]}'
expect_error "a configuration's binding that is a path is refused" '"bindings" item 2 must be a name' \
    "$BIN" study --profile "$T/bad-name.json" --store "$T/c/s.sqlite" $R
cfg dup-key '{"models": ["lenet1"], "runs": 1, "runs": 2}'
expect_error "a configuration with a setting twice is refused" 'the setting "runs" appears twice' \
    "$BIN" study --profile "$T/dup-key.json" --store "$T/c/s.sqlite" $R

# ---- clearing an earlier attempt never follows a link out of the work directory ----
mkdir -p "$T/outside/lenet1/run1-cpu" "$T/lw/train"
echo keep > "$T/outside/lenet1/run1-cpu/keep.txt"
ln -s "$T/outside" "$T/lw/train/crossbind"
cat > "$T/one.json" <<'JSON'
{"models": ["lenet1"], "bindings": ["crossbind"], "reference": "crossbind", "runs": 1, "epochs": 1,
 "limit_train": 256, "limit_test": 128, "threads": 1, "repeat": 1, "timeout_s": 120}
JSON
"$BIN" study --profile "$T/one.json" --store "$T/lw/s.sqlite" --work "$T/lw" $R >"$T/out" 2>"$T/err"
check "a link planted on a task's path is not followed" test -e "$T/outside/lenet1/run1-cpu/keep.txt"
check "and the training is recorded as failed, saying why" test "$(q "$T/lw/s.sqlite" "select status from train_run where error like '%a link is never followed%'")" = failed
rm "$T/lw/train/crossbind"
mkdir -p "$T/lw/train/crossbind/lenet1/run1-cpu/deep/er"
ln -s "$T/outside" "$T/lw/train/crossbind/lenet1/run1-cpu/deep/er/link"
expect_ok "with the link gone the same command trains" "$BIN" study --profile "$T/one.json" --store "$T/lw/s.sqlite" --work "$T/lw" $R
check "a link inside the tree is removed as a link, what it points to is kept" test -e "$T/outside/lenet1/run1-cpu/keep.txt" -a ! -e "$T/lw/train/crossbind/lenet1/run1-cpu/deep"
check "the training completed after clearing" test "$(q "$T/lw/s.sqlite" "select status from train_run")" = complete

# ---- a full disk: stop with a clear message, keep what was stored ----
# The store on a 256 KiB tmpfs fills after a few measurements (needs root
# to mount; CI runs as root; elsewhere the test is skipped and says so).
if [ "$(id -u)" = 0 ] && mkdir -p "$T/small" && mount -t tmpfs -o size=256k tmpfs "$T/small" 2>/dev/null; then
    "$BIN" study --profile "$T/tiny.json" --store "$T/small/study.sqlite" --work "$T/small-work" $R >"$T/out" 2>"$T/err"
    rc=$?
    check "a full disk stops the study with an error" test $rc = 1
    check "the message says the disk is full and nothing stored is lost" grep -q "disk is full; everything stored before is kept" "$T/err"
    kept=$(q "$T/small/study.sqlite" "select count(*) from train_run")
    check "the measurements stored before are readable" test "${kept:-0}" -ge 1
    expect_ok "and the report still works on them" "$BIN" report --store "$T/small/study.sqlite" --out "$T/small-report"
    mount -o remount,size=8m "$T/small"
    expect_ok "with room again, the same command finishes the study" "$BIN" study --profile "$T/tiny.json" --store "$T/small/study.sqlite" --work "$T/small-work" --report "$T/small-report" $R
    check "nothing lost or duplicated after the full disk" test "$(dump "$T/small/study.sqlite" | wc -l)" = "$(wc -l < "$T/a.rows")"
    umount "$T/small"
else
    # Not counted either way: a machine that forbids the mount cannot run it.
    echo "skip $SUITE: the full-disk test (mounting a 256 KiB tmpfs is not permitted here)"
fi

# ---- a store from a newer crossbind ----
cp "$T/a/study.sqlite" "$T/newer.sqlite"
$PY -c "import sqlite3; c = sqlite3.connect('$T/newer.sqlite'); c.execute('pragma user_version=99'); c.commit()"
expect_error "a newer schema is refused" 'written by a newer crossbind' "$BIN" report --store "$T/newer.sqlite"

# ---- the report in headless Chromium ----
cat > "$T/expect.json" <<'JSON'
{"figures": {"curves-lenet1-cpu": 2, "reproduction": 6, "training-time-lenet1-cpu": 2, "inference-time-lenet1-cpu": 3},
 "min_figures": 4, "bindings": ["crossbind", "pytorch", "onnxruntime-node"]}
JSON
if node tests/browser/report_test.js "$T/a/report/index.html" "$T/expect.json" > "$T/browser.out" 2>&1; then
    echo "ok   $SUITE: the report renders in headless Chromium ($(tail -1 "$T/browser.out"))"; pass=$((pass + 1))
else
    echo "FAIL $SUITE: the report in headless Chromium"; sed 's/^/    /' "$T/browser.out" | tail -15; fail=$((fail + 1))
fi
echo '{"figures": {"reproduction": 12}, "min_figures": 2, "bindings": ["crashy", "hangy"]}' > "$T/expect-f.json"
if node tests/browser/report_test.js "$T/f/report/index.html" "$T/expect-f.json" > "$T/browser.out" 2>&1; then
    echo "ok   $SUITE: the failures' report renders too"; pass=$((pass + 1))
else
    echo "FAIL $SUITE: the failures' report in Chromium"; sed 's/^/    /' "$T/browser.out" | tail -15; fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
