/* Benchmark driver (not a test): times training steps (forward, loss,
 * backward and the protocol's optimizer step) and inference passes of a
 * built-in model on synthetic inputs of the study's shapes, after warm-up,
 * and this machine's SGEMM throughput; prints one JSON object with the
 * model's FLOP count so that a script can report the fraction reached.
 * Usage: bench_train_step MODEL BATCH STEPS THREADS */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "crossbind/crossbind.h"

extern void openblas_set_num_threads(int n) __attribute__((weak));

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Forward multiply-adds x 2 of one sample, from the graph's shapes. */
static double forward_flops(const cb_graph *g)
{
    double f = 0;
    for (int i = 0; i < g->count; i++) {
        const cb_node *n = &g->nodes[i];
        const cb_node *x = &g->nodes[n->in[0]];
        if (n->op == CB_OP_CONV2D) f += 2.0 * (double)cb_node_numel(n) * x->dims[0] * n->kh * n->kw;
        else if (n->op == CB_OP_LINEAR) f += 2.0 * (double)cb_node_numel(n) * (double)cb_node_numel(x);
        else if (n->op == CB_OP_LSTM || n->op == CB_OP_GRU) {
            double t = (double)x->dims[0], d = (double)x->dims[1], h = (double)n->dims[1];
            f += 2.0 * t * (d + h) * (n->op == CB_OP_LSTM ? 4 : 3) * h;
        }
    }
    return f;
}

static double sgemm_gflops(int threads)
{
    const int n = 2048;
    float *a = malloc((size_t)n * n * 4), *b = malloc((size_t)n * n * 4), *c = malloc((size_t)n * n * 4);
    for (size_t i = 0; i < (size_t)n * n; i++) a[i] = b[i] = (float)(i % 7) * 0.1f;
    if (openblas_set_num_threads) openblas_set_num_threads(threads);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n); /* warm-up */
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        double t0 = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        double t = now() - t0;
        if (t < best) best = t;
    }
    if (openblas_set_num_threads) openblas_set_num_threads(1);
    free(a), free(b), free(c);
    return 2.0 * n * n * (double)n / best / 1e9;
}

static void print_times(const char *key, const double *t, int n)
{
    printf("\"%s\": [", key);
    for (int i = 0; i < n; i++) printf("%s%.6f", i ? ", " : "", t[i]);
    printf("]");
}

int main(int argc, char **argv)
{
    cb_blas_restart_with_better_core(argv); /* as the crossbind command */
    if (argc != 5) {
        fprintf(stderr, "usage: bench_train_step MODEL BATCH STEPS THREADS\n");
        return 2;
    }
    const char *name = argv[1];
    int batch = atoi(argv[2]), steps = atoi(argv[3]), threads = atoi(argv[4]);
    cb_model *m;
    cb_exec *tr, *inf;
    cb_optim *opt;
    cb_train_defaults d;
    if (batch < 1 || steps < 1 || cb_set_threads(threads) != CB_OK || cb_model_create(name, &m) != CB_OK ||
        cb_model_train_defaults(name, &d) != CB_OK) {
        fprintf(stderr, "bench_train_step: %s\n", cb_last_error());
        return 1;
    }
    double g1 = sgemm_gflops(1), g2 = sgemm_gflops(threads);
    cb_set_threads(threads);
    cb_model_init(m, 287426343);
    cb_optim_config oc = cb_optim_defaults(d.optimizer, d.lr);
    if (cb_exec_create(&m->graph, batch, 1, CB_KERNELS_FAST, &tr) != CB_OK ||
        cb_exec_create(&m->graph, batch, 0, CB_KERNELS_FAST, &inf) != CB_OK ||
        cb_optim_create(&oc, &m->graph, &opt) != CB_OK) {
        fprintf(stderr, "bench_train_step: %s\n", cb_last_error());
        return 1;
    }
    /* Synthetic inputs of the right kind: token ids or pixels in [0, 1). */
    const int64_t sample = cb_node_numel(&m->graph.nodes[m->input]);
    int text = strcmp(m->data_format, "imdb") == 0;
    for (cb_exec *ex = tr; ex; ex = ex == tr ? inf : NULL) {
        float *x = cb_exec_value(ex, m->input), *y = cb_exec_value(ex, m->labels);
        for (int64_t i = 0; i < batch * sample; i++) x[i] = text ? (float)((i * 7919) % 10000) : (float)(i % 251) / 251.0f;
        for (int i = 0; i < batch; i++) y[i] = (float)(text ? i % 2 : i % 10);
    }
    double *ts = calloc((size_t)steps, sizeof *ts), *ti = calloc((size_t)steps, sizeof *ti);
    const int nn = m->graph.count;
    double *pf = calloc((size_t)nn, sizeof *pf), *pb = calloc((size_t)nn, sizeof *pb);
    for (int s = -1; s < steps; s++) { /* step -1: warm-up (first touch of every buffer) */
        if (s == 0 && getenv("CB_PROFILE")) cb_exec_profile(tr, pf, pb);
        double t0 = now();
        cb_exec_forward(tr, batch);
        cb_exec_backward(tr, batch);
        cb_optim_step(opt);
        double t1 = now();
        cb_exec_forward(inf, batch);
        double t2 = now();
        if (s >= 0) ts[s] = t1 - t0, ti[s] = t2 - t1;
    }
    printf("{\"binding\": \"crossbind\", \"model\": \"%s\", \"batch\": %d, \"threads\": %d, ", name, batch, threads);
    printf("\"forward_gflop_per_sample\": %.6f, \"sgemm_gflops_1\": %.2f, \"sgemm_gflops_n\": %.2f, ",
           forward_flops(&m->graph) / 1e9, g1, g2);
    print_times("train_step_s", ts, steps);
    printf(", ");
    print_times("inference_batch_s", ti, steps);
    printf("}\n");
    if (getenv("CB_PROFILE")) /* per-node seconds per training step, to stderr */
        for (int i = 0; i < nn; i++)
            if (pf[i] + pb[i] > 1e-4 * steps)
                fprintf(stderr, "%-24s %-14s fwd %8.4f s  bwd %8.4f s\n", m->graph.nodes[i].name,
                        cb_op_name(m->graph.nodes[i].op), pf[i] / steps, pb[i] / steps);
    return 0;
}
