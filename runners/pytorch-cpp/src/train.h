// `train`: the protocol's training run (runners/README.md), as the Python
// runner's cmd_train: seeded initialisation or --init, file order (or a seeded
// shuffle), full-set evaluation after every epoch excluded from the training
// time, run.json and final.safetensors.
#pragma once
#include "common.h"

namespace cb {
int cmd_train(const Args& args);
}
