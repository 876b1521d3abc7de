// crossbind-torch-cpp: the PyTorch/C++ binding of the study. Trains and
// evaluates the study's models with libtorch's C++ frontend by the protocol,
// options and JSON of the Python runner (runners/pytorch/crossbind_torch.py),
// and answers `crossbind bench` as its benchmark worker.
#include <c10/util/Exception.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "bench.h"
#include "common.h"
#include "eval.h"
#include "train.h"

namespace {

const char* kUsage =
    "usage: crossbind-torch-cpp train MODEL [--run I | --seed S] [--epochs E] [--batch B] [--threads T]\n"
    "           [--data DIR] [--out DIR] [--limit-train N] [--limit-test N] [--optimizer sgd|adam] [--lr L]\n"
    "           [--momentum M] [--weight-decay W] [--init FILE.safetensors] [--no-dropout] [--shuffle]\n"
    "           [--subactivities] [--quiet] [--device cpu]\n"
    "       crossbind-torch-cpp eval MODEL --weights FILE [--data DIR] [--batch B] [--repeat R] [--threads T]\n"
    "           [--limit-test N] [--logits FILE.npy] [--predictions FILE.csv] [--json] [--device cpu]\n"
    "       crossbind-torch-cpp bench --model M --kind train|infer|latency|startup --weights FILE\n"
    "           [--batch B] [--samples N] [--repeat R] [--threads T]\n"
    "       crossbind-torch-cpp --version\n"
    "MODEL: lenet1, lenet5, vgg16, lstm, gru (gru-rb: libtorch has no reset-before GRU).\n"
    "Weights: .safetensors (parameters load mode) or TorchScript .ts (serialization load mode).\n";

int run(int argc, char** argv) {
    if (argc < 2) cb::fail("a command is needed: train, eval or bench (--help shows the usage)");
    std::string cmd = argv[1];
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
        std::fputs(kUsage, stdout);
        return 0;
    }
    if (cmd == "--version") {
        std::printf("libtorch %s\n%s\n", cb::torch_version().c_str(), cb::compiler_version().c_str());
        return 0;
    }
    for (int i = 2; i < argc; i++)
        if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
            std::fputs(kUsage, stdout);
            return 0;
        }
    if (cmd == "train")
        return cb::cmd_train(cb::parse_args(argc, argv, 2, cmd, true,
                                            {"data", "epochs", "batch", "optimizer", "lr", "momentum", "weight-decay", "seed",
                                             "run", "init", "threads", "limit-train", "limit-test", "out", "device"},
                                            {"shuffle", "subactivities", "quiet", "no-dropout"}));
    if (cmd == "eval")
        return cb::cmd_eval(cb::parse_args(argc, argv, 2, cmd, true,
                                           {"weights", "data", "batch", "repeat", "limit-test", "threads", "predictions",
                                            "logits", "device"},
                                           {"json"}));
    if (cmd == "bench")
        return cb::cmd_bench(cb::parse_args(argc, argv, 2, cmd, false,
                                            {"model", "kind", "weights", "batch", "samples", "repeat", "threads"}, {}));
    cb::fail("unknown command '" + cmd + "' (train, eval, bench)");
}

}  // namespace

int main(int argc, char** argv) {
    // The Python runner's setting (PyTorch's own threads only, BLAS single
    // threaded), for any library that reads it later; this libtorch uses MKL.
    setenv("OPENBLAS_NUM_THREADS", "1", 0);
    try {
        return run(argc, argv);
    } catch (const cb::Failure& e) {
        std::fprintf(stderr, "%s: error: %s\n", cb::kProg, e.what());
    } catch (const c10::Error& e) {
        std::fprintf(stderr, "%s: error: libtorch: %s\n", cb::kProg, e.what_without_backtrace());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: error: %s\n", cb::kProg, e.what());
    }
    return 1;
}
