// `bench`: one measurement for `crossbind bench` (runners/README.md,
// "Benchmark worker"), as runners/pytorch/cb_bench.py makes it, printed as one
// JSON line.
#pragma once
#include "common.h"

namespace cb {
int cmd_bench(const Args& args);
}
