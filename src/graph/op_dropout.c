/* Dropout: in training, zero with probability p and scale the rest by
 * 1/(1-p), keeping the mask for the backward pass; in inference, a copy. */
#include <string.h>
#include "exec_internal.h"
#include "op.h"

static size_t dropout_saved(const cb_node *n, int max_batch, int with_grads)
{
    return with_grads ? cb_node_floats(n, max_batch) : 0; /* the mask */
}

static cb_status dropout_forward(const cb_step *st)
{
    cb_exec *ex = st->ex;
    const size_t k = cb_node_floats(st->n, st->batch);
    if (ex->with_grads) cb_dropout_fwd((int64_t)k, st->n->p, &ex->rng, st->x, ex->aux[st->i], st->y);
    else memcpy(st->y, st->x, k * sizeof *st->y);
    return CB_OK;
}

static cb_status dropout_backward(const cb_step *st)
{
    if (st->dx) cb_dropout_bwd((int64_t)cb_node_floats(st->n, st->batch), st->ex->aux[st->i], st->dy, st->dx);
    return CB_OK;
}

const cb_op_desc cb_op_dropout = {.saved = dropout_saved, .forward = dropout_forward, .backward = dropout_backward};
