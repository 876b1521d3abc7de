#!/usr/bin/env python3
"""Checks crossbind's speed and memory goals against `crossbind bench` results.

Usage: speed_goals.py GOALS.tsv BENCH.json [BENCH.json ...] [--md FILE]

GOALS.tsv (scripts/speed_goals.tsv) says, per line, a model, a kind, what is
compared (time or memory), crossbind's peers and the largest ratio allowed.
Each goal's cell is looked up in the results given (the first file that has
crossbind's value and a peer's); the ratio is crossbind's value over the best
peer's, computed as the bench page computes its ratios, and for times also
per round (the ratios of the two bindings' medians within each round both
completed). Prints a Markdown table naming the processor and crossbind's
BLAS kernels (and writes it to FILE with --md).
Exit status: 0 every goal met; 1 a goal missed or left unmeasured; 2 bad
input (an unreadable or malformed goals file or results file).
"""
import json
import math
import statistics
import sys

KINDS = ("train", "infer", "latency", "startup")
MEASURES = ("time", "memory")


class BadInput(Exception):
    pass


def read_goals(path):
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as e:
        raise BadInput(f"cannot read the goals file {path}: {e.strerror}")
    goals = []
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        f = line.split("\t")
        where = f"{path}:{n}"
        if len(f) != 5:
            raise BadInput(f"{where}: expected 5 tab-separated columns (model, kind, measure, peers, at_most), got {len(f)}")
        model, kind, measure, peers, at_most = (x.strip() for x in f)
        if kind not in KINDS:
            raise BadInput(f"{where}: unknown kind '{kind}' ({', '.join(KINDS)})")
        if measure not in MEASURES:
            raise BadInput(f"{where}: unknown measure '{measure}' (time, memory)")
        try:
            limit = float(at_most)
        except ValueError:
            limit = float("nan")
        if not (limit > 0 and math.isfinite(limit)):
            raise BadInput(f"{where}: at_most must be a positive number, not '{at_most}'")
        if not model or not peers:
            raise BadInput(f"{where}: a model and peers are required")
        goals.append(dict(model=model, kind=kind, measure=measure, peers=peers, at_most=limit))
    if not goals:
        raise BadInput(f"{path}: no goals in it")
    return goals


def read_results(path):
    try:
        with open(path, encoding="utf-8") as fh:
            d = json.load(fh)
    except OSError as e:
        raise BadInput(f"cannot read {path}: {e.strerror}")
    except (ValueError, UnicodeDecodeError) as e:
        raise BadInput(f"{path} is not a bench results file: {e}")
    if not isinstance(d, dict) or d.get("format") != "crossbind-bench/1" or not isinstance(d.get("cells"), list) \
            or not isinstance(d.get("bindings"), list):
        raise BadInput(f"{path} is not a bench results file (format crossbind-bench/1 with bindings and cells)")
    for c in d["cells"]:
        if not isinstance(c, dict) or not all(k in c for k in ("model", "kind", "binding", "status")):
            raise BadInput(f"{path}: a cell lacks its model, kind, binding or status")
    d["_path"] = path
    return d


def value(cell, measure):
    """The cell's compared value, or None where it was not measured."""
    if not cell or cell.get("status") != "ok":
        return None
    if measure == "memory":
        kib = cell.get("peak_rss_kib")
        return float(kib) if isinstance(kib, (int, float)) and kib > 0 else None
    times = cell.get("times_s")
    if not isinstance(times, list) or not times or not all(isinstance(t, (int, float)) and t > 0 for t in times):
        return None
    # The bench's median (its quantile at 0.5, src/bench/results.c: the middle
    # value, or the mean of the two middle ones) is the standard one.
    return statistics.median(times)


def peer_names(goal, results):
    frameworks = {b.get("name"): b.get("framework") for b in results["bindings"] if isinstance(b, dict)}
    spec = goal["peers"]
    if spec == "*":
        return [n for n in frameworks if n != "crossbind"]
    if spec.startswith("framework="):
        return [n for n, f in frameworks.items() if f == spec[len("framework="):] and n != "crossbind"]
    return [p.strip() for p in spec.split(",") if p.strip()]


def find(results, model, kind, binding):
    for c in results["cells"]:
        if c["model"] == model and c["kind"] == kind and c["binding"] == binding:
            return c
    return None


def check(goal, all_results):
    """(row of the table, met or not) for one goal."""
    for r in all_results:
        mine = find(r, goal["model"], goal["kind"], "crossbind")
        mv = value(mine, goal["measure"])
        peers = [(p, find(r, goal["model"], goal["kind"], p)) for p in peer_names(goal, r)]
        peers = [(p, c, value(c, goal["measure"])) for p, c in peers]
        peers = [x for x in peers if x[2] is not None]
        if mv is None or not peers:
            continue
        name, cell, pv = min(peers, key=lambda x: x[2])
        ratio = mv / pv
        rounds = ""
        if goal["measure"] == "time":
            a, b = mine.get("round_medians_s") or [], cell.get("round_medians_s") or []
            q = [x / y for x, y in zip(a, b) if x > 0 and y > 0]
            if len(q) >= 2:
                rounds = f"{min(q):.2f}x-{max(q):.2f}x"
        met = ratio <= goal["at_most"]
        return dict(goal=goal, mine=mv, peer=name, peer_value=pv, ratio=ratio, rounds=rounds,
                    verdict="met" if met else "missed", source=r["_path"]), met
    return dict(goal=goal, verdict="unmeasured"), False


def shown(v, measure):
    if measure == "memory":
        return f"{v / 1024:.0f} MiB"
    if v < 1e-3:
        return f"{v * 1e6:.1f} us"
    return f"{v * 1e3:.2f} ms" if v < 1 else f"{v:.3f} s"


def table(rows, all_results):
    out = ["# crossbind's speed and memory goals", ""]
    for r in all_results:
        blas = next((b.get("version", "") for b in r["bindings"] if isinstance(b, dict) and b.get("name") == "crossbind"), "")
        out.append(f"- {r['_path']}: {r.get('date', '?')}, {r.get('machine', '?')}; {r.get('threads', '?')} threads, "
                   f"{r.get('rounds_done', '?')} of {r.get('rounds', '?')} rounds; crossbind: {blas}")
    out += ["", "| model | measurement | crossbind | best peer | ratio (at most) | by round | goal |",
            "|---|---|---|---|---|---|---|"]
    for row in rows:
        g = row["goal"]
        what = f"{g['kind']} {g['measure']}"
        if row["verdict"] == "unmeasured":
            out.append(f"| {g['model']} | {what} | – | – ({g['peers']}) | – ({g['at_most']:.2f}x) | | **unmeasured** |")
            continue
        out.append(f"| {g['model']} | {what} | {shown(row['mine'], g['measure'])} | {row['peer']} "
                   f"{shown(row['peer_value'], g['measure'])} | {row['ratio']:.2f}x ({g['at_most']:.2f}x) | "
                   f"{row['rounds']} | **{row['verdict']}** |")
    met = sum(1 for r in rows if r["verdict"] == "met")
    out += ["", f"{met} of {len(rows)} goals met."]
    return "\n".join(out) + "\n"


def main(argv):
    md = None
    args = []
    i = 0
    while i < len(argv):
        if argv[i] == "--md":
            if i + 1 >= len(argv):
                raise BadInput("--md needs a file")
            md = argv[i + 1]
            i += 2
            continue
        if argv[i].startswith("-"):
            raise BadInput(f"unknown option '{argv[i]}'")
        args.append(argv[i])
        i += 1
    if len(args) < 2:
        raise BadInput("usage: speed_goals.py GOALS.tsv BENCH.json [BENCH.json ...] [--md FILE]")
    goals = read_goals(args[0])
    results = [read_results(p) for p in args[1:]]
    checked = [check(g, results) for g in goals]
    text = table([row for row, _ in checked], results)
    sys.stdout.write(text)
    if md:
        try:
            with open(md, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            raise BadInput(f"cannot write {md}: {e.strerror}")
    return 0 if all(ok for _, ok in checked) else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BadInput as e:
        print(f"speed_goals: error: {e}", file=sys.stderr)
        sys.exit(2)
