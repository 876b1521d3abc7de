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
 * reorders).
 *
 * This file makes the plan; blocked_own.c chooses crossbind's own kernels
 * in it; blocked_run.c runs it. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "blocked_internal.h"
#include "slots.h"

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

int blk_own_pool(const cb_graph *g, int i)
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

int blk_mul_gate(const cb_graph *g, const cb_node *n)
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
        return blk_mul_gate(g, n) != blocked[n->in[1]] ? R_MUL : R_NONE;
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
                         o != blk_conv_src(p, g, conv); /* the convolution's own input cannot take its output */
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

int blk_conv_src(const cb_blk_plan *p, const cb_graph *g, int i)
{
    return p->pad_from[i] >= 0 ? g->nodes[p->pad_from[i]].in[0] : g->nodes[i].in[0];
}

/* Convolution i as it runs: reading the folded Pad's input, with the Pad's
 * top rows and left columns added to its near padding (its output, and so
 * the far padding, unchanged). */
static cb_node as_run(const cb_blk_plan *p, const cb_graph *g, int i)
{
    cb_node n = g->nodes[i];
    if (p->pad_from[i] >= 0) {
        const cb_node *pad = &g->nodes[p->pad_from[i]];
        n.in[0] = pad->in[0];
        n.ph += pad->pads[0], n.pw += pad->pads[1];
    }
    return n;
}

cb_conv_shape blk_conv_shape(const cb_blk_plan *p, const cb_graph *g, int i, int batch)
{
    const cb_node n = as_run(p, g, i);
    return cb_node_conv_shape(g, &n, batch);
}

/* Zero padding folded into the convolution that alone reads it: Keras'
 * ZeroPadding2D before a stride-2 convolution (tf2onnx writes it as a Pad
 * node, one row and column at the far side) made the value leave the
 * blocked buffers, padded plain and reordered in again: at batch 1 those
 * Pad steps alone took 0.98 ms of Keras MobileNetV2's 5.7 (2-core Xeon).
 * oneDNN takes a padding per side, the far one from the output size, so
 * the convolution reads the Pad's input with the rows and columns added to
 * its own padding: the same sums, the zeros never written. Only where
 * oneDNN runs the convolution (crossbind's own kernels assume equal
 * sides), the Pad's value is not observable, and its input is blocked or
 * kept over the whole pass (a graph input): another plain value's buffer
 * lives until its last reader's step in graph order (memplan.c), the
 * Pad's, before the convolution's; blocked buffers live until the
 * convolution reads them (assign_slots). */
static void fold_pads(cb_blk_plan *p, const cb_graph *g)
{
    for (int k = 0; k < g->count; k++) {
        const cb_node *pad = &g->nodes[k];
        if (pad->op != CB_OP_PAD || p->role[k] != R_NONE || pad->pad_mode != CB_PAD_CONSTANT || pad->lo != 0.0f ||
            pad->pads[0] < 0 || pad->pads[1] < 0 || pad->pads[2] < 0 || pad->pads[3] < 0 || !image_like(pad) ||
            observable(g, k) || uses(g, k) != 1)
            continue;
        int c = -1;
        for (int r = k + 1; r < g->count && c < 0; r++)
            if (g->nodes[r].n_in && g->nodes[r].in[0] == k) c = r;
        const cb_node *x = &g->nodes[pad->in[0]];
        if (c < 0 || p->role[c] != R_CONV || p->pad_from[c] >= 0 || !image_like(x) ||
            !(p->blocked[pad->in[0]] || cb_exec_value_whole_pass(g, pad->in[0])))
            continue;
        p->pad_from[c] = k;
        const cb_conv_shape s = blk_conv_shape(p, g, c, 1);
        const int ekh = (s.kh - 1) * (s.dh > 1 ? s.dh : 1) + 1, ekw = (s.kw - 1) * (s.dw > 1 ? s.dw : 1) + 1;
        const long far_h = (long)(s.oh - 1) * s.sh + ekh - s.h - s.ph, far_w = (long)(s.ow - 1) * s.sw + ekw - s.w - s.pw;
        if (far_h < 0 || far_w < 0) { /* a crop the padding cannot say */
            p->pad_from[c] = -1;
            continue;
        }
        p->role[k] = R_FUSED;
        p->fused_into[k] = c;
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
            need[v] = blk_numel(&g->nodes[v]);
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
        if (p->role[k] != R_NONE && !(p->role[k] == R_CONV && !p->blocked[blk_conv_src(p, g, k)])) continue;
        for (int j = 0; j < g->nodes[k].n_in; j++) {
            const int v = g->nodes[k].in[j];
            if (p->blocked[v] && (p->role[k] == R_NONE || j > 0)) p->exit[v] = 1;
        }
    }
}

void cb_blk_plan_free(cb_blk_plan *p)
{
    if (!p) return;
    /* lanes first: their convolutions may run on the first lane's weights */
    for (int k = p->nlanes - 1; k >= 0; k--) blk_run_free(&p->lanes[k], p->count, p->nslots);
    free(p->lanes);
    blk_run_free(&p->whole, p->count, p->nslots);
    free(p->slot_floats);
    for (int i = 0; p->coef && i < p->count; i++) free(p->coef[i]);
    for (int i = 0; p->fold_b && i < p->count; i++) free(p->fold_b[i]);
    for (int i = 0; p->own_w && i < p->count; i++) free(p->own_w[i]);
    free(p->own), free(p->own_w), free(p->own_ready);
    free(p->coef), free(p->bn_of), free(p->pad_from), free(p->fold_b), free(p->fold_w);
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

float *blk_aligned_floats(size_t n)
{
    const size_t bytes = ((n ? n : 1) * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes);
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
    p->bn_of = malloc(n * sizeof(int)), p->pad_from = malloc(n * sizeof(int)), p->coef = calloc(n, sizeof(float *)), p->fold_b = calloc(n, sizeof(float *));
    p->own = calloc(n, 1), p->own_w = calloc(n, sizeof(float *)), p->own_ready = calloc(n, 1);
    p->max_batch = max_batch;
    p->threads = omp_get_max_threads();
    if (!p->own || !p->own_w || !p->own_ready || !p->bn_of || !p->pad_from || !p->coef || !p->fold_b || !p->role || !p->blocked || !p->exit || !p->captured || !p->fused_into || !p->result || !p->sum_with || !p->npost || !p->post ||
        !p->slot || !p->slot_floats) {
        cb_blk_plan_free(p);
        return cb_fail(CB_ERR_NOMEM, "out of memory planning blocked layouts");
    }
    for (int i = 0; i < g->count; i++) p->fused_into[i] = p->sum_with[i] = p->bn_of[i] = p->pad_from[i] = -1, p->result[i] = i;
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
    fold_pads(p, g);
    fuse(p, g, fastmath);
    plan_exits(p, g);
    cb_status st = assign_slots(p, g);
    if (st == CB_OK) st = blk_plan_own(p, g, fastmath);
    if (st == CB_OK) st = blk_run_init(&p->whole, p->count, p->nslots, p->threads);
    for (int i = 0; i < g->count; i++)
        if (p->role[i] == R_CONV && !p->blocked[blk_conv_src(p, g, i)]) {
            const cb_node *x = &g->nodes[blk_conv_src(p, g, i)];
            if (x->dims[0] >= block && blk_numel(x) > p->in_floats) p->in_floats = blk_numel(x);
        }
    for (int i = 0; i < g->count && st == CB_OK; i++)
        if (g->nodes[i].op == CB_OP_BATCHNORM2D && p->role[i] != R_NONE &&
            !(p->coef[i] = blk_aligned_floats(2 * (size_t)g->nodes[i].dims[0])))
            st = cb_fail(CB_ERR_NOMEM, "out of memory for batch normalisation coefficients");
    size_t fold_floats = 0;
    for (int i = 0; i < g->count && st == CB_OK; i++) {
        if (p->bn_of[i] < 0) continue;
        const size_t wf = (size_t)cb_node_numel(&g->nodes[g->nodes[i].in[1]]);
        if (wf > fold_floats) fold_floats = wf;
        if (!(p->fold_b[i] = blk_aligned_floats((size_t)g->nodes[i].dims[0])))
            st = cb_fail(CB_ERR_NOMEM, "out of memory for a folded bias");
    }
    if (st == CB_OK && fold_floats && !(p->fold_w = blk_aligned_floats(fold_floats)))
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

void cb_blk_describe(const cb_blk_plan *p, const cb_graph *g, int i, cb_buf *b)
{
    static const char *const names[] = {"", "conv2d", "pooling", "add", "activation", "concat", "global_avgpool",
                                        "batchnorm", "mul", "fused"};
    if (p->role[i] == R_FUSED) {
        cb_buf_printf(b, "%s node %d's convolution (not materialised)",
                      g->nodes[i].op == CB_OP_PAD ? "zeros folded into the padding of" : "fused into", p->fused_into[i]);
        return;
    }
    if (p->own[i]) cb_buf_printf(b, "%s: %s nChw%dc", names[p->role[i]], blk_own_kernels[p->own[i]].what, p->block);
    else cb_buf_printf(b, "%s: onednn-blocked nChw%dc", names[p->role[i]], p->block);
    if (p->role[i] == R_CONV) {
        const int src = blk_conv_src(p, g, i);
        if (p->pad_from[i] >= 0) cb_buf_printf(b, ", reads node %d with node %d's zeros as padding", src, p->pad_from[i]);
        if (!p->blocked[src]) cb_buf_printf(b, ", input %s", g->nodes[src].dims[0] < p->block ? "plain" : "reordered in");
        if (p->bn_of[i] >= 0) cb_buf_printf(b, " +batchnorm(node %d) folded into the weights", p->bn_of[i]);
        for (int k = 0; k < p->npost[i]; k++) {
            const cb_blk_post *q = &p->post[i][k];
            if (q->kind == CB_POST_SUM) cb_buf_printf(b, " +sum(node %d, in its buffer)", p->sum_with[i]);
            else if (q->kind == CB_POST_RELU) cb_buf_printf(b, " +relu");
            else cb_buf_printf(b, " +clip");
        }
    }
    if (p->role[i] == R_GAP) cb_buf_printf(b, " (plain output)");
    if (p->role[i] == R_POOL && blk_own_pool(g, i)) cb_buf_printf(b, ", 2x2 max loop");
    const int v = p->role[i] == R_CONV ? p->result[i] : i;
    if (p->blocked[v] && padded(&g->nodes[v], p->block))
        cb_buf_printf(b, ", channels padded to %lld", (long long)cb_blk_padded(g->nodes[v].dims[0]));
    if (p->blocked[v]) cb_buf_printf(b, ", buffer %d%s", p->slot[v], p->exit[v] ? ", copied out" : "");
}

double cb_blk_flops_done(const cb_blk_plan *p, const cb_graph *g, int i)
{
    if (p && p->role[i] == R_CONV && p->pad_from[i] >= 0) { /* the count of a convolution reading the Pad's input */
        const cb_node n = as_run(p, g, i);
        return cb_op_desc_of(CB_OP_CONV2D)->flops_done(g, &n);
    }
    if (!p || p->own[i] != OWN_WINOGRAD) return 0;
    const cb_conv_shape s = cb_node_conv_shape(g, &g->nodes[i], 1);
    return 2.0 * 16 * ((s.oh + 1) / 2) * ((s.ow + 1) / 2) * (double)s.c * s.oc;
}

size_t cb_blk_bytes(const cb_blk_plan *p, const cb_graph *g, int whole, int lanes, int chunk)
{
    if (!p) return 0;
    size_t f = p->in_floats;
    for (int s = 0; s < p->nslots; s++) f += p->slot_floats[s];
    size_t total = f * (size_t)whole + (whole ? blk_own_ws_floats(p, g, whole, p->threads) : 0);
    if (lanes) total += (f * (size_t)chunk + blk_own_ws_floats(p, g, chunk, 1)) * (size_t)lanes;
    return total * sizeof(float);
}
