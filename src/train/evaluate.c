/* Evaluation passes: accuracy, loss and, when asked, macro F1 and AUC. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "crossbind/crossbind.h"
#include "../core/clock.h"

struct cb_evaluator {
    cb_model *m;
    cb_exec *ex;
    int batch;
    int64_t max_samples;
    int *pred;
    float *scores; /* the model's outputs (logits) of the last pass */
    float *probs;  /* softmax of scores (k > 1) or the scores, when metrics were asked */
    int has_probs; /* the last pass computed probs */
    double *work;
};

cb_status cb_evaluator_create(cb_model *m, int batch, int64_t max_samples, cb_kernels kernels,
                              cb_evaluator **out)
{
    *out = NULL;
    cb_evaluator *ev = calloc(1, sizeof *ev);
    if (!ev) return cb_fail(CB_ERR_NOMEM, "out of memory creating an evaluator");
    ev->m = m;
    ev->batch = batch;
    ev->max_samples = max_samples;
    /* No pass is larger than the data set: the plan (values, slices) need
     * not be either. */
    const int plan = max_samples > 0 && max_samples < batch ? (int)max_samples : batch;
    cb_status s = cb_exec_create(&m->graph, plan, 0, kernels, &ev->ex);
    if (s == CB_OK) {
        ev->pred = malloc((size_t)max_samples * sizeof *ev->pred);
        ev->scores = malloc((size_t)max_samples * (size_t)m->classes * sizeof *ev->scores);
        ev->probs = malloc((size_t)max_samples * (size_t)m->classes * sizeof *ev->probs);
        ev->work = malloc((size_t)max_samples * 2 * sizeof *ev->work);
        if (!ev->pred || !ev->scores || !ev->probs || !ev->work) s = cb_fail(CB_ERR_NOMEM, "out of memory for evaluation buffers");
    }
    if (s != CB_OK) {
        cb_evaluator_free(ev);
        return s;
    }
    *out = ev;
    return CB_OK;
}

void cb_evaluator_free(cb_evaluator *ev)
{
    if (!ev) return;
    cb_exec_free(ev->ex);
    free(ev->pred);
    free(ev->scores);
    free(ev->probs);
    free(ev->work);
    free(ev);
}

const int *cb_evaluator_predictions(const cb_evaluator *ev) { return ev->pred; }
const float *cb_evaluator_scores(const cb_evaluator *ev) { return ev->has_probs ? ev->probs : ev->scores; }
const float *cb_evaluator_logits(const cb_evaluator *ev) { return ev->scores; }

/* Softmax of one row of logits into probabilities (k > 1). */
static void softmax_row(const float *z, float *p, int k)
{
    float m = z[0];
    for (int j = 1; j < k; j++) if (z[j] > m) m = z[j];
    double sum = 0;
    for (int j = 0; j < k; j++) sum += exp((double)z[j] - m);
    for (int j = 0; j < k; j++) p[j] = (float)(exp((double)z[j] - m) / sum);
}

cb_status cb_evaluate(cb_evaluator *ev, const cb_dataset *d, int with_metrics, cb_eval_result *out)
{
    memset(out, 0, sizeof *out);
    cb_model *m = ev->m;
    if (d->n > ev->max_samples)
        return cb_fail(CB_ERR_INVALID_ARG, "data set of %lld samples exceeds the evaluator's %lld",
                       (long long)d->n, (long long)ev->max_samples);
    const int k = m->classes;
    const size_t sample = (size_t)d->c * d->h * d->w;
    const float *logits = cb_exec_value(ev->ex, m->graph.output);
    double loss_sum = 0;
    double t0 = cb_now();
    for (int64_t start = 0; start < d->n; start += ev->batch) {
        int bs = (int)(d->n - start < ev->batch ? d->n - start : ev->batch);
        /* The executor reads the batch where it lies: no copy. */
        cb_status s = cb_exec_bind(ev->ex, m->input, d->x + (size_t)start * sample);
        if (s == CB_OK) s = cb_exec_bind(ev->ex, m->labels, d->y + start);
        if (s == CB_OK) s = cb_exec_forward(ev->ex, bs);
        if (s != CB_OK) return s;
        loss_sum += (double)cb_exec_loss(ev->ex) * bs;
        memcpy(ev->scores + (size_t)start * k, logits, (size_t)bs * k * sizeof(float));
    }
    out->time_s = cb_now() - t0;
    cb_exec_bind(ev->ex, m->input, NULL);
    cb_exec_bind(ev->ex, m->labels, NULL);
    cb_predict_labels(ev->scores, d->n, k, ev->pred);
    out->nonfinite = cb_count_nonfinite(ev->scores, d->n, k);
    /* Compared as floats: a label that is no class index matches nothing. */
    for (int64_t i = 0; i < d->n; i++) out->correct += (float)ev->pred[i] == d->y[i];
    out->total = d->n;
    out->accuracy = d->n ? (double)out->correct / (double)d->n : NAN;
    out->loss = d->n ? loss_sum / (double)d->n : NAN;
    out->f1_macro = out->auc_macro = NAN;
    ev->has_probs = with_metrics;
    if (with_metrics) {
        if (k > 1)
            for (int64_t i = 0; i < d->n; i++) softmax_row(ev->scores + i * k, ev->probs + i * k, k);
        else
            memcpy(ev->probs, ev->scores, (size_t)d->n * sizeof *ev->probs);
        out->f1_macro = cb_f1_macro(ev->pred, d->y, d->n, k);
        out->auc_macro = cb_auc_macro(ev->probs, d->y, d->n, k, ev->work);
    }
    return CB_OK;
}
