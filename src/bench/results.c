/* crossbind bench: the results' data model (bench.h), shared by the
 * measurement loop (bench.c) and the writers (render.c): the kinds, the sizes
 * of a measurement, the series of values and their order statistics, the
 * cells. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "bench.h"

const char *const cb_bench_kind_names[CB_BENCH_KINDS] = {"train", "infer", "latency", "startup"};

static int is_text(const char *model) { return !strcmp(model, "lstm") || !strcmp(model, "gru") || !strcmp(model, "gru-rb"); }
static int is_lenet(const char *model) { return !strncmp(model, "lenet", 5); }

cb_bench_sizes cb_bench_sizes_of(const cb_bench_config *c, int m, int kind)
{
    /* The protocol's batch sizes. LeNets: a training epoch of Fashion-MNIST's
     * 60,000 images and inference over its 10,000 test images. VGG-16 and the
     * recurrent models: training steps, and inference over part of the test
     * set (a whole pass would take minutes per binding and round). The
     * ImageNet CNNs, and a file of the user's alike (whatever its name):
     * DeltaNN's batch of 32. */
    const char *model = c->models[m];
    const int quick = c->quick, onnx = cb_bench_onnx_model(c, m);
    const int lenet = !onnx && is_lenet(model), text = !onnx && is_text(model);
    const int batch = text ? 256 : onnx ? 32 : 128;
    cb_bench_sizes s = {batch, 1, 1};
    switch (kind) {
    case CB_BENCH_TRAIN:
        if (lenet) s.samples = quick ? 6400 : 60000;
        else s.samples = batch, s.repeat = quick || text ? 1 : 2; /* an RNN step: seconds to a minute */
        break;
    case CB_BENCH_INFER:
        s.samples = lenet ? (quick ? 2000 : 10000) : text ? (quick ? 256 : 512) : onnx ? (quick ? 32 : 256)
                                                                                  : (quick ? 256 : 1280);
        s.repeat = 2;
        break;
    case CB_BENCH_LATENCY:
        s.batch = 1;
        s.samples = lenet ? (quick ? 50 : 300) : text || onnx ? (quick ? 3 : 10) : (quick ? 5 : 30);
        break;
    default:
        s.batch = 1;
    }
    return s;
}

/* ---- series ---- */

void cb_series_add(cb_series *s, double v)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        double *nv = realloc(s->v, (size_t)cap * sizeof *nv);
        if (!nv) return; /* a lost value is better than a lost run; the count shows it */
        s->v = nv, s->cap = cap;
    }
    s->v[s->n++] = v;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cb_series_quantile(const cb_series *s, double q)
{
    if (!s->n) return NAN;
    double *v = malloc((size_t)s->n * sizeof *v);
    if (!v) return NAN;
    memcpy(v, s->v, (size_t)s->n * sizeof *v);
    qsort(v, (size_t)s->n, sizeof *v, cmp_double);
    double pos = q * (s->n - 1), frac = pos - floor(pos);
    int lo = (int)floor(pos), hi = lo + 1 < s->n ? lo + 1 : lo;
    double r = v[lo] + frac * (v[hi] - v[lo]);
    free(v);
    return r;
}

double cb_series_min(const cb_series *s) { return cb_series_quantile(s, 0); }
double cb_series_max(const cb_series *s) { return cb_series_quantile(s, 1); }

cb_bench_cell *cb_bench_find(const cb_bench_results *r, int model, int kind, int binding)
{
    for (int i = 0; i < r->ncells; i++)
        if (r->cells[i].model == model && r->cells[i].kind == kind && r->cells[i].binding == binding) return &r->cells[i];
    return NULL;
}
