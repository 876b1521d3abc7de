"""An independent Python implementation of Keras' IMDb preprocessing
(text_to_word_sequence, Tokenizer ranking, index_from=3, pad_sequences
'pre'/'pre'), used to check crossbind's prepared data token for token.

usage: imdb_reference.py ACLIMDB_DIR PREPARED_DIR
Exits non-zero and names the first difference."""
import os
import re
import sys
from collections import OrderedDict

import numpy as np

FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'
TABLE = str.maketrans({c: ' ' for c in FILTERS})


def tokens(text):
    # Keras lower-cases with str.lower(); crossbind covers ASCII and Latin-1
    # only, so the reference lower-cases exactly those characters.
    text = ''.join(c.lower() if (c < '\x80' or '\xc0' <= c <= '\xde' and c != '\xd7') else c for c in text)
    return [t for t in text.translate(TABLE).split(' ') if t]


def listing(acl, split):
    items = []
    for label, cls in ((1, 'pos'), (0, 'neg')):
        d = os.path.join(acl, split, cls)
        for name in os.listdir(d):
            if not name.endswith('.txt'):
                continue
            m = re.match(r'(\d+)[_.]', name)
            num = int(m.group(1)) if m else 1 << 62
            items.append((num, -label, os.path.join(d, name).encode(), label))
    items.sort()
    return [(p.decode(), label) for _, _, p, label in items]


def main():
    acl, prepared = sys.argv[1], sys.argv[2]
    counts = OrderedDict()
    for path, _ in listing(acl, 'train'):
        for t in tokens(open(path, encoding='utf-8').read()):
            counts[t] = counts.get(t, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: kv[1], reverse=True)  # stable: ties by first appearance
    index = {w: r + 4 for r, (w, _) in enumerate(ranked)}
    words = [w for w, _ in ranked][:10000 - 4]
    vocab = open(os.path.join(prepared, 'vocab.txt'), encoding='utf-8').read().split('\n')
    assert vocab[0].startswith('crossbind-vocab 1 num_words=10000 maxlen=300'), vocab[0]
    assert vocab[1:-1] == words, 'vocabulary differs at word %d' % next(
        i for i, (a, b) in enumerate(zip(vocab[1:], words)) if a != b)
    for split in ('train', 'test'):
        x = np.load(os.path.join(prepared, 'x_%s.npy' % split))
        y = np.load(os.path.join(prepared, 'y_%s.npy' % split))
        items = listing(acl, split)
        assert x.shape == (len(items), 300) and y.shape == (len(items),), (x.shape, y.shape)
        for i, (path, label) in enumerate(items):
            seq = [1] + [index.get(t, 2) if index.get(t, 2) < 10000 else 2
                         for t in tokens(open(path, encoding='utf-8').read())]
            seq = seq[-300:]
            seq = [0] * (300 - len(seq)) + seq
            if list(x[i]) != seq or y[i] != label:
                sys.exit('%s sample %d (%s) differs' % (split, i, path))
        print('%s: %d sequences identical' % (split, len(items)))


if __name__ == '__main__':
    main()
