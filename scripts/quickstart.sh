#!/bin/bash
# The main job until the study harness exists: trains and evaluates LeNet-5
# on Fashion-MNIST (Debian's dataset-fashion-mnist, a stand-in for MNIST in
# MNIST's own format) in crossbind and in the PyTorch runner, from the same
# initial weights, and prints both results side by side; then runs the
# cross-binding inference experiment (LeNet-1 and LeNet-5, five runs each on a
# short schedule, every binding and load mode, both directions) and its
# short version for VGG-16, LSTM, GRU and GRU-rb on the package stand-ins.
# Environment: EPOCHS (default 3), THREADS (default: all cores),
# XBIND_EPOCHS (default 1; 0 skips the experiment).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
make -j"$(nproc)" >/dev/null
EPOCHS=${EPOCHS:-3}
THREADS=${THREADS:-$(nproc)}
DATA=/usr/share/datasets/fashion-mnist
OUT=runs/quickstart
mkdir -p "$OUT"
common="lenet5 --data $DATA --epochs $EPOCHS --run 1 --threads $THREADS"
echo "== PyTorch runner (default binding): LeNet-5, $EPOCHS epochs on Fashion-MNIST (stand-in for MNIST)"
/usr/bin/python3 runners/pytorch/crossbind_torch.py train $common --out "$OUT/pytorch"
echo "== crossbind (C binding), from the same initial weights"
./build/crossbind train $common --init "$OUT/pytorch/init.safetensors" --out "$OUT/crossbind"
echo "== inference: each binding evaluates its own trained model (1 warm-up + 5 timed passes)"
./build/crossbind eval lenet5 --weights "$OUT/crossbind/final.safetensors" --data "$DATA" --threads "$THREADS" --json > "$OUT/crossbind/eval.json"
/usr/bin/python3 runners/pytorch/crossbind_torch.py eval lenet5 --weights "$OUT/pytorch/final.safetensors" --data "$DATA" --threads "$THREADS" --json > "$OUT/pytorch/eval.json"
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
runs = {b: json.load(open(f"{out}/{b}/run.json")) for b in ("crossbind", "pytorch")}
evals = {b: json.load(open(f"{out}/{b}/eval.json")) for b in ("crossbind", "pytorch")}
c, t = runs["crossbind"], runs["pytorch"]
print(f"\nLeNet-5 on Fashion-MNIST ({c['n_train']} train / {c['n_test']} test; a stand-in for MNIST), "
      f"seed {c['seed']}, SGD lr {t['lr']}, batch {c['batch']}, {c['threads']} threads\n")
print(f"{'':28}{'crossbind (C)':>16}{'PyTorch (Python)':>18}")
for ec, et in zip(c["epochs"], t["epochs"]):
    print(f"{'epoch %d test accuracy' % ec['epoch']:28}{ec['test_acc']:>16.4f}{et['test_acc']:>18.4f}")
rows = [("final test accuracy", "test_accuracy", "{:.4f}"), ("macro F1", "f1_macro", "{:.4f}"),
        ("macro AUC (one-vs-rest)", "auc_macro", "{:.4f}"), ("training time (s)", "training_time_s", "{:.2f}"),
        ("evaluation time (s)", "eval_time_s", "{:.2f}")]
for label, key, fmt in rows:
    print(f"{label:28}{fmt.format(c[key]):>16}{fmt.format(t[key]):>18}")
ec, et = evals["crossbind"], evals["pytorch"]
print(f"{'inference, 10k images (s)':28}{ec['mean_time_s']:>16.3f}{et['mean_time_s']:>18.3f}")
print(f"{'inference correct':28}{ec['correct']:>16}{et['correct']:>18}")
print(f"\ntraining-time ratio crossbind / PyTorch: {c['training_time_s'] / t['training_time_s']:.2f}; "
      f"inference-time ratio: {ec['mean_time_s'] / et['mean_time_s']:.2f}")
print(f"results: {out}/crossbind/run.json, {out}/pytorch/run.json")
PY
XBIND_EPOCHS=${XBIND_EPOCHS:-1}
if [ "$XBIND_EPOCHS" -gt 0 ]; then
    echo
    echo "== cross-binding inference experiment: $XBIND_EPOCHS epoch(s), 10,000 training / 2,000 test images"
    /usr/bin/python3 scripts/cross_binding.py --epochs "$XBIND_EPOCHS" --limit-train 10000 --limit-test 2000 \
        --threads "$THREADS" --out "$OUT/cross-binding"
    echo "matrix: $OUT/cross-binding/matrix.md, $OUT/cross-binding/matrix.json"
    echo
    echo "== the same for VGG-16, LSTM, GRU and GRU-rb: one run, 256 training / 256 test samples of the"
    echo "   package stand-ins (CIFAR format from Fashion-MNIST, IMDb format from SpamAssassin mail)"
    [ -f data/cifar-stand-in/test_batch.bin ] || ./build/crossbind data cifar-stand-in --out data/cifar-stand-in
    if [ ! -f data/imdb-prepared/vocab.txt ]; then
        ./build/crossbind data imdb-stand-in --out data/imdb-stand-in
        ./build/crossbind data imdb-prepare --from data/imdb-stand-in --out data/imdb-prepared
    fi
    /usr/bin/python3 scripts/cross_binding.py --models vgg16,lstm,gru,gru-rb --runs 1 --epochs "$XBIND_EPOCHS" \
        --limit-train 256 --limit-test 256 --threads "$THREADS" --out "$OUT/cross-binding-all"
    echo "matrix: $OUT/cross-binding-all/matrix.md"
fi
