/* crossbind delta: differential testing of environments (src/delta/delta.h).
 *
 *   crossbind delta --config FILE | --profile quick [--store PATH] [--work DIR]
 *                   [--report DIR | --no-report] [--json FILE] [--runners DIR]
 *                   [--timeout S] [--no-localise] */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "../delta/experiment.h"
#include "../study/proc.h"

#define DEFAULT_STORE "runs/delta.sqlite"

static const char delta_usage[] =
    "usage: crossbind delta --config FILE | --profile quick [--store PATH] [--work DIR]\n"
    "                       [--report DIR | --no-report] [--json FILE] [--runners DIR]\n"
    "                       [--timeout SECONDS] [--no-localise] [--list]\n"
    "  Runs one model as many variants (PyTorch native in two versions; its ONNX export in\n"
    "  ONNX Runtime and crossbind at each level, TVM at each opt_level, onnx2torch and\n"
    "  onnx2tf; Keras natively, through tf2onnx and TFLite; 1 and 2 threads; CPU or CUDA;\n"
    "  or the user's ONNX files) on the same inputs (images, or a study model's test split),\n"
    "  compares every pair input by input (top-1, top-K Jaccard, Kendall tau-b, RBO, logit\n"
    "  distances, times with Mann-Whitney U and Cliff's delta), and localises each diverging\n"
    "  pair to its first diverging layer by capture and by bisection (docs/delta.md).\n"
    "  Results go to a store (default " DEFAULT_STORE "), one transaction per variant:\n"
    "  interrupted, the same command continues. The report is written to DIR/index.html\n"
    "  (default: delta-report/ beside the store), the summary to --json FILE. --list prints\n"
    "  the variants and groups a configuration names, and runs nothing.\n";

int cmd_delta(int argc, char **argv)
{
    const char *config = NULL, *profile = NULL, *store = DEFAULT_STORE, *work = NULL, *report = NULL, *json = NULL;
    const char *runners_dir = NULL;
    int no_report = 0, localise = 1, list = 0;
    float timeout = 1800;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(delta_usage, stdout); return 0; }
        else if (!strcmp(a, "--config")) { if (!(config = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--profile")) { if (!(profile = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--store")) { if (!(store = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--work")) { if (!(work = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--report")) { if (!(report = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--json")) { if (!(json = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--runners")) { if (!(runners_dir = cli_value(argc, argv, &i))) return 2; }
        else if (!strcmp(a, "--timeout")) {
            const char *v = cli_value(argc, argv, &i);
            if (!v || cli_float("--timeout", v, 1, 86400 * 7, &timeout)) return 2;
        }
        else if (!strcmp(a, "--no-report")) no_report = 1;
        else if (!strcmp(a, "--no-localise")) localise = 0;
        else if (!strcmp(a, "--list")) list = 1;
        else { cli_error("delta: unknown option '%s' (see crossbind delta --help)", a); return 2; }
    }
    if (!config == !profile) {
        fputs(delta_usage, stderr);
        cli_error("delta: give exactly one of --config FILE and --profile quick");
        return 2;
    }
    if (no_report && report) { cli_error("delta: --report and --no-report contradict each other"); return 2; }
    char self[PATH_MAX], rdir[PATH_MAX + 16], stem[PATH_MAX], wdir[PATH_MAX + 16], repdir[PATH_MAX + 16], tmp[PATH_MAX];
    cli_self_path(argv[0], self, sizeof self);
    if (runners_dir) snprintf(rdir, sizeof rdir, "%s", runners_dir);
    else cli_default_runners(self, rdir, sizeof rdir);
    /* Beside the store: <store minus .sqlite>-files/ and delta-report/. */
    snprintf(stem, sizeof stem, "%s", store);
    char *dot = strrchr(stem, '.');
    if (dot && !strchr(dot, '/')) *dot = 0;
    snprintf(wdir, sizeof wdir, "%s%s", work ? work : stem, work ? "" : "-files");
    snprintf(tmp, sizeof tmp, "%s", store);
    snprintf(repdir, sizeof repdir, "%s%s", report ? report : dirname(tmp), report ? "" : "/delta-report");
    snprintf(tmp, sizeof tmp, "%s", store);
    if (cli_prepare_out_dir(dirname(tmp))) return 1;

    delta_config c;
    cb_status st = delta_config_load(config, profile, &c);
    if (st != CB_OK) return cli_status(st);
    if (list) { /* the variants and groups the configuration names, nothing run */
        for (int x = 0; x < c.n_axes; x++) {
            printf("%s:", c.axes[x].name);
            for (int i = 0; i < c.axes[x].n; i++) printf(" %s", c.variants[c.axes[x].members[i]].key);
            printf("\n");
        }
        printf("base: %s\nvariants: %d\n", c.variants[c.base].key, c.n_variants);
        return 0;
    }
    cb_runners runners;
    if ((st = cb_runners_load(rdir, self, &runners)) != CB_OK) return cli_status(st);
    cb_proc_catch_interrupts();
    delta_options o = {.store = store, .work = wdir, .report = no_report ? NULL : repdir, .json = json,
                       .timeout_s = timeout, .localise = localise};
    st = delta_experiment(&c, &runners, &o);
    cb_runners_free(&runners);
    if (cb_proc_interrupted()) {
        fprintf(stderr, "crossbind: delta interrupted; what was measured is in %s; run the same command to continue\n", store);
        return 130;
    }
    if (st != CB_OK) return cli_status(st);
    if (!no_report) printf("report: %s/index.html\n", repdir);
    return 0;
}
