/* The recurrent layers (LSTM, GRU) over [T, D] sequences, and the last
 * time step of a sequence. In training both keep their gates for the
 * backward pass; inference keeps nothing (cb_lstm_infer, cb_gru_infer). */
#include <string.h>
#include "exec_internal.h"
#include "op.h"

static cb_rnn_shape rnn_shape(const cb_graph *g, const cb_node *n, int batch)
{
    return (cb_rnn_shape){batch, (int)n->dims[0], (int)g->nodes[n->in[0]].dims[1], (int)n->dims[1]};
}

static double rnn_flops(const cb_graph *g, const cb_node *n)
{
    const cb_node *x = &g->nodes[n->in[0]];
    const double t = (double)x->dims[0], d = (double)x->dims[1], h = (double)n->dims[1];
    return 2.0 * t * (d + h) * (n->op == CB_OP_LSTM ? 4 : 3) * h;
}

/* Floats per sample and time step kept: LSTM's four gates and cell, GRU's six. */
#define LSTM_SAVED 5
#define GRU_SAVED 6

/* Inference keeps nothing (cb_lstm_infer). */
static size_t lstm_saved(const cb_node *n, int max_batch, int with_grads)
{
    return with_grads ? (size_t)max_batch * (size_t)n->dims[0] * LSTM_SAVED * (size_t)n->dims[1] : 0;
}

static size_t gru_saved(const cb_node *n, int max_batch, int with_grads)
{
    return with_grads ? (size_t)max_batch * (size_t)n->dims[0] * GRU_SAVED * (size_t)n->dims[1] : 0;
}

static size_t lstm_workspace(const cb_exec *ex, const cb_node *n, int batch, int threads)
{
    (void)threads;
    cb_rnn_shape rs = rnn_shape(ex->g, n, batch);
    return ex->with_grads ? cb_lstm_workspace(&rs) : cb_lstm_infer_workspace(&rs);
}

static size_t gru_workspace(const cb_exec *ex, const cb_node *n, int batch, int threads)
{
    (void)threads;
    cb_rnn_shape rs = rnn_shape(ex->g, n, batch); /* training's forward pass needs it too */
    return ex->with_grads ? cb_gru_workspace(&rs) : cb_gru_infer_workspace(&rs);
}

/* The token ids of the step's samples where its input is an embedding's
 * (the embedding-projection rewrite reads them), else NULL. */
static const float *token_ids(const cb_step *st)
{
    const cb_node *e = &st->g->nodes[st->n->in[0]];
    if (e->op != CB_OP_EMBEDDING) return NULL;
    return st->ex->val[e->in[0]] + (size_t)st->b0 * (size_t)e->dims[0];
}

static cb_status lstm_forward(const cb_step *st)
{
    const cb_exec *ex = st->ex;
    const cb_node *n = st->n;
    cb_rnn_shape rs = rnn_shape(st->g, n, st->batch);
    if (!ex->with_grads) {
        cb_lstm_infer(&rs, st->x, ex->val[n->in[1]], ex->val[n->in[2]], ex->val[n->in[3]], ex->val[n->in[4]], st->y,
                      st->ws, st->fast, token_ids(st), cb_ptable_for(ex, st->i));
        return CB_OK;
    }
    float *saved = ex->aux[st->i] + (size_t)st->b0 * rs.t * LSTM_SAVED * rs.h;
    cb_lstm_fwd(&rs, st->x, ex->val[n->in[1]], ex->val[n->in[2]], ex->val[n->in[3]], ex->val[n->in[4]], st->y, saved,
                st->fast);
    return CB_OK;
}

static cb_status lstm_backward(const cb_step *st)
{
    const cb_exec *ex = st->ex;
    const cb_node *n = st->n;
    cb_rnn_shape rs = rnn_shape(st->g, n, st->batch);
    cb_lstm_bwd(&rs, st->x, ex->val[n->in[1]], ex->val[n->in[2]], ex->val[st->i], ex->aux[st->i], st->dy, st->dx,
                ex->grad[n->in[1]], ex->grad[n->in[2]], ex->grad[n->in[3]], ex->grad[n->in[4]], ex->ws, st->fast);
    return CB_OK;
}

static cb_status gru_forward(const cb_step *st)
{
    const cb_exec *ex = st->ex;
    const cb_node *n = st->n;
    cb_rnn_shape rs = rnn_shape(st->g, n, st->batch);
    if (!ex->with_grads) {
        cb_gru_infer(&rs, n->reset_before, st->x, ex->val[n->in[1]], ex->val[n->in[2]], ex->val[n->in[3]],
                     ex->val[n->in[4]], st->y, st->ws, st->fast, token_ids(st), cb_ptable_for(ex, st->i));
        return CB_OK;
    }
    float *saved = ex->aux[st->i] + (size_t)st->b0 * rs.t * GRU_SAVED * rs.h;
    cb_gru_fwd(&rs, n->reset_before, st->x, ex->val[n->in[1]], ex->val[n->in[2]], ex->val[n->in[3]],
               ex->val[n->in[4]], st->y, saved, st->ws, st->fast);
    return CB_OK;
}

static cb_status gru_backward(const cb_step *st)
{
    const cb_exec *ex = st->ex;
    const cb_node *n = st->n;
    cb_rnn_shape rs = rnn_shape(st->g, n, st->batch);
    cb_gru_bwd(&rs, n->reset_before, st->x, ex->val[n->in[1]], ex->val[n->in[2]], ex->val[st->i], ex->aux[st->i],
               st->dy, st->dx, ex->grad[n->in[1]], ex->grad[n->in[2]], ex->grad[n->in[3]], ex->grad[n->in[4]], ex->ws,
               st->fast);
    return CB_OK;
}

const cb_op_desc cb_op_lstm = {.flops = rnn_flops, .saved = lstm_saved, .workspace = lstm_workspace,
                               .forward = lstm_forward, .backward = lstm_backward};
const cb_op_desc cb_op_gru = {.flops = rnn_flops, .saved = gru_saved, .workspace = gru_workspace,
                              .forward = gru_forward, .backward = gru_backward};

static cb_status last_step_forward(const cb_step *st)
{
    const int64_t t = st->g->nodes[st->n->in[0]].dims[0], h = st->n->dims[0];
    for (int s = 0; s < st->batch; s++)
        memcpy(st->y + (size_t)s * h, st->x + ((size_t)s * t + t - 1) * h, (size_t)h * sizeof *st->y);
    return CB_OK;
}

static cb_status last_step_backward(const cb_step *st)
{
    if (!st->dx) return CB_OK;
    const int64_t t = st->g->nodes[st->n->in[0]].dims[0], h = st->n->dims[0];
    for (int s = 0; s < st->batch; s++)
        for (int64_t j = 0; j < h; j++) st->dx[((size_t)s * t + t - 1) * h + j] += st->dy[(size_t)s * h + j];
    return CB_OK;
}

const cb_op_desc cb_op_last_step = {.forward = last_step_forward, .backward = last_step_backward};
