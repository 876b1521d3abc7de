/* Graph construction with shape inference at build time, so that a model
 * that does not fit together fails when it is built, not when it runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/graph.h"
#include "../core/names.h"

cb_status cb_graph_init(cb_graph *g)
{
    memset(g, 0, sizeof *g);
    g->output = -1;
    g->loss = -1;
    return CB_OK;
}

void cb_graph_free(cb_graph *g)
{
    if (g->names) cb_name_index_free(g->names);
    free(g->names);
    free(g->nodes);
    free(g->params);
    free(g->grads);
    memset(g, 0, sizeof *g);
}

int64_t cb_node_numel(const cb_node *n)
{
    int64_t k = 1;
    for (int i = 0; i < n->ndim; i++) k *= n->dims[i];
    return k;
}

/* Node names are indexed so that building a graph of n named nodes (an ONNX
 * file's thousands of layers) costs linear time, not n^2 string compares.
 * The index points into g->nodes, so it is rebuilt whenever the array
 * moves (amortised: the array doubles); without one (out of memory) the
 * search is linear. */
static void index_forget(cb_graph *g)
{
    if (!g->names) return;
    cb_name_index_free(g->names);
    free(g->names);
    g->names = NULL;
}

static void index_rebuild(cb_graph *g)
{
    index_forget(g);
    if (!(g->names = malloc(sizeof *g->names))) return;
    if (cb_name_index_init(g->names, (size_t)g->capacity) != CB_OK) {
        free(g->names);
        g->names = NULL;
        return;
    }
    for (int i = 0; i < g->count; i++)
        if (cb_name_index_add(g->names, g->nodes[i].name, i) == -2) {
            index_forget(g);
            return;
        }
}

int cb_graph_find(const cb_graph *g, const char *name)
{
    if (g->names) return cb_name_index_find(g->names, name);
    for (int i = 0; i < g->count; i++)
        if (strcmp(g->nodes[i].name, name) == 0) return i;
    return -1;
}

static int add_node(cb_graph *g, cb_op op, const char *name, const int *in, int n_in)
{
    if (g->params) {
        cb_fail(CB_ERR_INVALID_ARG, "graph: node '%s' added after finalize", name);
        return -1;
    }
    for (int i = 0; i < n_in; i++) {
        if (in[i] < 0 || in[i] >= g->count) {
            /* An earlier builder failed and already recorded why. */
            if (in[i] >= g->count)
                cb_fail(CB_ERR_INVALID_ARG, "graph: node '%s' refers to unknown node %d", name, in[i]);
            return -1;
        }
    }
    if (strlen(name) >= CB_MAX_NAME) {
        cb_fail(CB_ERR_INVALID_ARG, "graph: node name too long: %s", name);
        return -1;
    }
    if (g->count == g->capacity) {
        int cap = g->capacity ? 2 * g->capacity : 32;
        cb_node *nodes = realloc(g->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) {
            cb_fail(CB_ERR_NOMEM, "graph: out of memory");
            return -1;
        }
        g->nodes = nodes;
        g->capacity = cap;
        index_rebuild(g);
    }
    cb_node *n = &g->nodes[g->count];
    memset(n, 0, sizeof *n);
    n->op = op;
    snprintf(n->name, sizeof n->name, "%s", name);
    if (g->names && cb_name_index_add(g->names, n->name, g->count) == -2) index_forget(g); /* the first keeps it */
    for (int i = 0; i < n_in; i++) n->in[i] = in[i];
    n->n_in = n_in;
    n->batched = 1;
    return g->count++;
}

static void set_dims(cb_node *n, int ndim, const int64_t *dims)
{
    n->ndim = ndim;
    for (int i = 0; i < ndim; i++) n->dims[i] = dims[i];
}

/* A node named after its op and index ("relu17", "add40"), with these
 * per-sample dims: the builders of unnamed layers. */
static int add_auto(cb_graph *g, cb_op op, const int *in, int n_in, int ndim, const int64_t *dims)
{
    int64_t d[CB_MAX_DIMS]; /* dims may point into g->nodes, which add_node can move */
    memcpy(d, dims, (size_t)ndim * sizeof *d);
    char name[CB_MAX_NAME];
    snprintf(name, sizeof name, "%s%d", cb_op_name(op), g->count);
    int id = add_node(g, op, name, in, n_in);
    if (id >= 0) set_dims(&g->nodes[id], ndim, d);
    return id;
}

int cb_graph_input(cb_graph *g, const char *name, int ndim, const int64_t *dims)
{
    if (ndim < 0 || ndim > CB_MAX_DIMS - 1) { /* 0: one scalar per sample */
        cb_fail(CB_ERR_SHAPE, "graph: input '%s' has %d dimensions", name, ndim);
        return -1;
    }
    int id = add_node(g, CB_OP_INPUT, name, NULL, 0);
    if (id >= 0) set_dims(&g->nodes[id], ndim, dims);
    return id;
}

int cb_graph_param(cb_graph *g, const char *name, int ndim, const int64_t *dims,
                   cb_init init, int64_t fan_in)
{
    if (cb_graph_find(g, name) >= 0) {
        cb_fail(CB_ERR_INVALID_ARG, "graph: duplicate parameter name '%s'", name);
        return -1;
    }
    int id = add_node(g, CB_OP_PARAM, name, NULL, 0);
    if (id < 0) return -1;
    cb_node *n = &g->nodes[id];
    set_dims(n, ndim, dims);
    n->batched = 0;
    n->init = init;
    n->fan_in = fan_in;
    n->param_offset = g->n_params;
    g->n_params += (size_t)cb_node_numel(n);
    return id;
}

static char *join(char *buf, size_t size, const char *a, const char *b)
{
    snprintf(buf, size, "%s.%s", a, b);
    return buf;
}

/* Output size of a window sliding over `in` (no dilation, floor mode). */
static int64_t window_out(int64_t in, int k, int s, int p) { return (in + 2 * p - k) / s + 1; }

/* The input rows (columns) a dilated kernel spans. */
static int extent(int k, int d) { return d > 1 ? d * (k - 1) + 1 : k; }

static int window_ok(const cb_window *w)
{
    return w->kh >= 1 && w->kw >= 1 && w->sh >= 1 && w->sw >= 1 && w->ph >= 0 && w->pw >= 0 && w->dh >= 0 &&
           w->dw >= 0 && w->dh <= 4096 && w->dw <= 4096;
}

int cb_graph_conv2d_with(cb_graph *g, const char *name, int x, int w, int b, const cb_window *win)
{
    return cb_graph_conv2d_grouped(g, name, x, w, b, win, 1);
}

int cb_graph_conv2d_grouped(cb_graph *g, const char *name, int x, int w, int b, const cb_window *win, int groups)
{
    if (x < 0 || w < 0 || b < -1 || x >= g->count || w >= g->count || b >= g->count) return -1;
    const cb_node *xn = &g->nodes[x], *wn = &g->nodes[w];
    if (xn->ndim != 3 || wn->op != CB_OP_PARAM || wn->ndim != 4) {
        cb_fail(CB_ERR_SHAPE, "conv2d '%s': needs input [C,H,W] and a weight parameter [OC,C,KH,KW]", name);
        return -1;
    }
    int64_t oc = wn->dims[0], c = xn->dims[0], h = xn->dims[1], wd = xn->dims[2];
    if (groups < 1 || c % groups || oc % groups) {
        cb_fail(CB_ERR_SHAPE, "conv2d '%s': %d groups do not divide %lld input and %lld output channels", name,
                groups, (long long)c, (long long)oc);
        return -1;
    }
    if (!window_ok(win) || wn->dims[1] != c / groups || wn->dims[2] != win->kh || wn->dims[3] != win->kw) {
        cb_fail(CB_ERR_SHAPE, "conv2d '%s': weight [%lld,%lld,%lld,%lld] does not fit input channels %lld "
                "and kernel %dx%d", name, (long long)oc, (long long)wn->dims[1], (long long)wn->dims[2],
                (long long)wn->dims[3], (long long)c, win->kh, win->kw);
        return -1;
    }
    if (b >= 0 && (g->nodes[b].op != CB_OP_PARAM || g->nodes[b].ndim != 1 || g->nodes[b].dims[0] != oc)) {
        cb_fail(CB_ERR_SHAPE, "conv2d '%s': bias must be a parameter [%lld]", name, (long long)oc);
        return -1;
    }
    const int eh = extent(win->kh, win->dh), ew = extent(win->kw, win->dw);
    if (h + 2 * win->ph < eh || wd + 2 * win->pw < ew) {
        cb_fail(CB_ERR_SHAPE, "conv2d '%s': kernel %dx%d (dilated: %dx%d) larger than padded input %lldx%lld", name,
                win->kh, win->kw, eh, ew, (long long)(h + 2 * win->ph), (long long)(wd + 2 * win->pw));
        return -1;
    }
    int in[3] = {x, w, b};
    int id = add_node(g, CB_OP_CONV2D, name, in, b >= 0 ? 3 : 2);
    if (id < 0) return -1;
    cb_node *n = &g->nodes[id];
    int64_t od[3] = {oc, window_out(h, eh, win->sh, win->ph), window_out(wd, ew, win->sw, win->pw)};
    set_dims(n, 3, od);
    n->kh = win->kh, n->kw = win->kw, n->sh = win->sh, n->sw = win->sw, n->ph = win->ph, n->pw = win->pw;
    n->dh = win->dh > 1 ? win->dh : 1, n->dw = win->dw > 1 ? win->dw : 1;
    n->groups = groups;
    return id;
}

int cb_graph_conv2d(cb_graph *g, const char *name, int x, int out_ch, int kernel,
                    int stride, int pad, int bias)
{
    if (x < 0 || x >= g->count) return -1;
    const cb_node *xn = &g->nodes[x];
    if (xn->ndim != 3) {
        cb_fail(CB_ERR_SHAPE, "conv2d '%s': input must be [C,H,W], has %d dims", name, xn->ndim);
        return -1;
    }
    if (out_ch < 1 || kernel < 1) {
        cb_fail(CB_ERR_INVALID_ARG, "conv2d '%s': invalid kernel/channels", name);
        return -1;
    }
    int64_t c = xn->dims[0];
    char pname[CB_MAX_NAME + 8];
    int64_t fan_in = c * kernel * kernel;
    int64_t wd[4] = {out_ch, c, kernel, kernel};
    int wi = cb_graph_param(g, join(pname, sizeof pname, name, "weight"), 4, wd,
                            CB_INIT_KAIMING_UNIFORM, fan_in);
    int bi = -1;
    if (bias) {
        int64_t bd[1] = {out_ch};
        bi = cb_graph_param(g, join(pname, sizeof pname, name, "bias"), 1, bd,
                            CB_INIT_FAN_IN_UNIFORM, fan_in);
        if (bi < 0) return -1;
    }
    cb_window win = {kernel, kernel, stride, stride, pad, pad, 1, 1};
    return cb_graph_conv2d_with(g, name, x, wi, bi, &win);
}

int cb_graph_pool2d_with(cb_graph *g, cb_op op, int x, const cb_window *win)
{
    if (x < 0 || x >= g->count) return -1;
    const cb_node *xn = &g->nodes[x];
    if (op != CB_OP_MAXPOOL2D && op != CB_OP_AVGPOOL2D) {
        cb_fail(CB_ERR_INVALID_ARG, "pool2d: not a pooling op");
        return -1;
    }
    if (win->dh > 1 || win->dw > 1) {
        cb_fail(CB_ERR_UNSUPPORTED, "pool2d after '%s': dilated pooling windows are not implemented", xn->name);
        return -1;
    }
    /* Padding smaller than the window (PyTorch asks for at most half of
     * it, ONNX for less than all of it): every window then overlaps the
     * input, so max pooling never sees only padding. */
    if (xn->ndim != 3 || !window_ok(win) || win->ph >= win->kh || win->pw >= win->kw ||
        xn->dims[1] + 2 * win->ph < win->kh || xn->dims[2] + 2 * win->pw < win->kw) {
        cb_fail(CB_ERR_SHAPE, "pool2d after '%s': invalid kernel %dx%d / stride %dx%d / padding %dx%d "
                "for its input", xn->name, win->kh, win->kw, win->sh, win->sw, win->ph, win->pw);
        return -1;
    }
    int64_t od[3] = {xn->dims[0], window_out(xn->dims[1], win->kh, win->sh, win->ph),
                     window_out(xn->dims[2], win->kw, win->sw, win->pw)};
    int id = add_auto(g, op, &x, 1, 3, od);
    if (id < 0) return -1;
    cb_node *n = &g->nodes[id];
    n->kh = win->kh, n->kw = win->kw, n->sh = win->sh, n->sw = win->sw, n->ph = win->ph, n->pw = win->pw;
    return id;
}

int cb_graph_avgpool2d_exclude_pad(cb_graph *g, int x, const cb_window *win, const int pads[4])
{
    if (x < 0 || x >= g->count) return -1;
    const cb_node *xn = &g->nodes[x];
    /* Padding smaller than the window: every window holds an input element,
     * so no count is zero. */
    int ok = xn->ndim == 3 && window_ok(win);
    for (int k = 0; ok && k < 4; k++) ok = pads[k] >= 0 && pads[k] < (k % 2 ? win->kw : win->kh);
    if (ok) ok = xn->dims[1] + pads[0] + pads[2] >= win->kh && xn->dims[2] + pads[1] + pads[3] >= win->kw;
    if (!ok) {
        cb_fail(CB_ERR_SHAPE, "average pool after '%s': invalid kernel %dx%d / stride %dx%d / padding %d,%d,%d,%d "
                "for its input", xn->name, win->kh, win->kw, win->sh, win->sw, pads[0], pads[1], pads[2], pads[3]);
        return -1;
    }
    int64_t od[3] = {xn->dims[0], (xn->dims[1] + pads[0] + pads[2] - win->kh) / win->sh + 1,
                     (xn->dims[2] + pads[1] + pads[3] - win->kw) / win->sw + 1};
    int id = add_auto(g, CB_OP_AVGPOOL2D, &x, 1, 3, od);
    if (id < 0) return -1;
    cb_node *n = &g->nodes[id];
    n->kh = win->kh, n->kw = win->kw, n->sh = win->sh, n->sw = win->sw, n->ph = pads[0], n->pw = pads[1];
    memcpy(n->pads, pads, sizeof n->pads);
    n->exclude_pad = 1;
    return id;
}

int cb_graph_pool2d(cb_graph *g, cb_op op, int x, int kernel, int stride, int pad)
{
    cb_window win = {kernel, kernel, stride, stride, pad, pad, 1, 1};
    return cb_graph_pool2d_with(g, op, x, &win);
}

int cb_graph_linear_with(cb_graph *g, const char *name, int x, int w, int b)
{
    if (x < 0 || w < 0 || b < -1 || x >= g->count || w >= g->count || b >= g->count) return -1;
    const cb_node *xn = &g->nodes[x], *wn = &g->nodes[w];
    if (xn->ndim != 1) {
        cb_fail(CB_ERR_SHAPE, "linear '%s': input must be a vector (flatten first), has %d dims",
                name, xn->ndim);
        return -1;
    }
    if (wn->op != CB_OP_PARAM || wn->ndim != 2 || wn->dims[1] != xn->dims[0]) {
        cb_fail(CB_ERR_SHAPE, "linear '%s': weight must be a parameter [N,%lld]", name, (long long)xn->dims[0]);
        return -1;
    }
    int64_t nout = wn->dims[0];
    if (b >= 0 && (g->nodes[b].op != CB_OP_PARAM || g->nodes[b].ndim != 1 || g->nodes[b].dims[0] != nout)) {
        cb_fail(CB_ERR_SHAPE, "linear '%s': bias must be a parameter [%lld]", name, (long long)nout);
        return -1;
    }
    int in[3] = {x, w, b};
    int id = add_node(g, CB_OP_LINEAR, name, in, b >= 0 ? 3 : 2);
    if (id < 0) return -1;
    int64_t od[1] = {nout};
    set_dims(&g->nodes[id], 1, od);
    return id;
}

int cb_graph_linear(cb_graph *g, const char *name, int x, int out_features, int bias)
{
    if (x < 0 || x >= g->count) return -1;
    if (g->nodes[x].ndim != 1 || out_features < 1) {
        cb_fail(CB_ERR_SHAPE, "linear '%s': input must be a vector (flatten first), has %d dims",
                name, g->nodes[x].ndim);
        return -1;
    }
    int64_t k = g->nodes[x].dims[0];
    char pname[CB_MAX_NAME + 8];
    int64_t wd[2] = {out_features, k};
    int wi = cb_graph_param(g, join(pname, sizeof pname, name, "weight"), 2, wd,
                            CB_INIT_KAIMING_UNIFORM, k);
    int bi = -1;
    if (bias) {
        int64_t bd[1] = {out_features};
        bi = cb_graph_param(g, join(pname, sizeof pname, name, "bias"), 1, bd,
                            CB_INIT_FAN_IN_UNIFORM, k);
        if (bi < 0) return -1;
    }
    return cb_graph_linear_with(g, name, x, wi, bi);
}

int cb_graph_buffer(cb_graph *g, const char *name, int ndim, const int64_t *dims, cb_init init)
{
    int id = cb_graph_param(g, name, ndim, dims, init, 0);
    if (id >= 0) g->nodes[id].buffer = 1;
    return id;
}

int cb_graph_batchnorm2d(cb_graph *g, const char *name, int x, float eps, float momentum)
{
    if (x < 0 || x >= g->count) return -1;
    if (g->nodes[x].ndim != 3 || !(eps > 0) || !(momentum >= 0 && momentum <= 1)) {
        cb_fail(CB_ERR_SHAPE, "batchnorm '%s': needs an input [C,H,W], eps > 0 and momentum in [0, 1]", name);
        return -1;
    }
    int64_t c[1] = {g->nodes[x].dims[0]};
    char pname[CB_MAX_NAME + 16];
    int w = cb_graph_param(g, join(pname, sizeof pname, name, "weight"), 1, c, CB_INIT_ONE, 0);
    int b = cb_graph_param(g, join(pname, sizeof pname, name, "bias"), 1, c, CB_INIT_NONE, 0);
    int rm = cb_graph_buffer(g, join(pname, sizeof pname, name, "running_mean"), 1, c, CB_INIT_NONE);
    int rv = cb_graph_buffer(g, join(pname, sizeof pname, name, "running_var"), 1, c, CB_INIT_ONE);
    return cb_graph_batchnorm2d_with(g, name, x, w, b, rm, rv, eps, momentum);
}

int cb_graph_batchnorm2d_with(cb_graph *g, const char *name, int x, int w, int b, int rm, int rv, float eps,
                              float momentum)
{
    if (x < 0 || w < 0 || b < 0 || rm < 0 || rv < 0 || x >= g->count) return -1;
    const int64_t c = g->nodes[x].dims[0];
    const int ps[4] = {w, b, rm, rv};
    for (int k = 0; k < 4; k++)
        if (ps[k] >= g->count || g->nodes[ps[k]].op != CB_OP_PARAM || g->nodes[ps[k]].ndim != 1 ||
            g->nodes[ps[k]].dims[0] != c || g->nodes[x].ndim != 3) {
            cb_fail(CB_ERR_SHAPE, "batchnorm '%s': needs an input [C,H,W] and four parameters [C]", name);
            return -1;
        }
    if (!(eps > 0) || !(momentum >= 0 && momentum <= 1)) {
        cb_fail(CB_ERR_INVALID_ARG, "batchnorm '%s': eps must be > 0 and momentum in [0, 1]", name);
        return -1;
    }
    int in[5] = {x, w, b, rm, rv};
    int id = add_node(g, CB_OP_BATCHNORM2D, name, in, 5);
    if (id < 0) return -1;
    cb_node *n = &g->nodes[id];
    set_dims(n, 3, g->nodes[x].dims);
    n->eps = eps;
    n->momentum = momentum;
    return id;
}

int cb_graph_embedding(cb_graph *g, const char *name, int x, int64_t vocab, int64_t dim)
{
    if (vocab < 1 || dim < 1) {
        cb_fail(CB_ERR_SHAPE, "embedding '%s': needs a positive vocabulary and width", name);
        return -1;
    }
    char pname[CB_MAX_NAME + 16];
    int64_t wd[2] = {vocab, dim};
    int w = cb_graph_param(g, join(pname, sizeof pname, name, "weight"), 2, wd, CB_INIT_NORMAL, 0);
    return w < 0 ? -1 : cb_graph_embedding_with(g, name, x, w);
}

int cb_graph_embedding_with(cb_graph *g, const char *name, int x, int w)
{
    if (x < 0 || x >= g->count || w < 0 || w >= g->count) return -1;
    if (g->nodes[x].ndim != 1 || g->nodes[w].op != CB_OP_PARAM || g->nodes[w].ndim != 2) {
        cb_fail(CB_ERR_SHAPE, "embedding '%s': needs token ids [T] and a table [vocab, dim]", name);
        return -1;
    }
    int in[2] = {x, w};
    int id = add_node(g, CB_OP_EMBEDDING, name, in, 2);
    if (id < 0) return -1;
    int64_t od[2] = {g->nodes[x].dims[0], g->nodes[w].dims[1]};
    set_dims(&g->nodes[id], 2, od);
    return id;
}


/* The recurrent layers' shared builder: gates x hidden rows of weights. */
static int recurrent(cb_graph *g, cb_op op, const char *name, int x, int64_t hidden, int reset_before)
{
    if (x < 0 || x >= g->count) return -1;
    if (g->nodes[x].ndim != 2 || hidden < 1) {
        cb_fail(CB_ERR_SHAPE, "%s '%s': needs an input [T,D] and a positive hidden size", cb_op_name(op), name);
        return -1;
    }
    const int64_t d = g->nodes[x].dims[1], gates = op == CB_OP_LSTM ? 4 : 3;
    char pname[CB_MAX_NAME + 16];
    int64_t wi[2] = {gates * hidden, d}, wh[2] = {gates * hidden, hidden}, b[1] = {gates * hidden};
    /* PyTorch: every parameter U(-1/sqrt(hidden), 1/sqrt(hidden)). */
    int p[4] = {cb_graph_param(g, join(pname, sizeof pname, name, "weight_ih_l0"), 2, wi, CB_INIT_FAN_IN_UNIFORM, hidden),
                cb_graph_param(g, join(pname, sizeof pname, name, "weight_hh_l0"), 2, wh, CB_INIT_FAN_IN_UNIFORM, hidden),
                cb_graph_param(g, join(pname, sizeof pname, name, "bias_ih_l0"), 1, b, CB_INIT_FAN_IN_UNIFORM, hidden),
                cb_graph_param(g, join(pname, sizeof pname, name, "bias_hh_l0"), 1, b, CB_INIT_FAN_IN_UNIFORM, hidden)};
    for (int k = 0; k < 4; k++)
        if (p[k] < 0) return -1;
    return cb_graph_recurrent_with(g, op, name, x, p, reset_before);
}

int cb_graph_recurrent_with(cb_graph *g, cb_op op, const char *name, int x, const int p[4], int reset_before)
{
    if (x < 0 || x >= g->count || (op != CB_OP_LSTM && op != CB_OP_GRU)) return -1;
    const int64_t gates = op == CB_OP_LSTM ? 4 : 3;
    for (int k = 0; k < 4; k++)
        if (p[k] < 0 || p[k] >= g->count || g->nodes[p[k]].op != CB_OP_PARAM) return -1;
    const cb_node *wi = &g->nodes[p[0]], *wh = &g->nodes[p[1]], *bi = &g->nodes[p[2]], *bh = &g->nodes[p[3]];
    const int64_t hidden = wh->ndim == 2 ? wh->dims[1] : 0;
    if (g->nodes[x].ndim != 2 || hidden < 1 || wi->ndim != 2 || wi->dims[0] != gates * hidden ||
        wi->dims[1] != g->nodes[x].dims[1] || wh->dims[0] != gates * hidden || bi->ndim != 1 ||
        bi->dims[0] != gates * hidden || bh->ndim != 1 || bh->dims[0] != gates * hidden) {
        cb_fail(CB_ERR_SHAPE, "%s '%s': weights must be [%lld*H, D], [%lld*H, H] and biases [%lld*H] for an "
                "input [T,D]", cb_op_name(op), name, (long long)gates, (long long)gates, (long long)gates);
        return -1;
    }
    int in[5] = {x, p[0], p[1], p[2], p[3]};
    int id = add_node(g, op, name, in, 5);
    if (id < 0) return -1;
    int64_t od[2] = {g->nodes[x].dims[0], hidden};
    set_dims(&g->nodes[id], 2, od);
    g->nodes[id].reset_before = op == CB_OP_GRU && reset_before;
    return id;
}

int cb_graph_lstm(cb_graph *g, const char *name, int x, int64_t hidden)
{
    return recurrent(g, CB_OP_LSTM, name, x, hidden, 0);
}

int cb_graph_gru(cb_graph *g, const char *name, int x, int64_t hidden, int reset_before)
{
    return recurrent(g, CB_OP_GRU, name, x, hidden, reset_before != 0);
}

int cb_graph_last_step(cb_graph *g, int x)
{
    if (x < 0 || x >= g->count) return -1;
    if (g->nodes[x].ndim != 2) {
        cb_fail(CB_ERR_SHAPE, "last step of '%s': needs an input [T,H]", g->nodes[x].name);
        return -1;
    }
    int64_t od[1] = {g->nodes[x].dims[1]};
    return add_auto(g, CB_OP_LAST_STEP, &x, 1, 1, od);
}

int cb_graph_dropout(cb_graph *g, int x, float p)
{
    if (x < 0 || x >= g->count) return -1;
    if (!(p >= 0 && p < 1)) {
        cb_fail(CB_ERR_INVALID_ARG, "dropout: probability must be in [0, 1), got %g", (double)p);
        return -1;
    }
    int id = add_auto(g, CB_OP_DROPOUT, &x, 1, g->nodes[x].ndim, g->nodes[x].dims);
    if (id < 0) return -1;
    g->nodes[id].p = p;
    return id;
}

int cb_graph_reshape(cb_graph *g, int x, int ndim, const int64_t *dims)
{
    if (x < 0 || x >= g->count) return -1;
    int64_t k = 1;
    for (int i = 0; i < ndim; i++) k *= dims[i] > 0 ? dims[i] : 0;
    if (ndim < 0 || ndim > CB_MAX_DIMS - 1 || k != cb_node_numel(&g->nodes[x])) {
        cb_fail(CB_ERR_SHAPE, "reshape of '%s': %lld elements per sample cannot take the new shape",
                g->nodes[x].name, (long long)cb_node_numel(&g->nodes[x]));
        return -1;
    }
    char name[CB_MAX_NAME];
    snprintf(name, sizeof name, "reshape%d", g->count);
    int id = add_node(g, CB_OP_FLATTEN, name, &x, 1);
    if (id >= 0) set_dims(&g->nodes[id], ndim, dims);
    return id;
}

const char *cb_op_name(cb_op op)
{
    static const char *names[CB_OP_COUNT] = {
        "input", "param", "conv2d", "maxpool", "avgpool", "linear", "tanh", "relu",
        "sigmoid", "flatten", "batchnorm", "dropout", "embedding", "lstm", "gru", "last_step", "softmax_xent", "bce",
        "add", "global_avgpool", "clip", "concat", "pad", "softmax", "mul", "hardsigmoid", "hardswish"};
    return op < CB_OP_COUNT ? names[op] : "?";
}

int cb_graph_unary(cb_graph *g, cb_op op, int x)
{
    if (x < 0 || x >= g->count) return -1;
    if (op != CB_OP_TANH && op != CB_OP_RELU && op != CB_OP_SIGMOID && op != CB_OP_HARDSWISH && op != CB_OP_FLATTEN) {
        cb_fail(CB_ERR_INVALID_ARG, "graph: %s is not a unary op", cb_op_name(op));
        return -1;
    }
    if (op == CB_OP_FLATTEN) {
        int64_t d[1] = {cb_node_numel(&g->nodes[x])};
        return add_auto(g, op, &x, 1, 1, d);
    }
    return add_auto(g, op, &x, 1, g->nodes[x].ndim, g->nodes[x].dims);
}

/* Two batched values of one per-sample shape (elementwise operands). */
static int same_sample_shape(const cb_node *x, const cb_node *y)
{
    int same = x->ndim == y->ndim && x->batched && y->batched;
    for (int d = 0; same && d < x->ndim; d++) same = x->dims[d] == y->dims[d];
    return same;
}

int cb_graph_add(cb_graph *g, int a, int b)
{
    if (a < 0 || b < 0 || a >= g->count || b >= g->count) return -1;
    const cb_node *x = &g->nodes[a], *y = &g->nodes[b];
    if (!same_sample_shape(x, y)) {
        cb_fail(CB_ERR_SHAPE, "add: '%s' and '%s' differ in shape (broadcasting is not implemented)", x->name, y->name);
        return -1;
    }
    int in[2] = {a, b};
    return add_auto(g, CB_OP_ADD, in, 2, x->ndim, x->dims);
}

int cb_graph_mul(cb_graph *g, int a, int b)
{
    if (a < 0 || b < 0 || a >= g->count || b >= g->count) return -1;
    const cb_node *x = &g->nodes[a], *y = &g->nodes[b];
    const int gate = x->ndim == 3 && y->ndim == 3 && x->batched && y->batched && y->dims[0] == x->dims[0] &&
                     y->dims[1] == 1 && y->dims[2] == 1;
    if (!same_sample_shape(x, y) && !gate) {
        cb_fail(CB_ERR_SHAPE, "mul: '%s' and '%s' are neither of one shape nor [C,H,W] and [C,1,1]", x->name, y->name);
        return -1;
    }
    int in[2] = {a, b};
    return add_auto(g, CB_OP_MUL, in, 2, x->ndim, x->dims);
}

int cb_graph_hardsigmoid(cb_graph *g, int x, float alpha, float beta)
{
    if (x < 0 || x >= g->count) return -1;
    if (!isfinite(alpha) || !isfinite(beta)) {
        cb_fail(CB_ERR_INVALID_ARG, "hard sigmoid of '%s': alpha and beta must be finite", g->nodes[x].name);
        return -1;
    }
    int id = add_auto(g, CB_OP_HARDSIGMOID, &x, 1, g->nodes[x].ndim, g->nodes[x].dims);
    if (id < 0) return -1;
    g->nodes[id].alpha = alpha, g->nodes[id].beta = beta;
    return id;
}

int cb_graph_hard_keras(cb_graph *g, cb_op op, int x, float scale)
{
    if (x < 0 || x >= g->count || (op != CB_OP_HARDSIGMOID && op != CB_OP_HARDSWISH)) return -1;
    if (!isfinite(scale)) {
        cb_fail(CB_ERR_INVALID_ARG, "hard sigmoid of '%s': the scale must be finite", g->nodes[x].name);
        return -1;
    }
    int id = add_auto(g, op, &x, 1, g->nodes[x].ndim, g->nodes[x].dims);
    if (id < 0) return -1;
    g->nodes[id].keras_order = 1;
    g->nodes[id].alpha = scale;
    return id;
}

int cb_graph_concat(cb_graph *g, int n, const int *in)
{
    if (n < 2) {
        cb_fail(CB_ERR_INVALID_ARG, "concat: needs at least 2 inputs, got %d", n);
        return -1;
    }
    if (n > CB_MAX_INPUTS) { /* the first CB_MAX_INPUTS, then the rest after them */
        int first = cb_graph_concat(g, CB_MAX_INPUTS, in);
        if (first < 0) return -1;
        int rest[CB_MAX_INPUTS];
        int k = 0, m = n - CB_MAX_INPUTS;
        rest[k++] = first;
        /* at most CB_MAX_INPUTS - 1 more per level */
        int take = m < CB_MAX_INPUTS - 1 ? m : CB_MAX_INPUTS - 1;
        for (int j = 0; j < take; j++) rest[k++] = in[CB_MAX_INPUTS + j];
        int joined = cb_graph_concat(g, k, rest);
        if (joined < 0 || take == m) return joined;
        int tail[CB_MAX_INPUTS * 64];
        if (m - take + 1 > (int)(sizeof tail / sizeof tail[0])) {
            cb_fail(CB_ERR_UNSUPPORTED, "concat: too many inputs (%d)", n);
            return -1;
        }
        tail[0] = joined;
        for (int j = take; j < m; j++) tail[j - take + 1] = in[CB_MAX_INPUTS + j];
        return cb_graph_concat(g, m - take + 1, tail);
    }
    for (int k = 0; k < n; k++)
        if (in[k] < 0 || in[k] >= g->count) return -1;
    const cb_node *a = &g->nodes[in[0]];
    int64_t first = 0;
    for (int k = 0; k < n; k++) {
        const cb_node *b = &g->nodes[in[k]];
        int same = b->ndim == a->ndim && b->ndim >= 1 && b->batched && a->batched;
        for (int d = 1; same && d < a->ndim; d++) same = b->dims[d] == a->dims[d];
        if (!same) {
            cb_fail(CB_ERR_SHAPE, "concat: '%s' and '%s' differ in a dimension other than the first per sample",
                    a->name, b->name);
            return -1;
        }
        first += b->dims[0];
    }
    int64_t d[CB_MAX_DIMS];
    memcpy(d, a->dims, sizeof d);
    d[0] = first;
    return add_auto(g, CB_OP_CONCAT, in, n, a->ndim, d);
}

int cb_graph_pad(cb_graph *g, int x, const int pads[4], float value)
{
    return cb_graph_pad_mode(g, x, pads, CB_PAD_CONSTANT, value);
}

int cb_graph_pad_mode(cb_graph *g, int x, const int pads[4], cb_pad_mode mode, float value)
{
    if (x < 0 || x >= g->count) return -1;
    const cb_node *xn = &g->nodes[x];
    if (xn->ndim != 3 || !xn->batched || pads[0] < -4096 || pads[1] < -4096 || pads[2] < -4096 || pads[3] < -4096 ||
        pads[0] > 4096 || pads[1] > 4096 || pads[2] > 4096 || pads[3] > 4096) {
        cb_fail(CB_ERR_SHAPE, "pad of '%s': needs [C,H,W] per sample and pads in [-4096, 4096]", xn->name);
        return -1;
    }
    if ((unsigned)mode > CB_PAD_EDGE) {
        cb_fail(CB_ERR_INVALID_ARG, "pad of '%s': unknown mode %d", xn->name, (int)mode);
        return -1;
    }
    const int crops = pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0;
    if (crops && mode != CB_PAD_CONSTANT) {
        cb_fail(CB_ERR_SHAPE, "pad of '%s': negative (cropping) pads are implemented in constant mode only", xn->name);
        return -1;
    }
    if (xn->dims[1] + pads[0] + pads[2] < 1 || xn->dims[2] + pads[1] + pads[3] < 1) {
        cb_fail(CB_ERR_SHAPE, "pad of '%s': pads %d,%d,%d,%d crop its %lldx%lld planes to nothing", xn->name, pads[0],
                pads[1], pads[2], pads[3], (long long)xn->dims[1], (long long)xn->dims[2]);
        return -1;
    }
    /* Reflect mirrors without the edge row: each pad must be shorter than its axis. */
    if (mode == CB_PAD_REFLECT && (pads[0] >= xn->dims[1] || pads[2] >= xn->dims[1] || pads[1] >= xn->dims[2] ||
                                   pads[3] >= xn->dims[2])) {
        cb_fail(CB_ERR_SHAPE, "reflect pad of '%s': pads %d,%d,%d,%d must be smaller than its %lldx%lld planes",
                xn->name, pads[0], pads[1], pads[2], pads[3], (long long)xn->dims[1], (long long)xn->dims[2]);
        return -1;
    }
    if (mode == CB_PAD_EDGE && (xn->dims[1] < 1 || xn->dims[2] < 1)) {
        cb_fail(CB_ERR_SHAPE, "edge pad of '%s': an empty plane has no edge to copy", xn->name);
        return -1;
    }
    int64_t d[3] = {xn->dims[0], xn->dims[1] + pads[0] + pads[2], xn->dims[2] + pads[1] + pads[3]};
    int id = add_auto(g, CB_OP_PAD, &x, 1, 3, d);
    if (id < 0) return -1;
    cb_node *n = &g->nodes[id];
    memcpy(n->pads, pads, sizeof n->pads);
    n->lo = value;
    n->pad_mode = mode;
    return id;
}

int cb_graph_softmax(cb_graph *g, int x, int axis)
{
    if (x < 0 || x >= g->count) return -1;
    const cb_node *xn = &g->nodes[x];
    if (axis < 0 || axis >= xn->ndim || !xn->batched) {
        cb_fail(CB_ERR_SHAPE, "softmax of '%s': axis %d is not one of its %d per-sample dimensions", xn->name, axis,
                xn->ndim);
        return -1;
    }
    int id = add_auto(g, CB_OP_SOFTMAX, &x, 1, xn->ndim, xn->dims);
    if (id < 0) return -1;
    g->nodes[id].axis = axis;
    return id;
}

int cb_graph_clip(cb_graph *g, int x, float lo, float hi)
{
    if (x < 0 || x >= g->count) return -1;
    if (!(lo <= hi)) {
        cb_fail(CB_ERR_INVALID_ARG, "clip of '%s': the bounds [%g, %g] are empty", g->nodes[x].name, lo, hi);
        return -1;
    }
    int id = add_auto(g, CB_OP_CLIP, &x, 1, g->nodes[x].ndim, g->nodes[x].dims);
    if (id < 0) return -1;
    g->nodes[id].lo = lo, g->nodes[id].hi = hi;
    return id;
}

int cb_graph_global_avgpool(cb_graph *g, int x)
{
    if (x < 0 || x >= g->count) return -1;
    const cb_node *xn = &g->nodes[x];
    if (xn->ndim != 3 || !xn->batched || xn->dims[1] < 1 || xn->dims[2] < 1) {
        cb_fail(CB_ERR_SHAPE, "global average pooling of '%s': needs [C,H,W] per sample", xn->name);
        return -1;
    }
    int64_t d[3] = {xn->dims[0], 1, 1};
    return add_auto(g, CB_OP_GLOBAL_AVGPOOL, &x, 1, 3, d);
}

int cb_graph_loss(cb_graph *g, cb_op op, int prediction, int labels)
{
    if (prediction < 0 || labels < 0 || prediction >= g->count || labels >= g->count) return -1;
    if (op != CB_OP_SOFTMAX_XENT && op != CB_OP_BCE) {
        cb_fail(CB_ERR_INVALID_ARG, "graph: %s is not a loss", cb_op_name(op));
        return -1;
    }
    const cb_node *p = &g->nodes[prediction], *l = &g->nodes[labels];
    if (p->ndim != 1 || cb_node_numel(l) != 1 || (op == CB_OP_BCE && p->dims[0] != 1)) {
        cb_fail(CB_ERR_SHAPE, "%s: prediction must be [K] (BCE: [1]) and labels [1]", cb_op_name(op));
        return -1;
    }
    int in[2] = {prediction, labels};
    int id = add_node(g, op, cb_op_name(op), in, 2);
    if (id < 0) return -1;
    cb_node *n = &g->nodes[id];
    int64_t d[1] = {1};
    set_dims(n, 1, d);
    n->batched = 0; /* the mean over the batch */
    g->loss = id;
    return id;
}

cb_status cb_graph_finalize(cb_graph *g)
{
    if (g->params) return CB_OK;
    /* Trained parameters first, buffers after them, so that optimizers step
     * exactly the first n_trainable floats. */
    size_t off = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < g->count; i++) {
            cb_node *n = &g->nodes[i];
            if (n->op != CB_OP_PARAM || n->buffer != pass) continue;
            n->param_offset = off;
            off += (size_t)cb_node_numel(n);
            if (pass == 0) g->n_trainable = off;
        }
    size_t n = g->n_params ? g->n_params : 1;
    g->params = calloc(n, sizeof(float));
    g->grads = calloc(n, sizeof(float));
    if (!g->params || !g->grads) {
        free(g->params);
        free(g->grads);
        g->params = g->grads = NULL;
        return cb_fail(CB_ERR_NOMEM, "graph: out of memory for %zu parameters", g->n_params);
    }
    for (int i = 0; i < g->count; i++) /* constant initialisations (also for imported graphs) */
        if (g->nodes[i].op == CB_OP_PARAM && g->nodes[i].init == CB_INIT_ONE)
            for (int64_t j = 0; j < cb_node_numel(&g->nodes[i]); j++) g->params[g->nodes[i].param_offset + j] = 1.0f;
    return CB_OK;
}

void cb_graph_init_params(cb_graph *g, cb_rng *rng)
{
    for (int i = 0; i < g->count; i++) {
        cb_node *n = &g->nodes[i];
        if (n->op != CB_OP_PARAM || n->init == CB_INIT_NONE) continue;
        if (n->init == CB_INIT_NORMAL) {
            float *p = g->params + n->param_offset;
            for (int64_t j = 0; j < cb_node_numel(n); j++) p[j] = (float)cb_rng_normal(rng);
            continue;
        }
        if (n->init == CB_INIT_ONE) { /* not drawn: the generator's sequence is PyTorch's draw order */
            float *p = g->params + n->param_offset;
            for (int64_t j = 0; j < cb_node_numel(n); j++) p[j] = 1.0f;
            continue;
        }
        /* Both PyTorch defaults reduce to U(-1/sqrt(fan_in), 1/sqrt(fan_in)):
         * kaiming_uniform with a = sqrt(5) has gain sqrt(1/3) and bound
         * gain * sqrt(3 / fan_in). */
        double bound = n->fan_in > 0 ? 1.0 / sqrt((double)n->fan_in) : 0.0;
        float *p = g->params + n->param_offset;
        int64_t k = cb_node_numel(n);
        for (int64_t j = 0; j < k; j++) p[j] = (float)((2.0 * cb_rng_uniform(rng) - 1.0) * bound);
    }
}

float *cb_graph_param_data(cb_graph *g, int node) { return g->params + g->nodes[node].param_offset; }
float *cb_graph_param_grad(cb_graph *g, int node) { return g->grads + g->nodes[node].param_offset; }

cb_status cb_graph_params_to_list(const cb_graph *g, cb_tensor_list *out)
{
    for (int i = 0; i < g->count; i++) {
        const cb_node *n = &g->nodes[i];
        if (n->op != CB_OP_PARAM) continue;
        cb_status s = cb_tensor_list_add(out, n->name, CB_F32, n->ndim, n->dims,
                                         g->params + n->param_offset);
        if (s != CB_OK) return s;
    }
    return CB_OK;
}

static void shape_str(char *buf, size_t size, int ndim, const int64_t *dims)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? ",%lld" : "%lld", (long long)dims[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
}


static int same_shape(const cb_tensor *t, const cb_node *n)
{
    if (t->ndim != n->ndim) return 0;
    for (int d = 0; d < n->ndim; d++)
        if (t->shape[d] != n->dims[d]) return 0;
    return 1;
}

static void copy_param(cb_graph *g, const cb_node *n, const cb_tensor *t)
{
    float *dst = g->params + n->param_offset;
    int64_t k = cb_node_numel(n);
    if (t->dtype == CB_F32) {
        memcpy(dst, t->data, (size_t)k * sizeof(float));
    } else {
        const double *src = t->data;
        for (int64_t j = 0; j < k; j++) dst[j] = (float)src[j];
    }
}

/* Floating-point tensors of a file, in file order: integer buffers such as
 * BatchNorm's num_batches_tracked are not parameters. */
static int float_tensors(const cb_tensor_list *list, const cb_tensor **out, int max)
{
    int n = 0;
    for (int i = 0; i < list->count; i++) {
        const cb_tensor *t = &list->items[i];
        if (t->dtype != CB_F32 && t->dtype != CB_F64) continue;
        if (n < max) out[n] = t;
        n++;
    }
    return n;
}

static void append(char *buf, size_t size, const char *fmt, const char *a, const char *b)
{
    size_t used = strlen(buf);
    if (used + 4 >= size) return;
    snprintf(buf + used, size - used, fmt, a, b);
}

/* PyTorch's BatchNorm keeps a step counter that crossbind's models do not:
 * never a parameter, never an unexpected tensor. */
static int is_batch_counter(const cb_tensor *t)
{
    static const char suffix[] = "num_batches_tracked";
    size_t n = strlen(t->name), k = sizeof suffix - 1;
    return (t->dtype == CB_I64 || t->dtype == CB_I32) && n >= k && strcmp(t->name + n - k, suffix) == 0 &&
           (n == k || t->name[n - k - 1] == '.');
}

static void note_extra(cb_param_extra *x, const char *name)
{
    append(x->names, sizeof x->names, "%s%s", x->count ? ", " : "", name);
    x->count++;
}

/* The file's tensors indexed by name and the graph's parameters by name:
 * every match below is a hash look-up, so that a file of many tensors costs
 * linear time. */
typedef struct matcher {
    cb_name_index file, model;
} matcher;

static cb_status matcher_init(matcher *mt, const cb_graph *g, const cb_tensor_list *list)
{
    memset(mt, 0, sizeof *mt);
    cb_status s = cb_name_index_init(&mt->file, (size_t)list->count);
    if (s == CB_OK) s = cb_name_index_init(&mt->model, (size_t)g->count);
    for (int i = 0; s == CB_OK && i < list->count; i++)
        if (cb_name_index_add(&mt->file, list->items[i].name, i) == -2) s = CB_ERR_NOMEM;
    for (int i = 0; s == CB_OK && i < g->count; i++)
        if (g->nodes[i].op == CB_OP_PARAM && cb_name_index_add(&mt->model, g->nodes[i].name, i) == -2)
            s = CB_ERR_NOMEM;
    return s;
}

static void matcher_free(matcher *mt)
{
    cb_name_index_free(&mt->file);
    cb_name_index_free(&mt->model);
}

static const cb_tensor *file_tensor(const matcher *mt, const cb_tensor_list *list, const char *name)
{
    int i = cb_name_index_find(&mt->file, name);
    return i < 0 ? NULL : &list->items[i];
}

static cb_status refuse_extra(const cb_param_extra *x)
{
    return cb_fail(CB_ERR_FORMAT, "the file holds %d tensor%s that the model has no parameter for (%s); strict "
                   "loading, PyTorch's default, refuses them: load non-strictly (--non-strict) to ignore them",
                   x->count, x->count == 1 ? "" : "s", x->names);
}

static cb_status params_load(cb_graph *g, const cb_tensor_list *list, int strict, cb_param_match *how,
                             cb_param_extra *extra, const matcher *mt)
{
    int n_params = 0, missing = 0;
    for (int i = 0; i < g->count; i++) {
        const cb_node *n = &g->nodes[i];
        if (n->op != CB_OP_PARAM) continue;
        n_params++;
        const cb_tensor *t = file_tensor(mt, list, n->name);
        if (!t) { missing++; continue; }
        if (!same_shape(t, n)) {
            char want[96], got[96];
            shape_str(want, sizeof want, n->ndim, n->dims);
            shape_str(got, sizeof got, t->ndim, t->shape);
            return cb_fail(CB_ERR_SHAPE, "parameter '%s' has shape %s in the file, the model needs %s",
                           n->name, got, want);
        }
        if (t->dtype != CB_F32 && t->dtype != CB_F64)
            return cb_fail(CB_ERR_FORMAT, "parameter '%s' has dtype %s, expected F32 or F64",
                           n->name, cb_dtype_name(t->dtype));
    }
    if (!missing) {
        for (int i = 0; i < list->count; i++)
            if (cb_name_index_find(&mt->model, list->items[i].name) < 0 && !is_batch_counter(&list->items[i]))
                note_extra(extra, list->items[i].name);
        if (strict && extra->count) return refuse_extra(extra);
        /* Everything checked before anything is copied: a failed load leaves
         * the model's parameters as they were. */
        for (int i = 0; i < g->count; i++)
            if (g->nodes[i].op == CB_OP_PARAM)
                copy_param(g, &g->nodes[i], file_tensor(mt, list, g->nodes[i].name));
        return CB_OK;
    }
    /* The names differ (an nn.Sequential's "0.weight", ...): load by order
     * when the file holds exactly as many float tensors as the model has
     * parameters and every shape agrees position by position. */
    const cb_tensor **ft = malloc((size_t)(list->count ? list->count : 1) * sizeof *ft);
    if (!ft) return cb_fail(CB_ERR_NOMEM, "out of memory matching parameters");
    int n_float = float_tensors(list, ft, list->count);
    char why[768] = "";
    int ok = n_float == n_params;
    if (!ok)
        snprintf(why, sizeof why, "the file has %d floating-point tensors, the model %d parameters",
                 n_float, n_params);
    for (int i = 0, k = 0; ok && i < g->count; i++) {
        const cb_node *n = &g->nodes[i];
        if (n->op != CB_OP_PARAM) continue;
        if (!same_shape(ft[k], n)) {
            char want[96], got[96];
            shape_str(want, sizeof want, n->ndim, n->dims);
            shape_str(got, sizeof got, ft[k]->ndim, ft[k]->shape);
            snprintf(why, sizeof why, "position %d: the model's '%s' is %s, the file's '%s' is %s",
                     k, n->name, want, ft[k]->name, got);
            ok = 0;
        }
        k++;
    }
    if (!ok) {
        char absent[512] = "", unused[512] = "";
        for (int i = 0; i < g->count; i++)
            if (g->nodes[i].op == CB_OP_PARAM && !file_tensor(mt, list, g->nodes[i].name))
                append(absent, sizeof absent, "%s%s", absent[0] ? ", " : "", g->nodes[i].name);
        for (int i = 0; i < list->count; i++)
            if (cb_name_index_find(&mt->model, list->items[i].name) < 0)
                append(unused, sizeof unused, "%s%s", unused[0] ? ", " : "", list->items[i].name);
        free(ft);
        return cb_fail(CB_ERR_NOT_FOUND, "parameters do not match by name (missing from the file: %s; "
                       "not in the model: %s) nor by order and shape (%s)", absent,
                       unused[0] ? unused : "none", why);
    }
    /* Every floating-point tensor found its parameter: what is left over are
     * integer tensors. */
    for (int i = 0; i < list->count; i++)
        if (list->items[i].dtype != CB_F32 && list->items[i].dtype != CB_F64 && !is_batch_counter(&list->items[i]))
            note_extra(extra, list->items[i].name);
    if (strict && extra->count) {
        free(ft);
        return refuse_extra(extra);
    }
    for (int i = 0, k = 0; i < g->count; i++)
        if (g->nodes[i].op == CB_OP_PARAM) copy_param(g, &g->nodes[i], ft[k++]);
    free(ft);
    if (how) *how = CB_MATCH_BY_ORDER;
    return CB_OK;
}

cb_status cb_graph_params_load_ex(cb_graph *g, const cb_tensor_list *list, int strict, cb_param_match *how,
                                  cb_param_extra *extra)
{
    cb_param_extra local;
    if (!extra) extra = &local;
    memset(extra, 0, sizeof *extra);
    if (how) *how = CB_MATCH_BY_NAME;
    matcher mt;
    cb_status s = matcher_init(&mt, g, list);
    if (s == CB_OK) s = params_load(g, list, strict, how, extra, &mt);
    matcher_free(&mt);
    return s;
}

cb_status cb_graph_params_load(cb_graph *g, const cb_tensor_list *list, cb_param_match *how)
{
    return cb_graph_params_load_ex(g, list, 1, how, NULL);
}

cb_status cb_graph_params_from_list(cb_graph *g, const cb_tensor_list *list)
{
    cb_param_match how;
    return cb_graph_params_load(g, list, &how);
}
