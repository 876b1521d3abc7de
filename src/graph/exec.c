/* The executor: memory plan, forward pass and reverse-mode backward pass.
 *
 * Plan: every activation gets its own region of one arena (values first,
 * then gradients, then the kernel workspace). Flatten is a view of its
 * input. Parameters and their gradients live in the graph.
 *
 * Inference executors (no gradients, fast kernels) split each batch across
 * the threads by samples: every thread runs the whole graph on its slice
 * with single-threaded kernels and its own workspace, so the threads meet
 * once per batch instead of once per op, and no kernel has to be split. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "../core/bigmem.h"
#include "../core/clock.h"
#include "crossbind/crossbind.h"
#include "../ops/ops.h"
#include "exec_internal.h"

void cb_exec_profile(cb_exec *ex, double *fwd_s, double *bwd_s)
{
    ex->prof_fwd = fwd_s;
    ex->prof_bwd = bwd_s;
}

static cb_conv_shape conv_shape(const cb_graph *g, const cb_node *n, int batch)
{
    const cb_node *x = &g->nodes[n->in[0]];
    cb_conv_shape s = {
        .n = batch, .c = (int)x->dims[0], .h = (int)x->dims[1], .w = (int)x->dims[2],
        .oc = (int)n->dims[0], .kh = n->kh, .kw = n->kw, .sh = n->sh, .sw = n->sw,
        .ph = n->ph, .pw = n->pw, .oh = (int)n->dims[1], .ow = (int)n->dims[2], .exclude_pad = n->exclude_pad};
    return s;
}

/* The `fast` argument of the kernels at this executor's level (ops.h). */
static int fast_arg(const cb_exec *ex)
{
    return ex->kernels == CB_KERNELS_REFERENCE ? 0 : ex->kernels == CB_KERNELS_FAST ? CB_FAST_APPROX : CB_FAST_EXACT;
}

const char *cb_level_name(cb_kernels k)
{
    switch (k) {
    case CB_KERNELS_REFERENCE: return "reference";
    case CB_KERNELS_EXACT: return "fast";
    case CB_KERNELS_FUSED: return "fused";
    case CB_KERNELS_FAST: return "fastmath";
    }
    return NULL;
}

int cb_level_parse(const char *name)
{
    for (int k = CB_KERNELS_REFERENCE; k <= CB_KERNELS_FUSED; k++)
        if (!strcmp(name, cb_level_name((cb_kernels)k))) return k;
    return -1;
}

static int is_act(cb_op op) { return op == CB_OP_TANH || op == CB_OP_RELU || op == CB_OP_SIGMOID; }

/* How many node inputs name `node`. */
static int uses_of(const cb_graph *g, int node)
{
    int uses = 0;
    for (int k = 0; k < g->count; k++)
        for (int j = 0; j < g->nodes[k].n_in; j++) uses += g->nodes[k].in[j] == node;
    return uses;
}

static int is_pool_2x2(const cb_node *p)
{
    return p->op == CB_OP_MAXPOOL2D && p->kh == 2 && p->kw == 2 && p->sh == 2 && p->sw == 2 && p->ph == 0 &&
           p->pw == 0;
}

/* Fast kernels: a convolution whose only consumer is the activation right
 * after it computes that activation in its output loop (while each plane is
 * in cache, or as oneDNN's post-op); the activation node then only names the
 * result. Training too: the backward pass needs the activation's output, not
 * its input (LeNet-1 per 12,800 samples: the first tanh's forward took
 * 34 ms on its own). The convolution's own value must not be observable:
 * not the graph's output, not pinned (an importer's extra outputs). */
static void plan_fusion(cb_exec *ex)
{
    const cb_graph *g = ex->g;
    for (int i = 0; i + 1 < g->count; i++) {
        const cb_node *c = &g->nodes[i], *a = &g->nodes[i + 1];
        if (c->op != CB_OP_CONV2D || !is_act(a->op) || a->in[0] != i || c->pinned || i == g->output) continue;
        /* The kernels compute a fused tanh or logistic with the approximate
         * forms (fastmath.h); ReLU is exact in every one of them. */
        if (ex->kernels != CB_KERNELS_FAST && a->op != CB_OP_RELU) continue;
        if (uses_of(g, i) != 1) continue;
        ex->fused[i + 1] = 1;
        /* A 2x2 max pooling right after, the activation's only consumer,
         * is computed by the convolution too when crossbind's
         * flattened-row kernel runs it (cb_conv2d_fwd_flat_pool): in
         * inference pooling before the activation (LeNet-5's inference
         * over 10,000 images 0.10-0.13 -> 0.09-0.11 s, LeNet-1's
         * 0.068-0.081 -> 0.057-0.072 s), in training storing the
         * activation's output as well, which the pooling's backward reads
         * (where the kernel pools in registers). */
        if (i + 2 >= g->count) continue;
        const cb_node *p = &g->nodes[i + 2];
        cb_conv_shape s = conv_shape(g, c, 1);
        if (c->groups <= 1 && is_pool_2x2(p) && p->in[0] == i + 1 && uses_of(g, i + 1) == 1 && !a->pinned &&
            i + 1 != g->output &&
            cb_conv2d_flat_pool_ok(&s) && !(cb_dnnl_conv_use(&s) & CB_DNNL_FWD) &&
            (!ex->with_grads || cb_conv2d_flat_pool_in_registers(&s)))
            ex->fused[i + 2] = FUSED_POOL;
    }
}

/* Training with the fast kernels: a node used by one other only, which is a
 * batch normalisation, an activation or a convolution (its first input),
 * gets its whole gradient from that consumer's backward, which stores it:
 * the buffer need not be cleared before, nor read by an add (VGG-16's step
 * 1-2% faster, steps of two executors alternating in one process). A
 * convolution stores through oneDNN or the dense product and clears first
 * on the kernels that only add. */
static void plan_stored_grads(cb_exec *ex)
{
    const cb_graph *g = ex->g;
    for (int i = 0; i < g->count; i++) {
        const cb_node *c = &g->nodes[i];
        const int src = c->n_in ? c->in[0] : -1;
        if (src < 0 || ex->stored_by[src] >= 0 || uses_of(g, src) != 1) continue;
        const cb_op sop = g->nodes[src].op;
        if (sop == CB_OP_PARAM || sop == CB_OP_INPUT || sop == CB_OP_FLATTEN) continue;
        const int act_alone = is_act(c->op) && ex->pool_after[i] < 0; /* not done by a pooling's backward */
        if (c->op == CB_OP_BATCHNORM2D || c->op == CB_OP_CONV2D || act_alone) ex->stored_by[src] = i;
    }
}

/* Training with the fast kernels: an activation whose only consumer is a
 * max pooling has its backward done by the pooling's (cb_maxpool_act_bwd):
 * only each window's maximum gets a gradient, so the activation's full-size
 * gradient need not be written, cleared or read (LeNet-1 per 12,800
 * samples, the first tanh and pooling's backward: 30-33 -> 21-22 ms, with
 * the masked AVX-512 rows of cb_maxpool_bwd). Its value must not be
 * observable otherwise. */
static void plan_pool_fusion(cb_exec *ex)
{
    const cb_graph *g = ex->g;
    for (int i = 0; i < g->count; i++) {
        const cb_node *p = &g->nodes[i];
        if (p->op != CB_OP_MAXPOOL2D) continue;
        const int a = p->in[0];
        const cb_node *an = &g->nodes[a];
        if (!is_act(an->op) || an->pinned || a == g->output) continue;
        if (uses_of(g, a) != 1) continue;
        ex->pool_after[a] = i;
        /* The activation's input, used by nothing else, gets its whole
         * gradient from the pooling: stored there, it need not be cleared
         * first (LeNet-1: 2.2 MB per batch of 128 not written twice). */
        const int src = an->in[0];
        cb_conv_shape s = conv_shape(g, p, 1);
        if (uses_of(g, src) == 1 && g->nodes[src].op != CB_OP_PARAM && g->nodes[src].op != CB_OP_INPUT &&
            cb_maxpool_act_bwd_stores(&s, 1))
            ex->stored_by[src] = i;
    }
}

/* Graphs whose convolutions are large (VGG-16: 0.63 GFLOP per sample) run
 * inference like training, the whole batch through multi-threaded kernels:
 * their products are big enough to split, and a slice per thread would run
 * each product single-threaded on a quarter of the batch (VGG-16 inference
 * at batch 128 was 1.7x PyTorch's time sliced; one sample used one thread). */
#define CONV_HEAVY_FLOPS 2e7 /* per sample; LeNet-5: 0.8 MFLOP */

static int conv_heavy(const cb_graph *g)
{
    double f = 0;
    for (int i = 0; i < g->count; i++)
        if (g->nodes[i].op == CB_OP_CONV2D) f += cb_node_forward_flops(g, i);
    return f > CONV_HEAVY_FLOPS;
}

/* Which passes of which convolutions oneDNN runs (cb_dnnl_conv_use, where
 * the build has it); their plans are made at the first call of each batch
 * size. */
static cb_status plan_dnnl(cb_exec *ex, int max_batch)
{
    cb_status st = cb_conv_backend_check(); /* a CROSSBIND_CONV value it does not know fails the executor */
    if (st != CB_OK) return st;
    const cb_graph *g = ex->g;
    int any = 0;
    for (int i = 0; i < g->count; i++) {
        if (g->nodes[i].op != CB_OP_CONV2D || g->nodes[i].groups > 1) continue;
        cb_conv_shape s = conv_shape(g, &g->nodes[i], max_batch);
        any |= ex->dwant[i] = (unsigned char)cb_dnnl_conv_use(&s);
    }
    if (!any) return CB_OK;
    ex->dplan = calloc((size_t)g->count, sizeof *ex->dplan);
    if (!ex->dplan) return cb_fail(CB_ERR_NOMEM, "out of memory creating an executor");
    return cb_dnnl_ctx_create(&ex->dnnl);
}

/* Node i's oneDNN plan for this batch size (made or remade here); the
 * kernel tables send only oneDNN's nodes here, never from inside a
 * parallel region (the shared buffers are one per executor). */
static cb_status dnnl_plan_for(cb_exec *ex, int i, int pass, const cb_conv_shape *s, cb_act act,
                               cb_dnnl_conv **out)
{
    *out = NULL;
    if (!ex->dnnl || !(ex->dwant[i] & pass))
        return cb_fail(CB_ERR_INVALID_ARG, "node '%s': the plan names oneDNN, which this executor did not set up",
                       ex->g->nodes[i].name);
    cb_dnnl_conv **p = &ex->dplan[i];
    if (*p && cb_dnnl_conv_batch(*p) != s->n) {
        cb_dnnl_conv_free(*p);
        *p = NULL;
    }
    if (!*p) {
        const cb_node *n = &ex->g->nodes[i];
        cb_status st = cb_dnnl_conv_create(ex->dnnl, s, n->n_in > 2, act, p);
        if (st != CB_OK) return st;
    }
    *out = *p;
    return CB_OK;
}

/* Sliced inference gives each thread its own slice and single-threaded
 * kernels, so oneDNN (one set of buffers per executor) cannot run there.
 * Where oneDNN runs a forward convolution and the graph has no recurrent
 * layer (whose workspace is planned per slice), a batch of more than one
 * chunk runs whole instead, through threaded kernels: LeNet-5 inference
 * over 10,000 images took 0.14 s so, 0.21 s sliced on crossbind's own
 * kernels. Smaller batches stay sliced (one chunk on one thread: no
 * parallel region to wake). */
static int whole_batch_dnnl(const cb_exec *ex)
{
    int fwd = 0;
    for (int i = 0; i < ex->g->count; i++) {
        const cb_op op = ex->g->nodes[i].op;
        if (op == CB_OP_GRU || op == CB_OP_LSTM) return 0;
        fwd |= op == CB_OP_CONV2D && (ex->dwant[i] & CB_DNNL_FWD);
    }
    return fwd;
}

static size_t node_floats(const cb_node *n, int batch)
{
    return (size_t)cb_node_numel(n) * (n->batched ? (size_t)batch : 1);
}

/* The workspace floats the kernels of one run over `batch` samples need
 * when they run with at most `threads` threads. Every size grows with the
 * batch and with the threads (capped by the work there is to split), so
 * the largest run bounds every smaller one. */
static size_t workspace_floats(const cb_exec *ex, int batch, int threads)
{
    const cb_graph *g = ex->g;
    size_t most = 0;
    for (int i = 0; i < g->count; i++) {
        const cb_node *n = &g->nodes[i];
        size_t w = 0;
        if (n->op == CB_OP_GRU) { /* the forward pass needs workspace too */
            cb_rnn_shape rs = {batch, (int)n->dims[0], (int)g->nodes[n->in[0]].dims[1], (int)n->dims[1]};
            w = cb_gru_workspace(&rs);
        } else if (n->op == CB_OP_LSTM && ex->with_grads) {
            cb_rnn_shape rs = {batch, (int)n->dims[0], (int)g->nodes[n->in[0]].dims[1], (int)n->dims[1]};
            w = cb_lstm_workspace(&rs);
        } else if (n->op == CB_OP_CONV2D && n->groups <= 1 && ex->kernels != CB_KERNELS_REFERENCE) {
            cb_conv_shape cs = conv_shape(g, n, batch);
            w = cb_conv2d_workspace_threads(&cs, threads);
        }
        if (w > most) most = w;
    }
    return most;
}

/* Plans ex->ws_slice, ex->ws_floats and ex->kthreads. Sliced inference:
 * one workspace per slice, sized for a chunk on one thread (its kernels run
 * single-threaded), and no more slices than the largest batch has chunks;
 * the batches it runs whole (whole_dnnl, or `big` ones smaller than the
 * threads) get a workspace for the threads. Other executors: one workspace
 * for the whole batch on the threads. Linear in the threads, so that
 * --threads 300 does not plan 300 x 300 per-thread buffers. */
static void plan_workspace(cb_exec *ex, int max_batch)
{
    const int threads = cb_get_threads();
    ex->kthreads = threads;
    if (!ex->slices) {
        ex->ws_floats = ex->ws_slice = workspace_floats(ex, max_batch, threads);
        return;
    }
    const int chunks = (max_batch + SLICE_SAMPLES - 1) / SLICE_SAMPLES;
    ex->slices = cb_split_threads(threads, chunks);
    ex->ws_slice = workspace_floats(ex, max_batch < SLICE_SAMPLES ? max_batch : SLICE_SAMPLES, 1);
    ex->ws_floats = ex->ws_slice * (size_t)ex->slices;
    int whole = ex->whole_dnnl ? max_batch : 0;
    if (ex->big && threads > 1) { /* batches under the threads run whole (cb_exec_forward) */
        const int below = max_batch < threads - 1 ? max_batch : threads - 1;
        if (below > whole) whole = below;
    }
    if (whole) {
        const size_t w = workspace_floats(ex, whole, threads);
        if (w > ex->ws_floats) ex->ws_floats = w;
    }
}

/* Convolution node i's forward kernel over n samples, inside a parallel
 * region or not: the rule list, first match wins. */
static cb_conv_kernel conv_fwd_kernel(const cb_exec *ex, int i, int n, int in_parallel)
{
    const cb_graph *g = ex->g;
    if (g->nodes[i].groups > 1) return CB_CK_GROUPED; /* at every level: it takes `fast` */
    if (ex->kernels == CB_KERNELS_REFERENCE) return CB_CK_REF;
    const int fuse = i + 1 < g->count && ex->fused[i + 1];
    if (fuse && i + 2 < g->count && ex->fused[i + 2] == FUSED_POOL) return CB_CK_FLAT_POOL;
    const cb_conv_shape s = conv_shape(g, &g->nodes[i], n);
    if (ex->with_grads && cb_conv2d_fwd_nb_ok(&s)) return CB_CK_NB_FWD;
    if (ex->dnnl && (ex->dwant[i] & CB_DNNL_FWD) && !in_parallel) return CB_CK_ONEDNN;
    return cb_conv2d_fwd_choice(&s);
}

/* ... and its backward kernels; want_dx: its input takes a gradient. */
static cb_conv_bwd_choice conv_bwd_kernels(const cb_exec *ex, int i, int n, int want_dx)
{
    cb_conv_kernel both = CB_CK_NONE;
    const cb_conv_shape s = conv_shape(ex->g, &ex->g->nodes[i], n);
    if (ex->g->nodes[i].groups > 1) both = CB_CK_GROUPED;
    else if (ex->kernels == CB_KERNELS_REFERENCE) both = CB_CK_REF;
    else if (ex->dnnl && (ex->dwant[i] & CB_DNNL_BWD)) both = CB_CK_ONEDNN;
    else if (cb_conv2d_dense_ok(&s)) both = CB_CK_DENSE; /* it stores as well as adds (stored_by) */
    if (both != CB_CK_NONE) return (cb_conv_bwd_choice){want_dx ? both : CB_CK_NONE, both};
    return cb_conv2d_bwd_choice(&s, want_dx);
}

static void free_tables(uint8_t **t, int count)
{
    if (!t) return;
    for (int i = 0; i < count; i++) free(t[i]);
    free(t);
}

static uint8_t **new_table(int count)
{
    return calloc((size_t)count, sizeof(uint8_t *));
}

/* Fills the kernel tables: every convolution's kernels for every sample
 * count from 1 to max_batch, so that running only reads them and the plan
 * (cb_exec_plan_text) prints what runs. */
static cb_status plan_conv_kernels(cb_exec *ex)
{
    const cb_graph *g = ex->g;
    const size_t cells = (size_t)ex->max_batch + 1;
    const int par_differs = ex->dnnl != NULL; /* the only rule that looks at the region */
    ex->kfwd = new_table(g->count);
    ex->kpar = par_differs ? new_table(g->count) : ex->kfwd;
    if (ex->with_grads) {
        ex->kdgrad = new_table(g->count);
        ex->kwgrad = new_table(g->count);
    }
    if (!ex->kfwd || !ex->kpar || (ex->with_grads && (!ex->kdgrad || !ex->kwgrad))) return CB_ERR_NOMEM;
    for (int i = 0; i < g->count; i++) {
        const cb_node *nd = &g->nodes[i];
        if (nd->op != CB_OP_CONV2D) continue;
        if (!(ex->kfwd[i] = calloc(cells, 1)) || (par_differs && !(ex->kpar[i] = calloc(cells, 1)))) return CB_ERR_NOMEM;
        for (int n = 1; n <= ex->max_batch; n++) {
            ex->kfwd[i][n] = (uint8_t)conv_fwd_kernel(ex, i, n, 0);
            if (par_differs) ex->kpar[i][n] = (uint8_t)conv_fwd_kernel(ex, i, n, 1);
        }
        if (!ex->with_grads || !ex->needs_grad[i]) continue;
        if (!(ex->kdgrad[i] = calloc(cells, 1)) || !(ex->kwgrad[i] = calloc(cells, 1))) return CB_ERR_NOMEM;
        const int want_dx = ex->grad[nd->in[0]] != NULL;
        for (int n = 1; n <= ex->max_batch; n++) {
            cb_conv_bwd_choice k = conv_bwd_kernels(ex, i, n, want_dx);
            ex->kdgrad[i][n] = (uint8_t)k.dgrad;
            ex->kwgrad[i][n] = (uint8_t)k.wgrad;
        }
    }
    return CB_OK;
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
    ex->own_val = calloc((size_t)g->count, sizeof *ex->own_val);
    ex->grad = calloc((size_t)g->count, sizeof *ex->grad);
    ex->needs_grad = calloc((size_t)g->count, 1);
    ex->fused = calloc((size_t)g->count, 1);
    ex->pool_after = malloc((size_t)g->count * sizeof *ex->pool_after);
    ex->stored_by = malloc((size_t)g->count * sizeof *ex->stored_by);
    ex->aux = calloc((size_t)g->count, sizeof *ex->aux);
    ex->dwant = calloc((size_t)g->count, 1);
    cb_rng_seed(&ex->rng, 0);
    if (!ex->val || !ex->own_val || !ex->grad || !ex->needs_grad || !ex->fused || !ex->pool_after || !ex->stored_by ||
        !ex->aux || !ex->dwant) {
        cb_exec_free(ex);
        return cb_fail(CB_ERR_NOMEM, "out of memory creating an executor");
    }

    for (int i = 0; i < g->count; i++) ex->pool_after[i] = ex->stored_by[i] = -1;
    /* The rewrites, at the levels that have them (exec.h). */
    const int rewrites = kernels == CB_KERNELS_FAST || kernels == CB_KERNELS_FUSED;
    if (rewrites) plan_fusion(ex);
    if (rewrites && with_grads) plan_pool_fusion(ex);
    if (rewrites && with_grads) plan_stored_grads(ex);
    /* Fast inference runs the batch in chunks of at most SLICE_SAMPLES
     * samples spread over the threads (chunks of 8 to 64 measured alike on
     * LeNet-5), each thread with its own workspace sized for one chunk.
     * Every other executor runs the whole batch with one workspace. */
    ex->slices = (!with_grads && kernels != CB_KERNELS_REFERENCE && !conv_heavy(g)) ? cb_get_threads() : 0;
    ex->big = cb_graph_forward_flops(g) > CONV_HEAVY_FLOPS;
    if (kernels != CB_KERNELS_REFERENCE) {
        cb_status st = plan_dnnl(ex, max_batch);
        if (st != CB_OK) {
            cb_exec_free(ex);
            return st;
        }
        ex->whole_dnnl = ex->slices && whole_batch_dnnl(ex); /* its batches of several chunks run whole */
    }
    plan_workspace(ex, max_batch);
    /* Pass 1: sizes (as offsets from NULL) and the workspace high-water mark. */
    size_t vals = 0, grads = 0, auxs = 0;
    size_t *voff = calloc((size_t)g->count, sizeof *voff), *goff = calloc((size_t)g->count, sizeof *goff);
    size_t *aoff = calloc((size_t)g->count, sizeof *aoff);
    if (!voff || !goff || !aoff) {
        free(voff);
        free(goff);
        free(aoff);
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
        if (with_grads && (n->op == CB_OP_BATCHNORM2D || n->op == CB_OP_DROPOUT)) {
            aoff[i] = auxs + 1; /* +1: 0 means none */
            auxs += n->op == CB_OP_BATCHNORM2D ? 2 * (size_t)n->dims[0] : node_floats(n, max_batch);
        }
        if (n->op == CB_OP_GRU) { /* gates, inference included */
            aoff[i] = auxs + 1;
            auxs += (size_t)max_batch * (size_t)n->dims[0] * 6 * (size_t)n->dims[1];
        }
        if (n->op == CB_OP_LSTM) { /* gates and cells, inference included (the forward pass needs them) */
            aoff[i] = auxs + 1;
            auxs += (size_t)max_batch * (size_t)n->dims[0] * 5 * (size_t)n->dims[1];
        }
    }
    ex->arena_floats = vals + grads + auxs + ex->ws_floats;
    ex->arena = cb_big_alloc(ex->arena_floats * sizeof(float));
    if (!ex->arena) {
        free(voff);
        free(goff);
        free(aoff);
        size_t bytes = ex->arena_floats * sizeof(float);
        cb_exec_free(ex);
        return cb_fail(CB_ERR_NOMEM, "out of memory: the executor needs %zu MiB", bytes >> 20);
    }
    ex->ws = ex->arena + vals + grads + auxs;
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
        if (aoff[i]) ex->aux[i] = ex->arena + vals + grads + aoff[i] - 1;
    }
    free(aoff);
    memcpy(ex->own_val, ex->val, (size_t)g->count * sizeof *ex->val);
    free(voff);
    free(goff);
    if (plan_conv_kernels(ex) != CB_OK) {
        cb_exec_free(ex);
        return cb_fail(CB_ERR_NOMEM, "out of memory planning an executor's kernels");
    }
    *out = ex;
    return CB_OK;
}

void cb_exec_free(cb_exec *ex)
{
    if (!ex) return;
    cb_big_free(ex->arena, ex->arena_floats * sizeof(float));
    free(ex->val);
    free(ex->own_val);
    free(ex->grad);
    free(ex->needs_grad);
    free(ex->fused);
    free(ex->pool_after);
    free(ex->stored_by);
    free(ex->aux);
    if (ex->dplan)
        for (int i = 0; i < ex->g->count; i++) cb_dnnl_conv_free(ex->dplan[i]);
    free(ex->dplan);
    free(ex->dwant);
    if (ex->kpar != ex->kfwd) free_tables(ex->kpar, ex->g->count);
    free_tables(ex->kfwd, ex->g->count);
    free_tables(ex->kdgrad, ex->g->count);
    free_tables(ex->kwgrad, ex->g->count);
    cb_dnnl_ctx_free(ex->dnnl);
    free(ex);
}

float *cb_exec_value(cb_exec *ex, int node) { return ex->val[node]; }

void cb_exec_seed(cb_exec *ex, uint64_t seed) { cb_rng_seed(&ex->rng, seed); }

cb_status cb_exec_bind(cb_exec *ex, int node, float *data)
{
    cb_graph *g = ex->g;
    if (node < 0 || node >= g->count || g->nodes[node].op != CB_OP_INPUT)
        return cb_fail(CB_ERR_INVALID_ARG, "only input nodes can be bound to caller memory");
    if (ex->with_grads && ex->grad[node])
        return cb_fail(CB_ERR_INVALID_ARG, "input '%s' needs a gradient: it cannot be bound", g->nodes[node].name);
    ex->val[node] = data ? data : ex->own_val[node];
    for (int i = node + 1; i < g->count; i++) /* views follow what they view */
        if (g->nodes[i].op == CB_OP_FLATTEN) ex->val[i] = ex->val[g->nodes[i].in[0]];
    return CB_OK;
}
float *cb_exec_grad(cb_exec *ex, int node) { return ex->grad[node]; }
size_t cb_exec_bytes(const cb_exec *ex) { return ex->arena_floats * sizeof(float); }
float cb_exec_loss(const cb_exec *ex) { return ex->val[ex->g->loss][0]; }

static cb_act act_of(cb_op op)
{
    return op == CB_OP_TANH ? CB_ACT_TANH : op == CB_OP_RELU ? CB_ACT_RELU : CB_ACT_SIGMOID;
}

static int is_loss(cb_op op) { return op == CB_OP_SOFTMAX_XENT || op == CB_OP_BCE; }

/* A batched node's value for the slice starting at sample b0. */
static float *slice_of(const cb_exec *ex, int node, int b0)
{
    const cb_node *n = &ex->g->nodes[node];
    return ex->val[node] + (n->batched ? (size_t)b0 * (size_t)cb_node_numel(n) : 0);
}

/* A batch-mean loss node over the first `batch` samples. */
static cb_status loss_forward(cb_exec *ex, int i, int batch)
{
    const cb_node *n = &ex->g->nodes[i];
    const float *x = ex->val[n->in[0]], *labels = ex->val[n->in[1]];
    if (n->op == CB_OP_SOFTMAX_XENT)
        return cb_softmax_xent_fwd(batch, (int)ex->g->nodes[n->in[0]].dims[0], x, labels, ex->val[i]);
    return cb_bce_fwd(batch, x, labels, ex->val[i]);
}

/* Forward over samples [b0, b0 + batch) with workspace ws; the batch-mean
 * losses need the whole batch, so `losses` says whether to run them. */
static cb_status forward_range(cb_exec *ex, int b0, int batch, float *ws, int losses)
{
    const cb_graph *g = ex->g;
    const int fast = fast_arg(ex);
    for (int i = 0; i < g->count; i++) {
        const cb_node *n = &g->nodes[i];
        if ((is_loss(n->op) && !losses) || ex->fused[i]) continue;
        /* Per-node times only where one thread runs the graph (not in the
         * slices of sliced inference, which run concurrently). */
        const int timed = ex->prof_fwd && !omp_in_parallel();
        const double t0 = timed ? cb_now() : 0;
        float *y = slice_of(ex, i, b0);
        const float *x = n->n_in ? slice_of(ex, n->in[0], b0) : NULL;
        switch (n->op) {
        case CB_OP_INPUT: case CB_OP_PARAM: case CB_OP_FLATTEN:
            break;
        case CB_OP_CONV2D: {
            cb_conv_shape s = conv_shape(g, n, batch);
            const float *w = ex->val[n->in[1]], *b = n->n_in > 2 ? ex->val[n->in[2]] : NULL;
            const int fuse = fast && i + 1 < g->count && ex->fused[i + 1]; /* its activation (plan_fusion) */
            const cb_act act = fuse ? act_of(g->nodes[i + 1].op) : CB_ACT_NONE;
            float *out = fuse ? slice_of(ex, i + 1, b0) : y;
            const cb_conv_kernel k = (cb_conv_kernel)(omp_in_parallel() ? ex->kpar : ex->kfwd)[i][batch];
            if (k == CB_CK_REF) {
                cb_conv2d_fwd_ref(&s, x, w, b, y);
            } else if (k == CB_CK_FLAT_POOL) {
                cb_conv2d_fwd_flat_pool(&s, x, w, b, act, ex->with_grads ? out : NULL, slice_of(ex, i + 2, b0), ws);
            } else if (k == CB_CK_GROUPED) {
                cb_conv2d_grouped_fwd(&s, n->groups, x, w, b, act, out, fast);
            } else if (k == CB_CK_NB_FWD) {
                cb_conv2d_fwd_nb(&s, x, w, b, act, out, ws);
            } else if (k == CB_CK_ONEDNN) {
                cb_dnnl_conv *dp;
                cb_status st = dnnl_plan_for(ex, i, CB_DNNL_FWD, &s, act, &dp);
                if (st == CB_OK) st = cb_dnnl_conv_fwd(dp, x, w, b, out);
                if (st != CB_OK) return st;
            } else {
                cb_conv2d_fwd_kernel(k, &s, x, w, b, act, out, ws);
            }
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
        case CB_OP_BATCHNORM2D: {
            /* Training executors normalise with the batch's statistics and
             * update the running ones; inference executors use the latter. */
            cb_bn_shape s = {batch, (int)n->dims[0], (int)n->dims[1], (int)n->dims[2], n->eps, n->momentum};
            cb_bn_fwd(&s, ex->with_grads, x, ex->val[n->in[1]], ex->val[n->in[2]], ex->val[n->in[3]],
                      ex->val[n->in[4]], ex->aux[i], y, fast);
            break;
        }
        case CB_OP_DROPOUT:
            if (ex->with_grads) cb_dropout_fwd((int64_t)node_floats(n, batch), n->p, &ex->rng, x, ex->aux[i], y);
            else memcpy(y, x, node_floats(n, batch) * sizeof *y);
            break;
        case CB_OP_EMBEDDING: {
            const cb_node *w = &g->nodes[n->in[1]];
            cb_status st = cb_embedding_fwd((int64_t)batch * n->dims[0], x, ex->val[n->in[1]], w->dims[0],
                                            (int)w->dims[1], y);
            if (st != CB_OK) return st;
            break;
        }
        case CB_OP_LSTM: {
            cb_rnn_shape rs = {batch, (int)n->dims[0], (int)g->nodes[n->in[0]].dims[1], (int)n->dims[1]};
            float *saved = ex->aux[i] + (size_t)b0 * rs.t * 5 * rs.h;
            cb_lstm_fwd(&rs, x, ex->val[n->in[1]], ex->val[n->in[2]], ex->val[n->in[3]], ex->val[n->in[4]], y,
                        saved, fast);
            break;
        }
        case CB_OP_GRU: {
            cb_rnn_shape rs = {batch, (int)n->dims[0], (int)g->nodes[n->in[0]].dims[1], (int)n->dims[1]};
            float *saved = ex->aux[i] + (size_t)b0 * rs.t * 6 * rs.h;
            cb_gru_fwd(&rs, n->reset_before, x, ex->val[n->in[1]], ex->val[n->in[2]], ex->val[n->in[3]],
                       ex->val[n->in[4]], y, saved, ws, fast);
            break;
        }
        case CB_OP_ADD: {
            const float *x2 = slice_of(ex, n->in[1], b0);
            const int64_t k = (int64_t)node_floats(n, batch);
#pragma omp parallel for schedule(static) if (fast && k > 65536)
            for (int64_t j = 0; j < k; j++) y[j] = x[j] + x2[j];
            break;
        }
        case CB_OP_CONCAT: { /* per sample, each input's block after the one before */
            const size_t per = (size_t)cb_node_numel(n);
            size_t off = 0;
            for (int k = 0; k < n->n_in; k++) {
                const size_t pk = (size_t)cb_node_numel(&g->nodes[n->in[k]]);
                const float *xk = slice_of(ex, n->in[k], b0);
                for (int s = 0; s < batch; s++) memcpy(y + (size_t)s * per + off, xk + (size_t)s * pk, pk * sizeof *y);
                off += pk;
            }
            break;
        }
        case CB_OP_PAD: {
            const cb_node *xn = &g->nodes[n->in[0]];
            const int64_t planes = (int64_t)batch * xn->dims[0], h = xn->dims[1], w = xn->dims[2];
            const int64_t oh = n->dims[1], ow = n->dims[2];
            for (int64_t c = 0; c < planes; c++) {
                float *yp = y + c * oh * ow;
                for (int64_t j = 0; j < oh * ow; j++) yp[j] = n->lo;
                for (int64_t r = 0; r < h; r++)
                    memcpy(yp + (r + n->pads[0]) * ow + n->pads[1], x + (c * h + r) * w, (size_t)w * sizeof *y);
            }
            break;
        }
        case CB_OP_SOFTMAX: {
            int64_t outer = batch, len = n->dims[n->axis], inner = 1;
            for (int d = 0; d < n->axis; d++) outer *= n->dims[d];
            for (int d = n->axis + 1; d < n->ndim; d++) inner *= n->dims[d];
            for (int64_t o = 0; o < outer; o++)
                for (int64_t in = 0; in < inner; in++) {
                    const float *xr = x + o * len * inner + in;
                    float *yr = y + o * len * inner + in;
                    float top = xr[0];
                    for (int64_t k = 1; k < len; k++) top = xr[k * inner] > top ? xr[k * inner] : top;
                    double sum = 0; /* exp(x - max) once per element, as PyTorch, summed in double */
                    for (int64_t k = 0; k < len; k++) sum += yr[k * inner] = (float)exp((double)xr[k * inner] - top);
                    for (int64_t k = 0; k < len; k++) yr[k * inner] = (float)(yr[k * inner] / sum);
                }
            break;
        }
        case CB_OP_CLIP: {
            const int64_t k = (int64_t)node_floats(n, batch);
            const float lo = n->lo, hi = n->hi;
#pragma omp parallel for schedule(static) if (fast && k > 65536)
            for (int64_t j = 0; j < k; j++) y[j] = x[j] < lo ? lo : x[j] > hi ? hi : x[j]; /* NaN falls through */
            break;
        }
        case CB_OP_GLOBAL_AVGPOOL: {
            const cb_node *xn = &g->nodes[n->in[0]];
            const int64_t planes = (int64_t)batch * xn->dims[0], p = xn->dims[1] * xn->dims[2];
#pragma omp parallel for schedule(static) if (fast && planes * p > 65536)
            for (int64_t c = 0; c < planes; c++) {
                double acc = 0; /* double at every level: the mean of up to 49 x 2048 values */
                for (int64_t j = 0; j < p; j++) acc += x[c * p + j];
                y[c] = (float)(acc / (double)p);
            }
            break;
        }
        case CB_OP_LAST_STEP: {
            const int64_t t = g->nodes[n->in[0]].dims[0], h = n->dims[0];
            for (int s = 0; s < batch; s++) memcpy(y + (size_t)s * h, x + ((size_t)s * t + t - 1) * h, (size_t)h * sizeof *y);
            break;
        }
        case CB_OP_SOFTMAX_XENT: case CB_OP_BCE: {
            cb_status s = loss_forward(ex, i, batch); /* only reached with the whole batch (b0 = 0) */
            if (s != CB_OK) return s;
            break;
        }
        case CB_OP_COUNT:
            return cb_fail(CB_ERR_UNSUPPORTED, "node '%s': unknown op", n->name);
        }
        if (timed) ex->prof_fwd[i] += cb_now() - t0;
    }
    return CB_OK;
}

/* The kernels size their per-thread buffers by OpenMP's thread count at
 * the call: threads raised since the plan (cb_set_threads) would index
 * past the workspace planned, so a pass runs with at most the planned
 * number. Returns the count to restore. */
static int hold_threads(const cb_exec *ex)
{
    const int was = omp_get_max_threads();
    if (was > ex->kthreads) omp_set_num_threads(ex->kthreads);
    return was;
}

static void release_threads(int was)
{
    if (omp_get_max_threads() != was) omp_set_num_threads(was);
}

static cb_status exec_forward(cb_exec *ex, int batch);

cb_status cb_exec_forward(cb_exec *ex, int batch)
{
    const int was = hold_threads(ex);
    cb_status st = exec_forward(ex, batch);
    release_threads(was);
    return st;
}

static cb_status exec_forward(cb_exec *ex, int batch)
{
    if (batch < 1 || batch > ex->max_batch)
        return cb_fail(CB_ERR_INVALID_ARG, "batch %d outside the planned range [1, %d]", batch, ex->max_batch);
    const int chunks = (batch + SLICE_SAMPLES - 1) / SLICE_SAMPLES;
    /* Threads may have been lowered since the plan; never raised above it. */
    const int now = cb_get_threads() < ex->kthreads ? cb_get_threads() : ex->kthreads;
    int threads;
    const exec_mode mode = cb_exec_mode(ex, batch, now, &threads);
    if (mode == EXEC_ONE_CHUNK) {
        /* One chunk: run it here, its kernels single-threaded as in a
         * slice. A parallel region would wait at its closing barrier for
         * an idle thread to wake (on this VM a sleeping vCPU took 8 ms;
         * LeNet-5's batch-1 prediction takes 40 us). */
        const int was = omp_get_max_threads();
        omp_set_num_threads(1);
        cb_status st = forward_range(ex, 0, batch, ex->ws, 1);
        omp_set_num_threads(was);
        return st;
    }
    if (mode == EXEC_SLICED) {
        cb_status failed = CB_OK;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
        for (int c = 0; c < chunks; c++) {
            /* The slice's kernels single-threaded (its workspace is sized
             * for one), even where nested parallel regions are enabled. */
            omp_set_num_threads(1);
            int b0 = c * SLICE_SAMPLES, b1 = b0 + SLICE_SAMPLES < batch ? b0 + SLICE_SAMPLES : batch;
            cb_status st = forward_range(ex, b0, b1 - b0, ex->ws + (size_t)omp_get_thread_num() * ex->ws_slice, 0);
            if (st != CB_OK) {
#pragma omp critical
                failed = st;
            }
        }
        if (failed != CB_OK) return failed;
        for (int i = 0; i < ex->g->count; i++) /* the batch-mean losses, over the whole batch */
            if (is_loss(ex->g->nodes[i].op)) {
                cb_status s = loss_forward(ex, i, batch);
                if (s != CB_OK) return s;
            }
        return CB_OK;
    }
    return forward_range(ex, 0, batch, ex->ws, 1);
}

/* A single sample of a large model (the recurrent ones: 0.6-1.3 GFLOP)
 * runs through the threaded kernels: sliced, it would use one thread,
 * whose cache cannot hold the whole recurrent weight matrix either (LSTM
 * batch-1 latency 151 ms against ONNX Runtime's 20 ms). */
exec_mode cb_exec_mode(const cb_exec *ex, int batch, int now, int *threads)
{
    const int chunks = (batch + SLICE_SAMPLES - 1) / SLICE_SAMPLES;
    *threads = 1;
    if (!ex->slices || (ex->big && batch < now) || (ex->whole_dnnl && chunks > 1)) {
        *threads = now;
        return EXEC_WHOLE;
    }
    *threads = ex->slices < now ? ex->slices : now;
    if (chunks == 1 || *threads == 1) {
        *threads = 1;
        return EXEC_ONE_CHUNK;
    }
    return EXEC_SLICED;
}

/* Whether node i is an activation whose backward its max pooling does, in
 * a backward pass from `top` (which must include the pooling). */
static int pooled_act(const cb_exec *ex, int i, int top)
{
    return ex->pool_after[i] >= 0 && ex->pool_after[i] <= top;
}

/* Whether node i's backward stores its first input's whole gradient
 * (plan_stored_grads) rather than adding to it. */
static int stores_grad(const cb_exec *ex, int i)
{
    const cb_node *n = &ex->g->nodes[i];
    return n->n_in && ex->stored_by[n->in[0]] == i;
}

/* Reverse pass from node `top`, whose gradient is `seed` (NULL: 1, for a
 * scalar loss). */
static cb_status backward_from(cb_exec *ex, int top, const float *seed, int batch)
{
    if (!ex->with_grads) return cb_fail(CB_ERR_INVALID_ARG, "executor was created without gradients");
    if (batch < 1 || batch > ex->max_batch)
        return cb_fail(CB_ERR_INVALID_ARG, "batch %d outside the planned range [1, %d]", batch, ex->max_batch);
    cb_graph *g = ex->g;
    if (top < 0 || top >= g->count || !ex->grad[top])
        return cb_fail(CB_ERR_INVALID_ARG, "node %d has no gradient to start the backward pass from", top);
    const int fast = fast_arg(ex);
    /* Gradients accumulate, so every buffer starts at zero. */
    memset(g->grads, 0, g->n_params * sizeof(float));
    for (int i = 0; i < g->count; i++)
        if (ex->grad[i] && g->nodes[i].op != CB_OP_PARAM && g->nodes[i].op != CB_OP_FLATTEN &&
            !pooled_act(ex, i, top) && !(ex->stored_by[i] >= 0 && ex->stored_by[i] <= top))
            memset(ex->grad[i], 0, node_floats(&g->nodes[i], batch) * sizeof(float));
    if (seed) memcpy(ex->grad[top], seed, node_floats(&g->nodes[top], batch) * sizeof(float));
    else ex->grad[top][0] = 1.0f;

    for (int i = top; i >= 0; i--) {
        const cb_node *n = &g->nodes[i];
        if (!ex->needs_grad[i] || pooled_act(ex, i, top)) continue;
        const double t0 = ex->prof_bwd ? cb_now() : 0;
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
            const int store = dx && stores_grad(ex, i);
            const cb_conv_bwd_choice k = {(cb_conv_kernel)ex->kdgrad[i][batch], (cb_conv_kernel)ex->kwgrad[i][batch]};
            if (k.wgrad == CB_CK_ONEDNN) {
                cb_dnnl_conv *dp;
                cb_status st = dnnl_plan_for(ex, i, CB_DNNL_BWD, &s, CB_ACT_NONE, &dp);
                if (st == CB_OK) st = cb_dnnl_conv_bwd(dp, x, w, dy, dx, dw, db, ex->ws, store);
                if (st != CB_OK) return st;
                break;
            }
            if (k.wgrad == CB_CK_DENSE) {
                cb_conv2d_bwd_dense(&s, x, w, dy, dx, dw, db, ex->ws, store);
                break;
            }
            if (store) memset(dx, 0, node_floats(&g->nodes[n->in[0]], batch) * sizeof *dx); /* these kernels add */
            if (k.wgrad == CB_CK_REF) cb_conv2d_bwd_ref(&s, x, w, dy, dx, dw, db);
            else if (k.wgrad == CB_CK_GROUPED) cb_conv2d_grouped_bwd(&s, n->groups, x, w, dy, dx, dw, db, fast);
            else cb_conv2d_bwd_kernels(k, &s, x, w, dy, dx, dw, db, ex->ws);
            break;
        }
        case CB_OP_MAXPOOL2D: case CB_OP_AVGPOOL2D: {
            cb_conv_shape s = conv_shape(g, n, batch);
            if (pooled_act(ex, n->in[0], top)) { /* the activation's backward too, into its input's gradient */
                const cb_node *a = &g->nodes[n->in[0]];
                float *dxa = ex->grad[a->in[0]];
                if (dxa) cb_maxpool_act_bwd(&s, act_of(a->op), x, ex->val[i], dy, dxa, fast, ex->stored_by[a->in[0]] == i);
                break;
            }
            if (!dx) break;
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
            if (dx) cb_act_bwd_to(act_of(n->op), (int64_t)node_floats(n, batch), ex->val[i], dy, dx, fast, stores_grad(ex, i));
            break;
        case CB_OP_BATCHNORM2D: {
            cb_bn_shape s = {batch, (int)n->dims[0], (int)n->dims[1], (int)n->dims[2], n->eps, n->momentum};
            cb_bn_bwd(&s, x, ex->val[n->in[1]], ex->aux[i], dy, dx, ex->grad[n->in[1]], ex->grad[n->in[2]], fast,
                      dx && stores_grad(ex, i));
            break;
        }
        case CB_OP_DROPOUT:
            if (dx) cb_dropout_bwd((int64_t)node_floats(n, batch), ex->aux[i], dy, dx);
            break;
        case CB_OP_EMBEDDING: /* ids take no gradient */
            cb_embedding_bwd((int64_t)batch * n->dims[0], x, (int)g->nodes[n->in[1]].dims[1], dy, ex->grad[n->in[1]]);
            break;
        case CB_OP_LSTM: {
            cb_rnn_shape rs = {batch, (int)n->dims[0], (int)g->nodes[n->in[0]].dims[1], (int)n->dims[1]};
            cb_lstm_bwd(&rs, x, ex->val[n->in[1]], ex->val[n->in[2]], ex->val[i], ex->aux[i], dy, dx, ex->grad[n->in[1]],
                        ex->grad[n->in[2]], ex->grad[n->in[3]], ex->grad[n->in[4]], ex->ws, fast);
            break;
        }
        case CB_OP_GRU: {
            cb_rnn_shape rs = {batch, (int)n->dims[0], (int)g->nodes[n->in[0]].dims[1], (int)n->dims[1]};
            cb_gru_bwd(&rs, n->reset_before, x, ex->val[n->in[1]], ex->val[n->in[2]], ex->val[i], ex->aux[i], dy, dx,
                       ex->grad[n->in[1]], ex->grad[n->in[2]], ex->grad[n->in[3]], ex->grad[n->in[4]], ex->ws, fast);
            break;
        }
        case CB_OP_ADD: { /* both inputs take dy (one node twice: twice) */
            const int64_t k = (int64_t)node_floats(n, batch);
            for (int side = 0; side < 2; side++) {
                float *d = ex->grad[n->in[side]];
                if (d)
                    for (int64_t j = 0; j < k; j++) d[j] += dy[j];
            }
            break;
        }
        case CB_OP_CONCAT: {
            const size_t per = (size_t)cb_node_numel(n);
            size_t off = 0;
            for (int k = 0; k < n->n_in; k++) {
                const size_t pk = (size_t)cb_node_numel(&g->nodes[n->in[k]]);
                float *dk = ex->grad[n->in[k]];
                for (int s = 0; dk && s < batch; s++)
                    for (size_t j = 0; j < pk; j++) dk[(size_t)s * pk + j] += dy[(size_t)s * per + off + j];
                off += pk;
            }
            break;
        }
        case CB_OP_PAD:
            if (dx) {
                const cb_node *xn = &g->nodes[n->in[0]];
                const int64_t planes = (int64_t)batch * xn->dims[0], h = xn->dims[1], w = xn->dims[2];
                const int64_t ow = n->dims[2], oh = n->dims[1];
                for (int64_t c = 0; c < planes; c++)
                    for (int64_t r = 0; r < h; r++)
                        for (int64_t j = 0; j < w; j++)
                            dx[(c * h + r) * w + j] += dy[c * oh * ow + (r + n->pads[0]) * ow + n->pads[1] + j];
            }
            break;
        case CB_OP_SOFTMAX:
            if (dx) { /* dx = y * (dy - sum(dy * y)) along the axis */
                int64_t outer = batch, len = n->dims[n->axis], inner = 1;
                for (int d = 0; d < n->axis; d++) outer *= n->dims[d];
                for (int d = n->axis + 1; d < n->ndim; d++) inner *= n->dims[d];
                const float *yv = ex->val[i];
                for (int64_t o = 0; o < outer; o++)
                    for (int64_t in = 0; in < inner; in++) {
                        const int64_t base = o * len * inner + in;
                        double dot = 0;
                        for (int64_t k = 0; k < len; k++) dot += (double)dy[base + k * inner] * yv[base + k * inner];
                        for (int64_t k = 0; k < len; k++)
                            dx[base + k * inner] += (float)(yv[base + k * inner] * (dy[base + k * inner] - dot));
                    }
            }
            break;
        case CB_OP_CLIP:
            if (dx) {
                const int64_t k = (int64_t)node_floats(n, batch);
                for (int64_t j = 0; j < k; j++)
                    if (x[j] > n->lo && x[j] < n->hi) dx[j] += dy[j];
            }
            break;
        case CB_OP_GLOBAL_AVGPOOL:
            if (dx) {
                const cb_node *xn = &g->nodes[n->in[0]];
                const int64_t planes = (int64_t)batch * xn->dims[0], p = xn->dims[1] * xn->dims[2];
                for (int64_t c = 0; c < planes; c++)
                    for (int64_t j = 0; j < p; j++) dx[c * p + j] += dy[c] / (float)p;
            }
            break;
        case CB_OP_LAST_STEP:
            if (dx) {
                const int64_t t = g->nodes[n->in[0]].dims[0], h = n->dims[0];
                for (int s = 0; s < batch; s++)
                    for (int64_t j = 0; j < h; j++) dx[((size_t)s * t + t - 1) * h + j] += dy[(size_t)s * h + j];
            }
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
        if (ex->prof_bwd) ex->prof_bwd[i] += cb_now() - t0;
    }
    return CB_OK;
}

cb_status cb_exec_backward(cb_exec *ex, int batch) { return cb_exec_backward_from(ex, ex->g->loss, NULL, batch); }

cb_status cb_exec_backward_from(cb_exec *ex, int node, const float *dy, int batch)
{
    const int was = hold_threads(ex);
    cb_status st = backward_from(ex, node, dy, batch);
    release_threads(was);
    return st;
}
