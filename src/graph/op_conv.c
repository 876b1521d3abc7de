/* 2-D convolution: the executor's step for the kernel the plan chose for
 * this node and sample count (exec_internal.h's tables), with the
 * activation (and 2x2 max pooling) the fusion rewrite gave it. */
#include <omp.h>
#include <string.h>
#include "exec_internal.h"
#include "op.h"

static double conv_flops(const cb_graph *g, const cb_node *n)
{
    const cb_node *x = &g->nodes[n->in[0]];
    return 2.0 * (double)cb_node_numel(n) * (double)x->dims[0] / (n->groups > 1 ? n->groups : 1) * n->kh * n->kw;
}

/* Window taps along one axis that fall inside the input, over all outputs. */
static double taps_inside(int64_t in, int64_t out, int k, int stride, int pad, int dilation)
{
    double t = 0;
    const int d = dilation > 1 ? dilation : 1;
    for (int64_t o = 0; o < out; o++)
        for (int j = 0; j < k; j++) {
            const int64_t pos = o * stride - pad + (int64_t)j * d;
            t += pos >= 0 && pos < in;
        }
    return t;
}

static double conv_flops_done(const cb_graph *g, const cb_node *n)
{
    const cb_node *x = &g->nodes[n->in[0]];
    const double per_group = (double)x->dims[0] / (n->groups > 1 ? n->groups : 1);
    return 2.0 * (double)n->dims[0] * per_group * taps_inside(x->dims[1], n->dims[1], n->kh, n->sh, n->ph, n->dh) *
           taps_inside(x->dims[2], n->dims[2], n->kw, n->sw, n->pw, n->dw);
}

static size_t conv_workspace(const cb_exec *ex, const cb_node *n, int batch, int threads)
{
    if (n->groups > 1 || n->dh > 1 || n->dw > 1 || ex->kernels == CB_KERNELS_REFERENCE) return 0; /* direct loops */
    cb_conv_shape cs = cb_node_conv_shape(ex->g, n, batch);
    return cb_conv2d_workspace_threads(&cs, threads);
}

static cb_status conv_forward(const cb_step *st)
{
    cb_exec *ex = st->ex;
    const cb_graph *g = st->g;
    const cb_node *n = st->n;
    const int i = st->i;
    cb_conv_shape s = cb_node_conv_shape(g, n, st->batch);
    const float *w = ex->val[n->in[1]], *b = n->n_in > 2 ? ex->val[n->in[2]] : NULL;
    const int fuse = st->fast && i + 1 < g->count && ex->fused[i + 1]; /* its activation (plan_fusion) */
    const cb_act act = fuse ? cb_op_desc_of(g->nodes[i + 1].op)->act : CB_ACT_NONE;
    float *out = fuse ? cb_exec_slice(ex, i + 1, st->b0) : st->y;
    const cb_conv_kernel k = (cb_conv_kernel)(omp_in_parallel() ? ex->kpar : ex->kfwd)[i][st->batch];
    switch (k) {
    case CB_CK_REF:
        cb_conv2d_fwd_ref(&s, st->x, w, b, st->y);
        return CB_OK;
    case CB_CK_FLAT_POOL:
        cb_conv2d_fwd_flat_pool(&s, st->x, w, b, act, ex->with_grads ? out : NULL, cb_exec_slice(ex, i + 2, st->b0),
                                st->ws);
        return CB_OK;
    case CB_CK_GROUPED:
        cb_conv2d_grouped_fwd(&s, n->groups, st->x, w, b, act, out, st->fast);
        return CB_OK;
    case CB_CK_NB_FWD:
        cb_conv2d_fwd_nb(&s, st->x, w, b, act, out, st->ws);
        return CB_OK;
    case CB_CK_ONEDNN: {
        cb_dnnl_conv *dp;
        cb_status rc = cb_exec_dnnl_plan(ex, i, CB_DNNL_FWD, &s, act, &dp);
        return rc == CB_OK ? cb_dnnl_conv_fwd(dp, st->x, w, b, out) : rc;
    }
    default:
        cb_conv2d_fwd_kernel(k, &s, st->x, w, b, act, out, st->ws);
        return CB_OK;
    }
}

static cb_status conv_backward(const cb_step *st)
{
    cb_exec *ex = st->ex;
    const cb_graph *g = st->g;
    const cb_node *n = st->n;
    const int i = st->i;
    cb_conv_shape s = cb_node_conv_shape(g, n, st->batch);
    const float *w = ex->val[n->in[1]];
    float *dw = ex->grad[n->in[1]], *db = n->n_in > 2 ? ex->grad[n->in[2]] : NULL, *dx = st->dx;
    const int store = dx && cb_exec_stores_grad(ex, i);
    const cb_conv_bwd_choice k = {(cb_conv_kernel)ex->kdgrad[i][st->batch], (cb_conv_kernel)ex->kwgrad[i][st->batch]};
    if (k.wgrad == CB_CK_ONEDNN) {
        cb_dnnl_conv *dp;
        cb_status rc = cb_exec_dnnl_plan(ex, i, CB_DNNL_BWD, &s, CB_ACT_NONE, &dp);
        return rc == CB_OK ? cb_dnnl_conv_bwd(dp, st->x, w, st->dy, dx, dw, db, ex->ws, store) : rc;
    }
    if (k.wgrad == CB_CK_DENSE) {
        cb_conv2d_bwd_dense(&s, st->x, w, st->dy, dx, dw, db, ex->ws, store);
        return CB_OK;
    }
    if (store) memset(dx, 0, cb_node_floats(&g->nodes[n->in[0]], st->batch) * sizeof *dx); /* these kernels add */
    if (k.wgrad == CB_CK_REF) cb_conv2d_bwd_ref(&s, st->x, w, st->dy, dx, dw, db);
    else if (k.wgrad == CB_CK_GROUPED) cb_conv2d_grouped_bwd(&s, n->groups, st->x, w, st->dy, dx, dw, db, st->fast);
    else cb_conv2d_bwd_kernels(k, &s, st->x, w, st->dy, dx, dw, db, ex->ws);
    return CB_OK;
}

const cb_op_desc cb_op_conv2d = {
    .flops = conv_flops, .flops_done = conv_flops_done, .workspace = conv_workspace, .forward = conv_forward, .backward = conv_backward};
