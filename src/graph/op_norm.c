/* Batch normalisation over channels. Training executors normalise with the
 * batch's statistics, save them for the backward pass and update the
 * running ones; inference executors use the running ones. */
#include "exec_internal.h"
#include "op.h"

static size_t bn_saved(const cb_node *n, int max_batch, int with_grads)
{
    (void)max_batch;
    return with_grads ? 2 * (size_t)n->dims[0] : 0; /* mean and inverse deviation per channel */
}

static cb_bn_shape bn_shape(const cb_step *st)
{
    const cb_node *n = st->n;
    return (cb_bn_shape){st->batch, (int)n->dims[0], (int)n->dims[1], (int)n->dims[2], n->eps, n->momentum};
}

static cb_status bn_forward(const cb_step *st)
{
    const cb_exec *ex = st->ex;
    const cb_node *n = st->n;
    cb_bn_shape s = bn_shape(st);
    cb_bn_fwd(&s, ex->with_grads, st->x, ex->val[n->in[1]], ex->val[n->in[2]], ex->val[n->in[3]], ex->val[n->in[4]],
              ex->aux[st->i], st->y, st->fast);
    return CB_OK;
}

static cb_status bn_backward(const cb_step *st)
{
    const cb_exec *ex = st->ex;
    const cb_node *n = st->n;
    cb_bn_shape s = bn_shape(st);
    cb_bn_bwd(&s, st->x, ex->val[n->in[1]], ex->aux[st->i], st->dy, st->dx, ex->grad[n->in[1]], ex->grad[n->in[2]],
              st->fast, st->dx && cb_exec_stores_grad(ex, st->i));
    return CB_OK;
}

const cb_op_desc cb_op_batchnorm2d = {.saved = bn_saved, .forward = bn_forward, .backward = bn_backward};
