#!/usr/bin/python3
"""crossbind stats against SciPy and scikit-learn (Debian's python3-scipy,
python3-sklearn) on fixed vectors: ties, equal samples, tiny and large
samples. Every value must agree to 1e-9 relative (absolute 1e-12 near 0).
DTW has no SciPy function: exact DTW is checked against a plain dynamic
programme here, FastDTW against this file's transcription of the reference
`fastdtw` package's algorithm. Also the command's errors on bad input.
Usage: tests/stats_test.py BUILD_DIR. Prints "N passed, N failed"."""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy import stats
from sklearn.metrics import f1_score, roc_auc_score

CB = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "build", "crossbind")
passed = failed = 0
TMP = tempfile.mkdtemp(prefix="crossbind-stats-")


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


def close(a, b, rel=1e-9):
    if isinstance(b, float) and math.isnan(b):
        return a is None or (isinstance(a, float) and math.isnan(a))
    return abs(a - b) <= 1e-12 + rel * abs(b)


def write(name, values):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(" ".join(repr(float(v)) for v in values) + "\n")
    return path


def cb(*args, stdin=None):
    p = subprocess.run([CB, "stats", *args], input=stdin, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def cb_json(*args):
    rc, out, err = cb(*args, "--json")
    if rc != 0:
        raise RuntimeError(f"crossbind stats {' '.join(args)} failed: {err}")
    return json.loads(out)


def dtw_exact(a, b):
    n, m = len(a), len(b)
    d = np.full((n + 1, m + 1), np.inf)
    d[0, 0] = 0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i, j] = abs(a[i - 1] - b[j - 1]) + min(d[i - 1, j], d[i, j - 1], d[i - 1, j - 1])
    return d[n, m]


def _dtw_window(x, y, window):
    D = {(0, 0): (0.0, 0, 0)}
    inf = (float("inf"), -1, -1)
    for i, j in ((i + 1, j + 1) for i, j in window):
        dt = abs(x[i - 1] - y[j - 1])
        D[i, j] = min((D.get((i - 1, j), inf)[0] + dt, i - 1, j), (D.get((i, j - 1), inf)[0] + dt, i, j - 1),
                      (D.get((i - 1, j - 1), inf)[0] + dt, i - 1, j - 1), key=lambda t: t[0])
    path = []
    i, j = len(x), len(y)
    while not (i == j == 0):
        path.append((i - 1, j - 1))
        i, j = D[i, j][1], D[i, j][2]
    path.reverse()
    return D[len(x), len(y)][0], path


def fastdtw(x, y, radius):
    if len(x) < radius + 2 or len(y) < radius + 2:
        return _dtw_window(x, y, [(i, j) for i in range(len(x)) for j in range(len(y))])
    half = lambda s: [(s[i] + s[i + 1]) / 2 for i in range(0, len(s) - len(s) % 2, 2)]
    _, path = fastdtw(half(x), half(y), radius)
    wide = set()
    for i, j in path:
        for a in range(-radius, radius + 1):
            for b in range(-radius, radius + 1):
                wide.add((i + a, j + b))
    fine = set()
    for i, j in wide:
        fine.update({(2 * i, 2 * j), (2 * i, 2 * j + 1), (2 * i + 1, 2 * j), (2 * i + 1, 2 * j + 1)})
    window, start = [], 0
    for i in range(len(x)):
        new_start = None
        for j in range(start, len(y)):
            if (i, j) in fine:
                window.append((i, j))
                if new_start is None:
                    new_start = j
            elif new_start is not None:
                break
        start = new_start
    return _dtw_window(x, y, window)


rng = np.random.default_rng(20261201)
pairs = [
    ("5 vs 5 separated", [1, 2, 3, 4, 5], [6, 7, 8, 9, 10]),
    ("5 vs 5 interleaved", [1.5, 3.2, 5.1, 7.7, 9.0], [2.2, 4.4, 6.6, 8.8, 0.1]),
    ("5 vs 5 with ties", [1, 2, 2, 3, 4], [2, 3, 3, 5, 6]),
    ("equal samples", [0.5] * 5, [0.5] * 5),
    ("identical, no ties inside", [1, 2, 3, 4, 5], [1, 2, 3, 4, 5]),
    ("1 vs 1", [3.0], [4.0]),
    ("1 vs 3", [2.0], [1.0, 3.0, 5.0]),
    ("2 vs 7", [0.3, 0.9], [0.1, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8]),
    ("8 vs 8", list(rng.normal(0, 1, 8)), list(rng.normal(0.5, 1, 8))),
    ("8 vs 9 (exact: one sample <= 8)", list(rng.normal(0, 1, 8)), list(rng.normal(1, 1, 9))),
    ("9 vs 9 (asymptotic)", list(rng.normal(0, 1, 9)), list(rng.normal(1, 1, 9))),
    ("5 vs 40 (exact)", list(rng.normal(0, 1, 5)), list(rng.normal(0.3, 1, 40))),
    ("training times 5 vs 5", [12.31, 12.87, 12.05, 13.02, 12.44], [30.9, 29.7, 31.2, 30.1, 32.8]),
    ("large 300 vs 250", list(rng.normal(0, 1, 300)), list(rng.normal(0.1, 1.2, 250))),
    ("large with ties", list(rng.integers(0, 10, 200).astype(float)), list(rng.integers(0, 12, 180).astype(float))),
    ("accuracies with ties", [0.91, 0.92, 0.92, 0.93, 0.91], [0.92, 0.92, 0.94, 0.93, 0.95]),
]
for name, a, b in pairs:
    fa, fb = write("a", a), write("b", b)
    ref = stats.mannwhitneyu(a, b, alternative="two-sided", method="auto")
    got = cb_json("mwu", fa, fb)
    check(f"mwu {name}", close(got["u"], float(ref.statistic)) and close(got["p"], float(ref.pvalue)),
          f"crossbind u={got['u']} p={got['p']!r} scipy u={ref.statistic} p={ref.pvalue!r}")
    x, y = np.array(a)[:, None], np.array(b)[None, :]
    delta = float(((x > y).sum() - (x < y).sum()) / (len(a) * len(b)))
    got = cb_json("cliff", fa, fb)
    d = abs(delta)
    mag = "negligible" if d < 0.147 else "small" if d < 0.33 else "medium" if d < 0.474 else "large"
    check(f"cliff {name}", close(got["delta"], delta) and got["magnitude"] == mag, f"{got} vs {delta} {mag}")
    got = cb_json("dtw", fa, fb)
    ref_d = dtw_exact(a, b)
    check(f"dtw exact {name}", close(got["distance"], ref_d) and close(got["normalized"], ref_d / len(a)),
          f"{got} vs {ref_d}")
    for radius in (1, 2, 3):
        got = cb_json("dtw", fa, fb, "--radius", str(radius))
        ref_f, _ = fastdtw([float(v) for v in a], [float(v) for v in b], radius)
        check(f"fastdtw r={radius} {name}", close(got["distance"], ref_f), f"{got['distance']} vs {ref_f}")

# Curves of different lengths and a long pair where FastDTW is only an approximation.
curves = [(list(rng.uniform(0, 1, 30)), list(rng.uniform(0, 1, 45))),
          (list(np.cumsum(rng.normal(0, 0.05, 200))), list(np.cumsum(rng.normal(0, 0.05, 200))))]
for k, (a, b) in enumerate(curves):
    fa, fb = write("a", a), write("b", b)
    ref_d = dtw_exact(a, b)
    got = cb_json("dtw", fa, fb)
    check(f"dtw exact curves {k}", close(got["distance"], ref_d), f"{got} vs {ref_d}")
    got = cb_json("dtw", fa, fb, "--radius", "1")
    ref_f, _ = fastdtw(a, b, 1)
    check(f"fastdtw r=1 curves {k}", close(got["distance"], ref_f) and got["distance"] >= ref_d - 1e-12,
          f"{got['distance']} vs {ref_f} (exact {ref_d})")

# Two lines on standard input, and '-' for one sample.
rc, out, _ = cb("mwu", "--json", stdin="1 2 3 4 5\n6 7 8 9 10\n")
check("mwu from two stdin lines", rc == 0 and close(json.loads(out)["p"], 2 / 252))
rc, out, _ = cb("cliff", "-", write("b", [0, 0, 0]), "--json", stdin="1 2\n")
check("cliff with '-' for A", rc == 0 and json.loads(out)["delta"] == 1.0)

# Bonferroni.
ps = [0.001, 0.0079365, 0.02, 0.3, 1.0]
got = cb_json("bonferroni", *map(str, ps))
exp_adj = [min(1.0, p * len(ps)) for p in ps]
check("bonferroni adjusted", all(close(g, e) for g, e in zip(got["adjusted"], exp_adj)), str(got))
check("bonferroni significance", got["significant"] == [p < 0.05 / len(ps) for p in ps], str(got))
got = cb_json("bonferroni", "--alpha", "0.1", "0.03", "0.04")
check("bonferroni alpha", got["significant"] == [True, True] and close(got["threshold"], 0.05), str(got))

# Metrics against scikit-learn: 10 classes, binary, a class never predicted.
for name, k, n in (("10 classes", 10, 500), ("binary", 1, 400), ("3 classes", 3, 60)):
    labels = rng.integers(0, 2 if k == 1 else k, n)
    if k == 1:
        scores = np.clip(labels * 0.3 + rng.uniform(0, 0.7, n), 0, 1).astype(np.float32)[:, None]
        pred = (scores[:, 0] >= 0.5).astype(int)
        auc = roc_auc_score(labels, scores[:, 0].astype(np.float64))
    else:
        logits = rng.normal(0, 1, (n, k)) + np.eye(k)[labels] * 1.5
        if k == 3:
            logits[:, 2] -= 10  # class 2 is never predicted
        scores = (np.exp(logits) / np.exp(logits).sum(1, keepdims=True)).astype(np.float32)
        pred = scores.argmax(1)
        auc = roc_auc_score(labels, scores.astype(np.float64), multi_class="ovr", average="macro")
    lf = os.path.join(TMP, "labels")
    sf = os.path.join(TMP, "scores")
    np.savetxt(lf, labels, fmt="%d")
    np.savetxt(sf, scores, fmt="%.9g")
    got = cb_json("metrics", lf, sf)
    acc = float((pred == labels).mean())
    f1 = f1_score(labels, pred, average="macro")
    check(f"metrics {name}", close(got["accuracy"], acc) and close(got["f1_macro"], f1) and
          close(got["auc_macro"], auc, rel=1e-6), f"{got} vs acc {acc} f1 {f1} auc {auc}")

# Rank similarity (RBO, top-K Jaccard, Kendall's tau-b), each against an
# independent computation: RBO's extrapolated score in exact rationals
# (Webber et al. 2010, equation 32), its bounds as the plain definition
# (1 - p) sum p^(d-1) A_d of the continuations that realise them, taken
# 3000 deep; Jaccard in rationals; tau-b by SciPy on the ranks of the
# union (an item a list lacks: rank len + 1).
from fractions import Fraction


def cut(x, k):
    return list(x)[:k]


def rbo_ext_exact(a, b, p, k):
    a, b = cut(a, k), cut(b, k)
    S, L = (a, b) if len(a) <= len(b) else (b, a)
    s, l, p = len(S), len(L), Fraction(p)

    def X(d):
        return len(set(S[:d]) & set(L[:d]))
    xs, xl = X(s), X(l)
    total = sum(Fraction(X(d), d) * p ** d for d in range(1, l + 1))
    total += sum(Fraction(xs * (d - s), s * d) * p ** d for d in range(s + 1, l + 1))
    return (1 - p) / p * total + (Fraction(xl - xs, l) + Fraction(xs, s)) * p ** l


def rbo_plain(a, b, p, depth=3000):
    total, seen_a, seen_b, x = 0.0, set(), set(), 0
    for d in range(1, depth + 1):
        u, v = a[d - 1], b[d - 1]
        x += (u in seen_b or u == v) + (v in seen_a)
        seen_a.add(u), seen_b.add(v)
        total += p ** (d - 1) * x / d
    return (1 - p) * total


def continuations(a, b, k):
    """The lists extended 3000 deep so that their RBO is the minimum (fresh
    items only: nothing more in common) and the maximum (each list first
    takes the other's items it lacks, in the other's order, padded to one
    length with fresh items, then both continue with the same items)."""
    a, b = cut(a, k), cut(b, k)
    fresh = iter(range(10 ** 9, 10 ** 9 + 100000))
    lo_a = a + [next(fresh) for _ in range(3000 - len(a))]
    lo_b = b + [next(fresh) for _ in range(3000 - len(b))]
    hi_a = a + [v for v in b if v not in a]
    hi_b = b + [v for v in a if v not in b]
    n = max(len(hi_a), len(hi_b))
    hi_a += [next(fresh) for _ in range(n - len(hi_a))]
    hi_b += [next(fresh) for _ in range(n - len(hi_b))]
    common = [next(fresh) for _ in range(3000 - n)]
    return (lo_a, lo_b), (hi_a + common, hi_b + common)


def union_ranks(a, b, k):
    a, b = cut(a, k), cut(b, k)
    items = a + [v for v in b if v not in a]
    r1 = [a.index(v) + 1 if v in a else len(a) + 1 for v in items]
    r2 = [b.index(v) + 1 if v in b else len(b) + 1 for v in items]
    return r1, r2


rng = np.random.default_rng(7)
rank_cases = [("identical", [3, 1, 4, 5, 9], [3, 1, 4, 5, 9], 0.9, 5),
              ("disjoint", [1, 2, 3, 4, 5], [6, 7, 8, 9, 10], 0.9, 5),
              ("one swap at the top", [1, 2, 3, 4, 5], [2, 1, 3, 4, 5], 0.9, 5),
              ("uneven lengths", [7, 2, 9, 4, 1, 8, 3], [2, 7, 5], 0.8, 10),
              ("uneven, cut by K", list(range(20)), [5, 3, 0, 11, 1, 2], 0.95, 8),
              ("partial overlap", [10, 20, 30, 40, 50, 60], [20, 70, 10, 80, 30, 90], 0.5, 6)]
for i in range(6):
    a = list(rng.permutation(40)[:int(rng.integers(3, 15))])
    b = list(rng.permutation(40)[:int(rng.integers(3, 15))])
    rank_cases.append((f"random {i}", a, b, float(rng.choice([0.5, 0.9, 0.98])), int(rng.integers(3, 16))))
for name, a, b, p, k in rank_cases:
    pa, pb = write("ra", a), write("rb", b)
    got = cb_json("rbo", pa, pb, "--p", repr(p), "--k", str(k))
    ext = float(rbo_ext_exact(a, b, p, k))
    (la, lb), (ha, hb) = continuations(a, b, k)
    lo, hi = rbo_plain(la, lb, p), rbo_plain(ha, hb, p)
    check(f"rbo {name}: extrapolated (exact rationals)", close(got["rbo"], ext), f"{got['rbo']} vs {ext}")
    check(f"rbo {name}: min and max (the continuations' RBO)", close(got["min"], lo) and close(got["max"], hi) and
          close(got["residual"], hi - lo), f"{got} vs {lo} {hi}")
    swapped = cb_json("rbo", pb, pa, "--p", repr(p), "--k", str(k))
    check(f"rbo {name}: symmetric", all(swapped[f] == got[f] for f in ("rbo", "min", "max")), str(swapped))
    got = cb_json("jaccard", pa, pb, "--k", str(k))
    ca, cbk = set(cut(a, k)), set(cut(b, k))
    check(f"jaccard {name}", got["jaccard"] == float(Fraction(len(ca & cbk), len(ca | cbk))), str(got))
    r1, r2 = union_ranks(a, b, k)
    ref = stats.kendalltau(r1, r2)
    got = cb_json("kendall", pa, pb, "--k", str(k))
    check(f"kendall {name}", close(got["tau_b"], float(ref.statistic)) and got["items"] == len(r1),
          f"{got} vs {ref.statistic}")
got = cb_json("rbo", write("ra", [1, 2, 3, 4, 5]), write("rb", [1, 2, 3, 4, 5]))
check("rbo defaults: p 0.9, K 5; identical lists give 1", got["rbo"] == 1 and got["p"] == 0.9 and got["k"] == 5, str(got))
got = cb_json("rbo", write("ra", [1, 2, 3, 4, 5]), write("rb", [6, 7, 8, 9, 10]))
check("rbo: disjoint lists give 0", got["rbo"] == 0 and got["min"] == 0, str(got))
top = cb_json("rbo", write("ra", [1, 2, 3, 4, 5, 6]), write("rb", [2, 1, 3, 4, 5, 6]), "--k", "6")["rbo"]
bottom = cb_json("rbo", write("ra", [1, 2, 3, 4, 5, 6]), write("rb", [1, 2, 3, 4, 6, 5]), "--k", "6")["rbo"]
check("rbo is top-weighted: a swap at the top costs more than one at the bottom", top < bottom < 1, f"{top} {bottom}")
sa, sb = rng.standard_normal(12), rng.standard_normal(12)
sb[3] = sb[7]  # a tie: the lower index ranks first
for stat in ("rbo", "jaccard", "kendall"):
    by_scores = cb_json(stat, write("sa", sa), write("sb", sb), "--scores", "--k", "6")
    by_lists = cb_json(stat, write("la", np.argsort(-sa, kind="stable")), write("lb", np.argsort(-sb, kind="stable")),
                       "--k", "6")
    check(f"{stat} --scores ranks by descending score", by_scores == by_lists, f"{by_scores} vs {by_lists}")

# Bad input: one clear error line, exit status 1.
bad = [("rbo: an item twice", ["rbo", write("dup", [1, 2, 1]), write("one", [1])]),
       ("rbo: p of 1", ["rbo", write("two", [1, 2]), write("one", [1]), "--p", "1"]),
       ("rbo: K of 0", ["rbo", write("two", [1, 2]), write("one", [1]), "--k", "0"]),
       ("jaccard: an empty ranking", ["jaccard", os.path.join(TMP, "empty"), write("one", [1])]),
       ("kendall: --p is RBO's", ["kendall", write("two", [1, 2]), write("one", [1]), "--p", "0.5"]),
       ("kendall: undefined (one item each)", ["kendall", write("one", [1]), write("one_b", [1])]),
       ("--scores of unequal lengths", ["rbo", write("s2", [0.1, 0.2]), write("s1", [0.3]), "--scores"]),
       ("missing file", ["mwu", "/nonexistent/a", write("b", [1])]),
       ("not a number", ["mwu", write("a", [1]), os.path.join(TMP, "junk")]),
       ("empty sample", ["cliff", os.path.join(TMP, "empty"), write("b", [1])]),
       ("one stdin line only", ["dtw"]),
       ("unknown option", ["dtw", "--window", "3"]),
       ("negative radius", ["dtw", write("a", [1]), write("b", [1]), "--radius", "-2"]),
       ("radius 0", ["dtw", write("a", [1]), write("b", [1]), "--radius", "0"]),
       ("p-value above 1", ["bonferroni", "1.5"]),
       ("unknown statistic", ["anova"])]
with open(os.path.join(TMP, "junk"), "w") as f:
    f.write("1 2 three 4\n")
open(os.path.join(TMP, "empty"), "w").close()
for name, args in bad:
    rc, out, err = cb(*args, stdin="1 2 3\n")
    lines = [line for line in err.splitlines() if line.startswith("crossbind: error:")]
    check(f"bad input: {name}", rc == 1 and len(lines) == 1 and not out, f"rc={rc} err={err!r}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
