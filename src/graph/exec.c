/* The executor: memory plan, forward pass and reverse-mode backward pass.
 *
 * Plan: every activation gets its own region of one arena (values first,
 * then gradients, then the shared kernel workspace). Flatten is a view of
 * its input. Parameters and their gradients live in the graph. */
#include <stdlib.h>
#include <string.h>
#include "crossbind/exec.h"
#include "../ops/ops.h"

struct cb_exec {
    cb_graph *g;
    int max_batch;
    int with_grads;
    cb_kernels kernels;
    float *arena;
    size_t arena_floats;
    float **val;
    float **grad;
    unsigned char *needs_grad; /* does the loss depend on this node through a parameter path */
    float *ws;
    size_t ws_floats;
};

static cb_conv_shape conv_shape(const cb_graph *g, const cb_node *n, int batch)
{
    const cb_node *x = &g->nodes[n->in[0]];
    cb_conv_shape s = {
        .n = batch, .c = (int)x->dims[0], .h = (int)x->dims[1], .w = (int)x->dims[2],
        .oc = (int)n->dims[0], .kh = n->kh, .kw = n->kw, .sh = n->sh, .sw = n->sw,
        .ph = n->ph, .pw = n->pw, .oh = (int)n->dims[1], .ow = (int)n->dims[2]};
    return s;
}

static size_t node_floats(const cb_node *n, int batch)
{
    return (size_t)cb_node_numel(n) * (n->batched ? (size_t)batch : 1);
}

cb_status cb_exec_create(cb_graph *g, int max_batch, int with_grads, cb_kernels kernels,
                         cb_exec **out)
{
    *out = NULL;
    if (max_batch < 1) return cb_fail(CB_ERR_INVALID_ARG, "batch size must be at least 1, got %d", max_batch);
    if (!g->params) return cb_fail(CB_ERR_INVALID_ARG, "graph is not finalized");
    if (with_grads && g->loss < 0) return cb_fail(CB_ERR_INVALID_ARG, "graph has no loss to differentiate");
    cb_exec *ex = calloc(1, sizeof *ex);
    if (!ex) return cb_fail(CB_ERR_NOMEM, "out of memory creating an executor");
    ex->g = g;
    ex->max_batch = max_batch;
    ex->with_grads = with_grads;
    ex->kernels = kernels;
    ex->val = calloc((size_t)g->count, sizeof *ex->val);
    ex->grad = calloc((size_t)g->count, sizeof *ex->grad);
    ex->needs_grad = calloc((size_t)g->count, 1);
    if (!ex->val || !ex->grad || !ex->needs_grad) {
        cb_exec_free(ex);
        return cb_fail(CB_ERR_NOMEM, "out of memory creating an executor");
    }

    /* Pass 1: sizes (as offsets from NULL) and the workspace high-water mark. */
    size_t vals = 0, grads = 0;
    size_t *voff = calloc((size_t)g->count, sizeof *voff), *goff = calloc((size_t)g->count, sizeof *goff);
    if (!voff || !goff) {
        free(voff);
        free(goff);
        cb_exec_free(ex);
        return cb_fail(CB_ERR_NOMEM, "out of memory planning an executor");
    }
    for (int i = 0; i < g->count; i++) {
        const cb_node *n = &g->nodes[i];
        if (n->op == CB_OP_PARAM) {
            ex->needs_grad[i] = 1;
            continue;
        }
        for (int k = 0; k < n->n_in; k++) ex->needs_grad[i] |= ex->needs_grad[n->in[k]];
        if (n->op == CB_OP_FLATTEN) continue;
        voff[i] = vals;
        vals += node_floats(n, max_batch);
        if (with_grads && ex->needs_grad[i]) {
            goff[i] = grads;
            grads += node_floats(n, max_batch);
        }
        if (n->op == CB_OP_CONV2D && kernels == CB_KERNELS_FAST) {
            cb_conv_shape s = conv_shape(g, n, max_batch);
            size_t w = cb_conv2d_workspace(&s);
            if (w > ex->ws_floats) ex->ws_floats = w;
        }
    }
    ex->arena_floats = vals + grads + ex->ws_floats;
    ex->arena = calloc(ex->arena_floats ? ex->arena_floats : 1, sizeof(float));
    if (!ex->arena) {
        free(voff);
        free(goff);
        size_t bytes = ex->arena_floats * sizeof(float);
        cb_exec_free(ex);
        return cb_fail(CB_ERR_NOMEM, "out of memory: the executor needs %zu MiB", bytes >> 20);
    }
    ex->ws = ex->arena + vals + grads;
    for (int i = 0; i < g->count; i++) {
        const cb_node *n = &g->nodes[i];
        if (n->op == CB_OP_PARAM) {
            ex->val[i] = g->params + n->param_offset;
            ex->grad[i] = g->grads + n->param_offset;
        } else if (n->op == CB_OP_FLATTEN) {
            ex->val[i] = ex->val[n->in[0]];
            ex->grad[i] = ex->grad[n->in[0]];
        } else {
            ex->val[i] = ex->arena + voff[i];
            if (with_grads && ex->needs_grad[i]) ex->grad[i] = ex->arena + vals + goff[i];
        }
    }
    free(voff);
    free(goff);
    *out = ex;
    return CB_OK;
}

void cb_exec_free(cb_exec *ex)
{
    if (!ex) return;
    free(ex->arena);
    free(ex->val);
    free(ex->grad);
    free(ex->needs_grad);
    free(ex);
}

float *cb_exec_value(cb_exec *ex, int node) { return ex->val[node]; }
float *cb_exec_grad(cb_exec *ex, int node) { return ex->grad[node]; }
size_t cb_exec_bytes(const cb_exec *ex) { return ex->arena_floats * sizeof(float); }
float cb_exec_loss(const cb_exec *ex) { return ex->val[ex->g->loss][0]; }

static cb_act act_of(cb_op op)
{
    return op == CB_OP_TANH ? CB_ACT_TANH : op == CB_OP_RELU ? CB_ACT_RELU : CB_ACT_SIGMOID;
}

cb_status cb_exec_forward(cb_exec *ex, int batch)
{
    if (batch < 1 || batch > ex->max_batch)
        return cb_fail(CB_ERR_INVALID_ARG, "batch %d outside the planned range [1, %d]", batch, ex->max_batch);
    const cb_graph *g = ex->g;
    const int fast = ex->kernels == CB_KERNELS_FAST;
    for (int i = 0; i < g->count; i++) {
        const cb_node *n = &g->nodes[i];
        float *y = ex->val[i];
        const float *x = n->n_in ? ex->val[n->in[0]] : NULL;
        switch (n->op) {
        case CB_OP_INPUT: case CB_OP_PARAM: case CB_OP_FLATTEN:
            break;
        case CB_OP_CONV2D: {
            cb_conv_shape s = conv_shape(g, n, batch);
            const float *b = n->n_in > 2 ? ex->val[n->in[2]] : NULL;
            if (fast) cb_conv2d_fwd_fast(&s, x, ex->val[n->in[1]], b, y, ex->ws);
            else cb_conv2d_fwd_ref(&s, x, ex->val[n->in[1]], b, y);
            break;
        }
        case CB_OP_MAXPOOL2D: case CB_OP_AVGPOOL2D: {
            cb_conv_shape s = conv_shape(g, n, batch);
            if (n->op == CB_OP_MAXPOOL2D) cb_maxpool_fwd(&s, x, y, fast);
            else cb_avgpool_fwd(&s, x, y, fast);
            break;
        }
        case CB_OP_LINEAR: {
            int k = (int)g->nodes[n->in[0]].dims[0], o = (int)n->dims[0];
            const float *b = n->n_in > 2 ? ex->val[n->in[2]] : NULL;
            if (fast) cb_linear_fwd_fast(batch, k, o, x, ex->val[n->in[1]], b, y);
            else cb_linear_fwd_ref(batch, k, o, x, ex->val[n->in[1]], b, y);
            break;
        }
        case CB_OP_TANH: case CB_OP_RELU: case CB_OP_SIGMOID:
            cb_act_fwd(act_of(n->op), (int64_t)node_floats(n, batch), x, y, fast);
            break;
        case CB_OP_SOFTMAX_XENT: {
            cb_status s = cb_softmax_xent_fwd(batch, (int)g->nodes[n->in[0]].dims[0], x,
                                              ex->val[n->in[1]], y);
            if (s != CB_OK) return s;
            break;
        }
        case CB_OP_BCE: {
            cb_status s = cb_bce_fwd(batch, x, ex->val[n->in[1]], y);
            if (s != CB_OK) return s;
            break;
        }
        case CB_OP_COUNT:
            return cb_fail(CB_ERR_UNSUPPORTED, "node '%s': unknown op", n->name);
        }
    }
    return CB_OK;
}

cb_status cb_exec_backward(cb_exec *ex, int batch)
{
    if (!ex->with_grads) return cb_fail(CB_ERR_INVALID_ARG, "executor was created without gradients");
    if (batch < 1 || batch > ex->max_batch)
        return cb_fail(CB_ERR_INVALID_ARG, "batch %d outside the planned range [1, %d]", batch, ex->max_batch);
    cb_graph *g = ex->g;
    const int fast = ex->kernels == CB_KERNELS_FAST;
    /* Gradients accumulate, so every buffer starts at zero. */
    memset(g->grads, 0, g->n_params * sizeof(float));
    for (int i = 0; i < g->count; i++)
        if (ex->grad[i] && g->nodes[i].op != CB_OP_PARAM && g->nodes[i].op != CB_OP_FLATTEN)
            memset(ex->grad[i], 0, node_floats(&g->nodes[i], batch) * sizeof(float));
    ex->grad[g->loss][0] = 1.0f;

    for (int i = g->loss; i >= 0; i--) {
        const cb_node *n = &g->nodes[i];
        if (!ex->needs_grad[i]) continue;
        const float *dy = ex->grad[i];
        const float *x = n->n_in ? ex->val[n->in[0]] : NULL;
        float *dx = n->n_in ? ex->grad[n->in[0]] : NULL;
        switch (n->op) {
        case CB_OP_INPUT: case CB_OP_PARAM: case CB_OP_FLATTEN:
            break;
        case CB_OP_CONV2D: {
            cb_conv_shape s = conv_shape(g, n, batch);
            const float *w = ex->val[n->in[1]];
            float *dw = ex->grad[n->in[1]], *db = n->n_in > 2 ? ex->grad[n->in[2]] : NULL;
            if (fast) cb_conv2d_bwd_fast(&s, x, w, dy, dx, dw, db, ex->ws);
            else cb_conv2d_bwd_ref(&s, x, w, dy, dx, dw, db);
            break;
        }
        case CB_OP_MAXPOOL2D: case CB_OP_AVGPOOL2D: {
            if (!dx) break;
            cb_conv_shape s = conv_shape(g, n, batch);
            if (n->op == CB_OP_MAXPOOL2D) cb_maxpool_bwd(&s, x, dy, dx, fast);
            else cb_avgpool_bwd(&s, dy, dx, fast);
            break;
        }
        case CB_OP_LINEAR: {
            int k = (int)g->nodes[n->in[0]].dims[0], o = (int)n->dims[0];
            const float *w = ex->val[n->in[1]];
            float *dw = ex->grad[n->in[1]], *db = n->n_in > 2 ? ex->grad[n->in[2]] : NULL;
            if (fast) cb_linear_bwd_fast(batch, k, o, x, w, dy, dx, dw, db);
            else cb_linear_bwd_ref(batch, k, o, x, w, dy, dx, dw, db);
            break;
        }
        case CB_OP_TANH: case CB_OP_RELU: case CB_OP_SIGMOID:
            if (dx) cb_act_bwd(act_of(n->op), (int64_t)node_floats(n, batch), ex->val[i], dy, dx, fast);
            break;
        case CB_OP_SOFTMAX_XENT:
            if (dx) cb_softmax_xent_bwd(batch, (int)g->nodes[n->in[0]].dims[0], x, ex->val[n->in[1]],
                                        dy[0], dx);
            break;
        case CB_OP_BCE:
            if (dx) cb_bce_bwd(batch, x, ex->val[n->in[1]], dy[0], dx);
            break;
        case CB_OP_COUNT:
            return cb_fail(CB_ERR_UNSUPPORTED, "node '%s': unknown op", n->name);
        }
    }
    return CB_OK;
}
