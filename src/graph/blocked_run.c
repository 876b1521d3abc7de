/* The runs of the blocked-layout plan (blocked.c): a batch run whole on
 * the threads, or in lanes, one per thread, each running the whole graph
 * on its chunks of the batch. A run holds what it writes: primitives made
 * for one batch size, blocked buffers, workspaces. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "blocked_internal.h"

/* A run's primitives (kept: its buffers). */
void blk_run_clear(blk_run *r, int count)
{
    for (int i = 0; i < count; i++) {
        if (r->prim) cb_blk_prim_free(r->prim[i]);
        if (r->in_reorder) cb_blk_prim_free(r->in_reorder[i]);
        if (r->out_reorder) cb_blk_prim_free(r->out_reorder[i]);
        if (r->prim) r->prim[i] = NULL;
        if (r->in_reorder) r->in_reorder[i] = NULL;
        if (r->out_reorder) r->out_reorder[i] = NULL;
    }
    r->batch = 0;
}

void blk_run_free(blk_run *r, int count, int nslots)
{
    blk_run_clear(r, count);
    for (int s = 0; r->slot_buf && s < nslots; s++) free(r->slot_buf[s]);
    free(r->slot_buf), free(r->in_buf), free(r->own_ws);
    free(r->prim), free(r->in_reorder), free(r->out_reorder);
    cb_dnnl_ctx_free(r->dnnl);
    memset(r, 0, sizeof *r);
}

cb_status blk_run_init(blk_run *r, int count, int nslots, int threads)
{
    r->threads = threads;
    r->prim = calloc((size_t)count, sizeof *r->prim), r->in_reorder = calloc((size_t)count, sizeof *r->prim);
    r->out_reorder = calloc((size_t)count, sizeof *r->prim), r->slot_buf = calloc((size_t)nslots + 1, sizeof(float *));
    if (!r->prim || !r->in_reorder || !r->out_reorder || !r->slot_buf)
        return cb_fail(CB_ERR_NOMEM, "out of memory planning blocked layouts");
    return CB_OK;
}

/* A run's buffers and workspace for at least `batch` samples (grown, never
 * shrunk). */
static cb_status run_buffers(const cb_blk_plan *p, const cb_graph *g, blk_run *r, int batch)
{
    if (r->cap < batch) {
        r->cap = 0; /* until every buffer is there: a failure leaves none to trust */
        for (int s = 0; s < p->nslots; s++) {
            free(r->slot_buf[s]);
            if (!(r->slot_buf[s] = blk_aligned_floats(p->slot_floats[s] * (size_t)batch)))
                return cb_fail(CB_ERR_NOMEM, "out of memory for blocked buffers");
        }
        free(r->in_buf);
        r->in_buf = NULL;
        if (p->in_floats && !(r->in_buf = blk_aligned_floats(p->in_floats * (size_t)batch)))
            return cb_fail(CB_ERR_NOMEM, "out of memory for blocked buffers");
        r->cap = batch;
    }
    const size_t ws = blk_own_ws_floats(p, g, batch, r->threads);
    if (ws > r->own_ws_floats) {
        free(r->own_ws);
        if (!(r->own_ws = blk_aligned_floats(ws))) {
            r->own_ws_floats = 0;
            return cb_fail(CB_ERR_NOMEM, "out of memory for a convolution's workspace");
        }
        r->own_ws_floats = ws;
    }
    return CB_OK;
}

static float *buf(const cb_blk_plan *p, const blk_run *r, int v) { return r->slot_buf[p->slot[v]]; }

/* Batch normalisation k's scales and shifts from its parameters as they
 * are now, in the plain step's arithmetic. */
static const float *bn_coef(const cb_blk_plan *p, const cb_exec *ex, int k)
{
    const cb_node *n = &ex->g->nodes[k];
    cb_bn_infer_coef((int)n->dims[0], n->eps, ex->val[n->in[1]], ex->val[n->in[2]], ex->val[n->in[3]],
                     ex->val[n->in[4]], p->coef[k]);
    return p->coef[k];
}

/* Convolution i's weights (into fw) and bias with its batch normalisation
 * folded in: w[o] * scale[o], b[o] * scale[o] + shift[o] per output
 * channel o. */
static void fold_bn(cb_blk_plan *p, const cb_exec *ex, int i, float *fw)
{
    const cb_node *n = &ex->g->nodes[i];
    const float *coef = bn_coef(p, ex, p->bn_of[i]), *w = ex->val[n->in[1]], *b = n->n_in > 2 ? ex->val[n->in[2]] : NULL;
    const int oc = (int)n->dims[0];
    const size_t per = (size_t)cb_node_numel(&ex->g->nodes[n->in[1]]) / (size_t)oc;
#pragma omp parallel for schedule(static) if (per * (size_t)oc > 65536)
    for (int o = 0; o < oc; o++) {
        for (size_t k = 0; k < per; k++) fw[o * per + k] = w[o * per + k] * coef[o];
        p->fold_b[i][o] = b ? b[o] * coef[o] + coef[oc + o] : coef[oc + o];
    }
}

/* Convolution i's weights converted by `convert` (Winograd's transform, the
 * few-output product's packing) into own_w[i], a batch normalisation folded in
 * first (its bias into fold_b): once where the parameters are frozen
 * (*ready), else at every pass. */
static void own_weights(cb_blk_plan *p, const cb_exec *ex, int i, const cb_conv_shape *s, const float *w,
                        void (*convert)(const cb_conv_shape *, const float *, float *))
{
    if (ex->params_frozen && p->own_ready[i]) return;
    if (p->bn_of[i] >= 0) fold_bn(p, ex, i, p->fold_w);
    convert(s, p->bn_of[i] >= 0 ? p->fold_w : w, p->own_w[i]);
    p->own_ready[i] = 1;
}

/* The primitives of node i for this batch size, on the run's context. */
static cb_status make_prims(cb_blk_plan *p, cb_exec *ex, blk_run *r, int i, int batch)
{
    const cb_graph *g = ex->g;
    const cb_node *n = &g->nodes[i];
    cb_dnnl_ctx *ctx = r->dnnl ? r->dnnl : ex->dnnl;
    cb_status st = CB_OK;
    if (p->role[i] == R_CONV) {
        cb_conv_shape s = blk_conv_shape(p, g, i, batch);
        const cb_node *x = &g->nodes[blk_conv_src(p, g, i)];
        int src_blocked = p->blocked[blk_conv_src(p, g, i)];
        if (!src_blocked && x->dims[0] >= p->block) { /* fewer channels (an image): oneDNN reads them plain */
            st = cb_blk_reorder_create(ctx, batch, s.c, s.h, s.w, 0, &r->in_reorder[i]);
            src_blocked = 1;
        }
        if (st == CB_OK && !p->own[i])
            st = cb_blk_conv_create(ctx, &s, n->groups > 1 ? n->groups : 1, n->n_in > 2 || p->bn_of[i] >= 0,
                                    src_blocked, p->post[i], p->npost[i], &r->prim[i]);
    } else if (p->role[i] == R_POOL && !blk_own_pool(g, i)) {
        cb_conv_shape s = cb_node_conv_shape(g, n, batch);
        s.c = (int)n->dims[0];
        st = cb_blk_pool_create(ctx, &s, n->op == CB_OP_MAXPOOL2D, &r->prim[i]);
    }
    const int v = p->role[i] == R_CONV ? p->result[i] : i;
    if (st == CB_OK && p->role[i] != R_FUSED && p->blocked[v] && (p->exit[v] || p->captured[v])) {
        const cb_node *o = &g->nodes[v];
        st = cb_blk_reorder_create(ctx, batch, (int)o->dims[0], (int)o->dims[1], (int)o->dims[2], 1,
                                   &r->out_reorder[i]);
    }
    return st;
}

/* The run's primitives and buffers for `batch`. */
static cb_status remake(cb_blk_plan *p, cb_exec *ex, blk_run *r, int batch)
{
    blk_run_clear(r, p->count);
    cb_status st = run_buffers(p, ex->g, r, batch);
    for (int i = 0; i < p->count && st == CB_OK; i++)
        if (p->role[i] != R_NONE && p->role[i] != R_FUSED) st = make_prims(p, ex, r, i, batch);
    if (st == CB_OK) r->batch = batch;
    return st;
}

cb_status cb_blk_forward(cb_blk_plan *p, cb_exec *ex, int i, int b0, int batch, int lane, float *ws)
{
    if (p->role[i] == R_FUSED) return CB_OK;
    /* A lane runs what cb_blk_lanes_ready made for this chunk size, with the
     * weights and coefficients it derived: nothing shared is written here. */
    const int in_lane = lane >= 0;
    if (in_lane && (lane >= p->nlanes || p->lanes[lane].batch != batch))
        return cb_fail(CB_ERR_INVALID_ARG, "node '%s': lane %d was not made ready for %d samples", ex->g->nodes[i].name,
                       lane, batch);
    if (!in_lane && b0 != 0)
        return cb_fail(CB_ERR_INVALID_ARG, "node '%s': a whole batch starts at sample 0", ex->g->nodes[i].name);
    blk_run *r = in_lane ? &p->lanes[lane] : &p->whole;
    if (r->batch != batch) {
        cb_status st = remake(p, ex, r, batch);
        if (st != CB_OK) return st;
    }
    const cb_graph *g = ex->g;
    const cb_node *n = &g->nodes[i];
    const int v = p->role[i] == R_CONV ? p->result[i] : i;
    const int keep_w = in_lane || ex->params_frozen;
    cb_status st = CB_OK;
    switch (p->role[i]) {
    case R_CONV: {
        const int src = blk_conv_src(p, g, i);
        const float *x = p->blocked[src] ? buf(p, r, src) : cb_exec_slice(ex, src, b0);
        if (r->in_reorder[i]) {
            if ((st = cb_blk_reorder_run(r->in_reorder[i], x, r->in_buf))) return st;
            x = r->in_buf;
        }
        const float *w = ex->val[n->in[1]], *b = n->n_in > 2 ? ex->val[n->in[2]] : NULL;
        if (p->own[i]) { /* crossbind's own kernels, on weights converted for them */
            const own_kernel *o = &blk_own_kernels[p->own[i]];
            const cb_conv_shape s = cb_node_conv_shape(g, n, batch);
            const int threads = omp_get_max_threads() < r->threads ? omp_get_max_threads() : r->threads;
            if (p->bn_of[i] >= 0) b = p->fold_b[i];
            if (!in_lane) own_weights(p, ex, i, &s, w, o->weights);
            o->conv(&s, p->block, x, p->own_w[i], b, p->post[i], p->npost[i], buf(p, r, v), r->own_ws, threads);
            break;
        }
        if (p->bn_of[i] >= 0) { /* frozen parameters: folded once per primitive (the bias stays) */
            if (cb_blk_conv_reads_weights(r->prim[i], keep_w)) fold_bn(p, ex, i, p->fold_w);
            w = p->fold_w;
            b = p->fold_b[i];
        }
        st = cb_blk_conv_run(r->prim[i], x, w, b, buf(p, r, v), keep_w);
        break;
    }
    case R_POOL:
        if (blk_own_pool(g, i)) {
            const cb_node *x = &g->nodes[n->in[0]];
            cb_blk_maxpool2x2(buf(p, r, n->in[0]), buf(p, r, i), batch, (int)x->dims[0], (int)x->dims[1],
                              (int)x->dims[2]);
        } else {
            st = cb_blk_pool_run(r->prim[i], buf(p, r, n->in[0]), buf(p, r, i));
        }
        break;
    case R_BN:
        cb_blk_scale_shift(buf(p, r, n->in[0]), in_lane ? p->coef[i] : bn_coef(p, ex, i), buf(p, r, i), batch,
                           (int)n->dims[0], (int)(n->dims[1] * n->dims[2]));
        break;
    case R_ADD:
        cb_blk_add(buf(p, r, n->in[0]), buf(p, r, n->in[1]), buf(p, r, i), blk_numel(n) * (size_t)batch);
        break;
    case R_MUL:
        if (!blk_mul_gate(g, n)) {
            cb_blk_mul(buf(p, r, n->in[0]), buf(p, r, n->in[1]), buf(p, r, i), blk_numel(n) * (size_t)batch);
        } else {
            cb_blk_mul_gate(buf(p, r, n->in[0]), cb_exec_slice(ex, n->in[1], b0), buf(p, r, i), batch,
                            (int)n->dims[0], (int)(n->dims[1] * n->dims[2]));
        }
        break;
    case R_ACT: {
        /* The plain step over the whole blocked buffer, padded channels too
         * (activations map 0 to a finite value, which zero weights then
         * multiply): a copy of the node with the padded channel count. */
        cb_node whole = *n;
        whole.dims[0] = cb_blk_padded(n->dims[0]);
        const cb_step s = {.ex = ex, .g = g, .n = &whole, .i = i, .b0 = 0, .batch = batch, .ws = ws,
                           .fast = ex->kernels == CB_KERNELS_FAST ? CB_FAST_APPROX : CB_FAST_EXACT,
                           .y = buf(p, r, i), .x = buf(p, r, n->in[0])};
        st = cb_op_desc_of(n->op)->forward(&s);
        break;
    }
    case R_CONCAT: {
        const float *xs[CB_MAX_INPUTS];
        int64_t sizes[CB_MAX_INPUTS];
        for (int j = 0; j < n->n_in; j++) {
            xs[j] = buf(p, r, n->in[j]);
            sizes[j] = cb_node_numel(&g->nodes[n->in[j]]);
        }
        cb_blk_concat(xs, sizes, n->n_in, buf(p, r, i), batch);
        break;
    }
    case R_GAP: {
        const cb_node *x = &g->nodes[n->in[0]];
        cb_blk_global_avgpool(buf(p, r, n->in[0]), cb_exec_slice(ex, i, b0), batch, (int)x->dims[0],
                              (int)(x->dims[1] * x->dims[2]));
        return CB_OK;
    }
    default: return cb_fail(CB_ERR_INVALID_ARG, "node '%s' is not in the blocked plan", n->name);
    }
    if (st == CB_OK && r->out_reorder[i]) st = cb_blk_reorder_run(r->out_reorder[i], buf(p, r, v), cb_exec_slice(ex, v, b0));
    return st;
}

/* Parameters the steps outside the plan may read per chunk of a batch:
 * ResNet-50's and InceptionV3's classifiers (8 MiB) fit; VGG-16's (471
 * MiB, its first layer alone 392) would be read from memory again for
 * every few samples, so it runs whole batches. */
#define LANE_PLAIN_PARAM_BYTES (16u << 20)

int cb_blk_lanes_fit(const cb_blk_plan *p, const cb_graph *g)
{
    unsigned char *counted = calloc((size_t)g->count, 1);
    if (!counted) return 0;
    size_t bytes = 0;
    for (int j = 0; j < g->count; j++) {
        if (p->role[j] != R_NONE) continue;
        for (int k = 0; k < g->nodes[j].n_in; k++) {
            const int v = g->nodes[j].in[k];
            if (g->nodes[v].op != CB_OP_PARAM || counted[v]) continue;
            counted[v] = 1;
            bytes += (size_t)cb_node_numel(&g->nodes[v]) * sizeof(float);
        }
    }
    free(counted);
    return bytes <= LANE_PLAIN_PARAM_BYTES;
}

/* Lane-parallel inference: lanes whose chunks of the batch run side by side
 * on their own threads, each with single-threaded kernels, where a thread
 * that loses its core would otherwise hold up every layer of the whole
 * batch (ResNet-50 at batch 32 on a 2-core Intel Xeon with a busy loop on
 * one core: 0.72-0.78 -> 1.84-2.02 s a pass, threads meeting after every
 * layer). Made before the lanes run, on the calling thread: each lane's
 * primitives on a context of its own (single-threaded, own scratchpad),
 * the convolutions' weights reordered once into the first lane's and
 * shared where the layouts agree, the batch normalisations' coefficients
 * and crossbind's own kernels' weights derived for this pass. */
cb_status cb_blk_lanes_ready(cb_blk_plan *p, cb_exec *ex, int lanes, int chunk)
{
    if (lanes > p->nlanes) {
        blk_run *more = realloc(p->lanes, (size_t)lanes * sizeof *more);
        if (!more) return cb_fail(CB_ERR_NOMEM, "out of memory for inference lanes");
        p->lanes = more;
        for (int k = p->nlanes; k < lanes; k++) {
            memset(&p->lanes[k], 0, sizeof p->lanes[k]);
            p->nlanes = k + 1;
            cb_status st = blk_run_init(&p->lanes[k], p->count, p->nslots, 1);
            if (st == CB_OK) st = cb_dnnl_ctx_create_lane(&p->lanes[k].dnnl);
            if (st != CB_OK) return st;
        }
    }
    const int was = omp_get_max_threads();
    omp_set_num_threads(1); /* oneDNN plans each primitive for the threads it will run on */
    cb_status st = CB_OK;
    int made = 0;
    for (int k = 0; k < lanes && st == CB_OK; k++)
        if (p->lanes[k].batch != chunk) {
            st = remake(p, ex, &p->lanes[k], chunk);
            made = 1;
        }
    omp_set_num_threads(was);
    if (st != CB_OK) return st;
    /* Lanes not in use this pass (fewer threads now) may run on the first
     * lane's old weights: they are made again when next used. */
    for (int k = lanes; made && k < p->nlanes; k++) blk_run_clear(&p->lanes[k], p->count);
    const cb_graph *g = ex->g;
    const blk_run *first = &p->lanes[0];
    for (int i = 0; i < p->count && st == CB_OK; i++) {
        const cb_node *n = &g->nodes[i];
        if (p->role[i] == R_BN) bn_coef(p, ex, i);
        if (p->role[i] != R_CONV) continue;
        const float *w = ex->val[n->in[1]];
        if (p->own[i]) {
            const cb_conv_shape s = cb_node_conv_shape(g, n, chunk);
            own_weights(p, ex, i, &s, w, blk_own_kernels[p->own[i]].weights);
            continue;
        }
        for (int k = 1; made && k < lanes; k++) cb_blk_conv_share_weights(p->lanes[k].prim[i], first->prim[i]);
        int reads = 0;
        for (int k = 0; k < lanes; k++) reads |= cb_blk_conv_reads_weights(p->lanes[k].prim[i], ex->params_frozen);
        if (!reads) continue;
        if (p->bn_of[i] >= 0) fold_bn(p, ex, i, p->fold_w);
        for (int k = 0; k < lanes && st == CB_OK; k++) /* the first lane's first: the others may share it */
            st = cb_blk_conv_ready_weights(p->lanes[k].prim[i], p->bn_of[i] >= 0 ? p->fold_w : w, ex->params_frozen);
    }
    return st;
}
