"""Checks the versions column of `crossbind onnx-ops` against the schema
history of the pinned onnx package: for each operator, the versions of its
definition in effect at the opsets the importer reads (the one in effect at
the lowest, then every later one up to the highest) must be exactly the ones
the importer lists as read. A definition added to ONNX within the range and
missing from the table, or a range the package cannot vouch for, fails.

usage: versions.py CROSSBIND
"""
import re
import subprocess
import sys

import onnx.defs

page = subprocess.run([sys.argv[1], "onnx-ops"], check=True, capture_output=True, text=True).stdout
lo, hi = map(int, re.search(r"Import reads opsets (\d+) to (\d+)", page).groups())
if hi > onnx.defs.onnx_opset_version():
    sys.exit(f"the importer reads up to opset {hi}; onnx {onnx.__version__} knows only up to "
             f"{onnx.defs.onnx_opset_version()}")
history = {}
for schema in onnx.defs.get_all_schemas_with_history():
    if schema.domain == "":
        history.setdefault(schema.name, set()).add(schema.since_version)
bad = 0
rows = re.findall(r"^\| (\w+) \| ([\d ]+) \| ", page, re.M)
for op, listed in rows:
    known = sorted(history.get(op, ()))
    first = [v for v in known if v <= lo]
    want = ([first[-1]] if first else []) + [v for v in known if lo < v <= hi]
    got = [int(v) for v in listed.split()]
    if got != want:
        print(f"{op}: the importer lists versions {got}; onnx {onnx.__version__} defines {want} "
              f"at opsets {lo} to {hi}")
        bad += 1
print(f"{len(rows)} operators checked against onnx {onnx.__version__}, opsets {lo} to {hi}")
sys.exit(1 if bad or not rows else 0)
