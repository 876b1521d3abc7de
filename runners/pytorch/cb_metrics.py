"""The test-set metrics every Python runner reports (PyTorch's and
TensorFlow's alike), on numpy arrays: macro F1 and AUC as the harness and
crossbind compute them (an AUC over the ranks of the scores, ties sharing
their mean rank)."""
import numpy as np


def f1_macro(pred, labels, k):
    """Mean F1 over the classes that occur in the labels or the predictions."""
    scores = []
    for c in range(k):
        tp = np.sum((pred == c) & (labels == c))
        fp = np.sum((pred == c) & (labels != c))
        fn = np.sum((pred != c) & (labels == c))
        if tp + fp + fn:
            scores.append(2 * tp / (2 * tp + fp + fn))
    return float(np.mean(scores)) if scores else float("nan")


def auc_binary(score, positive):
    """One-vs-rest AUC; NaN when a class is absent or a score is not a
    number (NaN compares unequal to itself: a tie scan would never end)."""
    if np.isnan(score).any():
        return float("nan")
    order = np.argsort(score, kind="mergesort")
    s = score[order]
    ranks = np.empty(len(s))
    i = 0
    while i < len(s):
        j = i + 1
        while j < len(s) and s[j] == s[i]:
            j += 1
        ranks[i:j] = (i + 1 + j) / 2.0
        i = j
    pos = positive[order]
    npos = pos.sum()
    nneg = len(s) - npos
    if npos == 0 or nneg == 0:
        return float("nan")
    return float((ranks[pos].sum() - npos * (npos + 1) / 2.0) / (npos * nneg))


def auc_macro(probs, labels, k):
    """Mean one-vs-rest AUC over the classes where it is defined."""
    vals = [auc_binary(probs[:, c], labels == c) for c in range(k)]
    vals = [v for v in vals if not np.isnan(v)]
    return float(np.mean(vals)) if vals else float("nan")
