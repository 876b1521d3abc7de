/* oneDNN primitives on channel-blocked activations (nChw8c, or nChw16c
 * where oneDNN runs AVX-512), for the blocked-layout rewrite of inference
 * (src/graph/blocked.c).
 *
 * Why: conv_dnnl.c keeps the engine's plain NCHW tensors and reorders each
 * convolution's input and output into oneDNN's blocked layout and back. On
 * MobileNetV2 at batch 1 those reorders took more time than the
 * convolutions themselves (oneDNN's verbose log, 2-core AMD EPYC: 10.0 ms of
 * reorders per image against 6.3 ms of convolutions). Values that only
 * oneDNN-capable nodes read stay blocked instead, so a reorder runs only
 * where the plain world reads a value.
 *
 * The block size is chosen once per process from oneDNN's instruction set.
 * A value whose channels are not a multiple of it is padded to the next
 * multiple, as oneDNN's own blocked memory is: the padded channels hold
 * zeros (primitives and reorders write them so), and a convolution reading
 * them multiplies them by the zero weights that pad its blocked weights, so
 * every real channel's sum has the same nonzero terms as unpadded.
 *
 * Why padded: on AVX-512 (block 16) MobileNetV2's 24-channel bottlenecks
 * would otherwise leave the blocked region with reorders and a separate
 * Clip pass around them, about 200 of 766 ms per 256 samples at batch 32
 * (2-core AMD EPYC Zen 5); on AVX2 24 is a multiple of the block (8). */
#include <stdlib.h>
#include <string.h>
#include "ops.h"
#include "vec.h"

#ifdef CB_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>

int cb_blk_block(void)
{
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core ? 16 : 8;
}

int64_t cb_blk_padded(int64_t c)
{
    const int b = cb_blk_block();
    return b ? (c + b - 1) / b * b : c;
}

static dnnl_format_tag_t blocked_tag(void) { return cb_blk_block() == 16 ? dnnl_nChw16c : dnnl_nChw8c; }

static cb_status check(dnnl_status_t st, const char *what)
{
    if (st == dnnl_success) return CB_OK;
    if (st == dnnl_out_of_memory) return cb_fail(CB_ERR_NOMEM, "oneDNN: out of memory in %s", what);
    return cb_fail(CB_ERR_UNSUPPORTED, "oneDNN: %s failed (status %d)", what, (int)st);
}
#define TRY(call, what) do { cb_status st_ = check((call), (what)); if (st_ != CB_OK) return st_; } while (0)

/* A primitive with its memory objects, whose data pointers are set at each
 * run; wsp: the weights in the primitive's layout, reordered once per run. */
struct cb_blk_prim {
    cb_dnnl_ctx *ctx;
    dnnl_primitive_t prim;
    int nargs;
    int kind[6];
    dnnl_memory_t mem[6]; /* the scratchpad last, where the context is a lane's */
    size_t scratch_bytes;
    /* convolution: the weights' reorder from OIHW (or GOIHW) */
    dnnl_primitive_t wreorder;
    dnnl_memory_t wplain;
    float *wbuf;                  /* owned, or NULL where shared */
    const cb_blk_prim *wshared;   /* the primitive whose reordered weights it runs on, or NULL */
    int wready; /* wbuf holds the weights reordered (kept where the caller froze them) */
};

static void act_mds(int n, int c, int h, int w, int blocked, dnnl_memory_desc_t *md)
{
    dnnl_dims_t d = {n, c, h, w};
    dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, blocked ? blocked_tag() : dnnl_nchw);
}

static cb_status add_mem(cb_blk_prim *p, int kind, const dnnl_memory_desc_t *md)
{
    dnnl_engine_t e = cb_dnnl_ctx_engine(p->ctx);
    TRY(dnnl_memory_create(&p->mem[p->nargs], md, e, DNNL_MEMORY_NONE), "memory creation");
    p->kind[p->nargs++] = kind;
    return CB_OK;
}

/* The primitive, and on a lane's context its scratchpad: a memory object
 * of its own (added last), its buffer the context's, grown to fit. */
static cb_status finish(cb_blk_prim *p, const_dnnl_primitive_desc_t pd)
{
    TRY(dnnl_primitive_create(&p->prim, pd), "primitive creation");
    if (!cb_dnnl_ctx_user_scratchpad(p->ctx)) return CB_OK;
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    p->scratch_bytes = md ? dnnl_memory_desc_get_size(md) : 0;
    if (!p->scratch_bytes) return CB_OK;
    if (!cb_dnnl_ctx_scratchpad(p->ctx, p->scratch_bytes))
        return cb_fail(CB_ERR_NOMEM, "out of memory for a oneDNN scratchpad");
    return CB_OK;
}

/* The scratchpad's memory object, once the primitive's own arguments are
 * added (run() passes them in order, the scratchpad after). */
static cb_status add_scratch(cb_blk_prim *p, const_dnnl_primitive_desc_t pd)
{
    if (!p->scratch_bytes) return CB_OK;
    return add_mem(p, DNNL_ARG_SCRATCHPAD, dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0));
}

/* Attributes every primitive on a lane's context needs: a scratchpad the
 * caller gives (may create *attr). */
static cb_status lane_attr(const cb_dnnl_ctx *ctx, dnnl_primitive_attr_t *attr)
{
    if (!cb_dnnl_ctx_user_scratchpad(ctx)) return CB_OK;
    if (!*attr) TRY(dnnl_primitive_attr_create(attr), "attribute creation");
    TRY(dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user), "scratchpad mode");
    return CB_OK;
}

static cb_status new_prim(cb_dnnl_ctx *ctx, cb_blk_prim **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out) return cb_fail(CB_ERR_NOMEM, "out of memory planning a oneDNN primitive");
    (*out)->ctx = ctx;
    return CB_OK;
}

void cb_blk_prim_free(cb_blk_prim *p)
{
    if (!p) return;
    if (p->prim) dnnl_primitive_destroy(p->prim);
    for (int k = 0; k < p->nargs; k++) dnnl_memory_destroy(p->mem[k]);
    if (p->wreorder) dnnl_primitive_destroy(p->wreorder);
    if (p->wplain) dnnl_memory_destroy(p->wplain);
    free(p->wbuf);
    free(p);
}

static cb_status post_ops(const cb_blk_post *post, int npost, dnnl_primitive_attr_t *attr)
{
    *attr = NULL;
    if (!npost) return CB_OK;
    dnnl_post_ops_t po;
    TRY(dnnl_primitive_attr_create(attr), "attribute creation");
    TRY(dnnl_post_ops_create(&po), "post-op creation");
    dnnl_status_t st = dnnl_success;
    for (int k = 0; k < npost && st == dnnl_success; k++) {
        if (post[k].kind == CB_POST_SUM) st = dnnl_post_ops_append_sum(po, 1.0f);
        else if (post[k].kind == CB_POST_RELU) st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
        else st = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip_v2, post[k].lo, post[k].hi);
    }
    if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(*attr, po);
    dnnl_post_ops_destroy(po);
    return check(st, "post-ops");
}

/* Weights [G, OC/G, C/G, KH, KW] for `groups` > 1, else [OC, C, KH, KW]. */
static void weight_dims(const cb_conv_shape *s, int groups, int *nd, dnnl_dims_t d)
{
    if (groups > 1) {
        *nd = 5;
        d[0] = groups, d[1] = s->oc / groups, d[2] = s->c / groups, d[3] = s->kh, d[4] = s->kw;
    } else {
        *nd = 4;
        d[0] = s->oc, d[1] = s->c, d[2] = s->kh, d[3] = s->kw;
    }
}

static cb_status conv_create(cb_blk_prim *p, const cb_conv_shape *s, int groups, int has_bias, int src_blocked,
                             const cb_blk_post *post, int npost)
{
    dnnl_memory_desc_t x, y, wa, wp, b;
    act_mds(s->n, s->c, s->h, s->w, src_blocked, &x);
    act_mds(s->n, s->oc, s->oh, s->ow, 1, &y);
    int nd;
    dnnl_dims_t wd, bd = {s->oc};
    weight_dims(s, groups, &nd, wd);
    dnnl_memory_desc_init_by_tag(&wa, nd, wd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wp, nd, wd, dnnl_f32, nd == 5 ? dnnl_goihw : dnnl_oihw);
    dnnl_memory_desc_init_by_tag(&b, 1, bd, dnnl_f32, dnnl_x);
    dnnl_dims_t stride = {s->sh, s->sw}, pad_l = {s->ph, s->pw},
                dil = {s->dh > 1 ? s->dh - 1 : 0, s->dw > 1 ? s->dw - 1 : 0};
    const int ekh = (s->kh - 1) * (s->dh > 1 ? s->dh : 1) + 1, ekw = (s->kw - 1) * (s->dw > 1 ? s->dw : 1) + 1;
    dnnl_dims_t pad_r = {(int64_t)(s->oh - 1) * s->sh + ekh - s->h - s->ph,
                         (int64_t)(s->ow - 1) * s->sw + ekw - s->w - s->pw};
    dnnl_convolution_desc_t cd;
    TRY(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &x, &wa,
                                                   has_bias ? &b : NULL, &y, stride, dil, pad_l, pad_r),
        "convolution descriptor");
    dnnl_primitive_attr_t attr;
    cb_status cs = post_ops(post, npost, &attr);
    if (cs == CB_OK) cs = lane_attr(p->ctx, &attr);
    if (cs != CB_OK) {
        if (attr) dnnl_primitive_attr_destroy(attr);
        return cs;
    }
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_primitive_desc_create(&pd, &cd, attr, cb_dnnl_ctx_engine(p->ctx), NULL);
    if (attr) dnnl_primitive_attr_destroy(attr);
    TRY(st, "convolution forward");
    const dnnl_memory_desc_t *wq = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    cs = finish(p, pd);
    if (cs == CB_OK) cs = add_mem(p, DNNL_ARG_SRC, &x);
    if (cs == CB_OK) cs = add_mem(p, DNNL_ARG_WEIGHTS, wq);
    if (cs == CB_OK) cs = add_mem(p, DNNL_ARG_DST, &y);
    if (cs == CB_OK && has_bias) cs = add_mem(p, DNNL_ARG_BIAS, &b);
    if (cs == CB_OK) cs = add_scratch(p, pd);
    /* The weights' reorder, from the graph's layout into the primitive's. */
    if (cs == CB_OK) {
        const size_t bytes = (dnnl_memory_desc_get_size(wq) + 63) & ~(size_t)63;
        p->wbuf = aligned_alloc(64, bytes);
        if (!p->wbuf) cs = cb_fail(CB_ERR_NOMEM, "out of memory for a convolution's blocked weights");
    }
    dnnl_primitive_desc_t rpd = NULL;
    if (cs == CB_OK)
        cs = check(dnnl_reorder_primitive_desc_create(&rpd, &wp, cb_dnnl_ctx_engine(p->ctx), wq,
                                                      cb_dnnl_ctx_engine(p->ctx), NULL),
                   "weights reorder");
    if (cs == CB_OK) cs = check(dnnl_primitive_create(&p->wreorder, rpd), "weights reorder creation");
    if (cs == CB_OK) cs = check(dnnl_memory_create(&p->wplain, &wp, cb_dnnl_ctx_engine(p->ctx), DNNL_MEMORY_NONE),
                                "memory creation");
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    dnnl_primitive_desc_destroy(pd);
    return cs;
}

cb_status cb_blk_conv_create(cb_dnnl_ctx *ctx, const cb_conv_shape *s, int groups, int has_bias, int src_blocked,
                             const cb_blk_post *post, int npost, cb_blk_prim **out)
{
    cb_status st = new_prim(ctx, out);
    if (st == CB_OK && (st = conv_create(*out, s, groups, has_bias, src_blocked, post, npost)) != CB_OK) {
        cb_blk_prim_free(*out);
        *out = NULL;
    }
    return st;
}

static cb_status run(cb_blk_prim *p, const void *const *data, const char *what)
{
    dnnl_exec_arg_t args[6];
    for (int k = 0; k < p->nargs; k++) {
        void *h = p->kind[k] == DNNL_ARG_SCRATCHPAD ? cb_dnnl_ctx_scratchpad(p->ctx, p->scratch_bytes) : (void *)data[k];
        dnnl_memory_set_data_handle(p->mem[k], h);
        args[k] = (dnnl_exec_arg_t){p->kind[k], p->mem[k]};
    }
    TRY(dnnl_primitive_execute(p->prim, cb_dnnl_ctx_stream(p->ctx), p->nargs, args), what);
    return CB_OK;
}

static int weights_ready(const cb_blk_prim *p) { return p->wshared ? p->wshared->wready : p->wready; }

int cb_blk_conv_reads_weights(const cb_blk_prim *p, int keep_w) { return !keep_w || !weights_ready(p); }

cb_status cb_blk_conv_ready_weights(cb_blk_prim *p, const float *w, int keep_w)
{
    if (p->wshared) /* its source reorders them */
        return weights_ready(p) ? CB_OK
                                : cb_fail(CB_ERR_INVALID_ARG, "a convolution's shared weights were not made ready first");
    if (keep_w && p->wready) return CB_OK;
    dnnl_memory_set_data_handle(p->wplain, (void *)w);
    dnnl_memory_t wto = p->mem[1];
    dnnl_memory_set_data_handle(wto, p->wbuf);
    dnnl_exec_arg_t wargs[] = {{DNNL_ARG_FROM, p->wplain}, {DNNL_ARG_TO, wto}};
    TRY(dnnl_primitive_execute(p->wreorder, cb_dnnl_ctx_stream(p->ctx), 2, wargs), "weights reorder");
    p->wready = 1;
    return CB_OK;
}

int cb_blk_conv_share_weights(cb_blk_prim *p, const cb_blk_prim *from)
{
    const dnnl_memory_desc_t *a, *b;
    if (!from->wbuf || dnnl_memory_get_memory_desc(p->mem[1], &a) != dnnl_success ||
        dnnl_memory_get_memory_desc(from->mem[1], &b) != dnnl_success || !dnnl_memory_desc_equal(a, b))
        return 0;
    free(p->wbuf);
    p->wbuf = NULL;
    p->wshared = from;
    return 1;
}


cb_status cb_blk_conv_run(cb_blk_prim *p, const float *x, const float *w, const float *b, float *y, int keep_w)
{
    cb_status st = cb_blk_conv_ready_weights(p, w, keep_w);
    if (st != CB_OK) return st;
    const void *data[4] = {x, p->wshared ? p->wshared->wbuf : p->wbuf, y, b};
    return run(p, data, "convolution forward");
}

cb_status cb_blk_pool_create(cb_dnnl_ctx *ctx, const cb_conv_shape *s, int max, cb_blk_prim **out)
{
    cb_status cs = new_prim(ctx, out);
    if (cs != CB_OK) return cs;
    cb_blk_prim *p = *out;
    dnnl_memory_desc_t x, y;
    act_mds(s->n, s->c, s->h, s->w, 1, &x);
    act_mds(s->n, s->c, s->oh, s->ow, 1, &y);
    dnnl_dims_t stride = {s->sh, s->sw}, kernel = {s->kh, s->kw}, pad_l = {s->ph, s->pw},
                pad_r = {(int64_t)(s->oh - 1) * s->sh + s->kh - s->h - s->ph,
                         (int64_t)(s->ow - 1) * s->sw + s->kw - s->w - s->pw};
    const dnnl_alg_kind_t alg = max ? dnnl_pooling_max
                                : s->exclude_pad ? dnnl_pooling_avg_exclude_padding
                                                 : dnnl_pooling_avg_include_padding;
    dnnl_pooling_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    cs = check(dnnl_pooling_forward_desc_init(&d, dnnl_forward_inference, alg, &x, &y, stride, kernel, pad_l, pad_r),
               "pooling descriptor");
    dnnl_primitive_attr_t attr = NULL;
    if (cs == CB_OK) cs = lane_attr(ctx, &attr);
    if (cs == CB_OK) cs = check(dnnl_primitive_desc_create(&pd, &d, attr, cb_dnnl_ctx_engine(ctx), NULL), "pooling");
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (cs == CB_OK) cs = finish(p, pd);
    if (cs == CB_OK) cs = add_mem(p, DNNL_ARG_SRC, &x);
    if (cs == CB_OK) cs = add_mem(p, DNNL_ARG_DST, &y);
    if (cs == CB_OK) cs = add_scratch(p, pd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (cs != CB_OK) {
        cb_blk_prim_free(p);
        *out = NULL;
    }
    return cs;
}

cb_status cb_blk_pool_run(cb_blk_prim *p, const float *x, float *y)
{
    const void *data[2] = {x, y};
    return run(p, data, "pooling forward");
}

cb_status cb_blk_reorder_create(cb_dnnl_ctx *ctx, int n, int c, int h, int w, int to_plain, cb_blk_prim **out)
{
    cb_status cs = new_prim(ctx, out);
    if (cs != CB_OK) return cs;
    cb_blk_prim *p = *out;
    dnnl_memory_desc_t from, to;
    act_mds(n, c, h, w, to_plain, &from); /* blocked -> plain, or plain -> blocked */
    act_mds(n, c, h, w, !to_plain, &to);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_engine_t e = cb_dnnl_ctx_engine(ctx);
    dnnl_primitive_attr_t attr = NULL;
    cs = lane_attr(ctx, &attr);
    if (cs == CB_OK) cs = check(dnnl_reorder_primitive_desc_create(&pd, &from, e, &to, e, attr), "reorder");
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (cs == CB_OK) cs = finish(p, pd);
    if (cs == CB_OK) cs = add_mem(p, DNNL_ARG_FROM, &from);
    if (cs == CB_OK) cs = add_mem(p, DNNL_ARG_TO, &to);
    if (cs == CB_OK) cs = add_scratch(p, pd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (cs != CB_OK) {
        cb_blk_prim_free(p);
        *out = NULL;
    }
    return cs;
}

cb_status cb_blk_reorder_run(cb_blk_prim *p, const float *x, float *y)
{
    const void *data[2] = {x, y};
    return run(p, data, "reorder");
}

#else /* built without oneDNN: the rewrite never blocks a value */

int cb_blk_block(void) { return 0; }
int64_t cb_blk_padded(int64_t c) { return c; }
static cb_status none(void) { return cb_fail(CB_ERR_UNSUPPORTED, "this build has no oneDNN"); }
void cb_blk_prim_free(cb_blk_prim *p) { (void)p; }
cb_status cb_blk_conv_create(cb_dnnl_ctx *ctx, const cb_conv_shape *s, int groups, int has_bias, int src_blocked,
                             const cb_blk_post *post, int npost, cb_blk_prim **out)
{
    (void)ctx; (void)s; (void)groups; (void)has_bias; (void)src_blocked; (void)post; (void)npost;
    *out = NULL;
    return none();
}
cb_status cb_blk_conv_run(cb_blk_prim *p, const float *x, const float *w, const float *b, float *y, int keep_w)
{
    (void)p; (void)x; (void)w; (void)b; (void)y; (void)keep_w;
    return none();
}
int cb_blk_conv_reads_weights(const cb_blk_prim *p, int keep_w)
{
    (void)p; (void)keep_w;
    return 1;
}
cb_status cb_blk_conv_ready_weights(cb_blk_prim *p, const float *w, int keep_w)
{
    (void)p; (void)w; (void)keep_w;
    return none();
}
int cb_blk_conv_share_weights(cb_blk_prim *p, const cb_blk_prim *from)
{
    (void)p; (void)from;
    return 0;
}

cb_status cb_blk_pool_create(cb_dnnl_ctx *ctx, const cb_conv_shape *s, int max, cb_blk_prim **out)
{
    (void)ctx; (void)s; (void)max;
    *out = NULL;
    return none();
}
cb_status cb_blk_pool_run(cb_blk_prim *p, const float *x, float *y)
{
    (void)p; (void)x; (void)y;
    return none();
}
cb_status cb_blk_reorder_create(cb_dnnl_ctx *ctx, int n, int c, int h, int w, int to_plain, cb_blk_prim **out)
{
    (void)ctx; (void)n; (void)c; (void)h; (void)w; (void)to_plain;
    *out = NULL;
    return none();
}
cb_status cb_blk_reorder_run(cb_blk_prim *p, const float *x, float *y)
{
    (void)p; (void)x; (void)y;
    return none();
}
#endif

/* Elementwise steps on blocked values: the same layout on every operand,
 * so the plain loops serve; n counts the padded channels' floats too
 * (zeros, whose sum stays zero). */
void cb_blk_add(const float *a, const float *b, float *y, size_t n)
{
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t k = 0; k < n; k++) y[k] = a[k] + b[k];
}

void cb_blk_mul(const float *a, const float *b, float *y, size_t n)
{
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t k = 0; k < n; k++) y[k] = a[k] * b[k];
}

/* Each channel plane of a blocked [N, Cp/B, HW, B] value times its gate,
 * a plain [N, C]. Padded channels (zero) stay zero. */
void cb_blk_mul_gate(const float *x, const float *gate, float *y, int n, int c, int hw)
{
    const int B = cb_blk_block();
    const int64_t blocks = cb_blk_padded(c) / B, runs = (int64_t)n * blocks;
#pragma omp parallel for schedule(static) if (runs * hw * B > 65536)
    for (int64_t r = 0; r < runs; r++) {
        const int64_t s = r / blocks, c0 = r % blocks * B;
        float g[16];
        for (int l = 0; l < B; l++) g[l] = c0 + l < c ? gate[s * c + c0 + l] : 0.0f;
        const float *xr = x + r * hw * B;
        float *yr = y + r * hw * B;
        for (int64_t j = 0; j < hw; j++)
            for (int l = 0; l < B; l++) yr[j * B + l] = xr[j * B + l] * g[l];
    }
}

/* A batch normalisation on its own (at fused, or not right after a
 * convolution that could take it into its weights): the plain step's
 * x * scale + shift per channel, one block of channels at a time. */
static void scale_shift_blocks(const float *x, const float *coef, float *y, int64_t runs, int c, int hw, int B)
{
#pragma omp parallel for schedule(static) if (runs * hw * B > 65536)
    for (int64_t r = 0; r < runs; r++) { /* a run: one sample's block of B channels, hw x B floats */
        const int c0 = (int)(r % (c / B)) * B;
        const float *sc = coef + c0, *sh = coef + c + c0, *in = x + r * hw * B;
        float *out = y + r * hw * B;
        for (int j = 0; j < hw; j++)
            for (int k = 0; k < B; k++) out[j * B + k] = in[j * B + k] * sc[k] + sh[k];
    }
}

void cb_blk_scale_shift(const float *x, const float *coef, float *y, int n, int c, int hw)
{
    const int B = cb_blk_block();
    const int64_t runs = (int64_t)n * (c / B);
    if (B == 16) scale_shift_blocks(x, coef, y, runs, c, hw, 16); /* constant block sizes: the lanes vectorise */
    else scale_shift_blocks(x, coef, y, runs, c, hw, 8);
}

/* oneDNN's blocked max pooling took 5.1 ms per VGG-16 batch of 128 at its
 * first 2x2 layer (2-core AMD EPYC, AVX2) where the plain step takes 1.5:
 * one pass with the block's lanes as the vector. */
static void maxpool2x2_blocks(const float *x, float *y, int64_t planes, int h, int w, int B)
{
    const int oh = h / 2, ow = w / 2;
#pragma omp parallel for schedule(static) if (planes * oh * ow * B > 65536)
    for (int64_t pl = 0; pl < planes; pl++) { /* a plane: one sample's block of B channels */
        const float *in = x + pl * h * w * B;
        float *out = y + pl * oh * ow * B;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                const float *a = in + ((size_t)(2 * oy) * w + 2 * ox) * B, *b = a + (size_t)w * B;
                float *o = out + ((size_t)oy * ow + ox) * B;
                for (int k = 0; k < B; k += CB_VL) /* PyTorch's scan order */
                    v8_store(o + k, v8_max_nan(v8_max_nan(v8_max_nan(v8_load(a + k), v8_load(a + B + k)),
                                                          v8_load(b + k)),
                                               v8_load(b + B + k)));
            }
    }
}

void cb_blk_maxpool2x2(const float *x, float *y, int n, int c, int h, int w)
{
    const int B = cb_blk_block();
    const int64_t planes = (int64_t)n * (cb_blk_padded(c) / B); /* the padded block's zeros stay zero */
    if (B == 16) maxpool2x2_blocks(x, y, planes, h, w, 16);
    else maxpool2x2_blocks(x, y, planes, h, w, 8);
}

/* The per-plane means of a blocked [N, Cp/B, H, W, B] value into plain
 * [N, C]; double sums, as the plain step (op_pool.c), in the same order. */
void cb_blk_global_avgpool(const float *x, float *y, int n, int c, int hw)
{
    const int B = cb_blk_block();
    const int64_t planes = (int64_t)n * c, cp = cb_blk_padded(c);
#pragma omp parallel for schedule(static) if (planes * hw > 65536)
    for (int64_t pc = 0; pc < planes; pc++) {
        const int64_t s = pc / c, ch = pc % c;
        const float *base = x + ((s * cp + ch / B * B) * (int64_t)hw) + ch % B;
        double acc = 0;
        for (int64_t j = 0; j < hw; j++) acc += base[j * B];
        y[pc] = (float)(acc / (double)hw);
    }
}

/* Channel concatenation of blocked values: each input's blocks are one
 * contiguous run per sample. */
void cb_blk_concat(const float *const *xs, const int64_t *sample_floats, int k, float *y, int n)
{
    int64_t total = 0;
    for (int j = 0; j < k; j++) total += sample_floats[j];
#pragma omp parallel for schedule(static) if ((int64_t)n * total > 65536)
    for (int s = 0; s < n; s++) {
        float *dst = y + (int64_t)s * total;
        for (int j = 0; j < k; j++) {
            memcpy(dst, xs[j] + (int64_t)s * sample_floats[j], (size_t)sample_floats[j] * sizeof *dst);
            dst += sample_floats[j];
        }
    }
}
