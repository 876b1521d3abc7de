/* Fully connected layer: y = x W^T + b. */
#include "exec_internal.h"
#include "op.h"

static double linear_flops(const cb_graph *g, const cb_node *n)
{
    return 2.0 * (double)cb_node_numel(n) * (double)cb_node_numel(&g->nodes[n->in[0]]);
}

static cb_status linear_forward(const cb_step *st)
{
    const cb_exec *ex = st->ex;
    const cb_node *n = st->n;
    const int k = (int)st->g->nodes[n->in[0]].dims[0], o = (int)n->dims[0];
    const float *b = n->n_in > 2 ? ex->val[n->in[2]] : NULL;
    if (st->fast) cb_linear_fwd_fast(st->batch, k, o, st->x, ex->val[n->in[1]], b, st->y);
    else cb_linear_fwd_ref(st->batch, k, o, st->x, ex->val[n->in[1]], b, st->y);
    return CB_OK;
}

static cb_status linear_backward(const cb_step *st)
{
    const cb_exec *ex = st->ex;
    const cb_node *n = st->n;
    const int k = (int)st->g->nodes[n->in[0]].dims[0], o = (int)n->dims[0];
    const float *w = ex->val[n->in[1]];
    float *dw = ex->grad[n->in[1]], *db = n->n_in > 2 ? ex->grad[n->in[2]] : NULL;
    if (st->fast) cb_linear_bwd_fast(st->batch, k, o, st->x, w, st->dy, st->dx, dw, db);
    else cb_linear_bwd_ref(st->batch, k, o, st->x, w, st->dy, st->dx, dw, db);
    return CB_OK;
}

const cb_op_desc cb_op_linear = {.flops = linear_flops, .forward = linear_forward, .backward = linear_backward};
