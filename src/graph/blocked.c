/* The blocked-layout rewrite of inference: a named pass over the graph,
 * made once when an inference executor is created at the fused or
 * fastmath level where oneDNN is built in.
 *
 * It finds the nodes that oneDNN primitives (and a few loops of crossbind's
 * own) can run on channel-blocked values: convolutions of every kind, max
 * and average pooling, residual Add, activations, channel Concat, inference
 * batch normalisation, and the global average pooling that leaves the
 * blocked world. Their values live in
 * blocked buffers shared by liveness; a value is reordered to the plain
 * NCHW buffer the rest of the engine reads (a copy-out step) only where a
 * node outside reads it, where it is the graph's output or pinned, or where
 * a caller asked to capture it. At fastmath a convolution also takes the
 * inference batch normalisation right after it into its weights and bias
 * (scaled per output channel, as ONNX Runtime's and PyTorch's conv-BN
 * folding do: the rounding differs from normalising the sums, so at fused
 * it runs on its own, blocked, in the plain step's arithmetic). A
 * convolution computes as oneDNN post-ops the ReLU or Clip after it and a
 * residual Add whose other operand dies there (the sum is accumulated in
 * that operand's buffer): those nodes are fused nodes, not materialised.
 *
 * Why the batch normalisation is folded at fastmath rather than computed
 * exactly as a post-op at every level: oneDNN 2.6's
 * per-channel binary post-ops made VGG-16's convolutions at batch 128 up to
 * 1.8x slower (2-core AMD EPYC, AVX2: features.7 54 -> 98 ms per 256
 * samples), while folding costs one pass over the weights, once where the
 * caller froze them.
 *
 * Why: MobileNetV2 at batch 1 spent more time reordering each
 * convolution's input and output than convolving (dnnl_blocked.c).
 *
 * Which nodes join (a fixed rule, printed by the plan): convolutions in
 * graphs of over CONV_HEAVY_FLOPS per sample (grouped ones only with a
 * multiple of the block size of channels per group, or depthwise, each
 * not reading a plain value of fewer channels than the block; an
 * ungrouped one with any channel count, its
 * values padded to the block: dnnl_blocked.c), unless the plain path runs it as a matrix product at the plan's
 * largest batch, where it does not use oneDNN either (VGG-16's 2x2 layers
 * at batch 128, dense kernel: 15 ms per 256 samples against oneDNN's 40); a node whose activation inputs are all blocked
 * (a batch normalisation or Concat only where no channel is padded). A
 * convolution whose result no member reads stays outside (it would only add
 * reorders). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "blocked.h"
#include "op.h"
#include "slots.h"

enum { R_NONE = 0, R_CONV, R_POOL, R_ADD, R_ACT, R_CONCAT, R_GAP, R_BN, R_MUL, R_FUSED };
enum { MAX_POST = 4 };

/* What one run of the plan writes, made for one batch size: its
 * primitives, blocked buffers and workspaces. A whole batch has one, on
 * the executor's oneDNN context and the threads; in lane-parallel
 * inference each thread has one (a lane) for its chunks of the batch, on
 * a context of its own, single-threaded. */
typedef struct blk_run {
    int batch;              /* the batch size the primitives are made for (0: none yet) */
    int cap;                /* the samples its buffers hold */
    int threads;            /* the threads its kernels run on */
    cb_dnnl_ctx *dnnl;      /* a lane's own context, or NULL: the executor's */
    cb_blk_prim **prim, **in_reorder, **out_reorder;
    float **slot_buf;
    float *in_buf;
    float *own_ws;          /* crossbind's own convolutions' workspace (the largest one's) */
    size_t own_ws_floats;
} blk_run;

struct cb_blk_plan {
    int count, block;
    unsigned char *role;    /* R_* per node */
    unsigned char *blocked; /* the value lives in a blocked buffer */
    unsigned char *exit;    /* ... and is copied out to its plain buffer after its step (a reader outside) */
    unsigned char *captured; /* ... copied out too because a caller asked (cb_blk_capture; not in the plan) */
    int *fused_into;        /* R_FUSED: the convolution computing it; else -1 */
    int *result;            /* convolution: the node whose value holds its group's result */
    int *sum_with;          /* convolution: the Add's other operand whose buffer it accumulates into, or -1 */
    int *bn_of;             /* convolution: the batch normalisation folded into its weights and bias, or -1 */
    float **coef;           /* batch normalisation: its per-channel scales then shifts, made at each pass */
    float **fold_b;         /* convolution with bn_of: its folded bias */
    float *fold_w;          /* the folded weights of the convolution being reordered (the largest one's size) */
    unsigned char *own;     /* convolution run by one of crossbind's own kernels (OWN_*), else OWN_NONE */
    float **own_w;          /* ... its weights converted for that kernel (a batch normalisation folded in first) */
    unsigned char *own_ready; /* ... made from the weights as they are (kept where the caller froze them) */
    int threads;            /* the threads a whole batch runs on */
    int max_batch;
    int *npost;
    cb_blk_post (*post)[MAX_POST];
    int *slot;              /* blocked value: its buffer */
    int nslots;
    size_t *slot_floats;    /* per sample */
    size_t in_floats;       /* per sample: a plain input reordered for a convolution (the largest one) */
    blk_run whole;          /* a batch run whole, on the threads */
    blk_run *lanes;         /* lane-parallel inference: one per thread (cb_blk_lanes_ready) */
    int nlanes;
};

static int uses(const cb_graph *g, int v)
{
    int u = 0;
    for (int k = 0; k < g->count; k++)
        for (int j = 0; j < g->nodes[k].n_in; j++) u += g->nodes[k].in[j] == v;
    return u;
}

static int image_like(const cb_node *n) { return n->batched && n->ndim == 3; }

/* Whether a blocked value of node n carries padded channels. */
static int padded(const cb_node *n, int block) { return n->dims[0] % block != 0; }

/* The floats per sample of node n's blocked value, padded channels included. */
static size_t blocked_numel(const cb_node *n) { return (size_t)(cb_blk_padded(n->dims[0]) * n->dims[1] * n->dims[2]); }

static int observable(const cb_graph *g, int v) { return g->nodes[v].pinned || v == g->output; }

static int conv_joins(const cb_graph *g, const cb_node *n, int block, int max_batch)
{
    if (!image_like(n)) return 0;
    const cb_conv_shape at_most = cb_node_conv_shape(g, n, max_batch);
    if (n->groups <= 1 && at_most.dh <= 1 && at_most.dw <= 1 && cb_conv2d_matrix_product(&at_most))
        return 0; /* the plain path's matrix product, as for oneDNN (cb_dnnl_conv_use) */
    const cb_node *x = &g->nodes[n->in[0]];
    if (!x->batched || x->ndim != 3) return 0;
    const int groups = n->groups > 1 ? n->groups : 1, c = (int)x->dims[0], oc = (int)n->dims[0];
    if (groups == 1) return 1; /* channels padded to the block where they are not a multiple of it */
    if (groups == c && groups == oc) return 1; /* depthwise: so are its groups (MobileNetV3's 72 and 120) */
    if (c % block || oc % block) return 0;
    return (c / groups) % block == 0 && (oc / groups) % block == 0;
}

/* Average pooling that counts padding joins only without windows running
 * past the far padding (PyTorch's ceil_mode), which oneDNN counts otherwise. */
static int pool_joins(const cb_graph *g, const cb_node *n)
{
    if (n->op == CB_OP_MAXPOOL2D || n->exclude_pad) return 1;
    cb_conv_shape s = cb_node_conv_shape(g, n, 1);
    return (s.oh - 1) * s.sh + s.kh - s.h - s.ph == s.ph && (s.ow - 1) * s.sw + s.kw - s.w - s.pw == s.pw;
}

/* Max pooling that crossbind's own blocked loop runs (oneDNN's the others). */
static int own_pool(const cb_graph *g, int i)
{
    const cb_node *n = &g->nodes[i];
    if (n->op != CB_OP_MAXPOOL2D) return 0;
    const cb_conv_shape s = cb_node_conv_shape(g, n, 1);
    return s.kh == 2 && s.kw == 2 && s.sh == 2 && s.sw == 2 && s.ph == 0 && s.pw == 0;
}

/* Elementwise ops of one input that run on a blocked buffer as on a plain
 * one (R_ACT): the activations, Clip, and MobileNetV3's hard sigmoid and
 * hard swish. */
static int is_unary_act(cb_op op)
{
    return (cb_op_desc_of(op)->flags & CB_OPF_ACT) || op == CB_OP_CLIP || op == CB_OP_HARDSIGMOID ||
           op == CB_OP_HARDSWISH;
}

/* A Mul's second operand is a channel gate ([C,1,1]) rather than a tensor of
 * the first's shape. */
static int mul_gate(const cb_graph *g, const cb_node *n)
{
    return cb_node_numel(&g->nodes[n->in[1]]) != cb_node_numel(n);
}

/* The role node i can take given which values are blocked so far. */
static int role_of(const cb_graph *g, const cb_node *n, const unsigned char *blocked, int block, int max_batch)
{
    switch (n->op) {
    /* A grouped convolution whose plain input has fewer channels than the
     * block, which oneDNN would be given as it is (the plan's "input
     * plain"), stays plain: oneDNN has no fast grouped kernel for a plain
     * source (Keras' in-model Rescaling of the 3-channel image, a depthwise
     * 1x1: its reference kernel took 3.7 ms of MobileNetV3-small's 4.9 at
     * batch 1). */
    case CB_OP_CONV2D:
        return conv_joins(g, n, block, max_batch) &&
               (n->groups <= 1 || blocked[n->in[0]] || g->nodes[n->in[0]].dims[0] >= block) ? R_CONV : R_NONE;
    case CB_OP_MAXPOOL2D:
    case CB_OP_AVGPOOL2D: return blocked[n->in[0]] && pool_joins(g, n) ? R_POOL : R_NONE;
    case CB_OP_GLOBAL_AVGPOOL: return blocked[n->in[0]] ? R_GAP : R_NONE;
    case CB_OP_BATCHNORM2D: return blocked[n->in[0]] && !padded(n, block) ? R_BN : R_NONE;
    case CB_OP_ADD: {
        const cb_node *a = &g->nodes[n->in[0]], *b = &g->nodes[n->in[1]];
        return blocked[n->in[0]] && blocked[n->in[1]] && a->dims[0] == b->dims[0] && a->dims[1] == b->dims[1] &&
                       a->dims[2] == b->dims[2]
                   ? R_ADD
                   : R_NONE;
    }
    case CB_OP_MUL: /* of one shape, both blocked; or by a plain gate (a 1x1 convolution's on a 1x1 plane) */
        if (!image_like(n) || !blocked[n->in[0]]) return R_NONE;
        return mul_gate(g, n) != blocked[n->in[1]] ? R_MUL : R_NONE;
    case CB_OP_CONCAT: /* a padded input's zeros would land between channels */
        for (int j = 0; j < n->n_in; j++)
            if (!blocked[n->in[j]] || padded(&g->nodes[n->in[j]], block)) return R_NONE;
        return R_CONCAT;
    default: return is_unary_act(n->op) && blocked[n->in[0]] ? R_ACT : R_NONE;
    }
}

/* Roles to a fixed point: a convolution that reads no blocked value and
 * none of whose readers joins leaves for good; its readers may then leave. */
static void choose_members(cb_blk_plan *p, const cb_graph *g, unsigned char *dropped)
{
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < g->count; i++) {
            const int r = dropped[i] ? R_NONE : role_of(g, &g->nodes[i], p->blocked, p->block, p->max_batch);
            const unsigned char b = r != R_NONE && r != R_GAP;
            if (r != p->role[i] || b != p->blocked[i]) changed = 1;
            p->role[i] = (unsigned char)r;
            p->blocked[i] = b;
        }
        for (int i = 0; i < g->count; i++) {
            if (p->role[i] != R_CONV || p->blocked[g->nodes[i].in[0]]) continue;
            int read = 0;
            for (int k = i + 1; k < g->count && !read; k++)
                for (int j = 0; j < g->nodes[k].n_in; j++) read |= g->nodes[k].in[j] == i && p->role[k] != R_NONE;
            if (!read) {
                dropped[i] = 1;
                changed = 1;
            }
        }
    }
}

/* Post-ops: node k (an activation, Add or batch normalisation) whose
 * operand is a convolution group's result used by k alone becomes part of
 * that convolution. A batch normalisation joins only directly after the
 * convolution (before any post-op), and only where the level allows its
 * other rounding (fold_bn, fastmath): it is folded into the weights. */
static void fuse(cb_blk_plan *p, const cb_graph *g, int fold_bn)
{
    for (int k = 0; k < g->count; k++) {
        const cb_node *n = &g->nodes[k];
        if (p->role[k] != R_ACT && p->role[k] != R_ADD && p->role[k] != R_BN) continue;
        for (int side = 0; side < (p->role[k] == R_ADD ? 2 : 1); side++) {
            const int v = n->in[side], conv = p->role[v] == R_CONV ? v : p->role[v] == R_FUSED ? p->fused_into[v] : -1;
            if (conv < 0 || p->result[conv] != v || uses(g, v) != 1 || observable(g, v) ||
                p->npost[conv] == MAX_POST)
                continue;
            cb_blk_post post = {0};
            if (p->role[k] == R_BN) {
                if (!fold_bn || v != conv || p->npost[conv]) break;
                p->bn_of[conv] = k;
                p->role[k] = R_FUSED;
                p->fused_into[k] = conv;
                p->result[conv] = k;
                break;
            }
            if (p->role[k] == R_ACT) {
                if (n->op == CB_OP_RELU) post.kind = CB_POST_RELU;
                else if (n->op == CB_OP_CLIP) post = (cb_blk_post){CB_POST_CLIP, n->lo, n->hi};
                else break; /* tanh and logistic run on their own, with the level's math */
            } else {
                /* The other operand must be final before the convolution
                 * runs and read by nothing after it: its buffer takes the sum. */
                const int o = n->in[1 - side];
                int ok = o < conv && p->sum_with[conv] < 0 && !observable(g, o) && g->nodes[o].op != CB_OP_INPUT &&
                         o != g->nodes[conv].in[0]; /* the convolution's own input cannot take its output */
                for (int r = conv + 1; r < g->count && ok; r++) /* k (after conv) must be o's last reader */
                    for (int j = 0; j < g->nodes[r].n_in; j++)
                        if (g->nodes[r].in[j] == o && r != k) ok = 0;
                if (!ok) continue;
                post.kind = CB_POST_SUM;
                p->sum_with[conv] = o;
            }
            p->post[conv][p->npost[conv]++] = post;
            p->role[v] = v == conv ? R_CONV : R_FUSED;
            p->role[k] = R_FUSED;
            p->fused_into[k] = conv;
            p->result[conv] = k;
            break;
        }
    }
}

/* Blocked buffers by liveness (slots.c): a value's buffer is free again
 * after its last blocked reader; a convolution group accumulating into an
 * operand takes that operand's buffer, so the two are one life, from the
 * operand's step to the last reader of either. */
static cb_status assign_slots(cb_blk_plan *p, const cb_graph *g)
{
    const int n = g->count;
    int *last = malloc(sizeof *last * (size_t)n), *life = malloc(sizeof *life * (size_t)n);
    int *start = malloc(sizeof *start * (size_t)n), *end = malloc(sizeof *end * (size_t)n);
    int *slot_of = malloc(sizeof *slot_of * (size_t)n);
    size_t *need = calloc((size_t)n, sizeof *need);
    if (!last || !life || !start || !end || !slot_of || !need) {
        free(last), free(life), free(start), free(end), free(slot_of), free(need);
        return cb_fail(CB_ERR_NOMEM, "out of memory planning blocked buffers");
    }
    for (int v = 0; v < n; v++) last[v] = life[v] = start[v] = end[v] = p->slot[v] = -1;
    for (int k = 0; k < n; k++) /* the last member step reading each blocked value */
        for (int j = 0; j < g->nodes[k].n_in; j++) {
            const int v = g->nodes[k].in[j], step = p->role[k] == R_FUSED ? p->fused_into[k] : k;
            if (p->blocked[v] && p->role[k] != R_NONE && step > last[v]) last[v] = step;
        }
    for (int i = 0; i < n; i++) { /* life[v]: the value whose life (and buffer) v's is part of */
        const int r = p->role[i];
        if (r == R_NONE || r == R_FUSED || r == R_GAP) continue;
        const int v = r == R_CONV ? p->result[i] : i;
        if (r == R_CONV && p->sum_with[i] >= 0) {
            life[v] = life[p->sum_with[i]];
        } else {
            life[v] = v;
            start[v] = i;
            need[v] = blocked_numel(&g->nodes[v]);
        }
        const int until = last[v] > i ? last[v] : i; /* read by no member: free after its own step */
        if (until > end[life[v]]) end[life[v]] = until;
    }
    cb_status st = cb_slots_assign_buffers(n, start, end, need, slot_of, p->slot_floats, &p->nslots);
    for (int v = 0; st == CB_OK && v < n; v++)
        if (life[v] >= 0) p->slot[v] = slot_of[life[v]];
    free(last), free(life), free(start), free(end), free(slot_of), free(need);
    return st;
}

/* Whether node i's value is a blocked buffer's: not a value fused away
 * inside a convolution group (the group's last node holds its result). */
static int holds_result(const cb_blk_plan *p, int i)
{
    if (p->role[i] == R_FUSED) return p->result[p->fused_into[i]] == i;
    return p->role[i] != R_CONV || p->result[i] == i;
}

/* A blocked value is copied out where something outside reads it. */
static void plan_exits(cb_blk_plan *p, const cb_graph *g)
{
    for (int v = 0; v < g->count; v++)
        if (p->blocked[v] && holds_result(p, v) && observable(g, v)) p->exit[v] = 1;
    for (int k = 0; k < g->count; k++) {
        if (p->role[k] != R_NONE && !(p->role[k] == R_CONV && !p->blocked[g->nodes[k].in[0]])) continue;
        for (int j = 0; j < g->nodes[k].n_in; j++) {
            const int v = g->nodes[k].in[j];
            if (p->blocked[v] && (p->role[k] == R_NONE || j > 0)) p->exit[v] = 1;
        }
    }
}

/* A run's primitives (kept: its buffers). */
static void run_clear(blk_run *r, int count)
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

static void run_free(blk_run *r, int count, int nslots)
{
    run_clear(r, count);
    for (int s = 0; r->slot_buf && s < nslots; s++) free(r->slot_buf[s]);
    free(r->slot_buf), free(r->in_buf), free(r->own_ws);
    free(r->prim), free(r->in_reorder), free(r->out_reorder);
    cb_dnnl_ctx_free(r->dnnl);
    memset(r, 0, sizeof *r);
}

static cb_status run_init(blk_run *r, int count, int nslots, int threads)
{
    r->threads = threads;
    r->prim = calloc((size_t)count, sizeof *r->prim), r->in_reorder = calloc((size_t)count, sizeof *r->prim);
    r->out_reorder = calloc((size_t)count, sizeof *r->prim), r->slot_buf = calloc((size_t)nslots + 1, sizeof(float *));
    if (!r->prim || !r->in_reorder || !r->out_reorder || !r->slot_buf)
        return cb_fail(CB_ERR_NOMEM, "out of memory planning blocked layouts");
    return CB_OK;
}

void cb_blk_plan_free(cb_blk_plan *p)
{
    if (!p) return;
    /* lanes first: their convolutions may run on the first lane's weights */
    for (int k = p->nlanes - 1; k >= 0; k--) run_free(&p->lanes[k], p->count, p->nslots);
    free(p->lanes);
    run_free(&p->whole, p->count, p->nslots);
    free(p->slot_floats);
    for (int i = 0; p->coef && i < p->count; i++) free(p->coef[i]);
    for (int i = 0; p->fold_b && i < p->count; i++) free(p->fold_b[i]);
    for (int i = 0; p->own_w && i < p->count; i++) free(p->own_w[i]);
    free(p->own), free(p->own_w), free(p->own_ready);
    free(p->coef), free(p->bn_of), free(p->fold_b), free(p->fold_w);
    free(p->role), free(p->blocked), free(p->exit), free(p->captured), free(p->fused_into), free(p->result), free(p->sum_with);
    free(p->npost), free(p->post), free(p->slot);
    free(p);
}

static int any_member(const cb_blk_plan *p)
{
    for (int i = 0; i < p->count; i++)
        if (p->role[i] != R_NONE) return 1;
    return 0;
}

static float *aligned_floats(size_t n)
{
    const size_t bytes = ((n ? n : 1) * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes);
}

/* crossbind's own convolution kernels on blocked values, in the order a
 * plan tries them (own_order): the direct 3x3 kernel of nChw16c
 * (conv_direct16.c; ResNet-50's 3x3 layers of stride 2, and at batch 1 of
 * stride 1 on planes of 7 to 16 wide, where Winograd's method does not
 * run), the few-output product (conv_few.c; VGG-16's last layers on 4x4
 * and 2x2 planes at batch 1: one product streaming the weights once), then
 * Winograd's method (conv_winograd.c, fastmath only), whose transformed
 * weights, 16/9 of these, would be read for a handful of 2x2 blocks where
 * the few-output product runs. The first two run at every level (each
 * output a direct sum). Each takes what its `supports` rule takes at the
 * plan's largest batch; oneDNN runs the others. */
enum { OWN_NONE = 0, OWN_FEW, OWN_WINOGRAD, OWN_DIRECT16 };
typedef struct own_kernel {
    const char *what; /* as the plan names it */
    const char *rule; /* as --list-kernels prints it */
    int fastmath_only;
    int (*supports)(const cb_conv_shape *s, int groups, int block);
    size_t (*weight_floats)(const cb_conv_shape *s);
    size_t (*workspace)(const cb_conv_shape *s, int threads);
    void (*weights)(const cb_conv_shape *s, const float *w, float *dst);
    void (*conv)(const cb_conv_shape *s, int block, const float *x, const float *w, const float *bias,
                 const cb_blk_post *post, int npost, float *y, float *ws, int threads);
} own_kernel;
static const own_kernel own_kernels[] = {
    [OWN_FEW] = {"few-output product",
                 "at most 64 outputs per channel at the largest batch (16 for 1x1 kernels), ungrouped, undilated",
                 0, cb_few_supports, cb_few_weight_floats, cb_few_workspace, cb_few_weights, cb_few_conv},
    [OWN_WINOGRAD] = {"winograd F(2x2,3x3)",
                      "fastmath; 3x3 stride 1, at most 256 channels in and out (nChw16c: 96 2x2 tiles or more)", 1,
                      cb_wino_supports, cb_wino_weight_floats, cb_wino_workspace, cb_wino_weights, cb_wino_conv},
    [OWN_DIRECT16] = {"direct 3x3",
                      "AVX-512 builds, nChw16c; 3x3 padding 1, rows of 7 or more; stride 2, or stride 1 at batch 1 "
                      "where Winograd's method does not run",
                      0, cb_direct16_supports, cb_direct16_weight_floats, cb_direct16_workspace, cb_direct16_weights,
                      cb_direct16_conv},
};
/* The order a plan tries them in. */
static const int own_order[] = {OWN_DIRECT16, OWN_FEW, OWN_WINOGRAD};
enum { N_OWN = sizeof own_order / sizeof own_order[0] };

void cb_blk_list_kernels(cb_buf *b)
{
    cb_buf_printf(b, "convolutions of the blocked-layout rewrite (inference at fused and fastmath, oneDNN built in),\n"
                     "the first whose rule holds at the plan's largest batch:\n");
    for (int k = 0; k < N_OWN; k++)
        cb_buf_printf(b, "  %-19s cpu  fwd  %s\n", own_kernels[own_order[k]].what, own_kernels[own_order[k]].rule);
    cb_buf_printf(b, "  %-19s cpu  fwd  any other\n", "onednn-blocked");
}

/* The convolutions crossbind's own kernels run, and their converted
 * weights (shared by every run). */
static cb_status plan_own(cb_blk_plan *p, const cb_graph *g, int fastmath)
{
    for (int i = 0; i < g->count; i++) {
        const cb_node *n = &g->nodes[i];
        if (p->role[i] != R_CONV) continue;
        const cb_conv_shape s = cb_node_conv_shape(g, n, p->max_batch);
        for (int k = 0; k < N_OWN && !p->own[i]; k++) {
            const own_kernel *o = &own_kernels[own_order[k]];
            if ((o->fastmath_only && !fastmath) || !o->supports(&s, n->groups, p->block)) continue;
            if (own_order[k] == OWN_DIRECT16 && fastmath && cb_wino_supports(&s, n->groups, p->block))
                continue; /* Winograd's method, with fewer multiply-adds, was faster where it runs */
            p->own[i] = (unsigned char)own_order[k];
            if (!(p->own_w[i] = aligned_floats(o->weight_floats(&s))))
                return cb_fail(CB_ERR_NOMEM, "out of memory for a convolution's converted weights");
        }
    }
    return CB_OK;
}

/* The workspace floats crossbind's own convolutions need at `batch` on
 * `threads` threads (the largest one's: they run one at a time). */
static size_t own_ws_floats(const cb_blk_plan *p, const cb_graph *g, int batch, int threads)
{
    size_t ws = 0;
    for (int i = 0; i < g->count; i++) {
        if (!p->own[i]) continue;
        const cb_conv_shape s = cb_node_conv_shape(g, &g->nodes[i], batch);
        const size_t w = own_kernels[p->own[i]].workspace(&s, threads);
        if (w > ws) ws = w;
    }
    return ws;
}

/* A run's buffers and workspace for at least `batch` samples (grown, never
 * shrunk). */
static cb_status run_buffers(const cb_blk_plan *p, const cb_graph *g, blk_run *r, int batch)
{
    if (r->cap < batch) {
        r->cap = 0; /* until every buffer is there: a failure leaves none to trust */
        for (int s = 0; s < p->nslots; s++) {
            free(r->slot_buf[s]);
            if (!(r->slot_buf[s] = aligned_floats(p->slot_floats[s] * (size_t)batch)))
                return cb_fail(CB_ERR_NOMEM, "out of memory for blocked buffers");
        }
        free(r->in_buf);
        r->in_buf = NULL;
        if (p->in_floats && !(r->in_buf = aligned_floats(p->in_floats * (size_t)batch)))
            return cb_fail(CB_ERR_NOMEM, "out of memory for blocked buffers");
        r->cap = batch;
    }
    const size_t ws = own_ws_floats(p, g, batch, r->threads);
    if (ws > r->own_ws_floats) {
        free(r->own_ws);
        if (!(r->own_ws = aligned_floats(ws))) {
            r->own_ws_floats = 0;
            return cb_fail(CB_ERR_NOMEM, "out of memory for a convolution's workspace");
        }
        r->own_ws_floats = ws;
    }
    return CB_OK;
}

cb_status cb_blk_plan_create(const cb_graph *g, int max_batch, int fastmath, cb_blk_plan **out)
{
    *out = NULL;
    const int block = cb_blk_block();
    if (!block) return CB_OK;
    for (int i = 0; i < g->count; i++) /* recurrent layers plan per-slice workspaces: not with this */
        if (g->nodes[i].op == CB_OP_GRU || g->nodes[i].op == CB_OP_LSTM) return CB_OK;
    cb_blk_plan *p = calloc(1, sizeof *p);
    if (!p) return cb_fail(CB_ERR_NOMEM, "out of memory planning blocked layouts");
    const size_t n = (size_t)g->count;
    p->count = g->count;
    p->block = block;
    p->role = calloc(n, 1), p->blocked = calloc(n, 1), p->exit = calloc(n, 1), p->captured = calloc(n, 1);
    p->fused_into = malloc(n * sizeof(int)), p->result = malloc(n * sizeof(int)), p->sum_with = malloc(n * sizeof(int));
    p->npost = calloc(n, sizeof(int)), p->post = calloc(n, sizeof *p->post), p->slot = malloc(n * sizeof(int));
    p->slot_floats = calloc(n, sizeof(size_t));
    p->bn_of = malloc(n * sizeof(int)), p->coef = calloc(n, sizeof(float *)), p->fold_b = calloc(n, sizeof(float *));
    p->own = calloc(n, 1), p->own_w = calloc(n, sizeof(float *)), p->own_ready = calloc(n, 1);
    p->max_batch = max_batch;
    p->threads = omp_get_max_threads();
    if (!p->own || !p->own_w || !p->own_ready || !p->bn_of || !p->coef || !p->fold_b || !p->role || !p->blocked || !p->exit || !p->captured || !p->fused_into || !p->result || !p->sum_with || !p->npost || !p->post ||
        !p->slot || !p->slot_floats) {
        cb_blk_plan_free(p);
        return cb_fail(CB_ERR_NOMEM, "out of memory planning blocked layouts");
    }
    for (int i = 0; i < g->count; i++) p->fused_into[i] = p->sum_with[i] = p->bn_of[i] = -1, p->result[i] = i;
    unsigned char *dropped = calloc(n, 1);
    if (!dropped) {
        cb_blk_plan_free(p);
        return cb_fail(CB_ERR_NOMEM, "out of memory planning blocked layouts");
    }
    choose_members(p, g, dropped);
    free(dropped);
    if (!any_member(p)) {
        cb_blk_plan_free(p);
        return CB_OK;
    }
    fuse(p, g, fastmath);
    plan_exits(p, g);
    cb_status st = assign_slots(p, g);
    if (st == CB_OK) st = plan_own(p, g, fastmath);
    if (st == CB_OK) st = run_init(&p->whole, p->count, p->nslots, p->threads);
    for (int i = 0; i < g->count; i++)
        if (p->role[i] == R_CONV && !p->blocked[g->nodes[i].in[0]]) {
            const cb_node *x = &g->nodes[g->nodes[i].in[0]];
            if (x->dims[0] >= block && blocked_numel(x) > p->in_floats) p->in_floats = blocked_numel(x);
        }
    for (int i = 0; i < g->count && st == CB_OK; i++)
        if (g->nodes[i].op == CB_OP_BATCHNORM2D && p->role[i] != R_NONE &&
            !(p->coef[i] = aligned_floats(2 * (size_t)g->nodes[i].dims[0])))
            st = cb_fail(CB_ERR_NOMEM, "out of memory for batch normalisation coefficients");
    size_t fold_floats = 0;
    for (int i = 0; i < g->count && st == CB_OK; i++) {
        if (p->bn_of[i] < 0) continue;
        const size_t wf = (size_t)cb_node_numel(&g->nodes[g->nodes[i].in[1]]);
        if (wf > fold_floats) fold_floats = wf;
        if (!(p->fold_b[i] = aligned_floats((size_t)g->nodes[i].dims[0])))
            st = cb_fail(CB_ERR_NOMEM, "out of memory for a folded bias");
    }
    if (st == CB_OK && fold_floats && !(p->fold_w = aligned_floats(fold_floats)))
        st = cb_fail(CB_ERR_NOMEM, "out of memory for folded weights");
    if (st != CB_OK) {
        cb_blk_plan_free(p);
        return st;
    }
    *out = p;
    return CB_OK;
}

int cb_blk_member(const cb_blk_plan *p, int i) { return p && p->role[i] != R_NONE; }

int cb_blk_materialised(const cb_blk_plan *p, int i, int *by)
{
    *by = -1;
    if (!p || p->role[i] == R_NONE) return 1;
    if (p->role[i] == R_FUSED && !holds_result(p, i)) {
        *by = p->result[p->fused_into[i]];
        return 0;
    }
    if (p->role[i] == R_CONV && p->result[i] != i) {
        *by = p->result[i];
        return 0;
    }
    return !p->blocked[i] || p->exit[i] || p->captured[i];
}

void cb_blk_capture(cb_blk_plan *p, int i)
{
    if (p && p->blocked[i] && holds_result(p, i)) {
        p->captured[i] = 1;
        /* the copy-out's primitive is made with the others */
        p->whole.batch = 0;
        for (int k = 0; k < p->nlanes; k++) p->lanes[k].batch = 0;
    }
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
        cb_conv_shape s = cb_node_conv_shape(g, n, batch);
        const cb_node *x = &g->nodes[n->in[0]];
        int src_blocked = p->blocked[n->in[0]];
        if (!src_blocked && x->dims[0] >= p->block) { /* fewer channels (an image): oneDNN reads them plain */
            st = cb_blk_reorder_create(ctx, batch, s.c, s.h, s.w, 0, &r->in_reorder[i]);
            src_blocked = 1;
        }
        if (st == CB_OK && !p->own[i])
            st = cb_blk_conv_create(ctx, &s, n->groups > 1 ? n->groups : 1, n->n_in > 2 || p->bn_of[i] >= 0,
                                    src_blocked, p->post[i], p->npost[i], &r->prim[i]);
    } else if (p->role[i] == R_POOL && !own_pool(g, i)) {
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
    run_clear(r, p->count);
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
        const float *x = p->blocked[n->in[0]] ? buf(p, r, n->in[0]) : cb_exec_slice(ex, n->in[0], b0);
        if (r->in_reorder[i]) {
            if ((st = cb_blk_reorder_run(r->in_reorder[i], x, r->in_buf))) return st;
            x = r->in_buf;
        }
        const float *w = ex->val[n->in[1]], *b = n->n_in > 2 ? ex->val[n->in[2]] : NULL;
        if (p->own[i]) { /* crossbind's own kernels, on weights converted for them */
            const own_kernel *o = &own_kernels[p->own[i]];
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
        if (own_pool(g, i)) {
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
        cb_blk_add(buf(p, r, n->in[0]), buf(p, r, n->in[1]), buf(p, r, i), blocked_numel(n) * (size_t)batch);
        break;
    case R_MUL:
        if (!mul_gate(g, n)) {
            cb_blk_mul(buf(p, r, n->in[0]), buf(p, r, n->in[1]), buf(p, r, i), blocked_numel(n) * (size_t)batch);
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
            cb_status st = run_init(&p->lanes[k], p->count, p->nslots, 1);
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
    for (int k = lanes; made && k < p->nlanes; k++) run_clear(&p->lanes[k], p->count);
    const cb_graph *g = ex->g;
    const blk_run *first = &p->lanes[0];
    for (int i = 0; i < p->count && st == CB_OK; i++) {
        const cb_node *n = &g->nodes[i];
        if (p->role[i] == R_BN) bn_coef(p, ex, i);
        if (p->role[i] != R_CONV) continue;
        const float *w = ex->val[n->in[1]];
        if (p->own[i]) {
            const cb_conv_shape s = cb_node_conv_shape(g, n, chunk);
            own_weights(p, ex, i, &s, w, own_kernels[p->own[i]].weights);
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

void cb_blk_describe(const cb_blk_plan *p, const cb_graph *g, int i, cb_buf *b)
{
    static const char *const names[] = {"", "conv2d", "pooling", "add", "activation", "concat", "global_avgpool",
                                        "batchnorm", "mul", "fused"};
    if (p->role[i] == R_FUSED) {
        cb_buf_printf(b, "fused into node %d's convolution (not materialised)", p->fused_into[i]);
        return;
    }
    if (p->own[i]) cb_buf_printf(b, "%s: %s nChw%dc", names[p->role[i]], own_kernels[p->own[i]].what, p->block);
    else cb_buf_printf(b, "%s: onednn-blocked nChw%dc", names[p->role[i]], p->block);
    if (p->role[i] == R_CONV) {
        if (!p->blocked[g->nodes[i].in[0]])
            cb_buf_printf(b, ", input %s", g->nodes[g->nodes[i].in[0]].dims[0] < p->block ? "plain" : "reordered in");
        if (p->bn_of[i] >= 0) cb_buf_printf(b, " +batchnorm(node %d) folded into the weights", p->bn_of[i]);
        for (int k = 0; k < p->npost[i]; k++) {
            const cb_blk_post *q = &p->post[i][k];
            if (q->kind == CB_POST_SUM) cb_buf_printf(b, " +sum(node %d, in its buffer)", p->sum_with[i]);
            else if (q->kind == CB_POST_RELU) cb_buf_printf(b, " +relu");
            else cb_buf_printf(b, " +clip");
        }
    }
    if (p->role[i] == R_GAP) cb_buf_printf(b, " (plain output)");
    if (p->role[i] == R_POOL && own_pool(g, i)) cb_buf_printf(b, ", 2x2 max loop");
    const int v = p->role[i] == R_CONV ? p->result[i] : i;
    if (p->blocked[v] && padded(&g->nodes[v], p->block))
        cb_buf_printf(b, ", channels padded to %lld", (long long)cb_blk_padded(g->nodes[v].dims[0]));
    if (p->blocked[v]) cb_buf_printf(b, ", buffer %d%s", p->slot[v], p->exit[v] ? ", copied out" : "");
}

double cb_blk_winograd_flops(const cb_blk_plan *p, const cb_graph *g, int i)
{
    if (!p || p->own[i] != OWN_WINOGRAD) return 0;
    const cb_conv_shape s = cb_node_conv_shape(g, &g->nodes[i], 1);
    return 2.0 * 16 * ((s.oh + 1) / 2) * ((s.ow + 1) / 2) * (double)s.c * s.oc;
}

size_t cb_blk_bytes(const cb_blk_plan *p, const cb_graph *g, int whole, int lanes, int chunk)
{
    if (!p) return 0;
    size_t f = p->in_floats;
    for (int s = 0; s < p->nslots; s++) f += p->slot_floats[s];
    size_t total = f * (size_t)whole + (whole ? own_ws_floats(p, g, whole, p->threads) : 0);
    if (lanes) total += (f * (size_t)chunk + own_ws_floats(p, g, chunk, 1)) * (size_t)lanes;
    return total * sizeof(float);
}
