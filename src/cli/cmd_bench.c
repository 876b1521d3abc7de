/* crossbind bench: the benchmark suite against every peer binding
 * (src/bench/, docs/benchmarks.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "../bench/bench.h"
#include "../study/proc.h"

static const char *usage_text =
    "usage: crossbind bench [--models M,M,...] [--onnx FILE.onnx ...] [--bindings B,B,...] [--kinds K,K,...]\n"
    "                       [--threads N] [--rounds N] [--quick] [--out DIR] [--doc FILE.md] [--work DIR]\n"
    "                       [--runners DIR] [--timeout S] [--quiet]\n"
    "  Measures every model's training (LeNets: an epoch; the others: a step), inference at the protocol's\n"
    "  batch size, batch-1 latency, peak resident memory and start-up to the first prediction, in every\n"
    "  binding whose runner has a benchmark worker, side by side (alternating, after warm-up, same threads),\n"
    "  and this machine's SGEMM throughput. The first binding is the one the ratios are of.\n"
    "  Kinds: train, infer, latency, startup (default: all).\n"
    "  Models: the study's (default: all of them) and, by name, the ImageNet CNNs mobilenet_v2, resnet18,\n"
    "  resnet50, resnet101, inception_v3, mobilenet_v3_small, mobilenet_v3_large and efficientnet_b0\n"
    "  (inference, batch 32, in the bindings that load ONNX; their file is torchvision's with seeded random\n"
    "  weights, exported by the pytorch-python runner). --onnx FILE (again for more): a model of your own,\n"
    "  named after its file, measured as those are (its one input float32 [batch, ...], synthetic); with\n"
    "  --onnx and no --models, only the files.\n"
    "  Defaults: all the study's models; crossbind, each framework's default binding, then every other\n"
    "  installed binding with a benchmark worker (the ones not installed are named and left out); 2 threads;\n"
    "  3 rounds; --out runs/bench; --work <out>/work. --doc also writes the Markdown page (and its HTML box\n"
    "  plots) there.\n";

/* A model of the user's: named after its file (the name without its
 * directory and ".onnx"), which must not be a model crossbind knows or
 * another file's. */
static int add_onnx_model(cb_bench_config *c, const char *path)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && !strcmp(base + len - 5, ".onnx")) len -= 5;
    if (!len || len >= CB_NAME || strlen(path) >= sizeof c->onnx[0])
        return cli_error("--onnx %s: a file name of 1 to %d characters (without .onnx) and a path under %zu", path,
                         CB_NAME - 1, sizeof c->onnx[0]);
    char name[CB_NAME];
    snprintf(name, sizeof name, "%.*s", (int)len, base);
    for (const char *p = name; *p; p++)
        if (!(*p == '_' || *p == '-' || *p == '.' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
              (*p >= 'A' && *p <= 'Z')))
            return cli_error("--onnx %s: its name '%s' may hold only letters, digits, '.', '_' and '-' (it names the "
                             "model on the page and its files)", path, name);
    cb_train_defaults d;
    if (cb_bench_imagenet_side(name) || cb_model_train_defaults(name, &d) == CB_OK)
        return cli_error("--onnx %s: '%s' is a model crossbind knows by name; rename the file", path, name);
    for (int i = 0; i < c->nmodels; i++)
        if (!strcmp(c->models[i], name)) return cli_error("--onnx %s: a model named '%s' is listed already", path, name);
    if (c->nmodels == CB_MAX_LIST) return cli_error("bench: at most %d models", CB_MAX_LIST);
    if (access(path, R_OK) != 0) /* at once; what it holds is read with the other model files */
        return cli_error("--onnx %s: cannot read it: %s", path, strerror(errno));
    snprintf(c->models[c->nmodels], sizeof c->models[0], "%s", name);
    snprintf(c->onnx[c->nmodels++], sizeof c->onnx[0], "%s", path);
    return 0;
}

static int split_list(const char *opt, const char *v, char (*out)[CB_NAME], int cap, int *n)
{
    *n = 0;
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", v);
    for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n == cap || strlen(t) >= CB_NAME) return cli_error("%s: at most %d names of under %d characters", opt, cap, CB_NAME);
        for (int i = 0; i < *n; i++)
            if (!strcmp(out[i], t)) return cli_error("%s: '%s' is listed twice", opt, t);
        strcpy(out[(*n)++], t);
    }
    if (!*n) return cli_error("%s: the list is empty", opt);
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    cb_bench_config c = {.threads = 2, .rounds = 3, .timeout_s = 1800};
    const char *models = NULL, *bindings = NULL, *runners_dir = NULL, *work = NULL,
               *kinds = NULL, *onnx[CB_MAX_LIST];
    int nonnx = 0;
    snprintf(c.out_dir, sizeof c.out_dir, "runs/bench");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long v;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(usage_text, stdout); return 0; }
        if (!strcmp(a, "--quick")) { c.quick = 1; continue; }
        if (!strcmp(a, "--quiet")) { c.quiet = 1; continue; }
        static const char *const with_value[] = {"--models", "--onnx", "--bindings", "--kinds", "--runners", "--work", "--out",
                                                 "--doc", "--threads", "--rounds", "--timeout", NULL};
        int known = 0;
        for (const char *const *o = with_value; *o; o++) known |= !strcmp(a, *o);
        if (!known) { cli_error("bench: unknown option '%s' (see crossbind bench --help)", a); return 2; }
        const char *val = cli_value(argc, argv, &i);
        if (!val) return 2;
        if (!strcmp(a, "--models")) models = val;
        else if (!strcmp(a, "--onnx")) {
            if (nonnx == CB_MAX_LIST) return cli_error("bench: at most %d --onnx files", CB_MAX_LIST);
            onnx[nonnx++] = val;
        }
        else if (!strcmp(a, "--kinds")) kinds = val;
        else if (!strcmp(a, "--bindings")) bindings = val;
        else if (!strcmp(a, "--runners")) runners_dir = val;
        else if (!strcmp(a, "--work")) work = val;
        else if (!strcmp(a, "--out")) snprintf(c.out_dir, sizeof c.out_dir, "%s", val);
        else if (!strcmp(a, "--doc")) snprintf(c.doc_path, sizeof c.doc_path, "%s", val);
        else if (!strcmp(a, "--threads")) { if (cli_threads(a, val, &v)) return 2; c.threads = (int)v; }
        else if (!strcmp(a, "--rounds")) { if (cli_long(a, val, 1, 100, &v)) return 2; c.rounds = (int)v; }
        else if (!strcmp(a, "--timeout")) { if (cli_long(a, val, 1, 86400, &v)) return 2; c.timeout_s = (double)v; }
        else { fputs(usage_text, stderr); return cli_error("bench: unknown option '%s'", a); }
    }
    if (models) {
        if (split_list("--models", models, c.models, CB_MAX_LIST, &c.nmodels)) return 2;
    } else if (!nonnx)
        for (const char *const *n = cb_model_names(); *n && c.nmodels < CB_MAX_LIST; n++) strcpy(c.models[c.nmodels++], *n);
    for (int i = 0; i < c.nmodels; i++) { /* by the registry's entry: building VGG-16 to check it costs 0.5 GB */
        cb_train_defaults d;
        if (!cb_bench_imagenet_side(c.models[i]) && cb_model_train_defaults(c.models[i], &d) != CB_OK)
            return cli_error("bench: %s (see crossbind help for the known ones; ImageNet CNNs: %s; a file of yours: "
                             "--onnx FILE)", cb_last_error(), cb_bench_imagenet_names());
    }
    for (int i = 0; i < nonnx; i++)
        if (add_onnx_model(&c, onnx[i])) return 2;
    if (kinds) {
        char list[CB_BENCH_KINDS][CB_NAME];
        int n;
        if (split_list("--kinds", kinds, list, CB_BENCH_KINDS, &n)) return 2;
        for (int i = 0; i < n; i++) {
            int k = 0;
            while (k < CB_BENCH_KINDS && strcmp(list[i], cb_bench_kind_names[k])) k++;
            if (k == CB_BENCH_KINDS) return cli_error("--kinds: unknown kind '%s' (train, infer, latency, startup)", list[i]);
            c.kinds[k] = 1;
        }
    } else
        for (int k = 0; k < CB_BENCH_KINDS; k++) c.kinds[k] = 1;
    if (bindings && split_list("--bindings", bindings, c.bindings, CB_BENCH_MAX_BINDINGS, &c.nbindings)) return 2;
    if (c.doc_path[0]) { /* refused now rather than after the measurements */
        char dir[600];
        snprintf(dir, sizeof dir, "%s", c.doc_path);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
            *slash = 0;
            if (cli_prepare_out_dir(dir)) return 1;
        }
    }
    if (work) snprintf(c.work_dir, sizeof c.work_dir, "%s", work);
    else snprintf(c.work_dir, sizeof c.work_dir, "%s/work", c.out_dir);

    char self[4096], rdir[4096];
    cli_self_path(argv[0], self, sizeof self);
    if (runners_dir) snprintf(rdir, sizeof rdir, "%s", runners_dir);
    else cli_default_runners(self, rdir, sizeof rdir);
    cb_runners runners;
    cb_status st = cb_runners_load(rdir, self, &runners);
    if (st != CB_OK) return cli_status(st);
    cb_proc_catch_interrupts();
    int failures = 0;
    st = cb_bench_run(&c, &runners, &failures);
    cb_runners_free(&runners);
    if (st != CB_OK) return cli_status(st);
    if (cb_proc_interrupted()) {
        fprintf(stderr, "crossbind: bench interrupted; the results measured so far are in %s\n", c.out_dir);
        return 130;
    }
    printf("bench: %s/bench.md, bench.json, bench.html%s%s\n", c.out_dir, c.doc_path[0] ? "; page: " : "", c.doc_path);
    if (failures) return cli_error("bench: %d measurement(s) failed (see the page's Failures)", failures);
    return 0;
}
