#!/bin/bash
# The main job: the bindings study end to end on data that packages provide.
# Installs what is missing, builds, and runs `crossbind study --profile
# quick`: every implemented model in every binding (crossbind/C,
# PyTorch/Python, ONNX Runtime/JavaScript for inference) on the package
# stand-ins (Fashion-MNIST for MNIST, and CIFAR- and IMDb-format stand-ins
# made from packages), training runs with the protocol's seeds, the
# cross-binding inference experiment, inference times, statistics, and the
# report. Run again after an interruption, it resumes where it stopped.
# Environment: PROFILE (default quick; paper or a configuration file),
# STORE (default runs/study.sqlite), REPORT (default runs/report).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
make -j"$(nproc)" >/dev/null
PROFILE=${PROFILE:-quick}
STORE=${STORE:-runs/study.sqlite}
REPORT=${REPORT:-runs/report}
start=$(date +%s)
status=0
./build/crossbind study --profile "$PROFILE" --store "$STORE" --report "$REPORT" || status=$?
echo "quick start: the study took $(( $(date +%s) - start )) s; open $REPORT/index.html (tables: $REPORT/report.md)"
exit $status
