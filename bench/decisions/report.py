#!/usr/bin/python3
"""Turns the tab-separated rows of bench_json/bench_zip (`bench`) or
hostile_json/hostile_zip (`hostile`) on stdin into Markdown tables."""
import sys
from collections import OrderedDict


def bench(rows):
    print("| input | size | reader | parsed | median ms | MB/s | time vs crossbind |")
    print("|---|---:|---|---|---:|---:|---:|")
    base = {}
    for f, size, reader, what, secs in rows:
        if reader == "crossbind" and secs:
            base[f] = float(secs)
    for f, size, reader, what, secs in rows:
        size = int(size)
        if not secs:
            print(f"| {f} | {size / 1e6:.2f} MB | {reader} | {what} | | | |")
            continue
        s = float(secs)
        ratio = f"{s / base[f]:.2f}x" if f in base else ""
        print(f"| {f} | {size / 1e6:.2f} MB | {reader} | {what} | {s * 1e3:.3f} | {size / s / 1e6:.0f} | {ratio} |")


def short(o):
    if o.startswith("accepted"):
        return "**A**"
    return "R (caller)" if "[caller's check]" in o else "R"


def hostile(rows, compact=False):
    cases, readers = OrderedDict(), OrderedDict()
    for case, reader, outcome in rows:
        cases.setdefault(case, {})[reader] = outcome
        readers[reader] = 1
    rs = list(readers)
    print("| case | " + " | ".join(rs) + " |")
    print("|---|" + "---|" * len(rs))
    for case, by in cases.items():
        cells = []
        for r in rs:
            o = by.get(r, "")
            if compact:
                cells.append(short(o))
                continue
            o = o.replace("refused: ", "refused: ").replace("|", "\\|")
            if len(o) > 90:
                o = o[:87] + "..."
            cells.append(o)
        print(f"| {case} | " + " | ".join(cells) + " |")


rows = [l.rstrip("\n").split("\t") for l in sys.stdin if l.strip() and not l.startswith("#")]
rows = [r + [""] * (5 - len(r)) if sys.argv[1] == "bench" else r for r in rows]
if sys.argv[1] == "hostile":
    print("R: refused, A: accepted, R (caller): refused only by the caller's own check (the library accepted)\n")
    hostile(rows, compact=True)
    print()
    hostile(rows)
else:
    bench(rows)
