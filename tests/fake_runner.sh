#!/bin/sh
# A misbehaving runner for the study tests: its manifest passes a mode,
# the harness appends the usual "train|eval MODEL ..." arguments.
#   crash    dies of SIGSEGV      hang     never answers
#   garbage  prints non-JSON      partial  a JSON line without the timed passes
#   cannot   exits 3: this binding cannot evaluate the file (runners/README.md)
#   hostile  fails with a message full of markup; hostile-version prints a
#            version string full of it (the report must show both as text)
# Modes that answer with one bad value each (the rest of the answer valid,
# see answer() below): eval-good, and for eval
#   correct-above-total wrong-total fractional-correct negative-time null-time
#   infinite-time absurd-time short-times accuracy-above-one accuracy-mismatch
#   auc-negative f1-above-one pass-contradicts duplicate-key no-json flood
#   no-logits truncated-logits wrong-shape-logits float64-logits nan-logits
# and for training (an evaluation is answered as eval-good)
#   train-good train-correct-above train-wrong-ntest train-wrong-ntrain
#   train-short-epochs train-acc-above-one train-negative-time train-duplicate-key
#   train-epoch-number
# and train-slow: as train-good, twice the training time.
# Initial weights (the study's "init": "shared"): a training given --init
# FILE writes "FILE SHA256" to OUT/init-used.txt and starts from FILE (its
# OUT/init.safetensors and final.safetensors are copies of it); without
# --init it starts from $CB_FAKE_INIT when that is set (a real model's
# initial weights), else from nothing (it writes no init.safetensors).
mode="$1"
case "$mode" in
    crash) echo "fake runner: about to crash" >&2; kill -SEGV $$ ;;
    hang) exec sleep 600 ;;
    garbage) echo "this is { not json"; exit 0 ;;
    partial) echo '{"correct": 3, "total": 10}'; exit 0 ;;
    cannot) echo "fake runner: operator Frobnicate is not implemented here" >&2; exit 3 ;;
    hostile) printf '%s\n' 'fail | <script>alert(3)</script> `code` ![i](javascript:alert(4)) "onerror=alert(5)' >&2; exit 1 ;;
    hostile-version) printf '%s\r\n%s\n' '`v1` | [x](javascript:alert(1)) <img src=x onerror=alert(2)>' '# 2. <script>alert(8)</script>'; exit 0 ;;
esac
shift
exec /usr/bin/python3 - "$mode" "$@" <<'PY'
import hashlib, json, math, os, shutil, struct, sys
mode, cmd = sys.argv[1], sys.argv[2]
args = sys.argv[4:]
opt = {args[i][2:]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
if cmd == "eval" and mode.startswith("train-"):
    mode = "eval-good"

def npy(path, shape, dtype="<f4", values=None, cut=0):
    n = shape[0] * shape[1]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }" % (dtype, shape[0], shape[1])
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    size = 8 if dtype == "<f8" else 4
    data = struct.pack("<%d%s" % (n, "d" if size == 8 else "f"), *(values or [0.25] * n))
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data[:len(data) - cut])

if cmd == "train":
    out, n_train, n_test, epochs = opt["out"], int(opt["limit-train"]), int(opt["limit-test"]), int(opt["epochs"])
    correct = n_test // 2
    init = opt.get("init") or os.environ.get("CB_FAKE_INIT")
    if "init" in opt:
        with open(opt["init"], "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        with open(os.path.join(out, "init-used.txt"), "w") as f:
            f.write("%s %s\n" % (opt["init"], digest))
    if init:
        shutil.copyfile(init, os.path.join(out, "init.safetensors"))
        shutil.copyfile(init, os.path.join(out, "final.safetensors"))
    else:
        open(os.path.join(out, "final.safetensors"), "wb").close()
    step = 0.02 if mode == "train-slow" else 0.01
    run = {"format": "crossbind-run/1", "status": "complete", "n_train": n_train, "n_test": n_test,
           "epochs": [{"epoch": e + 1, "train_acc": 0.5, "test_acc": 0.5, "train_loss": 1.0, "test_loss": None,
                       "train_time_s": step, "eval_time_s": 0.01} for e in range(epochs)],
           "training_time_s": step * epochs, "eval_time_s": 0.01 * epochs, "total_time_s": (step + 0.01) * epochs,
           "test_accuracy": correct / n_test, "test_correct": correct, "f1_macro": 0.5, "auc_macro": None}
    text = None
    if mode == "train-correct-above": run["test_correct"] = n_test + 1; run["test_accuracy"] = 1.0
    elif mode == "train-wrong-ntest": run["n_test"] = n_test + 7
    elif mode == "train-wrong-ntrain": run["n_train"] = n_train * 2
    elif mode == "train-short-epochs": run["epochs"] = run["epochs"][1:]
    elif mode == "train-acc-above-one": run["epochs"][0]["test_acc"] = 1.2
    elif mode == "train-negative-time": run["training_time_s"] = -3.0
    elif mode == "train-epoch-number": run["epochs"][0]["epoch"] = 5
    elif mode == "train-duplicate-key":
        text = json.dumps(run)[:-1] + ', "test_correct": 1}'
    with open(os.path.join(out, "run.json"), "w") as f:
        f.write(text if text else json.dumps(run))
    open(os.path.join(out, "final.onnx"), "wb").close()
    sys.exit(0)

total, repeat, k, logits = int(opt["limit-test"]), int(opt["repeat"]), 10, opt["logits"]
correct = total // 2
res = {"correct": correct, "total": total, "accuracy": correct / total, "f1_macro": 0.5, "auc_macro": 0.75,
       "loss": 1.5, "times_s": [0.001] * repeat, "correct_per_pass": [correct] * repeat}
text, shape, dtype, values, cut = None, (total, k), "<f4", None, 0
if mode == "correct-above-total":
    res.update(correct=total + 5, correct_per_pass=[total + 5] * repeat, accuracy=1.0)
elif mode == "wrong-total": res.update(total=total + 1, accuracy=correct / (total + 1))
elif mode == "fractional-correct": res.update(correct=correct + 0.5, correct_per_pass=[correct + 0.5] * repeat)
elif mode == "negative-time": res["times_s"][0] = -0.5
elif mode == "null-time": res["times_s"][-1] = None
elif mode == "infinite-time": text = json.dumps(res).replace('"times_s": [0.001', '"times_s": [1e999')
elif mode == "absurd-time": res["times_s"][0] = 1e9
elif mode == "short-times": res["times_s"] = res["times_s"][1:]
elif mode == "accuracy-above-one": res["accuracy"] = 1.5
elif mode == "accuracy-mismatch": res["accuracy"] = 0.9
elif mode == "auc-negative": res["auc_macro"] = -0.1
elif mode == "f1-above-one": res["f1_macro"] = 2
elif mode == "pass-contradicts": res["correct_per_pass"][-1] = correct - 1
elif mode == "duplicate-key": text = json.dumps(res)[:-1] + ', "correct": %d}' % (correct - 1)
elif mode == "truncated-logits": cut = 100
elif mode == "wrong-shape-logits": shape = (total, k + 1)
elif mode == "float64-logits": dtype = "<f8"
elif mode == "nan-logits": values = [float("nan")] + [0.25] * (total * k - 1)
if mode != "no-logits":
    npy(logits, shape, dtype, values, cut)
if mode == "no-json":
    sys.exit(0)
if mode == "flood":  # 24 MB of progress lines before the answer
    line = "progress " + "." * 1000 + "\n"
    for _ in range(24 * 1024):
        sys.stdout.write(line)
print(text if text else json.dumps(res))
PY
