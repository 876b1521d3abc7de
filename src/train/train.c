/* The training loop of the study protocol (section 3).
 * Everything is allocated before the first step: executors, optimizer
 * state, evaluation buffers and the batch order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/crossbind.h"
#include "../core/clock.h"

static void shuffle_order(int64_t *order, int64_t n, cb_rng *rng)
{
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)cb_rng_below(rng, (uint64_t)i + 1);
        int64_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

static void load_batch(cb_exec *ex, const cb_model *m, const cb_dataset *d, const int64_t *order,
                       int64_t start, int bs)
{
    const size_t sample = (size_t)d->c * d->h * d->w;
    float *x = cb_exec_value(ex, m->input), *y = cb_exec_value(ex, m->labels);
    for (int i = 0; i < bs; i++) {
        int64_t src = order ? order[start + i] : start + i;
        memcpy(x + (size_t)i * sample, d->x + (size_t)src * sample, sample * sizeof(float));
        y[i] = d->y[src];
    }
}

void cb_train_result_free(cb_train_result *r)
{
    free(r->epochs);
    memset(r, 0, sizeof *r);
}

cb_status cb_train(cb_model *m, const cb_dataset *train, const cb_dataset *test,
                   const cb_train_options *o, cb_train_result *out)
{
    memset(out, 0, sizeof *out);
    if (o->epochs < 1) return cb_fail(CB_ERR_INVALID_ARG, "epochs must be at least 1, got %d", o->epochs);
    if (o->batch < 1) return cb_fail(CB_ERR_INVALID_ARG, "batch size must be at least 1, got %d", o->batch);
    if (train->n < 1 || test->n < 1) return cb_fail(CB_ERR_INVALID_ARG, "empty training or test set");
    const int64_t sample = (int64_t)train->c * train->h * train->w;
    if (cb_node_numel(&m->graph.nodes[m->input]) != sample || test->c != train->c || test->h != train->h ||
        test->w != train->w)
        return cb_fail(CB_ERR_SHAPE, "model %s takes %lld values per sample; the training data has %dx%dx%d, "
                       "the test data %dx%dx%d", m->name, (long long)cb_node_numel(&m->graph.nodes[m->input]),
                       train->c, train->h, train->w, test->c, test->h, test->w);

    cb_exec *ex = NULL;
    cb_optim *opt = NULL;
    cb_evaluator *ev = NULL;
    int64_t *order = NULL;
    cb_status s = cb_exec_create(&m->graph, o->batch, 1, o->kernels, &ex);
    if (s == CB_OK) s = cb_exec_plan_sha256(ex, out->plan_sha256);
    if (s == CB_OK) s = cb_optim_create(&o->optim, &m->graph, &opt);
    if (s == CB_OK)
        s = cb_evaluator_create(m, o->batch, train->n > test->n ? train->n : test->n, o->kernels, &ev);
    if (s == CB_OK && !(out->epochs = calloc((size_t)o->epochs, sizeof *out->epochs)))
        s = cb_fail(CB_ERR_NOMEM, "out of memory for epoch records");
    cb_rng rng;
    if (s == CB_OK && o->shuffle) {
        cb_rng_seed(&rng, o->shuffle_seed ^ 0x5eed5eed5eedULL);
        if (!(order = malloc((size_t)train->n * sizeof *order))) s = cb_fail(CB_ERR_NOMEM, "out of memory");
        for (int64_t i = 0; s == CB_OK && i < train->n; i++) order[i] = i;
    }

    const int64_t steps = (train->n + o->batch - 1) / o->batch;
    const double t_start = cb_now();
    for (int e = 1; s == CB_OK && e <= o->epochs; e++) {
        if (order) shuffle_order(order, train->n, &rng);
        double t_epoch = cb_now();
        for (int64_t step = 0; s == CB_OK && step < steps; step++) {
            int64_t start = step * o->batch;
            int bs = (int)(train->n - start < o->batch ? train->n - start : o->batch);
            double t0 = o->subactivities ? cb_now() : 0;
            load_batch(ex, m, train, order, start, bs);
            double t1 = o->subactivities ? cb_now() : 0;
            s = cb_exec_forward(ex, bs);
            double t2 = o->subactivities ? cb_now() : 0;
            if (s == CB_OK) s = cb_exec_backward(ex, bs);
            if (s == CB_OK) cb_optim_step(opt);
            if (o->subactivities) {
                double t3 = cb_now();
                out->load_s += t1 - t0;
                out->forward_s += t2 - t1;
                out->backward_s += t3 - t2;
            }
            if (s == CB_OK && !isfinite(cb_exec_loss(ex)))
                s = cb_fail(CB_ERR_INVALID_ARG, "training diverged: loss is %g at epoch %d step %lld",
                            (double)cb_exec_loss(ex), e, (long long)step + 1);
            if (o->progress && s == CB_OK) {
                cb_train_progress p = {e, o->epochs, step + 1, steps, cb_exec_loss(ex), cb_now() - t_start, NULL};
                o->progress(&p, o->user);
            }
        }
        if (s != CB_OK) break;
        double t_eval = cb_now();
        cb_epoch_stats *st = &out->epochs[e - 1];
        st->epoch = e;
        st->train_time_s = t_eval - t_epoch;
        cb_eval_result tr, te;
        s = cb_evaluate(ev, train, 0, &tr);
        if (s == CB_OK) s = cb_evaluate(ev, test, e == o->epochs, &te);
        if (s != CB_OK) break;
        st->train_acc = tr.accuracy;
        st->train_loss = tr.loss;
        st->test_acc = te.accuracy;
        st->test_loss = te.loss;
        st->eval_time_s = cb_now() - t_eval;
        out->eval_time_s += st->eval_time_s;
        out->n_epochs = e;
        if (e == o->epochs) out->final_test = te;
        if (o->progress) {
            cb_train_progress p = {e, o->epochs, steps, steps, st->train_loss, cb_now() - t_start, st};
            o->progress(&p, o->user);
        }
    }
    out->total_time_s = cb_now() - t_start;
    out->training_time_s = out->total_time_s - out->eval_time_s;
    free(order);
    cb_evaluator_free(ev);
    cb_optim_free(opt);
    cb_exec_free(ex);
    return s;
}
