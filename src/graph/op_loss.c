/* The batch-mean losses: softmax cross-entropy over class logits with
 * class-index labels, and binary cross-entropy over probabilities. They run
 * over the whole batch, never a slice. */
#include "exec_internal.h"
#include "op.h"

static cb_status xent_forward(const cb_step *st)
{
    const cb_exec *ex = st->ex;
    const cb_node *n = st->n;
    return cb_softmax_xent_fwd(st->batch, (int)st->g->nodes[n->in[0]].dims[0], st->x, ex->val[n->in[1]], st->y);
}

static cb_status xent_backward(const cb_step *st)
{
    const cb_node *n = st->n;
    if (st->dx)
        cb_softmax_xent_bwd(st->batch, (int)st->g->nodes[n->in[0]].dims[0], st->x, st->ex->val[n->in[1]], st->dy[0],
                            st->dx);
    return CB_OK;
}

static cb_status bce_forward(const cb_step *st)
{
    return cb_bce_fwd(st->batch, st->x, st->ex->val[st->n->in[1]], st->y);
}

static cb_status bce_backward(const cb_step *st)
{
    if (st->dx) cb_bce_bwd(st->batch, st->x, st->ex->val[st->n->in[1]], st->dy[0], st->dx);
    return CB_OK;
}

const cb_op_desc cb_op_softmax_xent = {.flags = CB_OPF_LOSS, .forward = xent_forward, .backward = xent_backward};
const cb_op_desc cb_op_bce = {.flags = CB_OPF_LOSS, .forward = bce_forward, .backward = bce_backward};
