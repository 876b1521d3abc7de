/* Max and average pooling over windows, and the global average of each
 * plane. A max pooling whose input is an activation used by nothing else
 * does that activation's backward too (plan_pool_fusion). */
#include <omp.h>
#include "exec_internal.h"
#include "op.h"

static cb_status pool_forward(const cb_step *st)
{
    cb_conv_shape s = cb_node_conv_shape(st->g, st->n, st->batch);
    if (st->n->op == CB_OP_MAXPOOL2D) cb_maxpool_fwd(&s, st->x, st->y, st->fast);
    else cb_avgpool_fwd(&s, st->x, st->y, st->fast);
    return CB_OK;
}

static cb_status pool_backward(const cb_step *st)
{
    cb_exec *ex = st->ex;
    const cb_node *n = st->n;
    cb_conv_shape s = cb_node_conv_shape(st->g, n, st->batch);
    if (cb_exec_pooled_act(ex, n->in[0], st->top)) { /* the activation's backward too, into its input's gradient */
        const cb_node *a = &st->g->nodes[n->in[0]];
        float *dxa = ex->grad[a->in[0]];
        if (dxa)
            cb_maxpool_act_bwd(&s, cb_op_desc_of(a->op)->act, st->x, ex->val[st->i], st->dy, dxa, st->fast,
                               ex->stored_by[a->in[0]] == st->i);
        return CB_OK;
    }
    if (!st->dx) return CB_OK;
    if (n->op == CB_OP_MAXPOOL2D) cb_maxpool_bwd(&s, st->x, st->dy, st->dx, st->fast);
    else cb_avgpool_bwd(&s, st->dy, st->dx, st->fast);
    return CB_OK;
}

const cb_op_desc cb_op_maxpool2d = {.forward = pool_forward, .backward = pool_backward};
const cb_op_desc cb_op_avgpool2d = {.forward = pool_forward, .backward = pool_backward};

static cb_status global_avgpool_forward(const cb_step *st)
{
    const cb_node *xn = &st->g->nodes[st->n->in[0]];
    const int64_t planes = (int64_t)st->batch * xn->dims[0], p = xn->dims[1] * xn->dims[2];
    const float *x = st->x;
    float *y = st->y;
#pragma omp parallel for schedule(static) if (st->fast && planes * p > 65536)
    for (int64_t c = 0; c < planes; c++) {
        double acc = 0; /* double at every level: the mean of up to 49 x 2048 values */
        for (int64_t j = 0; j < p; j++) acc += x[c * p + j];
        y[c] = (float)(acc / (double)p);
    }
    return CB_OK;
}

static cb_status global_avgpool_backward(const cb_step *st)
{
    if (!st->dx) return CB_OK;
    const cb_node *xn = &st->g->nodes[st->n->in[0]];
    const int64_t planes = (int64_t)st->batch * xn->dims[0], p = xn->dims[1] * xn->dims[2];
    for (int64_t c = 0; c < planes; c++)
        for (int64_t j = 0; j < p; j++) st->dx[c * p + j] += st->dy[c] / (float)p;
    return CB_OK;
}

const cb_op_desc cb_op_global_avgpool = {.forward = global_avgpool_forward, .backward = global_avgpool_backward};
