/* crossbind plan: the executor's plan for a model, as the stable text that
 * cb_exec_plan_text prints: which kernel runs each node at every batch
 * size, what is fused, how batches are split over threads. The plan's
 * SHA-256 is what run.json and the bench results record. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"

static void help(void)
{
    printf("usage: crossbind plan MODEL|FILE.onnx [--batch N] [--train] [--level L]\n"
           "                      [--threads N] [--hash]\n"
           "       crossbind plan --list-kernels\n"
           "  MODEL is one of: %s; or an ONNX file.\n"
           "  --batch N  the largest batch the executor is made for (default 128): the plan covers\n"
           "             every batch from 1 to N\n"
           "  --train    a training executor (forward and backward); default: inference\n"
           "  --hash     print only the plan's SHA-256\n"
           "  --list-kernels  the named convolution kernels, best first, with the rule that chooses each\n"
           "  --level reference|fast|fused|fastmath (default fastmath; --kernels fast|reference too)\n"
           "  The plan depends on the threads (default: all cores), the build (AVX-512, oneDNN)\n"
           "  and CROSSBIND_CONV; its first lines say which.\n",
           cli_models(NULL, ", "));
}

int cmd_plan(int argc, char **argv)
{
    const char *what = NULL, *v;
    long batch = 128, threads = cli_default_threads();
    int train = 0, hash_only = 0, list = 0;
    cb_kernels kernels = CB_KERNELS_FAST;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(); return 0; }
        else if (a[0] != '-') {
            if (what) return cli_error("unexpected argument '%s'", a);
            what = a;
        }
        else if (!strcmp(a, "--train")) train = 1;
        else if (!strcmp(a, "--hash")) hash_only = 1;
        else if (!strcmp(a, "--list-kernels")) list = 1;
        else if (!(v = cli_option_value("plan", (const char *const[]){"--batch", "--kernels", "--level", "--threads", NULL}, argc,
                                        argv, &i)))
            return 1;
        else if (!strcmp(a, "--batch")) { if (cli_long(a, v, 1, 1 << 20, &batch)) return 1; }
        else if (!strcmp(a, "--threads")) { if (cli_threads(a, v, &threads)) return 1; }
        else if (!strcmp(a, "--kernels")) { if (cli_kernels(v, &kernels)) return 1; }
        else if (!strcmp(a, "--level")) { if (cli_level(v, &kernels)) return 1; }
        else return cli_error("unknown option '%s' (see crossbind plan --help)", a);
    }
    if (list) {
        if (what) return cli_error("plan: --list-kernels takes no model");
        char *text = cb_kernel_list_text();
        if (!text) return cli_error("out of memory listing the kernels");
        fputs(text, stdout);
        free(text);
        return 0;
    }
    if (!what) return cli_error("plan: give a model name or an ONNX file (see crossbind plan --help)");
    cb_model *m = NULL;
    cb_exec *ex = NULL;
    cb_load_info info;
    cb_status s = cb_set_threads((int)threads);
    if (s == CB_OK) {
        if (cb_model_data_format(what)) s = cb_model_create(what, &m);
        else if (access(what, F_OK) == 0) s = cb_model_load(NULL, what, train, &m, &info);
        else s = cb_fail(CB_ERR_NOT_FOUND, "'%s' is neither a built-in model (%s) nor a file", what,
                         cli_models(NULL, ", "));
    }
    if (s == CB_OK && m->fixed_batch && m->fixed_batch != batch)
        s = cb_fail(CB_ERR_SHAPE, "%s fixes the batch to %lld: give --batch %lld", what, (long long)m->fixed_batch,
                    (long long)m->fixed_batch);
    if (s == CB_OK) s = cb_exec_create(&m->graph, (int)batch, train, kernels, &ex);
    char hex[65];
    char *text = s == CB_OK && !hash_only ? cb_exec_plan_text(ex) : NULL;
    if (s == CB_OK && hash_only) s = cb_exec_plan_sha256(ex, hex);
    else if (s == CB_OK && !text) s = cb_fail(CB_ERR_NOMEM, "out of memory printing the plan");
    if (s == CB_OK) printf("%s%s", hash_only ? hex : text, hash_only ? "\n" : "");
    free(text);
    cb_exec_free(ex);
    cb_model_free(m);
    return s == CB_OK ? 0 : cli_status(s);
}
