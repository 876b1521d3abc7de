/* crossbind bench: every binding's speed and memory on the study's models,
 * measured side by side in one invocation (docs/benchmarks.md says how).
 * Internal to the crossbind command. */
#ifndef CB_BENCH_H
#define CB_BENCH_H

#include "../study/study.h"

/* Bindings measured side by side at most (both frameworks' families, crossbind and ONNX Runtime fit). */
#define CB_BENCH_MAX_BINDINGS 16

enum { CB_BENCH_TRAIN, CB_BENCH_INFER, CB_BENCH_LATENCY, CB_BENCH_STARTUP, CB_BENCH_KINDS };
extern const char *const cb_bench_kind_names[CB_BENCH_KINDS];

typedef struct cb_bench_config {
    char models[CB_MAX_LIST][CB_NAME]; int nmodels;
    char onnx[CB_MAX_LIST][600]; /* per model: the user's ONNX file it was named after (--onnx); empty: a model crossbind knows */
    char bindings[CB_BENCH_MAX_BINDINGS][CB_NAME]; int nbindings; /* the first is the one the ratios are of; none: every installed one */
    int kinds[CB_BENCH_KINDS];  /* 1: measured */
    int threads, rounds;
    int quick;          /* smaller sample counts: a check of the instrument, not a measurement */
    int quiet;
    double timeout_s;   /* per worker process */
    char work_dir[600]; /* model files and worker output */
    char out_dir[500];  /* bench.json, bench.md, bench.html */
    char doc_path[600]; /* also the Markdown page here (docs/benchmarks.md); empty: not */
} cb_bench_config;

/* Sizes of one measurement: batch, samples per timed unit, timed units per
 * worker process. */
typedef struct cb_bench_sizes { int batch; long samples; int repeat; } cb_bench_sizes;
cb_bench_sizes cb_bench_sizes_of(const cb_bench_config *c, int model, int kind);

/* The ImageNet CNNs (imagenet.c): the image side of a model that is one
 * (224 or 299), else 0; their names for messages; their ONNX file, made by
 * the PyTorch/Python runner's torchvision export (seeded random weights). */
int cb_bench_imagenet_side(const char *model);
const char *cb_bench_imagenet_names(void);
cb_status cb_bench_imagenet_export(const cb_bench_config *c, const cb_runners *all, const char *model,
                                   const char *path, int *interrupted);
/* Whether model m of c is measured from one ONNX file (an ImageNet CNN or
 * a file of the user's): inference only, in the bindings that load ONNX,
 * at the ImageNet CNNs' sizes. */
int cb_bench_onnx_model(const cb_bench_config *c, int m);

typedef struct cb_series { double *v; int n, cap; } cb_series;

/* One binding x model x kind: every value of every round. */
typedef struct cb_bench_cell {
    int model, kind, binding;
    cb_bench_sizes sz;
    int chosen;            /* the bench_env setting used (-1: the binding has none) */
    cb_series probe[4];    /* round 1: the times under each bench_env setting */
    cb_series times;       /* seconds per unit (latency: per sample; startup: to the first answer) */
    cb_series rounds;      /* the median of each round's units, in round order: paired with a peer's same round,
                            * a ratio that a machine's drift between rounds does not move */
    cb_series conv;        /* crossbind, training: seconds inside the convolutions per unit */
    cb_series conv_sgemm;  /* beside each conv value: the SGEMM GFLOP/s its worker measured (NAN: none) */
    long rss_kb;           /* the largest peak resident memory of its processes */
    double flops_done;     /* crossbind, inference: its plan's operations per sample (0: the graph's count) */
    int failed;
    char error[400];
    char info[300];        /* what the worker said about itself (threads, versions) */
    char probe_info[4][300];
} cb_bench_cell;

typedef struct cb_bench_results {
    const cb_bench_config *c;
    const cb_runner *runners[CB_BENCH_MAX_BINDINGS]; /* per configured binding */
    const cb_runners *all;  /* every runner: the exporters of formats a binding needs */
    char exported[CB_BENCH_MAX_BINDINGS * 2][3 * CB_NAME + 8]; int nexported; /* "by-EXPORTER/MODEL.FORMAT" made this invocation */
    char versions[CB_BENCH_MAX_BINDINGS][600];
    char machine[600], date[40];
    double sgemm[2][2];     /* [before, after][1 thread, c->threads] GFLOP/s */
    double flops[CB_MAX_LIST], conv_flops[CB_MAX_LIST]; /* forward, per sample */
    double flops_done[CB_MAX_LIST]; /* ... counting only the multiply-adds done (no padding taps) */
    double fma[2];          /* the measured FMA peak, GFLOP/s: [1 thread, c->threads] */
    cb_bench_cell *cells; int ncells;
    int rounds_done;
    int interrupted;
} cb_bench_results;

/* The cell of binding x model x kind (indexes into the configuration), NULL if not planned. */
cb_bench_cell *cb_bench_find(const cb_bench_results *r, int model, int kind, int binding);

/* Runs the benchmarks (rounds x models x kinds x bindings, alternating the
 * binding order), writing the results after every measurement so that an
 * interruption or a later failure loses nothing measured. *failures counts
 * the cells that could not be measured. With no bindings configured it
 * fills c->bindings with crossbind, each framework's default binding and
 * every other installed binding that has a benchmark worker. */
cb_status cb_bench_run(cb_bench_config *c, const cb_runners *runners, int *failures);

/* SGEMM throughput of this machine's BLAS at `threads` threads, GFLOP/s
 * (2048^3, the best of 5 after 2 warm-ups). */
double cb_bench_sgemm_gflops(int threads);
/* The processor's measured peak of fused multiply-adds, GFLOP/s (fma.c). */
double cb_bench_fma_gflops(int threads);

/* Writes bench.json, bench.md and bench.html into c->out_dir (and the page
 * to c->doc_path), each atomically. */
cb_status cb_bench_write(const cb_bench_results *r);

/* Appends a value (a value that cannot be stored is dropped: the count shows it). */
void cb_series_add(cb_series *s, double v);
/* Order statistics of a series (q in [0, 1], linear interpolation). */
double cb_series_quantile(const cb_series *s, double q);
double cb_series_min(const cb_series *s);
double cb_series_max(const cb_series *s);

#endif
