/* The executor: memory plan, forward pass and reverse-mode backward pass.
 *
 * Plan: one arena holds the values, then the gradients, then what the
 * backward keeps, then the kernel workspace. Above the reference level the
 * gradients, and the values of inference whose batch runs whole, share
 * buffers by liveness (memplan.c); otherwise every activation has its own
 * region. Flatten is a view of its input. Parameters and their gradients
 * live in the graph.
 *
 * Inference executors (no gradients, fast kernels) split each batch across
 * the threads by samples: every thread runs the whole graph on its slice
 * with single-threaded kernels and its own workspace, so the threads meet
 * once per batch instead of once per op, and no kernel has to be split. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "../core/clock.h"
#include "crossbind/crossbind.h"
#include "../ops/ops.h"
#include "exec_internal.h"
#include "blocked.h"
#include "op.h"

void cb_exec_profile(cb_exec *ex, double *fwd_s, double *bwd_s)
{
    ex->prof_fwd = fwd_s;
    ex->prof_bwd = bwd_s;
}

cb_conv_shape cb_node_conv_shape(const cb_graph *g, const cb_node *n, int batch)
{
    const cb_node *x = &g->nodes[n->in[0]];
    cb_conv_shape s = {
        .n = batch, .c = (int)x->dims[0], .h = (int)x->dims[1], .w = (int)x->dims[2],
        .oc = (int)n->dims[0], .kh = n->kh, .kw = n->kw, .sh = n->sh, .sw = n->sw,
        .ph = n->ph, .pw = n->pw, .dh = n->dh, .dw = n->dw, .oh = (int)n->dims[1], .ow = (int)n->dims[2],
        .exclude_pad = n->exclude_pad};
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

static int is_act(cb_op op) { return (cb_op_desc_of(op)->flags & CB_OPF_ACT) != 0; }

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
        if (cb_blk_member(ex->blk, i)) continue;
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
        cb_conv_shape s = cb_node_conv_shape(g, c, 1);
        if (c->groups <= 1 && c->dh <= 1 && c->dw <= 1 && is_pool_2x2(p) && p->in[0] == i + 1 && uses_of(g, i + 1) == 1 && !a->pinned &&
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
        if (cb_op_desc_of(sop)->flags & (CB_OPF_LEAF | CB_OPF_VIEW)) continue;
        const int act_alone = is_act(c->op) && ex->pool_after[i] < 0; /* not done by a pooling's backward */
        if (c->op == CB_OP_BATCHNORM2D || c->op == CB_OP_CONV2D || act_alone) ex->stored_by[src] = i;
    }
}

/* Training at the levels with rewrites: a ReLU whose input, a batch
 * normalisation's or convolution's output, is read by nothing else writes
 * its result over that input's buffer, as torchvision's ReLU(inplace=True)
 * does. Neither of those reads its own output in its backward (the batch
 * normalisation its input and saved statistics, the convolution its input
 * and weights); the ReLU's backward reads the ReLU's output, which is what
 * the buffer then holds. VGG-16's values at batch 128: 434 -> 298 MiB.
 * The overwritten value is reported as not materialised. */
static void plan_inplace_relu(cb_exec *ex)
{
    const cb_graph *g = ex->g;
    for (int i = 0; i < g->count; i++) {
        const cb_node *n = &g->nodes[i];
        if (n->op != CB_OP_RELU || ex->fused[i]) continue;
        const int src = n->in[0];
        const cb_node *s = &g->nodes[src];
        if (s->op != CB_OP_BATCHNORM2D && s->op != CB_OP_CONV2D) continue;
        if (s->pinned || src == g->output || ex->fused[src] || uses_of(g, src) != 1) continue;
        ex->inplace[i] = src;
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
        cb_conv_shape s = cb_node_conv_shape(g, p, 1);
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
        const cb_node *n = &g->nodes[i];
        /* Grouped and dilated convolutions run the direct loops (conv_kernels.c). */
        if (n->op != CB_OP_CONV2D || n->groups > 1 || n->dh > 1 || n->dw > 1) continue;
        cb_conv_shape s = cb_node_conv_shape(g, &g->nodes[i], max_batch);
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
cb_status cb_exec_dnnl_plan(cb_exec *ex, int i, int pass, const cb_conv_shape *s, cb_act act, cb_dnnl_conv **out)
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
        fwd |= op == CB_OP_CONV2D && (ex->dwant[i] & CB_DNNL_FWD) && !cb_blk_member(ex->blk, i);
    }
    return fwd;
}

size_t cb_node_floats(const cb_node *n, int batch)
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
        const cb_op_desc *d = cb_op_desc_of(g->nodes[i].op);
        const size_t w = d->workspace ? d->workspace(ex, &g->nodes[i], batch, threads) : 0;
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
    if (ex->lanes) { /* a lane per thread, chunks of at most LANE_CHUNK_MAX; other batches whole */
        ex->ws_slice = workspace_floats(ex, max_batch < LANE_CHUNK_MAX ? max_batch : LANE_CHUNK_MAX, 1);
        ex->ws_floats = ex->ws_slice * (size_t)ex->slices;
        const size_t w = workspace_floats(ex, max_batch, threads);
        if (w > ex->ws_floats) ex->ws_floats = w;
        return;
    }
    const int chunk = cb_exec_chunk(ex, max_batch), chunks = (max_batch + chunk - 1) / chunk;
    ex->slices = cb_split_threads(threads, chunks);
    ex->ws_slice = workspace_floats(ex, max_batch < chunk ? max_batch : chunk, 1);
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

/* What the kernel rules (conv_kernels.c) see of convolution node i over n
 * samples. */
static cb_conv_ctx conv_ctx(const cb_exec *ex, int i, int n, int in_parallel)
{
    const cb_graph *g = ex->g;
    return (cb_conv_ctx){.s = cb_node_conv_shape(g, &g->nodes[i], n), .groups = g->nodes[i].groups,
                         .level = ex->kernels, .training = ex->with_grads,
                         .pool_fused = i + 2 < g->count && ex->fused[i + 1] && ex->fused[i + 2] == FUSED_POOL,
                         .dnnl = ex->dnnl ? ex->dwant[i] : 0, .in_parallel = in_parallel, .backend = ex->be->name};
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
            cb_conv_ctx c = conv_ctx(ex, i, n, 0);
            ex->kfwd[i][n] = (uint8_t)cb_conv_select_fwd(&c);
            c.in_parallel = 1;
            if (par_differs) ex->kpar[i][n] = (uint8_t)cb_conv_select_fwd(&c);
        }
        if (!ex->with_grads || !ex->needs_grad[i]) continue;
        if (!(ex->kdgrad[i] = calloc(cells, 1)) || !(ex->kwgrad[i] = calloc(cells, 1))) return CB_ERR_NOMEM;
        const int want_dx = ex->grad[nd->in[0]] != NULL;
        for (int n = 1; n <= ex->max_batch; n++) {
            const cb_conv_ctx c = conv_ctx(ex, i, n, 0);
            const cb_conv_bwd_choice k = cb_conv_select_bwd(&c, want_dx);
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
    ex->be = cb_backend_cpu();
    cb_status opened = ex->be->open(&ex->be_ctx);
    if (opened != CB_OK) {
        ex->be = NULL;
        cb_exec_free(ex);
        return opened;
    }
    ex->val = calloc((size_t)g->count, sizeof *ex->val);
    ex->own_val = calloc((size_t)g->count, sizeof *ex->own_val);
    ex->grad = calloc((size_t)g->count, sizeof *ex->grad);
    ex->needs_grad = calloc((size_t)g->count, 1);
    ex->fused = calloc((size_t)g->count, 1);
    ex->pool_after = malloc((size_t)g->count * sizeof *ex->pool_after);
    ex->stored_by = malloc((size_t)g->count * sizeof *ex->stored_by);
    ex->inplace = malloc((size_t)g->count * sizeof *ex->inplace);
    ex->aux = calloc((size_t)g->count, sizeof *ex->aux);
    ex->dwant = calloc((size_t)g->count, 1);
    cb_rng_seed(&ex->rng, 0);
    if (!ex->val || !ex->own_val || !ex->grad || !ex->needs_grad || !ex->fused || !ex->pool_after || !ex->stored_by || !ex->inplace ||
        !ex->aux || !ex->dwant) {
        cb_exec_free(ex);
        return cb_fail(CB_ERR_NOMEM, "out of memory creating an executor");
    }

    for (int i = 0; i < g->count; i++) ex->pool_after[i] = ex->stored_by[i] = ex->inplace[i] = -1;
    /* The rewrites, at the levels that have them (exec.h). */
    const int rewrites = kernels == CB_KERNELS_FAST || kernels == CB_KERNELS_FUSED;
    /* The blocked-layout rewrite first (blocked.c): the flag fusions below
     * leave its members alone. */
    if (rewrites && !with_grads && conv_heavy(g) && cb_dnnl_enabled()) {
        /* Folding a batch normalisation into the weights rounds otherwise: fastmath's alone. */
        cb_status st = cb_blk_plan_create(g, max_batch, kernels == CB_KERNELS_FAST, &ex->blk);
        if (st != CB_OK) {
            cb_exec_free(ex);
            return st;
        }
    }
    if (rewrites) plan_fusion(ex);
    if (rewrites && !with_grads) {
        cb_status st = cb_ptable_plan(ex);
        if (st != CB_OK) {
            cb_exec_free(ex);
            return st;
        }
    }
    if (rewrites && with_grads) plan_pool_fusion(ex);
    if (rewrites && with_grads) plan_stored_grads(ex);
    if (rewrites && with_grads) plan_inplace_relu(ex);
    /* Fast inference runs the batch in chunks of at most SLICE_SAMPLES
     * samples spread over the threads (chunks of 8 to 64 measured alike on
     * LeNet-5), each thread with its own workspace sized for one chunk.
     * Every other executor runs the whole batch with one workspace. */
    /* Where the blocked plan runs, chunks go to lanes (blocked.c) instead,
     * where the steps outside it read few parameters and some batch the
     * executor takes has a chunk for every thread. */
    ex->lanes = !with_grads && ex->blk && cb_get_threads() > 1 && max_batch >= LANE_CHUNK_MIN * cb_get_threads() &&
                cb_blk_lanes_fit(ex->blk, g);
    ex->slices = (!with_grads && kernels != CB_KERNELS_REFERENCE && (!conv_heavy(g) || ex->lanes)) ? cb_get_threads() : 0;
    for (int i = 0; i < g->count; i++) ex->recurrent |= g->nodes[i].op == CB_OP_LSTM || g->nodes[i].op == CB_OP_GRU;
    ex->big = cb_graph_forward_flops(g) > CONV_HEAVY_FLOPS;
    if (kernels != CB_KERNELS_REFERENCE) {
        cb_status st = plan_dnnl(ex, max_batch);
        if (st != CB_OK) {
            cb_exec_free(ex);
            return st;
        }
        ex->whole_dnnl = ex->slices && whole_batch_dnnl(ex); /* its batches of several chunks run whole */
        if (ex->lanes && ex->whole_dnnl) /* ... and so every batch: no lanes, values shared by liveness */
            ex->lanes = ex->slices = ex->whole_dnnl = 0;
        if (ex->blk && !ex->dnnl && (st = cb_dnnl_ctx_create(&ex->dnnl)) != CB_OK) {
            cb_exec_free(ex);
            return st;
        }
    }
    plan_workspace(ex, max_batch);
    /* Pass 1: sizes (as offsets from NULL) and the workspace high-water mark. */
    size_t vals = 0, grads = 0, auxs = 0;
    size_t *voff = calloc((size_t)g->count, sizeof *voff), *goff = calloc((size_t)g->count, sizeof *goff);
    size_t *aoff = calloc((size_t)g->count, sizeof *aoff);
    cb_status st = CB_OK;
    if (!voff || !goff || !aoff) {
        st = cb_fail(CB_ERR_NOMEM, "out of memory planning an executor");
        goto fail;
    }
    for (int i = 0; i < g->count; i++) {
        const cb_node *n = &g->nodes[i];
        if (n->op == CB_OP_PARAM) {
            ex->needs_grad[i] = 1;
            continue;
        }
        for (int k = 0; k < n->n_in; k++) ex->needs_grad[i] |= ex->needs_grad[n->in[k]];
        const cb_op_desc *d = cb_op_desc_of(n->op);
        if (d->flags & CB_OPF_VIEW) continue;
        if (ex->inplace[i] >= 0) {
            voff[i] = voff[ex->inplace[i]];
        } else {
            voff[i] = vals;
            vals += cb_node_floats(n, max_batch);
        }
        if (with_grads && ex->needs_grad[i]) {
            goff[i] = grads;
            grads += cb_node_floats(n, max_batch);
        }
        const size_t saved = d->saved ? d->saved(n, max_batch, with_grads) : 0;
        if (saved) {
            aoff[i] = auxs + 1; /* +1: 0 means none */
            auxs += saved;
        }
    }
    /* Above the reference level, gradients share buffers by liveness. */
    ex->grad_reuse = with_grads && kernels != CB_KERNELS_REFERENCE;
    if (with_grads && !(ex->gfirst = malloc((size_t)g->count * sizeof *ex->gfirst))) {
        st = cb_fail(CB_ERR_NOMEM, "out of memory planning an executor");
        goto fail;
    }
    ex->grad_unshared = grads;
    if (ex->grad_reuse && (st = cb_exec_plan_grads(ex, max_batch, goff, &grads)) != CB_OK) goto fail;
    /* Above the reference level, the values of inference whose batch runs
     * whole share buffers by liveness too. Not in sliced inference: its
     * threads run different nodes on their chunks at once, and one chunk's
     * rows of a later value overlap another's rows of an earlier one (in
     * lanes, only the values no step writes go without a buffer). */
    ex->val_unshared = vals;
    ex->val_reuse = !with_grads && kernels != CB_KERNELS_REFERENCE && (!ex->slices || ex->lanes);
    if (ex->val_reuse && (st = cb_exec_plan_values(ex, max_batch, !ex->lanes, voff, &vals)) != CB_OK) goto fail;
    ex->arena_floats = vals + grads + auxs + ex->ws_floats;
    ex->val_floats = vals, ex->grad_floats = grads, ex->aux_floats = auxs;
    ex->arena = ex->be->alloc(ex->be_ctx, ex->arena_floats * sizeof(float));
    if (!ex->arena) {
        st = cb_fail(CB_ERR_NOMEM, "out of memory: the executor needs %zu MiB",
                     (ex->arena_floats * sizeof(float)) >> 20);
        goto fail;
    }
    ex->ws = ex->arena + vals + grads + auxs;
    for (int i = 0; i < g->count; i++) {
        const cb_node *n = &g->nodes[i];
        if (n->op == CB_OP_PARAM) {
            ex->val[i] = g->params + n->param_offset;
            ex->grad[i] = g->grads + n->param_offset;
        } else if (cb_op_desc_of(n->op)->flags & CB_OPF_VIEW) {
            ex->val[i] = ex->val[n->in[0]];
            ex->grad[i] = ex->grad[n->in[0]];
        } else {
            ex->val[i] = voff[i] == CB_NO_BUFFER ? NULL : ex->arena + voff[i];
            if (with_grads && ex->needs_grad[i]) ex->grad[i] = ex->arena + vals + goff[i];
        }
        if (aoff[i]) ex->aux[i] = ex->arena + vals + grads + aoff[i] - 1;
    }
    memcpy(ex->own_val, ex->val, (size_t)g->count * sizeof *ex->val);
    if (plan_conv_kernels(ex) != CB_OK) {
        st = cb_fail(CB_ERR_NOMEM, "out of memory planning an executor's kernels");
        goto fail;
    }
    free(voff), free(goff), free(aoff);
    *out = ex;
    return CB_OK;
fail: /* the plan's scratch and everything made so far */
    free(voff), free(goff), free(aoff);
    cb_exec_free(ex);
    return st;
}

void cb_exec_free(cb_exec *ex)
{
    if (!ex) return;
    if (ex->be) {
        if (ex->arena) ex->be->release(ex->be_ctx, ex->arena, ex->arena_floats * sizeof(float));
        for (int i = 0; ex->kept && i < ex->g->count; i++)
            if (ex->kept[i])
                ex->be->release(ex->be_ctx, ex->kept[i], cb_node_floats(&ex->g->nodes[i], ex->max_batch) * sizeof(float));
        ex->be->close(ex->be_ctx);
    }
    free(ex->val);
    free(ex->own_val);
    free(ex->kept);
    free(ex->grad);
    free(ex->needs_grad);
    free(ex->fused);
    free(ex->pool_after);
    free(ex->stored_by);
    free(ex->inplace);
    free(ex->aux);
    free(ex->gfirst);
    if (ex->dplan)
        for (int i = 0; i < ex->g->count; i++) cb_dnnl_conv_free(ex->dplan[i]);
    free(ex->dplan);
    free(ex->dwant);
    if (ex->kpar != ex->kfwd) free_tables(ex->kpar, ex->g->count);
    free_tables(ex->kfwd, ex->g->count);
    free_tables(ex->kdgrad, ex->g->count);
    free_tables(ex->kwgrad, ex->g->count);
    cb_blk_plan_free(ex->blk);
    cb_ptable_free(ex);
    cb_dnnl_ctx_free(ex->dnnl);
    free(ex);
}

float *cb_exec_value(cb_exec *ex, int node) { return ex->val[node]; }

void cb_exec_freeze_params(cb_exec *ex) { ex->params_frozen = 1; }

/* Points the views after node `from` at what they view (again). */
static void follow_views(cb_exec *ex, int from)
{
    const cb_graph *g = ex->g;
    for (int i = from + 1; i < g->count; i++)
        if (cb_op_desc_of(g->nodes[i].op)->flags & CB_OPF_VIEW) ex->val[i] = ex->val[g->nodes[i].in[0]];
}

/* A captured value where values share buffers (cb_exec_plan_values) gets
 * a buffer of its own, so that a later value does not overwrite it before
 * the caller reads it: allocated here, outside the plan (whose text and
 * kernels stay as they were). */
static cb_status keep_value(cb_exec *ex, int i)
{
    const cb_graph *g = ex->g;
    const cb_node *n = &g->nodes[i];
    int by;
    const int own = ex->val[i] && (!ex->val_reuse || ex->lanes || cb_exec_value_whole_pass(g, i));
    if (own || !cb_exec_materialised(ex, i, &by) || (ex->kept && ex->kept[i]))
        return CB_OK; /* its buffer is its own over the pass already, or nothing writes it */
    if (!ex->kept && !(ex->kept = calloc((size_t)g->count, sizeof *ex->kept)))
        return cb_fail(CB_ERR_NOMEM, "out of memory capturing '%s'", n->name);
    const size_t floats = cb_node_floats(n, ex->max_batch);
    if (!(ex->kept[i] = ex->be->alloc(ex->be_ctx, floats * sizeof(float))))
        return cb_fail(CB_ERR_NOMEM, "out of memory capturing '%s' (%zu MiB)", n->name, (floats * sizeof(float)) >> 20);
    ex->kept_floats += floats;
    ex->val[i] = ex->own_val[i] = ex->kept[i];
    follow_views(ex, i);
    return CB_OK;
}

cb_status cb_exec_capture(cb_exec *ex, int node)
{
    if (node < 0 || node >= ex->g->count)
        return cb_fail(CB_ERR_INVALID_ARG, "node %d is not in the graph (%d nodes)", node, ex->g->count);
    while (cb_op_desc_of(ex->g->nodes[node].op)->flags & CB_OPF_VIEW) node = ex->g->nodes[node].in[0];
    cb_blk_capture(ex->blk, node);
    return keep_value(ex, node);
}

void cb_exec_seed(cb_exec *ex, uint64_t seed) { cb_rng_seed(&ex->rng, seed); }

cb_status cb_exec_bind(cb_exec *ex, int node, float *data)
{
    cb_graph *g = ex->g;
    if (node < 0 || node >= g->count || g->nodes[node].op != CB_OP_INPUT)
        return cb_fail(CB_ERR_INVALID_ARG, "only input nodes can be bound to caller memory");
    if (ex->with_grads && ex->grad[node])
        return cb_fail(CB_ERR_INVALID_ARG, "input '%s' needs a gradient: it cannot be bound", g->nodes[node].name);
    ex->val[node] = data ? data : ex->own_val[node];
    follow_views(ex, node);
    return CB_OK;
}
float *cb_exec_grad(cb_exec *ex, int node) { return ex->grad[node]; }

/* Where samples [first, first + count) of a node's value are, after the
 * checks a caller's copy needs; NULL with the reason otherwise. */
static float *value_span(const cb_exec *ex, int node, int first, int count, size_t *floats)
{
    if (node < 0 || node >= ex->g->count) {
        cb_fail(CB_ERR_INVALID_ARG, "node %d is not in the graph", node);
        return NULL;
    }
    const cb_node *n = &ex->g->nodes[node];
    const int batched = n->batched && n->op != CB_OP_PARAM;
    if (first < 0 || count < 0 || (batched && first + count > ex->max_batch) || (!batched && (first || count != 1))) {
        cb_fail(CB_ERR_INVALID_ARG, "node '%s': samples [%d, %d) outside the planned [0, %d)", n->name, first,
                first + count, batched ? ex->max_batch : 1);
        return NULL;
    }
    if (!ex->val[node]) {
        cb_fail(CB_ERR_INVALID_ARG,
                "node '%s': no pass of this plan writes its value (fused away, or kept in another layout); capture "
                "it before the pass",
                n->name);
        return NULL;
    }
    *floats = (size_t)count * (size_t)cb_node_numel(n);
    return cb_exec_slice(ex, node, first);
}

cb_status cb_exec_read(const cb_exec *ex, int node, int first, int count, float *dst)
{
    size_t floats;
    const float *src = value_span(ex, node, first, count, &floats);
    if (!src) return CB_ERR_INVALID_ARG;
    ex->be->sync(ex->be_ctx);
    ex->be->copy_out(ex->be_ctx, dst, src, floats * sizeof(float));
    return CB_OK;
}

cb_status cb_exec_write(cb_exec *ex, int node, int first, int count, const float *src)
{
    size_t floats;
    float *dst = value_span(ex, node, first, count, &floats);
    if (!dst) return CB_ERR_INVALID_ARG;
    ex->be->copy_in(ex->be_ctx, dst, src, floats * sizeof(float));
    return CB_OK;
}
size_t cb_exec_bytes(const cb_exec *ex)
{
    return (ex->arena_floats + ex->ptable_floats + ex->kept_floats) * sizeof(float) + cb_exec_blk_bytes(ex);
}

double cb_exec_forward_flops_done(const cb_exec *ex)
{
    double f = 0;
    for (int i = 0; i < ex->g->count; i++) {
        const double w = cb_blk_flops_done(ex->blk, ex->g, i);
        f += w > 0 ? w : cb_node_forward_flops_done(ex->g, i) - cb_ptable_flops_saved(ex, i);
    }
    return f;
}
float cb_exec_loss(const cb_exec *ex) { return ex->val[ex->g->loss][0]; }

static int is_loss(cb_op op) { return (cb_op_desc_of(op)->flags & CB_OPF_LOSS) != 0; }

/* A batched node's value for the slice starting at sample b0. */
float *cb_exec_slice(const cb_exec *ex, int node, int b0)
{
    const cb_node *n = &ex->g->nodes[node];
    if (!ex->val[node]) return NULL; /* no buffer: nothing writes it (cb_exec_plan_values) */
    return ex->val[node] + (n->batched ? (size_t)b0 * (size_t)cb_node_numel(n) : 0);
}

/* Node i's forward step over samples [b0, b0 + batch) with workspace ws. */
static cb_status forward_step(cb_exec *ex, int i, int b0, int batch, float *ws)
{
    const cb_node *n = &ex->g->nodes[i];
    const cb_op_desc *d = cb_op_desc_of(n->op);
    if (!d) return cb_fail(CB_ERR_UNSUPPORTED, "node '%s': unknown op", n->name);
    const cb_step st = {.ex = ex, .g = ex->g, .n = n, .i = i, .b0 = b0, .batch = batch, .ws = ws,
                        .fast = fast_arg(ex), .y = cb_exec_slice(ex, i, b0),
                        .x = n->n_in ? cb_exec_slice(ex, n->in[0], b0) : NULL};
    return d->forward(&st);
}

/* Forward over samples [b0, b0 + batch) with workspace ws, the blocked
 * plan's steps in lane `lane` (-1: a whole batch); the batch-mean losses
 * need the whole batch, so `losses` says whether to run them. */
static cb_status forward_range(cb_exec *ex, int b0, int batch, float *ws, int losses, int lane)
{
    const cb_graph *g = ex->g;
    for (int i = 0; i < g->count; i++) {
        if ((is_loss(g->nodes[i].op) && !losses) || ex->fused[i]) continue;
        /* Per-node times only where one thread runs the graph (not in the
         * slices of sliced inference, which run concurrently). */
        const int timed = ex->prof_fwd && !omp_in_parallel();
        const double t0 = timed ? cb_now() : 0;
        cb_status st = cb_blk_member(ex->blk, i) ? cb_blk_forward(ex->blk, ex, i, b0, batch, lane, ws)
                                                 : forward_step(ex, i, b0, batch, ws);
        if (st != CB_OK) return st;
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

cb_status cb_exec_precompute(cb_exec *ex)
{
    if (!ex->params_frozen) return cb_fail(CB_ERR_INVALID_ARG, "cb_exec_precompute: the parameters are not frozen");
    const int was = hold_threads(ex);
    cb_ptable_make_all(ex);
    release_threads(was);
    return CB_OK;
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
    const int chunk = cb_exec_chunk(ex, batch), chunks = (batch + chunk - 1) / chunk;
    cb_ptable_refresh(ex, batch); /* before any slice reads a table */
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
        cb_status st = forward_range(ex, 0, batch, ex->ws, 1, -1);
        omp_set_num_threads(was);
        return st;
    }
    if (mode == EXEC_SLICED) {
        cb_status failed = ex->lanes ? cb_blk_lanes_ready(ex->blk, ex, threads, chunk) : CB_OK;
        if (failed != CB_OK) return failed;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
        for (int c = 0; c < chunks; c++) {
            /* The slice's kernels single-threaded (its workspace is sized
             * for one), even where nested parallel regions are enabled. */
            omp_set_num_threads(1);
            int b0 = c * chunk, b1 = b0 + chunk < batch ? b0 + chunk : batch;
            const int t = omp_get_thread_num();
            cb_status st = forward_range(ex, b0, b1 - b0, ex->ws + (size_t)t * ex->ws_slice, 0, ex->lanes ? t : -1);
            if (st != CB_OK) {
#pragma omp critical
                failed = st;
            }
        }
        if (failed != CB_OK) return failed;
        for (int i = 0; i < ex->g->count; i++) /* the batch-mean losses, over the whole batch */
            if (is_loss(ex->g->nodes[i].op)) {
                cb_status s = forward_step(ex, i, 0, batch, ex->ws);
                if (s != CB_OK) return s;
            }
        return CB_OK;
    }
    return forward_range(ex, 0, batch, ex->ws, 1, -1);
}

/* Lane-parallel inference's chunk at this batch size (exec_internal.h), 0
 * where none fits: that batch runs whole. */
static int lane_chunk(const cb_exec *ex, int batch)
{
    for (int c = LANE_CHUNK_MIN; c <= LANE_CHUNK_MAX; c++)
        if (batch % c == 0 && batch / c >= ex->slices) return c;
    return 0;
}

/* Chunks of SLICE_SAMPLES (in lanes, lane_chunk's); with recurrent layers, one chunk per planned
 * thread where that is larger: each chunk's per-step products pack the
 * recurrent weights once (single-threaded SGEMM), so fewer, larger chunks
 * pack them less often. At batch 256 on 2 threads (2-core AMD EPYC):
 * LSTM inference 3.19 -> 3.08 s per 512 samples, GRU 2.40 -> 2.32 s,
 * reset-before GRU 2.43 -> 2.35 s. Batches up to SLICE_SAMPLES per thread
 * are chunked as before. */
int cb_exec_chunk(const cb_exec *ex, int batch)
{
    if (ex->lanes) {
        const int c = lane_chunk(ex, batch);
        return c ? c : batch;
    }
    if (!ex->recurrent || ex->kthreads < 1) return SLICE_SAMPLES;
    const int per_thread = (batch + ex->kthreads - 1) / ex->kthreads;
    return per_thread > SLICE_SAMPLES ? per_thread : SLICE_SAMPLES;
}

/* A single sample of a large model (the recurrent ones: 0.6-1.3 GFLOP)
 * runs through the threaded kernels: sliced, it would use one thread,
 * whose cache cannot hold the whole recurrent weight matrix either (LSTM
 * batch-1 latency 151 ms against ONNX Runtime's 20 ms). */
exec_mode cb_exec_mode(const cb_exec *ex, int batch, int now, int *threads)
{
    if (ex->lanes) { /* lanes where the batch splits evenly for them, else the whole batch */
        *threads = ex->slices < now ? ex->slices : now;
        if (*threads > 1 && lane_chunk(ex, batch)) return EXEC_SLICED;
        *threads = now;
        return EXEC_WHOLE;
    }
    const int chunk = cb_exec_chunk(ex, batch), chunks = (batch + chunk - 1) / chunk;
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

size_t cb_exec_blk_bytes(const cb_exec *ex)
{
    if (!ex->blk) return 0;
    int whole = 0, chunk = 0, threads;
    for (int n = 1; n <= ex->max_batch; n++) {
        if (cb_exec_mode(ex, n, ex->kthreads, &threads) != EXEC_SLICED) whole = n;
        else if (cb_exec_chunk(ex, n) > chunk) chunk = cb_exec_chunk(ex, n);
    }
    return cb_blk_bytes(ex->blk, ex->g, whole, chunk ? ex->slices : 0, chunk);
}

/* Whether node i is an activation whose backward its max pooling does, in
 * a backward pass from `top` (which must include the pooling). */
int cb_exec_pooled_act(const cb_exec *ex, int i, int top)
{
    return ex->pool_after[i] >= 0 && ex->pool_after[i] <= top;
}

/* Whether node i's backward stores its first input's whole gradient
 * (plan_stored_grads) rather than adding to it. */
int cb_exec_stores_grad(const cb_exec *ex, int i)
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
    /* Gradients accumulate, so every buffer starts at zero: all at once, or
     * each when its life begins where buffers are shared. */
    memset(g->grads, 0, g->n_params * sizeof(float));
    if (ex->grad_reuse) cb_exec_clear_grads_before(ex, top, batch);
    else for (int i = 0; i < g->count; i++)
        if (ex->grad[i] && g->nodes[i].op != CB_OP_PARAM && !(cb_op_desc_of(g->nodes[i].op)->flags & CB_OPF_VIEW) &&
            !cb_exec_pooled_act(ex, i, top) && !(ex->stored_by[i] >= 0 && ex->stored_by[i] <= top))
            ex->be->zero(ex->be_ctx, ex->grad[i], cb_node_floats(&g->nodes[i], batch) * sizeof(float));
    const float one = 1.0f;
    if (seed) ex->be->copy_in(ex->be_ctx, ex->grad[top], seed, cb_node_floats(&g->nodes[top], batch) * sizeof(float));
    else ex->be->copy_in(ex->be_ctx, ex->grad[top], &one, sizeof one);

    for (int i = top; i >= 0; i--) {
        const cb_node *n = &g->nodes[i];
        if (!ex->needs_grad[i] || cb_exec_pooled_act(ex, i, top)) continue;
        if (ex->grad_reuse) cb_exec_clear_grads_at(ex, i, top, batch);
        const cb_op_desc *d = cb_op_desc_of(n->op);
        if (!d) return cb_fail(CB_ERR_UNSUPPORTED, "node '%s': unknown op", n->name);
        if (!d->backward) continue; /* leaves: parameters keep their gradients */
        const double t0 = ex->prof_bwd ? cb_now() : 0;
        const cb_step st = {.ex = ex, .g = g, .n = n, .i = i, .b0 = 0, .batch = batch, .ws = ex->ws, .fast = fast,
                            .y = ex->val[i], .x = n->n_in ? ex->val[n->in[0]] : NULL, .top = top,
                            .dy = ex->grad[i], .dx = n->n_in ? ex->grad[n->in[0]] : NULL};
        cb_status rc = d->backward(&st);
        if (rc != CB_OK) return rc;
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
