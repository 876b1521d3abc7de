/* crossbind bench: the ImageNet CNNs of differential testing as benchmark
 * models. crossbind has no builder of its own for them: their one file is
 * the ONNX export of torchvision's model with seeded random weights, made
 * by the PyTorch/Python runner (`crossbind_torch.py imagenet-export`, the
 * framework's own model zoo), and every binding that loads ONNX runs that
 * same file (crossbind through its importer, ONNX Runtime). */
#include <stdio.h>
#include <string.h>
#include "../study/proc.h"
#include "bench.h"
#include "crossbind/onnx.h"

static const struct { const char *name; int side; } models[] = {
    {"mobilenet_v2", 224},       {"resnet18", 224},           {"resnet50", 224},        {"resnet101", 224},
    {"inception_v3", 299},       {"mobilenet_v3_small", 224}, {"mobilenet_v3_large", 224},
    {"efficientnet_b0", 224}};

int cb_bench_imagenet_side(const char *model)
{
    for (size_t i = 0; i < sizeof models / sizeof *models; i++)
        if (!strcmp(models[i].name, model)) return models[i].side;
    return 0;
}

int cb_bench_onnx_model(const cb_bench_config *c, int m) { return c->onnx[m][0] || cb_bench_imagenet_side(c->models[m]); }

const char *cb_bench_imagenet_names(void)
{
    static char names[256];
    if (!names[0])
        for (size_t i = 0; i < sizeof models / sizeof *models; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", models[i].name);
    return names;
}

cb_status cb_bench_imagenet_export(const cb_bench_config *c, const cb_runners *all, const char *model,
                                   const char *path, int *interrupted)
{
    const cb_runner *py = cb_runners_find(all, "pytorch-python");
    if (!py)
        return cb_fail(CB_ERR_NOT_FOUND, "%s: its ONNX file is torchvision's, exported by the pytorch-python runner, "
                                         "which is not among the runners", model);
    char *argv[24], seed[24], out[900], err[900];
    int n = 0;
    for (int i = 0; i < py->ncommand && n < 16; i++) argv[n++] = py->command[i];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)cb_protocol_seeds[0]);
    char *rest[] = {"imagenet-export", (char *)model, "--seed", seed, "--out", (char *)path};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++) argv[n++] = rest[i];
    argv[n] = NULL;
    snprintf(out, sizeof out, "%s/export-%s.out", c->work_dir, model);
    snprintf(err, sizeof err, "%s/export-%s.err", c->work_dir, model);
    if (!c->quiet) fprintf(stderr, "bench: %s's ONNX file, by pytorch-python's torchvision export\n", model);
    cb_proc_result pr;
    cb_status st = cb_proc_run(argv, out, err, c->timeout_s, &pr);
    if (st != CB_OK) return st;
    if (pr.interrupted) {
        *interrupted = 1;
        return cb_fail(CB_ERR_IO, "interrupted");
    }
    if (pr.timed_out || !pr.exited || pr.exit_code != 0)
        return cb_fail(CB_ERR_IO, "%s: pytorch-python's torchvision export failed (%s; see %s); it needs that runner "
                                  "installed: bash runners/pytorch-python/install.sh",
                       model, pr.timed_out ? "timed out" : "non-zero exit", err);
    return CB_OK;
}
