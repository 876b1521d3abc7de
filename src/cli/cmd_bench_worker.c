/* crossbind's side of `crossbind bench`: one measurement of one model in a
 * process of its own (so that its peak memory and start-up are its own),
 * printed as one JSON line. The same contract as every runner's `bench`
 * command (runners/README.md, "Benchmark worker"):
 *   bench-worker --model M --kind train|infer|latency|startup [--weights FILE]
 *                [--batch B] [--samples N] [--repeat R] [--threads T] [--profile]
 * crossbind's training answer adds conv_s (seconds inside the convolutions
 * per unit) and, with --sgemm (which crossbind's runner manifest passes) for
 * a model with convolutions, sgemm_gflops: this machine's SGEMM rate at
 * --threads, measured after the units.
 * Without --weights the model starts from its initialisation with the
 * protocol's first seed (the regression guard, scripts/perf_guard.sh). 
 * Inputs are synthetic and identical in every binding: sample s is the flat
 * index range [s * size, (s + 1) * size), pixel i = (i % 251) / 251, token
 * i = (i * 7919) % 10000; label s % 10 (s % 2 for binary models). Batches
 * are made outside the timed region. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "../core/clock.h"
#include "../bench/bench.h"
#include "crossbind/onnx.h"

typedef struct bench_args {
    const char *model, *kind, *weights;
    long batch, samples, repeat, threads;
    int profile; /* print each node's seconds per unit to stderr */
    int sgemm;   /* training: also measure SGEMM after the units (crossbind's manifest asks) */
    cb_kernels level; /* --level: fastmath unless asked (what `crossbind bench` measures) */
} bench_args;

static void make_batch(const cb_model *m, int64_t s0, int n, float *x, float *y)
{
    const int64_t size = cb_node_numel(&m->graph.nodes[m->input]);
    const int text = strcmp(m->data_format, "imdb") == 0;
    for (int64_t k = 0; k < (int64_t)n * size; k++) {
        const int64_t i = s0 * size + k;
        x[k] = text ? (float)((i * 7919) % 10000) : (float)(i % 251) / 251.0f;
    }
    if (y)
        for (int s = 0; s < n; s++) y[s] = (float)((s0 + s) % (m->classes == 1 ? 2 : 10));
}

/* This process's peak resident memory (VmHWM), KiB; -1 if unknown. */
static long vmhwm_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb;
}

static int has_convolutions(const cb_model *m)
{
    for (int i = 0; i < m->graph.count; i++)
        if (m->graph.nodes[i].op == CB_OP_CONV2D) return 1;
    return 0;
}

/* Whether an embedding reads the model's input (token ids): the synthetic
 * pixels of a model crossbind has no builder for would not be ids. */
static int reads_token_ids(const cb_model *m)
{
    for (int i = 0; i < m->graph.count; i++) {
        const cb_node *n = &m->graph.nodes[i];
        if (n->op == CB_OP_EMBEDDING && n->n_in > 0 && n->in[0] == m->input) return 1;
    }
    return 0;
}

/* The predicted label of sample 0 (argmax; sigmoid >= 0.5 for one output). */
static int label_of(const cb_model *m, const float *out)
{
    if (m->classes == 1) return out[0] >= 0.0f;
    int best = 0;
    for (int j = 1; j < m->classes; j++)
        if (out[j] > out[best]) best = j;
    return best;
}

static void print_times(const double *t, int n, const char *extra, long hwm_kib)
{
    printf("{\"times_s\": [");
    for (int i = 0; i < n; i++) printf("%s%.9g", i ? ", " : "", t[i]);
    printf("]%s, \"vmhwm_kib\": %ld}\n", extra, hwm_kib);
    fflush(stdout);
}

/* --profile: the nodes that took more than 0.2% of a unit's t seconds. */
static void print_profile(const cb_model *m, const double *pf, const double *pb, double t)
{
    for (int i = 0; i < m->graph.count; i++)
        if (pf[i] + (pb ? pb[i] : 0) > 0.002 * t)
            fprintf(stderr, "%-22s %-12s forward %8.2f ms  backward %8.2f ms\n", m->graph.nodes[i].name,
                    cb_op_name(m->graph.nodes[i].op), pf[i] * 1e3, pb ? pb[i] * 1e3 : 0.0);
}

/* Training passes over `samples` samples in batches (a pass of one batch is
 * one step) after 1 warm-up step. Also reports each pass's seconds inside
 * the convolutions (forward and backward), for the share of SGEMM they reach. */
static cb_status train_units(cb_model *m, const bench_args *a, double *times, double *conv_s, char plan[65])
{
    cb_train_defaults d;
    cb_exec *ex = NULL;
    cb_optim *opt = NULL;
    cb_status s = cb_model_train_defaults(a->model, &d);
    cb_optim_config oc = cb_optim_defaults(d.optimizer, d.lr);
    if (s == CB_OK) s = cb_exec_create(&m->graph, (int)a->batch, 1, a->level, &ex);
    if (s == CB_OK) s = cb_exec_plan_sha256(ex, plan);
    if (s == CB_OK) s = cb_optim_create(&oc, &m->graph, &opt);
    const int nn = m->graph.count;
    double *pf = calloc((size_t)nn, sizeof *pf), *pb = calloc((size_t)nn, sizeof *pb);
    if (s == CB_OK && (!pf || !pb)) s = cb_fail(CB_ERR_NOMEM, "out of memory");
    float *x = s == CB_OK ? cb_exec_value(ex, m->input) : NULL, *y = s == CB_OK ? cb_exec_value(ex, m->labels) : NULL;
    for (long r = -1; s == CB_OK && r < a->repeat; r++) { /* r < 0: warm-up steps */
        if (r == 0) cb_exec_profile(ex, pf, pb);
        double t = 0;
        for (int64_t s0 = 0; s == CB_OK && s0 < (r < 0 ? a->batch : a->samples); s0 += a->batch) {
            int n = (int)(a->samples - s0 < a->batch ? a->samples - s0 : a->batch);
            make_batch(m, s0, n, x, y);
            double t0 = cb_now();
            s = cb_exec_forward(ex, n);
            if (s == CB_OK) s = cb_exec_backward(ex, n);
            if (s == CB_OK) cb_optim_step(opt);
            t += cb_now() - t0;
        }
        if (r < 0) continue;
        times[r] = t;
        if (a->profile) print_profile(m, pf, pb, t);
        conv_s[r] = 0;
        for (int i = 0; i < nn; i++)
            if (m->graph.nodes[i].op == CB_OP_CONV2D) conv_s[r] += pf[i] + pb[i];
        memset(pf, 0, (size_t)nn * sizeof *pf);
        memset(pb, 0, (size_t)nn * sizeof *pb);
    }
    free(pf), free(pb);
    cb_optim_free(opt);
    cb_exec_free(ex);
    return s;
}

/* kind infer: passes over `samples` samples (one warm-up pass first);
 * latency: seconds per single-sample prediction (5 warm-up samples);
 * startup: one prediction, printed at once. */
static cb_status infer_units(cb_model *m, const bench_args *a, double *times, char plan[65], double *flops_done)
{
    const int latency = strcmp(a->kind, "infer") != 0;
    const int batch = latency ? 1 : (int)a->batch;
    cb_exec *ex;
    cb_status s = cb_exec_create(&m->graph, batch, 0, a->level, &ex);
    if (s == CB_OK) cb_exec_freeze_params(ex); /* a loaded model's inference, as every peer's */
    /* Latency stands for a served model answering one request after
     * another: what it precomputes from its weights is made at load, as a
     * peer's session initialisation does. Start-up measures the first answer
     * and leaves it to the passes; inference's warm-up pass makes it. */
    if (s == CB_OK && !strcmp(a->kind, "latency")) s = cb_exec_precompute(ex);
    if (s == CB_OK) s = cb_exec_plan_sha256(ex, plan);
    if (s != CB_OK) {
        cb_exec_free(ex);
        return s;
    }
    *flops_done = cb_exec_forward_flops_done(ex);
    float *x = cb_exec_value(ex, m->input);
    const float *out = cb_exec_value(ex, m->graph.output);
    if (!strcmp(a->kind, "startup")) {
        make_batch(m, 0, 1, x, NULL);
        s = cb_exec_forward(ex, 1);
        /* When the answer was ready, on the clock the harness started us by. */
        if (s == CB_OK)
            printf("{\"label\": %d, \"monotonic_s\": %.9f, \"vmhwm_kib\": %ld}\n", label_of(m, out), cb_now(),
                   vmhwm_kib());
        fflush(stdout);
    } else if (latency) {
        for (long i = -5; s == CB_OK && i < a->samples; i++) {
            make_batch(m, i < 0 ? -i : i, 1, x, NULL);
            double t0 = cb_now();
            s = cb_exec_forward(ex, 1);
            volatile int label = label_of(m, out); /* the prediction is part of the answer */
            (void)label;
            if (i >= 0) times[i] = cb_now() - t0;
        }
    } else {
        double *pf = a->profile ? calloc((size_t)m->graph.count, sizeof *pf) : NULL;
        for (long r = -1; s == CB_OK && r < a->repeat; r++) {
            if (r == 0 && pf) cb_exec_profile(ex, pf, NULL); /* per node where the batch is not sliced */
            double t = 0;
            for (int64_t s0 = 0; s == CB_OK && s0 < a->samples; s0 += batch) {
                int n = (int)(a->samples - s0 < batch ? a->samples - s0 : batch);
                make_batch(m, s0, n, x, NULL);
                double t0 = cb_now();
                s = cb_exec_forward(ex, n);
                volatile int label = 0;
                for (int k = 0; k < n; k++) label += label_of(m, out + (size_t)k * m->classes);
                t += cb_now() - t0;
            }
            if (r >= 0) times[r] = t;
            if (r >= 0 && pf) {
                print_profile(m, pf, NULL, t);
                memset(pf, 0, (size_t)m->graph.count * sizeof *pf);
            }
        }
        free(pf);
    }
    cb_exec_free(ex);
    return s;
}

static const char usage_text[] =
    "usage: crossbind bench-worker --model M --kind train|infer|latency|startup [--weights FILE]\n"
    "                              [--batch B] [--samples N] [--repeat R] [--threads T] [--profile] [--sgemm]\n"
    "                              [--level reference|fast|fused|fastmath]\n"
    "  One measurement of one model, printed as one JSON line (times_s, vmhwm_kib; conv_s for\n"
    "  training): the worker `crossbind bench` runs in a process of its own. Inputs are synthetic.\n"
    "  train: R passes over N samples in batches of B (1 warm-up step first); infer: R passes;\n"
    "  latency: N single-sample predictions; startup: one prediction. --profile: per-node\n"
    "  forward/backward times on stderr. --sgemm (training a model with convolutions): also\n"
    "  sgemm_gflops, this machine's SGEMM rate at --threads measured after the passes.\n"
    "  Defaults: batch 1, 1 sample, 1 repeat, 1 thread, level fastmath (what `crossbind bench` measures).\n";

int cmd_bench_worker(int argc, char **argv)
{
    bench_args a = {.batch = 1, .samples = 1, .repeat = 1, .threads = 1, .level = CB_KERNELS_FAST};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { fputs(usage_text, stdout); return 0; }
        if (!strcmp(argv[i], "--profile")) { a.profile = 1; continue; }
        if (!strcmp(argv[i], "--sgemm")) { a.sgemm = 1; continue; }
        const char *o = argv[i];
        const char *v = cli_option_value("bench-worker",
                                         (const char *const[]){"--model", "--kind", "--weights", "--batch",
                                                               "--samples", "--repeat", "--threads", "--level", NULL},
                                         argc, argv, &i);
        if (!v) return 2;
        if (!strcmp(o, "--model")) a.model = v;
        else if (!strcmp(o, "--kind")) a.kind = v;
        else if (!strcmp(o, "--weights")) a.weights = v;
        else if (!strcmp(o, "--batch")) { if (cli_long(o, v, 1, 1 << 16, &a.batch)) return 2; }
        else if (!strcmp(o, "--samples")) { if (cli_long(o, v, 1, 1L << 24, &a.samples)) return 2; }
        else if (!strcmp(o, "--repeat")) { if (cli_long(o, v, 1, 1000, &a.repeat)) return 2; }
        else if (!strcmp(o, "--threads")) { if (cli_threads(o, v, &a.threads)) return 2; }
        else if (!strcmp(o, "--level")) { if (cli_level(v, &a.level)) return 2; }
        else return cli_error("bench-worker: unknown option '%s'", o);
    }
    if (!a.model || !a.kind) return cli_error("bench-worker: --model and --kind are required");
    const int train = !strcmp(a.kind, "train");
    if (!train && strcmp(a.kind, "infer") && strcmp(a.kind, "latency") && strcmp(a.kind, "startup"))
        return cli_error("bench-worker: unknown kind '%s' (train, infer, latency, startup)", a.kind);
    if (train && a.samples < a.batch) return cli_error("bench-worker: a training unit needs --samples >= --batch");
    cb_model *m = NULL;
    cb_load_info info;
    cb_status s = cb_set_threads((int)a.threads);
    cb_train_defaults builtin;
    const size_t wl = a.weights ? strlen(a.weights) : 0;
    if (s == CB_OK && cb_model_train_defaults(a.model, &builtin) != CB_OK && wl > 5 &&
        !strcmp(a.weights + wl - 5, ".onnx")) {
        /* A model crossbind has no builder for (an ImageNet CNN): the graph is the file's. */
        if (train) return cli_error("bench-worker: %s is measured in inference only", a.model);
        s = cb_onnx_load(a.weights, 0, &m);
        if (s == CB_OK && reads_token_ids(m)) {
            cb_model_free(m);
            return cli_error("bench-worker: %s: its input holds token ids; a model crossbind has no builder for is "
                             "measured on synthetic pixels only (a float32 input)", a.model);
        }
    } else {
        if (s == CB_OK) s = cb_model_create(a.model, &m);
        if (s == CB_OK && a.weights) s = cb_model_load_weights(m, a.weights, &info);
        else if (s == CB_OK) cb_model_init(m, cb_protocol_seeds[0]);
    }
    const long n = !strcmp(a.kind, "latency") ? a.samples : a.repeat;
    double *times = calloc((size_t)n, sizeof *times), *conv = calloc((size_t)n, sizeof *conv);
    if (s == CB_OK && (!times || !conv)) s = cb_fail(CB_ERR_NOMEM, "out of memory");
    char plan[65] = "";
    double flops_done = 0;
    if (s == CB_OK) s = train ? train_units(m, &a, times, conv, plan) : infer_units(m, &a, times, plan, &flops_done);
    if (s == CB_OK && strcmp(a.kind, "startup")) {
        char extra[4096] = "";
        const long hwm = vmhwm_kib(); /* the model's peak, before the SGEMM's buffers */
        /* Which kernels ran, shortened: `crossbind plan MODEL --batch B --hash`. */
        size_t len = (size_t)snprintf(extra, sizeof extra, ", \"plan\": \"%.16s\"", plan);
        /* The plan's multiply-adds per sample (Winograd's fewer), for the share of the FMA peak. */
        if (flops_done > 0) len += (size_t)snprintf(extra + len, sizeof extra - len, ", \"flops_done\": %.6g", flops_done);
        if (train) {
            len += (size_t)snprintf(extra + len, sizeof extra - len, ", \"conv_s\": [");
            for (long i = 0; i < n && len < sizeof extra - 40; i++)
                len += (size_t)snprintf(extra + len, sizeof extra - len, "%s%.9g", i ? ", " : "", conv[i]);
            len += (size_t)snprintf(extra + len, sizeof extra - len, "]");
            /* The machine's SGEMM rate right after the passes, at the same
             * thread count: the ceiling the convolutions' rate is held
             * against, taken in the same moment (on a shared machine the
             * rate of both drifts by a third within minutes). */
            if (a.sgemm && has_convolutions(m) && len < sizeof extra - 40)
                snprintf(extra + len, sizeof extra - len, ", \"sgemm_gflops\": %.4g",
                         cb_bench_sgemm_gflops((int)a.threads));
        }
        print_times(times, (int)n, extra, hwm);
    }
    free(times), free(conv);
    cb_model_free(m);
    return s == CB_OK ? 0 : cli_status(s);
}
