#!/bin/bash
# crossbind study, report and results: the experiment on a tiny profile
# with every real binding, misbehaving runners (crash, hang, malformed
# output, failed training), bad, damaged and altered stores, two studies on
# one store (refused or --wait), read-only stores, a full disk, resuming without
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
fake cannot cannot 0
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

# Rows of a query, "|"-separated (Python's sqlite3, independent of crossbind).
q() { $PY - "$@" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("\n".join("|".join("" if v is None else str(v) for v in row) for row in db.execute(sys.argv[2])))
PY
}

# ---- one study at a time per store and per work directory ----
# A binding that answers slowly (crossbind's own runner after a pause), so
# that a study holds its store long enough for others to try it.
mkdir -p "$T/runners/slowbind"
cat > "$T/runners/slowbind/manifest.json" <<'JSON'
{"format": "crossbind-runner/1", "binding": "slowbind", "framework": "crossbind", "language": "C",
 "command": ["/bin/sh", "-c", "sleep 2; exec \"$0\" \"$@\"", "{crossbind}"], "train": ["lenet1"], "infer": ["lenet1"],
 "writes": ["safetensors", "onnx"], "native_format": "safetensors", "loads": ["safetensors", "onnx"], "devices": ["cpu"]}
JSON
cat > "$T/slow.json" <<'JSON'
{"models": ["lenet1"], "bindings": ["slowbind"], "reference": "slowbind", "runs": 1, "epochs": 1,
 "limit_train": 256, "limit_test": 128, "threads": 1, "repeat": 1, "timeout_s": 120}
JSON
# Until the study writing STORE has recorded itself in STORE.lock (at most 30 s).
lock_recorded() { for _ in $(seq 300); do grep -qs '^study [1-9]' "$1.lock" && return 0; sleep 0.1; done; return 1; }
HOST=$(hostname)
"$BIN" study --profile "$T/slow.json" --store "$T/l/study.sqlite" $R --no-report >"$T/l.out" 2>"$T/l.err" &
first=$!
lock_recorded "$T/l/study.sqlite"
expect_error "a second study on the same store refuses, naming the holder" \
    "in use by another crossbind study (pid $first on host $HOST, since 20[0-9-]*T[0-9:]*Z, study 1; lock file" \
    "$BIN" study --profile "$T/slow.json" --store "$T/l/study.sqlite" $R
check "and says how to wait for it" grep -q "add --wait" "$T/err"
check "as busy, not as an i/o error" bash -c "grep -q 'add --wait to start when it has (busy)\$' '$T/err' && ! grep -q 'i/o error' '$T/err'"
check "the refused study touched nothing (no progress, no planning)" bash -c "! grep -q '^\[study' '$T/err'"
expect_ok "a report while the study runs" "$BIN" report --store "$T/l/study.sqlite" --out "$T/l/live"
check "shows it running, with its process" grep -q "status running (pid $first on host $HOST" "$T/l/live/report.md"
expect_ok "with --wait, a second study waits for the first, then goes on" \
    "$BIN" study --profile "$T/slow.json" --store "$T/l/study.sqlite" $R --no-report --wait
check "it said whom it waited for" grep -q "waiting for the results store $T/l/study.sqlite: in use by another crossbind study (pid $first" "$T/err"
check "it started after the first had finished everything" grep -q "3 measurements planned, 3 already in the store, 0 to do" "$T/err"
wait $first
check "the first study was not disturbed" test $? = 0
check "each measurement stored once" test "$(q "$T/l/study.sqlite" "select (select count(*) from train_run where status='complete') || ',' || (select count(*) from inference where status='ok') || ',' || (select count(*) from study)")" = "1,2,1"
expect_ok "--help documents --wait" "$BIN" study --help
check "(the --help text)" grep -q -- "--wait" "$T/out"

# Two stores sharing one work directory: the directory is locked too.
"$BIN" study --profile "$T/slow.json" --store "$T/l2/study.sqlite" --work "$T/lw" $R --no-report >/dev/null 2>&1 &
first=$!
lock_recorded "$T/l2/study.sqlite"
expect_error "another store's study in the same work directory refuses" \
    "the work directory $T/lw is in use by another crossbind study (pid $first" \
    "$BIN" study --profile "$T/slow.json" --store "$T/l3/study.sqlite" --work "$T/lw" $R
# A killed study holds nothing: its status reads "interrupted", not "running" forever.
kill -9 $first; wait $first 2>/dev/null
expect_ok "the report of a killed study" "$BIN" report --store "$T/l2/study.sqlite" --out "$T/l2/r"
check "shows it interrupted, not running" grep -q "status interrupted (no crossbind study holds the store" "$T/l2/r/report.md"
check "in the page too" grep -q "status <b>interrupted" "$T/l2/r/index.html"
expect_ok "and the same command resumes it at once (the lock died with its holder)" \
    "$BIN" study --profile "$T/slow.json" --store "$T/l2/study.sqlite" --work "$T/lw" $R --no-report

# Many studies creating one new store at once: one runs, the others refuse
# cleanly naming it; with --wait all finish, one after the other.
for k in 1 2 3 4 5 6; do
    "$BIN" study --profile "$T/slow.json" --store "$T/n/study.sqlite" $R --no-report >"$T/n$k.out" 2>"$T/n$k.err" &
done
ran=0 refused=0 other=0
for k in 1 2 3 4 5 6; do wait -n; done
for k in 1 2 3 4 5 6; do
    if grep -q "^store: " "$T/n$k.out"; then ran=$((ran + 1))
    elif grep -q "error: the results store $T/n/study.sqlite is in use by another crossbind study (pid" "$T/n$k.err"; then refused=$((refused + 1))
    else other=$((other + 1)); sed 's/^/    /' "$T/n$k.err" | tail -3; fi
done
check "6 studies creating one store: one ran, 5 refused naming it ($ran, $refused, $other other)" test "$ran,$refused,$other" = "1,5,0"
for k in 1 2 3 4; do
    "$BIN" study --profile "$T/slow.json" --store "$T/w/study.sqlite" $R --no-report --wait >"$T/w$k.out" 2>"$T/w$k.err" &
done
for k in 1 2 3 4; do wait -n; done
check "4 studies creating one store with --wait: all finish" test "$(cat "$T"/w?.out | grep -c '^store: ')" = 4
check "one of them measured, the others found it done" test "$(cat "$T"/w?.err | grep -c ' 0 to do')" = 3
check "the store's schema and rows are whole" test "$(q "$T/w/study.sqlite" "pragma integrity_check")|$(q "$T/w/study.sqlite" "select count(*) from inference")" = "ok|2"

# ---- damaged and altered stores: refused before anything is written ----
# Each variant of a sound store: report, export and study exit non-zero with
# a message naming the problem, and the file's bytes are unchanged.
GOOD="$T/l/study.sqlite"
damaged() { # damaged NAME NEEDLE: $T/dmg/s.sqlite prepared by the caller
    local name="$1" needle="$2" before after
    before=$(sha256sum < "$T/dmg/s.sqlite")
    expect_error "$name: report refuses" "$needle" "$BIN" report --store "$T/dmg/s.sqlite" --out "$T/dmg/r"
    check "$name: and writes no report" test ! -e "$T/dmg/r/index.html"
    expect_error "$name: results export refuses" "$needle" "$BIN" results export --store "$T/dmg/s.sqlite" --json "$T/dmg/x.json"
    expect_error "$name: a study refuses" "$needle" "$BIN" study --profile "$T/slow.json" --store "$T/dmg/s.sqlite" $R
    after=$(sha256sum < "$T/dmg/s.sqlite")
    check "$name: the store's bytes are unchanged" test "$before" = "$after"
}
fresh() { rm -rf "$T/dmg"; mkdir -p "$T/dmg"; cp "$GOOD" "$T/dmg/s.sqlite"; }
sql() { $PY -c "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()" "$T/dmg/s.sqlite" "$1"; }
size=$(stat -c %s "$GOOD")
fresh; truncate -s $((size * 2 / 3)) "$T/dmg/s.sqlite"
damaged "a truncated store" "the store is damaged"
fresh; root=$(q "$GOOD" "select rootpage from sqlite_master where name='train_run'")
printf '\377\377\377\377\377\377\377\377' | dd of="$T/dmg/s.sqlite" bs=1 seek=$(( (root - 1) * 4096 )) conv=notrunc 2>/dev/null
damaged "garbage over a table's page" "the store is damaged (unreadable: the table(s) train_run"
fresh; head -c 6000 /dev/urandom | dd of="$T/dmg/s.sqlite" bs=1 seek=$((size / 3)) conv=notrunc 2>/dev/null
damaged "random bytes inside the file" "the store is damaged"
fresh; sql "drop table epoch"
damaged "a dropped table" "the table epoch is missing"
fresh; sql "alter table inference drop column stable"
damaged "a missing column" "the table inference has no column stable"
fresh; sql "alter table train_run add column note text"
damaged "an added column" "the table train_run has a column note that crossbind does not define"
fresh; sql "create table t2 as select * from train_run; drop table train_run; alter table t2 rename to train_run"
damaged "a table rebuilt without its key" "damaged or altered: the column train_run.study_id"
fresh; sql "create table s2(id integer primary key, profile text not null, config text not null, created text not null, machine text, status text not null default 'running', finished text, data text, wall_s real); insert into s2 select * from study; drop table study; alter table s2 rename to study"
damaged "a table without its uniqueness constraint" "the table study lacks a key or uniqueness constraint"
fresh; sql "pragma application_id=1234"
damaged "a wrong application_id" "another application"
fresh; printf 'SQLite format 2\0' | dd of="$T/dmg/s.sqlite" bs=1 seek=0 conv=notrunc 2>/dev/null
damaged "a damaged header" "not a crossbind results store"

# ---- reading a store nobody may write: report and export open it read-only ----
# Root ignores permissions, so the readers run as nobody (setpriv), from a
# copy of the binary that nobody may execute; without root, as this user.
RO="$T/ro"
mkdir -p "$RO/store" "$RO/out" "$RO/bin"
cp "$BIN" "$RO/bin/crossbind"
as_reader=""
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    as_reader="setpriv --reuid=nobody --regid=nogroup --clear-groups"
    chmod 755 "$T" "$RO" "$RO/bin"; chown nobody "$RO/out"
fi
if [ "$(id -u)" != 0 ] || [ -n "$as_reader" ]; then
    cp "$GOOD" "$RO/store/study.sqlite"
    chmod 444 "$RO/store/study.sqlite"; chmod 555 "$RO/store"
    before=$(sha256sum < "$RO/store/study.sqlite")
    expect_ok "report of a store in a read-only directory" $as_reader "$RO/bin/crossbind" report --store "$RO/store/study.sqlite" --out "$RO/out/r"
    check "(the report is complete)" grep -q "slowbind" "$RO/out/r/tables/supported_features.csv"
    expect_ok "results export of it" $as_reader "$RO/bin/crossbind" results export --store "$RO/store/study.sqlite" --json "$RO/out/x.json"
    check "(every row exported)" $PY -c "import json; d = json.load(open('$RO/out/x.json')); assert len(d['inference']) == 2"
    check "nothing written beside it, the store unchanged" test "$(ls -A "$RO/store")|$(sha256sum < "$RO/store/study.sqlite")" = "study.sqlite|$before"
    # A store whose write-ahead log holds changes (its writer died): read with them.
    chmod 755 "$RO/store"; chmod 644 "$RO/store/study.sqlite"
    $PY - "$RO/store/study.sqlite" <<'PY'
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("pragma wal_autocheckpoint=0")
c.execute("insert into study(profile, config, created, status) values('late', '{\"late\": 1}', 'now', 'running')")
os._exit(0)  # no checkpoint: the row lives only in study.sqlite-wal
PY
    chmod 444 "$RO/store"/*; chmod 555 "$RO/store"
    expect_ok "export of a read-only store with a pending log" $as_reader "$RO/bin/crossbind" results export --store "$RO/store/study.sqlite" --json "$RO/out/y.json"
    check "(the log's rows included)" grep -q '"late"' "$RO/out/y.json"
    expect_ok "report of the log's study" $as_reader "$RO/bin/crossbind" report --store "$RO/store/study.sqlite" --out "$RO/out/r2"
    check "(a running study without a holder reads interrupted)" grep -q "status interrupted" "$RO/out/r2/report.md"
    chmod -R u+w "$RO"
else
    echo "skip $SUITE: the read-only store tests (as root, they need setpriv to read as nobody)"
fi

# ---- the tiny study with every real binding, uninterrupted ----
cat > "$T/tiny.json" <<'JSON'
{"models": ["lenet1"], "bindings": ["crossbind", "pytorch", "onnxruntime-node"], "runs": 2, "epochs": 2,
 "limit_train": 512, "limit_test": 256, "threads": 1, "repeat": 2, "timeout_s": 300, "init": "shared"}
JSON
start=$(date +%s.%N)
expect_ok "the tiny study runs end to end" "$BIN" study --profile "$T/tiny.json" --store "$T/a/study.sqlite" $R
secs=$($PY -c "import time; print(time.time() - $start)")
check "it prints where the report is" grep -q "report: $T/a/report/index.html" "$T/out"
check "progress shows an estimate of the time left" grep -q 'elapsed, about .* left\] infer' "$T/err"
check "every training run complete" test "$(q "$T/a/study.sqlite" "select count(*) from train_run where status='complete'")" = 4
check "an epoch row per run and epoch" test "$(q "$T/a/study.sqlite" "select count(*) from epoch")" = 8
# Every binding here is alone in its framework, so each loads the models of both
# trainers: PyTorch's (the reference: 7 evaluations per model) and crossbind's
# (its framework's default: 6, its own safetensors being the logit reference).
check "7 + 6 evaluations per run, all ok" test "$(q "$T/a/study.sqlite" "select count(*) from inference where status='ok'")" = 26
check "crossbind's models evaluated by every binding" test "$(q "$T/a/study.sqlite" "select group_concat(distinct binding) from (select binding from inference where trainer='crossbind' and status='ok' order by 1)")" = "crossbind,onnxruntime-node,pytorch"
check "2 timed passes per evaluation" test "$(q "$T/a/study.sqlite" "select count(*) from inference_pass")" = 52
check "unsupported cells recorded, not run" test "$(q "$T/a/study.sqlite" "select count(*) from inference where status='unsupported' and wall_s = 0")" = 16
check "every supported cell reproduced" test "$(q "$T/a/study.sqlite" "select count(*) from inference where status='ok' and correct = reference_correct and stable = 1")" = 26
check "label agreement measured against the reference" test "$(q "$T/a/study.sqlite" "select count(*) from inference where status='ok' and label_agreement = 1.0")" = 26
check "bindings and versions recorded" test "$(q "$T/a/study.sqlite" "select count(*) from binding where version like '%torch%' or version like '%crossbind%' or version like '%onnxruntime%'")" = 3
check "the study is marked complete" test "$(q "$T/a/study.sqlite" "select status from study")" = complete

# Resuming a complete study repeats nothing.
before=$(q "$T/a/study.sqlite" "select group_concat(finished) from (select finished from inference order by 1)")
expect_ok "rerunning a complete study" "$BIN" study --profile "$T/tiny.json" --store "$T/a/study.sqlite" $R
check "it finds everything in the store" grep -q "30 measurements planned, 30 already in the store, 0 to do" "$T/err"
check "no measurement repeated" test "$(q "$T/a/study.sqlite" "select group_concat(finished) from (select finished from inference order by 1)")" = "$before"

# Exports.
expect_ok "results export --json" "$BIN" results export --store "$T/a/study.sqlite" --json "$T/a/all.json"
check "JSON export holds every row" $PY -c "
import json; d = json.load(open('$T/a/all.json'))
assert len(d['train_run']) == 4 and len(d['epoch']) == 8 and len(d['inference']) == 42 and len(d['inference_pass']) == 52, d.keys()"
expect_ok "results export --csv" "$BIN" results export --store "$T/a/study.sqlite" --csv "$T/a/csv"
check "CSV export: a file per table with a header and the rows" test "$(wc -l < "$T/a/csv/inference_pass.csv")" = 53
expect_error "an unknown study id is refused" 'no study 42 in this store' "$BIN" results export --store "$T/a/study.sqlite" --study 42 --json "$T/a/none.json"
check "and nothing is written for it" test ! -e "$T/a/none.json"
expect_error "export never replaces a device file" 'not a regular file' "$BIN" results export --store "$T/a/study.sqlite" --json /dev/full
check "/dev/full is still a device" test -c /dev/full

# Report tables.
check "report tables written" test -s "$T/a/report/tables/reproduction.csv" -a -s "$T/a/report/report.md"
check "Table 3 lists every binding from its manifest" test "$(tail -n +2 "$T/a/report/tables/supported_features.csv" | wc -l)" = 3
check "the reproduction table says reproduced" grep -q "crossbind,serialization,cpu,reproduced" "$T/a/report/tables/reproduction.csv"
check "the 16 evaluations the manifests rule out are grouped by binding and format, not listed among failures" $PY -c "
import csv
g = list(csv.DictReader(open('$T/a/report/tables/declared_unsupported.csv')))
f = list(csv.DictReader(open('$T/a/report/tables/failures.csv')))
assert sum(int(r['evaluations']) for r in g) == 16 and 0 < len(g) < 16 and not f, (g, f)
assert all('its manifest does not list' in r['reason'] for r in g), g"
check "DTW row for the binding pair (across frameworks: each is alone in its framework)" \
    grep -q "^across frameworks,lenet1,cpu,crossbind,pytorch,2," "$T/a/report/tables/dtw.csv"
# Shared initial weights: PyTorch's (the reference binding, trained first) for every binding.
check "one shared initial-weights file per run, from the reference binding" \
    test "$(q "$T/a/study.sqlite" "select group_concat(run || ':' || source || ':' || length(sha256), ',') from init_weights order by run")" = "1:pytorch:64,2:pytorch:64"
check "each file is where the store says, with its SHA-256" $PY - "$T/a/study.sqlite" <<'PY'
import hashlib, sqlite3, sys
for path, sha in sqlite3.connect(sys.argv[1]).execute("select path, sha256 from init_weights"):
    assert hashlib.sha256(open(path, "rb").read()).hexdigest() == sha, path
PY
# crossbind saves the weights it starts from as init.safetensors: the shared tensors exactly.
same_tensors() { $PY - "$@" <<'PY'
import json, struct, sys
def tensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    return {k: (v["dtype"], v["shape"], b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in h.items() if k != "__metadata__"}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
assert a and a == b, (sorted(a), sorted(b))
PY
}
for run in 1 2; do
    check "crossbind's run $run started from PyTorch's initial weights (--init), tensor for tensor" \
        same_tensors "$(q "$T/a/study.sqlite" "select path from init_weights where run=$run")" "$T/a/study-files/train/crossbind/lenet1/run$run-cpu/init.safetensors"
done
check "the report says the initial weights were shared, and lists the files" \
    grep -q "^Initial weights: shared" "$T/a/report/report.md"
check "(the initial weights' table)" test "$(tail -n +2 "$T/a/report/tables/initial_weights.csv" | grep -c ',pytorch,cpu,')" = 2

# ---- SIGKILL at a random point, then the same command ----
kill_at=$($PY -c "import random; print(round(random.uniform(0.2, 0.8) * $secs, 1))")
"$BIN" study --profile "$T/tiny.json" --store "$T/b/study.sqlite" $R >"$T/b.out" 2>"$T/b.err" &
pid=$!
sleep "$kill_at"
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
partial=$(q "$T/b/study.sqlite" "select (select count(*) from train_run) + (select count(*) from inference where status='ok')" 2>/dev/null || echo 0)
echo "    killed after ${kill_at}s of ${secs%.*}s: ${partial:-0} of 30 measurements stored"
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
{"models": ["lenet1"], "bindings": ["crossbind", "crashy", "hangy", "garbage", "partial", "badtrainer", "cannot"],
 "reference": "crossbind", "runs": 1, "epochs": 1, "limit_train": 256, "limit_test": 128, "threads": 1,
 "repeat": 2, "timeout_s": 5}
JSON
"$BIN" study --profile "$T/bad.json" --store "$T/f/study.sqlite" $R >"$T/out" 2>"$T/err"
rc=$?
check "failures give a non-zero exit" test $rc = 1
# 4 evaluations of crossbind's model, the failed training and its binding's
# evaluation, and the 7 evaluations of the model badtrainer (Fake's default)
# failed to train: its own, the 5 others of Fake, and crossbind's. The binding
# that cannot evaluate crossbind's file (exit 3) is not a failure.
check "and say how many failed (4 evaluations, the failed training and its binding's evaluation, 7 evaluations of the model it lacks)" grep -q "13 measurement(s) failed" "$T/err"
check "the evaluations of the untrained model say why" test "$(q "$T/f/study.sqlite" "select count(*) from inference where trainer='badtrainer' and error like 'no trained model: badtrainer''s training of lenet1 run 1 failed'")" = 7
check "a binding that cannot evaluate a file (exit 3) is stored as unsupported with its words" test "$(q "$T/f/study.sqlite" "select status || '|' || error from inference where binding='cannot' and trainer='crossbind' and format='onnx'")" = "unsupported|the binding cannot evaluate this file: fake runner: operator Frobnicate is not implemented here"
check "the crash is named" test "$(q "$T/f/study.sqlite" "select error from inference where binding='crashy'" | grep -c 'crashed (signal 11)')" = 1
check "the hang is killed at the time limit" test "$(q "$T/f/study.sqlite" "select error from inference where binding='hangy'" | grep -c 'timed out after 5 s')" = 1
check "malformed output is refused" test "$(q "$T/f/study.sqlite" "select error from inference where binding='garbage'" | grep -c 'malformed output')" = 1
check "output without the timed passes is refused" test "$(q "$T/f/study.sqlite" "select error from inference where binding='partial'" | grep -c 'malformed output')" = 1
check "a crashing trainer is recorded as a failed run" test "$(q "$T/f/study.sqlite" "select status || ':' || error from train_run where binding='badtrainer'" | grep -c '^failed:the runner crashed')" = 1
check "the good binding's measurements are all there" test "$(q "$T/f/study.sqlite" "select count(*) from inference where binding='crossbind' and status='ok'")" = 3
check "the report shows the failures" grep -q "crashy,serialization,cpu,failed" "$T/f/report/tables/reproduction.csv"
check "a binding's refusal when it ran keeps its own row among the failures" \
    grep -q "^evaluation,cannot,.*Frobnicate" "$T/f/report/tables/failures.csv"
check "the report's Table 3 flags a binding that never worked" grep -q "badtrainer.*declares training, no run completed" "$T/f/report/tables/supported_features.csv"

# ---- frameworks: each compared within itself against its default binding ----
# Fake bindings of two frameworks (Alpha: three, Beta: two) beside crossbind
# (alone in its framework), and an Alpha binding that cannot be installed
# here (unavailable.json): defaults from the manifests or the configuration,
# one report section per framework, shared initial weights.
FW="$T/fw"
mkdir -p "$FW"
sed 's/"loads": \["pt", "safetensors", "onnx"\]/"loads": ["pt", "onnx"]/' runners/crossbind/manifest.json > "$T/cb-manifest.json"
mkdir -p "$FW/crossbind" && cp "$T/cb-manifest.json" "$FW/crossbind/manifest.json"
ffake() { # ffake NAME FRAMEWORK MODE [EXTRA-MANIFEST-KEYS]
    mkdir -p "$FW/$1"
    cat > "$FW/$1/manifest.json" <<JSON
{"format": "crossbind-runner/1", "binding": "$1", "framework": "$2", "language": "sh",
 "command": ["/bin/sh", "$PWD/tests/fake_runner.sh", "$3"], "train": ["lenet1"], "infer": ["lenet1"],
 "writes": ["safetensors"], "native_format": "safetensors", "loads": ["safetensors"], "devices": ["cpu"]${4:-}}
JSON
}
ffake alpha-py Alpha train-good ', "framework_default": true, "library": "libalpha 2.0 <shared> | `x`"'
ffake alpha-c Alpha train-slow ', "library": "libalpha 2.0, the same build"'
ffake alpha-j Alpha train-slow
ffake beta-one Beta train-good ', "framework_default": true'
ffake beta-two Beta train-slow
mkdir -p "$FW/alpha-cs"
AREASON='Alpha# needs an SDK these machines lack <b>|</b> `no` [x](javascript:alert(1))'
cat > "$FW/alpha-cs/unavailable.json" <<JSON
{"binding": "alpha-cs", "framework": "Alpha", "language": "C#", "library": "libalpha bundled by its package",
 "reason": "$(printf '%s' "$AREASON" | sed 's/"/\\"/g')"}
JSON
# The initial weights a fake starts from when it is the source: crossbind's of LeNet-1.
"$BIN" train lenet1 --epochs 1 --limit-train 128 --limit-test 128 --threads 1 --out "$T/fw-init" --quiet >/dev/null 2>&1
export CB_FAKE_INIT="$T/fw-init/init.safetensors"
cat > "$T/fw.json" <<'JSON'
{"models": ["lenet1"], "bindings": ["crossbind", "alpha-py", "alpha-c", "alpha-j", "beta-one", "beta-two"],
 "reference": "alpha-py", "init": "shared", "runs": 3, "epochs": 1, "limit_train": 256, "limit_test": 128,
 "threads": 1, "repeat": 2, "timeout_s": 120}
JSON
expect_ok "a study of two frameworks' fakes, crossbind and an uninstallable binding" \
    "$BIN" study --profile "$T/fw.json" --store "$T/fws/s.sqlite" --work "$T/fws/w" --runners "$FW"
FR="$T/fws/report"
check "the uninstallable binding is named at the start" grep -q "binding alpha-cs (Alpha) cannot be installed on this machine" "$T/err"
check "it is never run: no training or evaluation of it" test "$(q "$T/fws/s.sqlite" "select (select count(*) from train_run where binding='alpha-cs') + (select count(*) from inference where binding='alpha-cs')")" = 0
check "it is recorded with its unavailable.json" test "$(q "$T/fws/s.sqlite" "select framework || '|' || language || '|' || version from binding where name='alpha-cs'")" = "Alpha|C#|not installable on this machine"
check "the report has a section per framework in the study's order, then across frameworks" \
    test "$(grep -E '^## (Framework|Across)' "$FR/report.md" | tr '\n' '/')" = "## Framework crossbind/## Framework Alpha/## Framework Beta/## Across frameworks/"
check "the manifests' defaults: alpha-py and beta-one" \
    test "$(grep -c 'default of \(Alpha\|Beta\) (its manifest says' "$FR/tables/bindings.csv")" = 2
check "the others are compared with their framework's default" \
    bash -c "grep -q '^alpha-c,Alpha,sh,\"compared with alpha-py, the default of Alpha\"' '$FR/tables/bindings.csv' && grep -q '^beta-two,Beta,sh,\"compared with beta-one' '$FR/tables/bindings.csv'"
check "crossbind, alone in its framework, is compared across frameworks" \
    grep -q '^crossbind,crossbind,C,alone in its framework' "$FR/tables/bindings.csv"
check "DTW within Alpha and Beta against the default, crossbind against each default, Beta's default against Alpha's, nothing else" \
    test "$(tail -n +2 "$FR/tables/dtw.csv" | cut -d, -f1,4,5 | tr '\n' '/')" = "Alpha,alpha-c,alpha-py/Alpha,alpha-j,alpha-py/Beta,beta-two,beta-one/across frameworks,crossbind,alpha-py/across frameworks,crossbind,beta-one/across frameworks,beta-one,alpha-py/"
check "final models: p and Cliff's delta against the default; the default's row compares with none" \
    bash -c "grep -q '^Alpha,lenet1,cpu,alpha-py,– (the default),3,' '$FR/tables/final_models.csv' && grep -q '^Alpha,lenet1,cpu,alpha-c,alpha-py,3,' '$FR/tables/final_models.csv'"
# Bonferroni within framework x model x device: Alpha has 2 comparisons, Beta 1, across frameworks 3.
check "Bonferroni's correction counts the comparisons of its own section" $PY - "$FR/tables/training_time.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
m = {"Alpha": 2, "Beta": 1, "across frameworks": 3}
seen = {}
for r in rows:
    if r["p (MWU)"] == "–":
        continue
    p, adj = float(r["p (MWU)"]), float(r["p (Bonferroni)"])
    assert abs(adj - min(1.0, m[r["section"]] * p)) < 1e-3, r
    seen[r["section"]] = seen.get(r["section"], 0) + 1
assert seen == m, seen
# 3 runs at 0.02 s against 3 at 0.01 s: every run slower (Cliff's delta of the default against it -1), twice the time.
a = [r for r in rows if r["binding"] == "alpha-c"][0]
assert a["Cliff's delta (compared with vs binding)"].startswith("-1.000") and a["ratio to compared"] == "2.000x", a
PY
check "RQ2 per framework: each framework's default binding's models loaded by its bindings" \
    bash -c "grep -q '^Alpha,alpha-py,alpha-c,parameters,cpu,reproduced' '$FR/tables/reproduction.csv' && grep -q '^Beta,beta-one,beta-two,parameters,cpu,reproduced' '$FR/tables/reproduction.csv'"
check "across frameworks: the reference's models loaded by Beta's bindings" \
    grep -q '^across frameworks,alpha-py,beta-one,parameters,cpu,reproduced' "$FR/tables/reproduction.csv"
check "Beta's default's models are loaded by Beta's bindings only (and crossbind, alone, which cannot load them)" \
    test "$(q "$T/fws/s.sqlite" "select group_concat(binding || ':' || status, ' ') from (select binding, status, count(*) from inference where trainer='beta-one' group by 1, 2 order by 1, 2)")" = "beta-one:ok beta-two:ok crossbind:unsupported"
check "Table 3 lists the uninstallable binding with its reason and library" $PY tests/check_escaped.py csv "$FR/tables/supported_features.csv" \
    "cannot be installed on this machine: $AREASON" "libalpha bundled by its package" 'libalpha 2.0 <shared> | `x`'
check "the library texts and the reason are text in the page" $PY tests/check_escaped.py html "$FR/index.html" "$AREASON" 'libalpha 2.0 <shared> | `x`'
check "and in the Markdown" $PY tests/check_escaped.py md "$FR/report.md" "$AREASON" 'libalpha 2.0 <shared> | `x`'
check "the framework's section says what did not run and why" grep -q "Not run: alpha-cs (C#) cannot be installed" "$FR/report.md"
# Shared initial weights: alpha-py (the reference) trains each run first; everyone else starts from its file.
check "3 shared files, from the reference binding" test "$(q "$T/fws/s.sqlite" "select count(*) || ':' || group_concat(distinct source) from init_weights")" = "3:alpha-py"
check "every other fake got --init with that file, the same bytes" $PY - "$T/fws/s.sqlite" "$T/fws/w" <<'PY'
import hashlib, sqlite3, sys
db, work = sqlite3.connect(sys.argv[1]), sys.argv[2]
stored = {run: (path, sha) for run, path, sha in db.execute("select run, path, sha256 from init_weights")}
for b in ["alpha-c", "alpha-j", "beta-one", "beta-two"]:
    for run in (1, 2, 3):
        used = open(f"{work}/train/{b}/lenet1/run{run}-cpu/init-used.txt").read().split()
        assert used == list(stored[run]), (b, run, used, stored[run])
for run in (1, 2, 3):  # the source itself started from what it saved, and no --init
    import os
    assert not os.path.exists(f"{work}/train/alpha-py/lenet1/run{run}-cpu/init-used.txt")
    assert hashlib.sha256(open(f"{work}/train/alpha-py/lenet1/run{run}-cpu/init.safetensors", "rb").read()).hexdigest() == stored[run][1]
PY
check "crossbind (a real binding) started from the same file, byte for byte" \
    cmp -s "$(q "$T/fws/s.sqlite" "select path from init_weights where run=2")" "$T/fws/w/train/crossbind/lenet1/run2-cpu/init.safetensors"
# The configuration's "defaults" overrides the manifests (a study of its own).
sed 's/"init": "shared",/"init": "shared", "defaults": {"Alpha": "alpha-c"},/' "$T/fw.json" > "$T/fw-override.json"
expect_ok "a study with \"defaults\": {\"Alpha\": \"alpha-c\"}" \
    "$BIN" study --profile "$T/fw-override.json" --store "$T/fwo/s.sqlite" --work "$T/fwo/w" --runners "$FW"
check "alpha-c is Alpha's default, chosen by the configuration" \
    grep -q "^alpha-c,Alpha,sh,\"default of Alpha (chosen by the configuration's \"\"defaults\"\")\"" "$T/fwo/report/tables/bindings.csv"
check "the others are compared with it, Beta's default is unchanged" \
    test "$(tail -n +2 "$T/fwo/report/tables/dtw.csv" | cut -d, -f1,4,5 | tr '\n' '/')" = "Alpha,alpha-py,alpha-c/Alpha,alpha-j,alpha-c/Beta,beta-two,beta-one/across frameworks,crossbind,alpha-c/across frameworks,crossbind,beta-one/across frameworks,beta-one,alpha-c/"
cfg bad-default '{"models": ["lenet1"], "bindings": ["alpha-py", "beta-one"], "defaults": {"Alpha": "beta-one"}}'
expect_error "a default from another framework is refused" '"defaults".Alpha is "beta-one"' \
    "$BIN" study --profile "$T/bad-default.json" --store "$T/c/s.sqlite" --runners "$FW"
cfg unknown-fw '{"models": ["lenet1"], "bindings": ["alpha-py"], "defaults": {"Gamma": "alpha-py"}}'
expect_error "a default for a framework not in the study is refused" 'names the framework "Gamma"' \
    "$BIN" study --profile "$T/unknown-fw.json" --store "$T/c/s.sqlite" --runners "$FW"
cfg unav-default '{"models": ["lenet1"], "bindings": ["alpha-py", "alpha-cs"], "defaults": {"Alpha": "alpha-cs"}}'
expect_error "an uninstallable default is refused" 'that can run here' \
    "$BIN" study --profile "$T/unav-default.json" --store "$T/c/s.sqlite" --runners "$FW"
# Two manifests claiming one framework's default: refused before anything runs, naming both.
cp -r "$FW" "$T/fw2"
sed -i 's/"framework": "Alpha",/"framework": "Alpha", "framework_default": true,/' "$T/fw2/alpha-j/manifest.json"
expect_error "two defaults of one framework are refused, naming both" \
    "$T/fw2/alpha-j/manifest.json and $T/fw2/alpha-py/manifest.json both declare \"framework_default\": true for the framework \"Alpha\" (bindings alpha-j and alpha-py)" \
    "$BIN" study --profile "$T/fw.json" --store "$T/fw2/s.sqlite" --runners "$T/fw2"
check "and nothing was created" test ! -e "$T/fw2/s.sqlite"

# Shared initial weights that cannot be had, or that changed: the runs that need them fail, saying why.
mkdir -p "$T/fwi" && cp -r "$FW/alpha-py" "$FW/crossbind" "$T/fwi/"
ffake_dir=$FW; FW="$T/fwi"; ffake crash-alpha Alpha crash; FW=$ffake_dir
cat > "$T/fwi.json" <<'JSON'
{"models": ["lenet1"], "bindings": ["alpha-py", "crash-alpha", "crossbind"], "reference": "alpha-py", "init": "shared",
 "runs": 1, "epochs": 1, "limit_train": 256, "limit_test": 128, "threads": 1, "repeat": 1, "timeout_s": 60}
JSON
CB_FAKE_INIT= "$BIN" study --profile "$T/fwi.json" --store "$T/fwi/s.sqlite" --runners "$T/fwi" --no-report >"$T/out" 2>"$T/err"
check "a source that writes no init.safetensors: its run fails, saying so" \
    test "$(q "$T/fwi/s.sqlite" "select status from train_run where binding='alpha-py' and error like '%wrote no init.safetensors%'")" = failed
check "and the others' runs fail for want of the shared weights, naming the source" \
    test "$(q "$T/fwi/s.sqlite" "select count(*) from train_run where binding<>'alpha-py' and status='failed' and error like 'no shared initial weights for lenet1 run 1 yet: they come from alpha-py%'")" = 2
"$BIN" study --profile "$T/fwi.json" --store "$T/fwi/s.sqlite" --runners "$T/fwi" --no-report >"$T/out" 2>"$T/err"
check "rerun with the source fixed: it provides them, crossbind trains from them" \
    test "$(q "$T/fwi/s.sqlite" "select group_concat(binding || ':' || status, ',') from (select binding, status from train_run order by binding)")" = "alpha-py:complete,crash-alpha:failed,crossbind:complete"
printf 'x' >> "$(q "$T/fwi/s.sqlite" "select path from init_weights")"
"$BIN" study --profile "$T/fwi.json" --store "$T/fwi/s.sqlite" --runners "$T/fwi" --no-report >"$T/out" 2>"$T/err"
check "a shared file changed since it was stored is refused, not used" \
    test "$(q "$T/fwi/s.sqlite" "select count(*) from train_run where binding='crash-alpha' and error like 'the study''s shared initial weights % changed since they were stored%'")" = 1

# A binding whose environment is missing (the real pytorch-python manifest without its .venv):
# unavailable with its install command; the others still run.
mkdir -p "$T/envm/pytorch-python" && cp runners/pytorch-python/manifest.json "$T/envm/pytorch-python/"
cp -r runners/crossbind "$T/envm/"
cat > "$T/envm.json" <<'JSON'
{"models": ["lenet1"], "bindings": ["crossbind", "pytorch-python"], "init": "shared", "runs": 1, "epochs": 1,
 "limit_train": 256, "limit_test": 128, "threads": 1, "repeat": 1, "timeout_s": 120}
JSON
"$BIN" study --profile "$T/envm.json" --store "$T/envm/s.sqlite" --runners "$T/envm" >"$T/out" 2>"$T/err"
rc=$?
check "a binding not installed is not a failure: exit 0, its measurements counted as unavailable" \
    test $rc -eq 0 -a -n "$(grep "crossbind: $(q "$T/envm/s.sqlite" "select (select count(*) from train_run where status='unavailable') + (select count(*) from inference where status='unavailable')") measurement(s) are unavailable: their binding is not installed here" "$T/err")"
check "the missing environment is named at the start with its install command" \
    grep -q "binding pytorch-python is unavailable: .*install it with: bash runners/pytorch-python/install.sh" "$T/err"
check "its measurements are stored as unavailable, with the command" \
    test "$(q "$T/envm/s.sqlite" "select count(*) from train_run where binding='pytorch-python' and status='unavailable' and error like '%install it with: bash runners/pytorch-python/install.sh'")" = 1
check "crossbind's evaluations of the models it would have trained are unavailable too, saying why" \
    test "$(q "$T/envm/s.sqlite" "select count(*) from inference where binding='crossbind' and status='unavailable' and error like 'no trained model: its trainer pytorch-python is unavailable: %install it with: bash runners/pytorch-python/install.sh'")" = 3
check "the reference is PyTorch's default (the manifest's flag) even so" test "$(q "$T/envm/s.sqlite" "select json_extract(config, '$.reference') from study")" = pytorch-python
check "crossbind still trains, from its own initial weights (the source when the reference cannot run)" \
    test "$(q "$T/envm/s.sqlite" "select (select status from train_run where binding='crossbind') || ':' || (select source from init_weights)")" = "complete:crossbind"
check "the report's bindings table says the environment is missing" grep -q "^pytorch-python,PyTorch,Python,.*its environment is missing here" "$T/envm/report/tables/bindings.csv"
unset CB_FAKE_INIT

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
# Groups of 7 fakes beside crossbind (small studies; a study takes at most 16 bindings).
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
# 1e999 is no double: the JSON reader refuses the whole answer, saying why.
vexpect infinite-time inference "malformed output" 'invalid JSON at byte [0-9]*: number out of range'
vexpect absurd-time inference "malformed output" '"times_s\[0\]" is 1e+09'
vexpect short-times inference "malformed output" '"times_s" is a list of 1: expected a list of 2'
vexpect accuracy-above-one inference "malformed output" '"accuracy" is 1.5'
vexpect accuracy-mismatch inference "malformed output" '"accuracy" is 0.9 but "correct" / "total" is 64 / 128'
vexpect auc-negative inference "malformed output" '"auc_macro" is -0.1'
vexpect f1-above-one inference "malformed output" '"f1_macro" is 2'
vexpect pass-contradicts inference "malformed output" '"correct_per_pass"\[1\] (the last pass) is 63'
vexpect duplicate-key inference "malformed output" 'key "correct" appears twice'
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
vexpect train-duplicate-key train_run "malformed output" 'key "test_correct" appears twice'
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
expect_error "a configuration with a setting twice is refused" 'key "runs" appears twice' \
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
# The store on a 384 KiB tmpfs fills after a few measurements (needs root
# to mount; CI runs as root; elsewhere the test is skipped and says so).
if [ "$(id -u)" = 0 ] && mkdir -p "$T/small" && mount -t tmpfs -o size=384k tmpfs "$T/small" 2>/dev/null; then
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

# ---- hostile strings: a manifest, a version, a runner's message and a store full of markup ----
# Everything from outside reaches the report as text: no element, attribute,
# link or table cell of its own in index.html, report.md or the CSV files.
# By construction: pages write markup only through the literal-only macros
# of src/report/out.h, never through the functions behind them.
check "no page code calls the writer's raw functions" \
    bash -c "! grep -rn 'cb_out_lit_(\|cb_out_markf_(' src --include=*.c | grep -v '^src/report/out.c:'"
mkdir -p "$T/runners/hostile"
cat > "$T/runners/hostile/manifest.json" <<JSON
{"format": "crossbind-runner/1", "binding": "hostile", "framework": "<script>alert(\"fw\")</script>",
 "language": "\"onmouseover=alert(1)|\`x\`", "command": ["/bin/sh", "$PWD/tests/fake_runner.sh", "hostile"],
 "library": "<b>lib</b> | \`l\` [l](javascript:alert(13)) \"q\"",
 "version_command": ["/bin/sh", "$PWD/tests/fake_runner.sh", "hostile-version"],
 "infer": ["lenet1"], "loads": ["onnx"], "devices": ["cpu"]}
JSON
# An uninstallable binding of the same framework whose reason is markup.
mkdir -p "$T/runners/hostile-cs"
cat > "$T/runners/hostile-cs/unavailable.json" <<'JSON'
{"binding": "hostile-cs", "framework": "<script>alert(\"fw\")</script>", "language": "C#",
 "reason": "no SDK | <script>alert(14)</script> `r` [r](javascript:alert(15)) \"q\"\n# not a heading"}
JSON
LIB='<b>lib</b> | `l` [l](javascript:alert(13)) "q"'
REASON=$'no SDK | <script>alert(14)</script> `r` [r](javascript:alert(15)) "q"\n# not a heading'
cat > "$T/hostile.json" <<'JSON'
{"models": ["lenet1"], "bindings": ["crossbind", "hostile"], "reference": "crossbind", "runs": 1, "epochs": 1,
 "limit_train": 256, "limit_test": 128, "threads": 1, "repeat": 2, "timeout_s": 60}
JSON
"$BIN" study --profile "$T/hostile.json" --store "$T/h/study.sqlite" --report "$T/h/report" $R >"$T/out" 2>"$T/err"
check "a study with a hostile manifest and runner finishes (its evaluation failed)" test $? = 1 -a -s "$T/h/report/index.html"
# The store itself is untrusted: names, machine, data sets and errors rewritten with markup.
cp "$T/h/study.sqlite" "$T/h/rewritten.sqlite"
$PY - "$T/h/rewritten.sqlite" <<'PY'
import json, sqlite3, sys
names = {"hostile": "<img src=x onerror=alert(9)>|", "lenet1": "`m`|[x](javascript:alert(6))"}
def sub(v):
    if isinstance(v, str): return names.get(v, v)
    if isinstance(v, list): return [sub(x) for x in v]
    if isinstance(v, dict): return {k: sub(x) for k, x in v.items()}
    return v
db = sqlite3.connect(sys.argv[1])
for (table,) in db.execute("select name from sqlite_master where type='table'").fetchall():
    cols = [r[1] for r in db.execute(f"pragma table_info({table})") if r[2] == "TEXT"]
    for (rowid, *vals) in db.execute(f"select rowid, {', '.join(cols)} from {table}").fetchall():
        new = []
        for c, v in zip(cols, vals):
            if c in ("config", "data", "manifest") and v:
                new.append(json.dumps(sub(json.loads(v))))
            else:
                new.append(names.get(v, v))
        db.execute(f"update {table} set {', '.join(c + '=?' for c in cols)} where rowid=?", (*new, rowid))
db.execute("update study set machine = 'box <script>alert(7)</script>\n# h1\r\n| x | 2 cores online', data = ?",
           (json.dumps([{"name": "1. <b>data</b>", "path": "/d/`x`](javascript:alert(10))", "format": "<i>idx</i>",
                         "stand_in": 1}]),))
db.execute("update inference set error = ?, status = 'error' where binding like '<img%'",
           ("bad\n<script>alert(11)</script> | `x` [a](javascript:alert(12))",))
db.commit()
PY
expect_ok "the report of a store full of markup is written" "$BIN" report --store "$T/h/rewritten.sqlite" --out "$T/h/rw"
FW='<script>alert("fw")</script>' LANG_='"onmouseover=alert(1)|`x`'
VER='`v1` | [x](javascript:alert(1)) <img src=x onerror=alert(2)>'
ERR='fail | <script>alert(3)</script> `code` ![i](javascript:alert(4)) "onerror=alert(5)'
check "index.html: the manifest's, version's and runner's strings are text only, under a CSP forbidding script" \
    $PY tests/check_escaped.py html "$T/h/report/index.html" "$FW" "$LANG_" "$VER" "$ERR"
check "report.md: the same strings are escaped (no HTML, link, code span, cell or block of theirs)" \
    $PY tests/check_escaped.py md "$T/h/report/report.md" "$FW" "$LANG_" "$VER" "$ERR"
check "CSV: the version and the error come back exactly, one field each" \
    $PY tests/check_escaped.py csv "$T/h/report/tables/supported_features.csv" "$FW" "$LANG_" "$VER"
check "index.html: a manifest's library and an unavailable.json's reason are text only" \
    $PY tests/check_escaped.py html "$T/h/report/index.html" "$LIB" "$REASON"
check "report.md: the library and the reason escaped" \
    $PY tests/check_escaped.py md "$T/h/report/report.md" "$LIB" "$REASON"
check "CSV: Table 3 keeps the library and the reason exactly" \
    $PY tests/check_escaped.py csv "$T/h/report/tables/supported_features.csv" "$LIB" "cannot be installed on this machine: $REASON"
check "CSV: the bindings table too" \
    $PY tests/check_escaped.py csv "$T/h/report/tables/bindings.csv" "$LIB" "cannot be installed on this machine: $REASON"
check "the failed evaluation's reason is in the report's failures table" \
    $PY tests/check_escaped.py csv "$T/h/report/tables/failures.csv" "$ERR"
RB='<img src=x onerror=alert(9)>|' RM='`m`|[x](javascript:alert(6))'
RE=$'bad\n<script>alert(11)</script> | `x` [a](javascript:alert(12))'
RMACH=$'box <script>alert(7)</script>\n# h1\r\n| x | 2 cores online'
check "index.html of the rewritten store: names, machine, data set and error as text" \
    $PY tests/check_escaped.py html "$T/h/rw/index.html" "$RB" "$RM" "$RE" "1. <b>data</b>" '/d/`x`](javascript:alert(10))' "<i>idx</i>"
check "report.md of the rewritten store" \
    $PY tests/check_escaped.py md "$T/h/rw/report.md" "$RB" "$RM" "$RE" "1. <b>data</b>" '/d/`x`](javascript:alert(10))'
for f in "$T"/h/rw/tables/*.csv; do
    $PY tests/check_escaped.py csv "$f" >>"$T/csv-problems" 2>&1
done
check "every CSV table of the rewritten store parses with its header's field count" test ! -s "$T/csv-problems"
check "failures.csv keeps the error's newline inside one quoted field" \
    $PY tests/check_escaped.py csv "$T/h/rw/tables/failures.csv" "$RE" "$RB"
expect_ok "results export of the rewritten store" "$BIN" results export --store "$T/h/rewritten.sqlite" --csv "$T/h/export"
check "the exported study table keeps the machine string exactly" $PY tests/check_escaped.py csv "$T/h/export/study.csv" "$RMACH"
check "the exported inference table keeps the error exactly" $PY tests/check_escaped.py csv "$T/h/export/inference.csv" "$RE"

# ---- the report in headless Chromium ----
cat > "$T/expect.json" <<'JSON'
{"figures": {"fw1-curves-lenet1-cpu": 1, "fw1-reproduction": 2, "fw2-reproduction": 2, "fw3-reproduction": 2,
             "cross-curves-lenet1-cpu": 2, "cross-training-time-lenet1-cpu": 2, "cross-inference-time-lenet1-cpu": 3},
 "min_figures": 10, "bindings": ["crossbind", "pytorch", "onnxruntime-node"],
 "tables": ["t-bindings", "t-initial_weights", "t-dtw-cross", "t-final_models-fw1", "t-reproduction-fw3",
            "t-training_time-cross", "t-inference_time-cross", "t-subactivities", "t-supported_features", "t-failures"]}
JSON
if node tests/browser/report_test.js "$T/a/report/index.html" "$T/expect.json" > "$T/browser.out" 2>&1; then
    echo "ok   $SUITE: the report renders in headless Chromium ($(tail -1 "$T/browser.out"))"; pass=$((pass + 1))
else
    echo "FAIL $SUITE: the report in headless Chromium"; sed 's/^/    /' "$T/browser.out" | tail -15; fail=$((fail + 1))
fi
# The Fake section's heat map: its 6 bindings x 2 load modes.
echo '{"figures": {"fw2-reproduction": 12}, "min_figures": 2, "bindings": ["crashy", "hangy"]}' > "$T/expect-f.json"
if node tests/browser/report_test.js "$T/f/report/index.html" "$T/expect-f.json" > "$T/browser.out" 2>&1; then
    echo "ok   $SUITE: the failures' report renders too"; pass=$((pass + 1))
else
    echo "FAIL $SUITE: the failures' report in Chromium"; sed 's/^/    /' "$T/browser.out" | tail -15; fail=$((fail + 1))
fi
echo '{"figures": {}, "min_figures": 1, "bindings": ["crossbind"]}' > "$T/expect-h.json"
for page in "$T/h/report/index.html" "$T/h/rw/index.html"; do
    if node tests/browser/report_test.js "$page" "$T/expect-h.json" > "$T/browser.out" 2>&1; then
        echo "ok   $SUITE: the hostile strings' report renders in Chromium and runs no script (${page#$T/})"; pass=$((pass + 1))
    else
        echo "FAIL $SUITE: the hostile strings' report in Chromium (${page#$T/})"; sed 's/^/    /' "$T/browser.out" | tail -15; fail=$((fail + 1))
    fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
