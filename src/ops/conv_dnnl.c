/* Convolutions through oneDNN, the optional CPU kernel backend.
 *
 * Why: im2col + SGEMM moves every input value kh*kw times through memory;
 * for VGG-16's 64- to 512-channel 3x3 layers that caps the convolutions at
 * about 40% of this machine's SGEMM rate. oneDNN's JIT kernels work on
 * channel-blocked layouts (nChw16c and friends) without the lowering.
 *
 * The engine keeps its plain NCHW / OIHW tensors; each call reorders into
 * the layouts the primitive asked for, runs it and reorders back. The
 * blocked buffers belong to a context that the executor owns and that all
 * of its plans share (one convolution runs at a time). Gradients are added
 * to dx, dw and db, as the other backends do: the reorders back carry a
 * "sum" post-op.
 *
 * Built in where Debian's libdnnl-dev is installed (the Makefile defines
 * CB_HAVE_DNNL); CROSSBIND_CONV=blas turns it off at run time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops.h"

#include "crossbind/crossbind.h"

/* CROSSBIND_CONV: unset or empty (oneDNN where built in), "blas", "onednn"
 * (oneDNN, which must be built in), or something else (an error). */
typedef enum { CONV_AUTO, CONV_BLAS, CONV_ONEDNN, CONV_INVALID } conv_mode;

static conv_mode conv_mode_now(void)
{
    const char *v = getenv("CROSSBIND_CONV");
    if (!v || !*v) return CONV_AUTO;
    return !strcmp(v, "blas") ? CONV_BLAS : !strcmp(v, "onednn") ? CONV_ONEDNN : CONV_INVALID;
}

const char *cb_conv_backend(void)
{
    const char *v = cb_dnnl_version();
    if (!v) return "im2col + BLAS (built without oneDNN)";
    if (conv_mode_now() == CONV_BLAS) return "im2col + BLAS (oneDNN turned off by CROSSBIND_CONV=blas)";
    if (conv_mode_now() == CONV_INVALID) return "im2col + BLAS (CROSSBIND_CONV not understood)";
    return v;
}

cb_status cb_conv_backend_check(void)
{
    const conv_mode m = conv_mode_now();
    if (m == CONV_INVALID)
        return cb_fail(CB_ERR_INVALID_ARG, "CROSSBIND_CONV must be 'blas' or 'onednn', not '%s'",
                       getenv("CROSSBIND_CONV"));
    if (m == CONV_ONEDNN && !cb_dnnl_version())
        return cb_fail(CB_ERR_UNSUPPORTED, "CROSSBIND_CONV=onednn, but this build has no oneDNN "
                                           "(install libdnnl-dev and rebuild)");
    return CB_OK;
}

#ifdef CB_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>

static int conv_enabled(void)
{
    const conv_mode m = conv_mode_now();
    return m == CONV_AUTO || m == CONV_ONEDNN;
}

int cb_dnnl_enabled(void) { return conv_enabled(); }

/* Which passes of a layer oneDNN runs, by shape (a fixed rule, so that a
 * model's results do not depend on timings). Measured per pass at 2 threads
 * (LeNet per 12,800 samples, VGG-16 per batch of 128):
 *  - backward, data and weights: oneDNN everywhere it was tried (LeNet-5's
 *    second layer 403 -> 181 ms, VGG-16's 64-channel 32 x 32 layer 189 -> 98);
 *  - forward: oneDNN too (LeNet-5's second layer 102 -> 38 ms);
 *  - a single input channel (stride 1, 3 x 3 or 5 x 5 windows) stays on
 *    crossbind's direct kernels both ways: forward 67 vs 72 ms, weight
 *    gradient 60 vs 83 ms (LeNet-5's first layer);
 *  - a window covering the whole input is a matrix product both ways, never
 *    oneDNN's (LeNet-5's third layer: forward 14 vs 42 ms, backward 19 vs
 *    74 ms);
 *  - layers whose every output sees the whole input plane (VGG-16's 2 x 2
 *    layers, batches of 64 or more) are one dense product each way
 *    (conv_dense.c), never oneDNN's;
 *  - layers under 1e5 FLOPs per sample stay on crossbind's kernels, where
 *    the reorders would cost more than the product. */
#define DNNL_MIN_FLOPS 1e5

enum { BUF_SRC, BUF_WEI, BUF_DST, BUF_DST2, BUF_DWEI, BUF_SCRATCH, BUF_COUNT };

struct cb_dnnl_ctx {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    void *buf[BUF_COUNT];
    size_t cap[BUF_COUNT];
    /* A lane's context (cb_dnnl_ctx_create_lane): its primitives take their
     * scratchpad from buf[BUF_SCRATCH], not oneDNN's per-thread global one,
     * which belongs to the thread that made them and would be shared by
     * two lanes running at once. */
    int user_scratch;
};

/* A memory object whose data pointer is set at each call. */
typedef struct {
    dnnl_memory_desc_t md;
    dnnl_memory_t mem;
} cb_dnnl_mem;

/* A reorder between a plain tensor and a primitive's layout; prim is NULL
 * where the two layouts are the same and the plain buffer is used as is. */
typedef struct {
    dnnl_primitive_t prim;
    cb_dnnl_mem from, to;
} cb_dnnl_reorder;

struct cb_dnnl_conv {
    cb_dnnl_ctx *ctx;
    cb_conv_shape s;
    int has_bias;
    dnnl_memory_desc_t x_md, w_md, y_md, b_md;
    dnnl_primitive_desc_t fwd_pd;
    dnnl_primitive_t fwd;
    cb_dnnl_reorder fx, fw, fy;              /* x in, w in, y out */
    cb_dnnl_mem fb;
    /* backward, made at the first backward call */
    int bwd_ready;
    int blas_dw; /* the weight gradient comes from crossbind's kernels (own_dw_better) */
    dnnl_primitive_t bwd_data, bwd_wei;
    cb_dnnl_reorder bd_dy, bd_w, bd_dx;      /* dy in, w in, dx out (+=) */
    cb_dnnl_reorder bd_dx_set;               /* dx out (=), for a dx this layer alone makes */
    cb_dnnl_reorder bw_x, bw_dy, bw_dw;      /* x in, dy in, dw out (+=) */
    cb_dnnl_mem bw_db;
    float *db_tmp;
};

static cb_status dnnl_check(dnnl_status_t st, const char *what)
{
    if (st == dnnl_success) return CB_OK;
    if (st == dnnl_out_of_memory) return cb_fail(CB_ERR_NOMEM, "oneDNN: out of memory in %s", what);
    return cb_fail(CB_ERR_UNSUPPORTED, "oneDNN: %s failed (status %d)", what, (int)st);
}
#define TRY(call, what) do { cb_status st_ = dnnl_check((call), (what)); if (st_ != CB_OK) return st_; } while (0)

/* oneDNN 2.6's backward-weights kernel reached 77 GFLOP/s on VGG-16's 2 x 2
 * layers (its forward 200); one product over the batch's lowered input does
 * better there. On 4 x 4 planes oneDNN was already the faster (per step, the
 * last five layers' backward: 265-295 ms with 2 x 2 on BLAS, 299-310 with
 * 4 x 4 too, 311-326 with none). */
#define BLAS_DW_MAX_PLANE 4

/* The weight gradient from crossbind's kernels (cb_conv2d_bwd_fast): the
 * BLAS product on 2 x 2 planes, the direct kernel on the LeNets' small
 * layers (LeNet-1's second layer's whole backward per 12,800 samples:
 * 194 ms all-oneDNN, 115-137 ms so). */
static int own_dw_better(const cb_conv_shape *s)
{
    return s->oh * s->ow <= BLAS_DW_MAX_PLANE || cb_conv2d_wgrad_direct_ok(s);
}

int cb_dnnl_conv_use(const cb_conv_shape *s)
{
    if (!conv_enabled()) return 0;
    double flops = 2.0 * s->oc * s->oh * s->ow * (double)s->c * s->kh * s->kw;
    if (flops < DNNL_MIN_FLOPS) return 0;
    if (cb_conv2d_matrix_product(s)) return 0; /* a matrix product both ways */
    if (s->c == 1 && cb_conv2d_wgrad_direct_ok(s)) return 0; /* crossbind's direct kernels both ways */
    const int own_bwd = cb_conv2d_bwd_nb_ok(s) || (cb_conv2d_wgrad_direct_ok(s) && cb_conv2d_dgrad_own(s));
    return (own_bwd ? 0 : CB_DNNL_BWD) | (s->c > 1 ? CB_DNNL_FWD : 0);
}

const char *cb_dnnl_version(void)
{
    static char text[48];
    const dnnl_version_t *v = dnnl_version();
    snprintf(text, sizeof text, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
    return text;
}

cb_status cb_dnnl_ctx_create(cb_dnnl_ctx **out)
{
    *out = NULL;
    cb_dnnl_ctx *c = calloc(1, sizeof *c);
    if (!c) return cb_fail(CB_ERR_NOMEM, "out of memory creating the oneDNN context");
    cb_status st = dnnl_check(dnnl_engine_create(&c->engine, dnnl_cpu, 0), "engine creation");
    if (st == CB_OK) st = dnnl_check(dnnl_stream_create(&c->stream, c->engine, dnnl_stream_default_flags),
                                     "stream creation");
    if (st != CB_OK) {
        cb_dnnl_ctx_free(c);
        return st;
    }
    *out = c;
    return CB_OK;
}

cb_status cb_dnnl_ctx_create_lane(cb_dnnl_ctx **out)
{
    cb_status st = cb_dnnl_ctx_create(out);
    if (st == CB_OK) (*out)->user_scratch = 1;
    return st;
}

int cb_dnnl_ctx_user_scratchpad(const cb_dnnl_ctx *c) { return c->user_scratch; }


void cb_dnnl_ctx_free(cb_dnnl_ctx *c)
{
    if (!c) return;
    for (int i = 0; i < BUF_COUNT; i++) free(c->buf[i]);
    if (c->stream) dnnl_stream_destroy(c->stream);
    if (c->engine) dnnl_engine_destroy(c->engine);
    free(c);
}

/* The engine and stream the blocked-layout primitives (dnnl_blocked.c) share. */
struct dnnl_engine *cb_dnnl_ctx_engine(cb_dnnl_ctx *c) { return c->engine; }
struct dnnl_stream *cb_dnnl_ctx_stream(cb_dnnl_ctx *c) { return c->stream; }

/* A shared buffer of at least `bytes`, grown (never shrunk) on demand. */
static void *ctx_buf(cb_dnnl_ctx *c, int slot, size_t bytes)
{
    if (c->cap[slot] < bytes) {
        free(c->buf[slot]);
        bytes = (bytes + 63) & ~(size_t)63;
        c->buf[slot] = aligned_alloc(64, bytes);
        c->cap[slot] = c->buf[slot] ? bytes : 0;
    }
    return c->buf[slot];
}

void *cb_dnnl_ctx_scratchpad(cb_dnnl_ctx *c, size_t bytes) { return ctx_buf(c, BUF_SCRATCH, bytes); }

static dnnl_status_t mem_init(cb_dnnl_mem *m, const dnnl_memory_desc_t *md, dnnl_engine_t e)
{
    m->md = *md;
    return dnnl_memory_create(&m->mem, md, e, DNNL_MEMORY_NONE);
}

static void mem_free(cb_dnnl_mem *m)
{
    if (m->mem) dnnl_memory_destroy(m->mem);
    m->mem = NULL;
}

/* A reorder from `from` to `to`; accumulate: add into the destination. */
static cb_status reorder_init(cb_dnnl_reorder *r, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to,
                              int accumulate, dnnl_engine_t e)
{
    memset(r, 0, sizeof *r);
    TRY(mem_init(&r->from, from, e), "memory creation");
    TRY(mem_init(&r->to, to, e), "memory creation");
    if (!accumulate && dnnl_memory_desc_equal(from, to)) return CB_OK;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    if (accumulate) {
        TRY(dnnl_primitive_attr_create(&attr), "attribute creation");
        TRY(dnnl_post_ops_create(&po), "post-op creation");
        TRY(dnnl_post_ops_append_sum(po, 1.0f), "sum post-op");
        TRY(dnnl_primitive_attr_set_post_ops(attr, po), "setting post-ops");
    }
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, from, e, to, e, attr);
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    TRY(st, "reorder");
    st = dnnl_primitive_create(&r->prim, pd);
    dnnl_primitive_desc_destroy(pd);
    return dnnl_check(st, "reorder creation");
}

static void reorder_free(cb_dnnl_reorder *r)
{
    if (r->prim) dnnl_primitive_destroy(r->prim);
    mem_free(&r->from);
    mem_free(&r->to);
    r->prim = NULL;
}

/* Runs r from `src`; returns where the converted data is: `dst` (or src
 * itself where no reorder is needed). */
static cb_status reorder_run(cb_dnnl_ctx *c, cb_dnnl_reorder *r, const void *src, void *dst, const void **where)
{
    if (!r->prim) {
        *where = src;
        return CB_OK;
    }
    dnnl_memory_set_data_handle(r->from.mem, (void *)src);
    dnnl_memory_set_data_handle(r->to.mem, dst);
    dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, r->from.mem}, {DNNL_ARG_TO, r->to.mem}};
    TRY(dnnl_primitive_execute(r->prim, c->stream, 2, args), "reorder");
    if (where) *where = dst;
    return CB_OK;
}

static void plain_mds(cb_dnnl_conv *p)
{
    const cb_conv_shape *s = &p->s;
    dnnl_dims_t x = {s->n, s->c, s->h, s->w}, w = {s->oc, s->c, s->kh, s->kw}, y = {s->n, s->oc, s->oh, s->ow},
                b = {s->oc};
    dnnl_memory_desc_init_by_tag(&p->x_md, 4, x, dnnl_f32, dnnl_nchw);
    dnnl_memory_desc_init_by_tag(&p->w_md, 4, w, dnnl_f32, dnnl_oihw);
    dnnl_memory_desc_init_by_tag(&p->y_md, 4, y, dnnl_f32, dnnl_nchw);
    dnnl_memory_desc_init_by_tag(&p->b_md, 1, b, dnnl_f32, dnnl_x);
}

/* The padding on the far side that makes oh/ow come out (PyTorch floors). */
static void conv_geometry(const cb_conv_shape *s, dnnl_dims_t stride, dnnl_dims_t pad_l, dnnl_dims_t pad_r)
{
    stride[0] = s->sh;
    stride[1] = s->sw;
    pad_l[0] = s->ph;
    pad_l[1] = s->pw;
    pad_r[0] = (int64_t)(s->oh - 1) * s->sh + s->kh - s->h - s->ph;
    pad_r[1] = (int64_t)(s->ow - 1) * s->sw + s->kw - s->w - s->pw;
}

/* x, w and y with the layout left to the primitive (it picks the fastest). */
static void any_layout(const cb_dnnl_conv *p, dnnl_memory_desc_t *x, dnnl_memory_desc_t *w, dnnl_memory_desc_t *y)
{
    dnnl_memory_desc_init_by_tag(x, 4, p->x_md.dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(w, 4, p->w_md.dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(y, 4, p->y_md.dims, dnnl_f32, dnnl_format_tag_any);
}

static dnnl_alg_kind_t eltwise_of(cb_act act)
{
    return act == CB_ACT_RELU ? dnnl_eltwise_relu : act == CB_ACT_TANH ? dnnl_eltwise_tanh : dnnl_eltwise_logistic;
}

static cb_status plan_forward(cb_dnnl_conv *p, cb_act act)
{
    const cb_conv_shape *s = &p->s;
    dnnl_engine_t e = p->ctx->engine;
    dnnl_dims_t stride, pad_l, pad_r;
    conv_geometry(s, stride, pad_l, pad_r);
    dnnl_memory_desc_t xa, wa, ya;
    any_layout(p, &xa, &wa, &ya);
    /* forward_training in inference too: oneDNN 2.6 then picks its
     * channel-blocked JIT kernel, for forward_inference its NHWC brgemm one,
     * which ran VGG-16's 2 x 2 layers in 28 ms instead of 12 (batch 128). */
    dnnl_convolution_desc_t cd;
    TRY(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_training,
                                           dnnl_convolution_direct, &xa, &wa, p->has_bias ? &p->b_md : NULL, &ya,
                                           stride, pad_l, pad_r),
        "convolution descriptor");
    dnnl_primitive_attr_t attr = NULL;
    if (act != CB_ACT_NONE) {
        dnnl_post_ops_t po;
        TRY(dnnl_primitive_attr_create(&attr), "attribute creation");
        TRY(dnnl_post_ops_create(&po), "post-op creation");
        TRY(dnnl_post_ops_append_eltwise(po, 1.0f, eltwise_of(act), 0.0f, 0.0f), "activation post-op");
        TRY(dnnl_primitive_attr_set_post_ops(attr, po), "setting post-ops");
        dnnl_post_ops_destroy(po);
    }
    dnnl_status_t st = dnnl_primitive_desc_create(&p->fwd_pd, &cd, attr, e, NULL);
    if (attr) dnnl_primitive_attr_destroy(attr);
    TRY(st, "convolution forward");
    TRY(dnnl_primitive_create(&p->fwd, p->fwd_pd), "convolution forward creation");
    cb_status cs;
    if ((cs = reorder_init(&p->fx, &p->x_md, dnnl_primitive_desc_query_md(p->fwd_pd, dnnl_query_src_md, 0), 0, e)))
        return cs;
    if ((cs = reorder_init(&p->fw, &p->w_md, dnnl_primitive_desc_query_md(p->fwd_pd, dnnl_query_weights_md, 0), 0, e)))
        return cs;
    if ((cs = reorder_init(&p->fy, dnnl_primitive_desc_query_md(p->fwd_pd, dnnl_query_dst_md, 0), &p->y_md, 0, e)))
        return cs;
    TRY(mem_init(&p->fb, &p->b_md, e), "memory creation");
    return CB_OK;
}

cb_status cb_dnnl_conv_create(cb_dnnl_ctx *ctx, const cb_conv_shape *s, int has_bias, cb_act act,
                              cb_dnnl_conv **out)
{
    *out = NULL;
    cb_dnnl_conv *p = calloc(1, sizeof *p);
    if (!p) return cb_fail(CB_ERR_NOMEM, "out of memory planning a oneDNN convolution");
    p->ctx = ctx;
    p->s = *s;
    p->has_bias = has_bias;
    plain_mds(p);
    cb_status st = plan_forward(p, act);
    if (st != CB_OK) {
        cb_dnnl_conv_free(p);
        return st;
    }
    *out = p;
    return CB_OK;
}

int cb_dnnl_conv_batch(const cb_dnnl_conv *p) { return p->s.n; }

static size_t md_bytes(const cb_dnnl_mem *m) { return dnnl_memory_desc_get_size(&m->md); }

/* Runs a convolution primitive on three tensors (argument kind, memory
 * object, data) and, where bias is not NULL, a fourth. */
typedef struct {
    int kind;
    cb_dnnl_mem *mem;
    const void *data;
} conv_arg;

static cb_status run_prim(cb_dnnl_ctx *c, dnnl_primitive_t prim, const char *what, const conv_arg a[3],
                          const conv_arg *bias)
{
    dnnl_exec_arg_t args[4];
    int n = 0;
    for (int k = 0; k < 4; k++) {
        const conv_arg *x = k < 3 ? &a[k] : bias;
        if (!x) break;
        dnnl_memory_set_data_handle(x->mem->mem, (void *)x->data);
        args[n++] = (dnnl_exec_arg_t){x->kind, x->mem->mem};
    }
    TRY(dnnl_primitive_execute(prim, c->stream, n, args), what);
    return CB_OK;
}

cb_status cb_dnnl_conv_fwd(cb_dnnl_conv *p, const float *x, const float *w, const float *b, float *y)
{
    cb_dnnl_ctx *c = p->ctx;
    const void *xs, *ws;
    void *xb = p->fx.prim ? ctx_buf(c, BUF_SRC, md_bytes(&p->fx.to)) : NULL;
    void *wb = p->fw.prim ? ctx_buf(c, BUF_WEI, md_bytes(&p->fw.to)) : NULL;
    void *yb = p->fy.prim ? ctx_buf(c, BUF_DST, md_bytes(&p->fy.from)) : y;
    if ((p->fx.prim && !xb) || (p->fw.prim && !wb) || !yb)
        return cb_fail(CB_ERR_NOMEM, "out of memory for oneDNN's convolution buffers");
    cb_status st;
    if ((st = reorder_run(c, &p->fx, x, xb, &xs)) || (st = reorder_run(c, &p->fw, w, wb, &ws))) return st;
    const conv_arg args[3] = {{DNNL_ARG_SRC, &p->fx.to, xs}, {DNNL_ARG_WEIGHTS, &p->fw.to, ws},
                              {DNNL_ARG_DST, &p->fy.from, yb}},
                   bias = {DNNL_ARG_BIAS, &p->fb, b};
    if ((st = run_prim(c, p->fwd, "convolution forward", args, p->has_bias ? &bias : NULL))) return st;
    if (p->fy.prim) return reorder_run(c, &p->fy, yb, y, NULL);
    return CB_OK;
}

static cb_status plan_backward(cb_dnnl_conv *p)
{
    const cb_conv_shape *s = &p->s;
    dnnl_engine_t e = p->ctx->engine;
    dnnl_dims_t stride, pad_l, pad_r;
    conv_geometry(s, stride, pad_l, pad_r);
    dnnl_memory_desc_t xa, wa, ya;
    any_layout(p, &xa, &wa, &ya);
    dnnl_convolution_desc_t dd, wd;
    dnnl_primitive_desc_t dpd = NULL, wpd = NULL;
    TRY(dnnl_convolution_backward_data_desc_init(&dd, dnnl_convolution_direct, &xa, &wa, &ya, stride, pad_l, pad_r),
        "convolution backward-data descriptor");
    TRY(dnnl_primitive_desc_create(&dpd, &dd, NULL, e, p->fwd_pd), "convolution backward data");
    p->blas_dw = own_dw_better(s);
    dnnl_status_t st = dnnl_primitive_create(&p->bwd_data, dpd);
    if (st == dnnl_success && !p->blas_dw)
        st = dnnl_convolution_backward_weights_desc_init(&wd, dnnl_convolution_direct, &xa, &wa,
                                                         p->has_bias ? &p->b_md : NULL, &ya, stride, pad_l, pad_r);
    if (st == dnnl_success && !p->blas_dw) st = dnnl_primitive_desc_create(&wpd, &wd, NULL, e, p->fwd_pd);
    if (st == dnnl_success && !p->blas_dw) st = dnnl_primitive_create(&p->bwd_wei, wpd);
    cb_status cs = dnnl_check(st, "convolution backward");
    if (cs == CB_OK) cs = reorder_init(&p->bd_dy, &p->y_md, dnnl_primitive_desc_query_md(dpd, dnnl_query_diff_dst_md, 0), 0, e);
    if (cs == CB_OK) cs = reorder_init(&p->bd_w, &p->w_md, dnnl_primitive_desc_query_md(dpd, dnnl_query_weights_md, 0), 0, e);
    if (cs == CB_OK) cs = reorder_init(&p->bd_dx, dnnl_primitive_desc_query_md(dpd, dnnl_query_diff_src_md, 0), &p->x_md, 1, e);
    if (cs == CB_OK) cs = reorder_init(&p->bd_dx_set, dnnl_primitive_desc_query_md(dpd, dnnl_query_diff_src_md, 0), &p->x_md, 0, e);
    if (dpd) dnnl_primitive_desc_destroy(dpd);
    if (cs != CB_OK || p->blas_dw) { /* failed, or no backward-weights primitive to wire */
        if (wpd) dnnl_primitive_desc_destroy(wpd);
        p->bwd_ready = cs == CB_OK;
        return cs;
    }
    cs = reorder_init(&p->bw_x, &p->x_md, dnnl_primitive_desc_query_md(wpd, dnnl_query_src_md, 0), 0, e);
    if (cs == CB_OK) cs = reorder_init(&p->bw_dy, &p->y_md, dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_dst_md, 0), 0, e);
    if (cs == CB_OK) cs = reorder_init(&p->bw_dw, dnnl_primitive_desc_query_md(wpd, dnnl_query_diff_weights_md, 0), &p->w_md, 1, e);
    if (cs == CB_OK) cs = dnnl_check(mem_init(&p->bw_db, &p->b_md, e), "memory creation");
    if (cs == CB_OK && p->has_bias && !(p->db_tmp = malloc((size_t)s->oc * sizeof(float))))
        cs = cb_fail(CB_ERR_NOMEM, "out of memory planning a oneDNN convolution");
    if (wpd) dnnl_primitive_desc_destroy(wpd);
    if (cs == CB_OK) p->bwd_ready = 1;
    return cs;
}

/* dx may be NULL (the input needs no gradient); dw and db are added to, dx
 * too unless store_dx (a dx this layer alone makes: stored, it need not be
 * cleared first, and the reorder back does not read it);
 * ws: cb_conv2d_workspace floats, for the layers whose weight gradient the
 * BLAS product computes. */
cb_status cb_dnnl_conv_bwd(cb_dnnl_conv *p, const float *x, const float *w, const float *dy, float *dx, float *dw,
                           float *db, float *ws, int store_dx)
{
    cb_status st;
    if (!p->bwd_ready && (st = plan_backward(p)) != CB_OK) return st;
    cb_dnnl_ctx *c = p->ctx;
    const void *dy_blocked = NULL; /* dy in bwd_data's layout, reused where bwd_wei wants the same */
    if (dx) { /* diff_src = conv_bwd_data(diff_dst, w); dx += diff_src */
        const void *dys, *wsrc;
        void *dyb = p->bd_dy.prim ? ctx_buf(c, BUF_DST, md_bytes(&p->bd_dy.to)) : NULL;
        void *wb = p->bd_w.prim ? ctx_buf(c, BUF_WEI, md_bytes(&p->bd_w.to)) : NULL;
        /* Stored into dx, in its own layout the primitive writes dx itself. */
        cb_dnnl_reorder *out = store_dx ? &p->bd_dx_set : &p->bd_dx;
        void *dxb = out->prim ? ctx_buf(c, BUF_SRC, md_bytes(&p->bd_dx.from)) : dx;
        if ((p->bd_dy.prim && !dyb) || (p->bd_w.prim && !wb) || !dxb)
            return cb_fail(CB_ERR_NOMEM, "out of memory for oneDNN's convolution buffers");
        if ((st = reorder_run(c, &p->bd_dy, dy, dyb, &dys)) || (st = reorder_run(c, &p->bd_w, w, wb, &wsrc))) return st;
        const conv_arg args[3] = {{DNNL_ARG_DIFF_DST, &p->bd_dy.to, dys}, {DNNL_ARG_WEIGHTS, &p->bd_w.to, wsrc},
                                  {DNNL_ARG_DIFF_SRC, &p->bd_dx.from, dxb}};
        if ((st = run_prim(c, p->bwd_data, "convolution backward data", args, NULL)) ||
            (out->prim && (st = reorder_run(c, out, dxb, dx, NULL))))
            return st;
        dy_blocked = dys;
    }
    if (!dw && !db) return CB_OK;
    if (p->blas_dw) {
        cb_conv2d_bwd_fast(&p->s, x, w, dy, NULL, dw, db, ws);
        return CB_OK;
    }
    /* diff_weights (and diff_bias) = conv_bwd_weights(src, diff_dst); dw += diff_weights */
    const void *xs, *dys;
    void *xb = p->bw_x.prim ? ctx_buf(c, BUF_SRC, md_bytes(&p->bw_x.to)) : NULL;
    const int dy_reuse = dy_blocked && dnnl_memory_desc_equal(&p->bd_dy.to.md, &p->bw_dy.to.md);
    void *dyb = p->bw_dy.prim && !dy_reuse ? ctx_buf(c, BUF_DST2, md_bytes(&p->bw_dy.to)) : NULL;
    void *dwb = ctx_buf(c, BUF_DWEI, md_bytes(&p->bw_dw.from));
    if ((p->bw_x.prim && !xb) || (p->bw_dy.prim && !dy_reuse && !dyb) || !dwb)
        return cb_fail(CB_ERR_NOMEM, "out of memory for oneDNN's convolution buffers");
    if ((st = reorder_run(c, &p->bw_x, x, xb, &xs))) return st;
    if (dy_reuse) dys = dy_blocked;
    else if ((st = reorder_run(c, &p->bw_dy, dy, dyb, &dys))) return st;
    const conv_arg args[3] = {{DNNL_ARG_SRC, &p->bw_x.to, xs}, {DNNL_ARG_DIFF_DST, &p->bw_dy.to, dys},
                              {DNNL_ARG_DIFF_WEIGHTS, &p->bw_dw.from, dwb}},
                   bias = {DNNL_ARG_DIFF_BIAS, &p->bw_db, p->db_tmp};
    if ((st = run_prim(c, p->bwd_wei, "convolution backward weights", args, p->has_bias ? &bias : NULL)))
        return st;
    if (dw && (st = reorder_run(c, &p->bw_dw, dwb, dw, NULL))) return st;
    if (db && p->has_bias)
        for (int o = 0; o < p->s.oc; o++) db[o] += p->db_tmp[o];
    return CB_OK;
}

void cb_dnnl_conv_free(cb_dnnl_conv *p)
{
    if (!p) return;
    if (p->fwd) dnnl_primitive_destroy(p->fwd);
    if (p->fwd_pd) dnnl_primitive_desc_destroy(p->fwd_pd);
    reorder_free(&p->fx);
    reorder_free(&p->fw);
    reorder_free(&p->fy);
    mem_free(&p->fb);
    if (p->bwd_data) dnnl_primitive_destroy(p->bwd_data);
    if (p->bwd_wei) dnnl_primitive_destroy(p->bwd_wei);
    reorder_free(&p->bd_dy);
    reorder_free(&p->bd_w);
    reorder_free(&p->bd_dx);
    reorder_free(&p->bd_dx_set);
    reorder_free(&p->bw_x);
    reorder_free(&p->bw_dy);
    reorder_free(&p->bw_dw);
    mem_free(&p->bw_db);
    free(p->db_tmp);
    free(p);
}

#else /* built without oneDNN: nothing is ever planned */

int cb_dnnl_conv_use(const cb_conv_shape *s) { (void)s; return 0; }
int cb_dnnl_enabled(void) { return 0; }
const char *cb_dnnl_version(void) { return NULL; }
cb_status cb_dnnl_ctx_create(cb_dnnl_ctx **out)
{
    *out = NULL;
    return cb_fail(CB_ERR_UNSUPPORTED, "this build has no oneDNN (install libdnnl-dev and rebuild)");
}
void cb_dnnl_ctx_free(cb_dnnl_ctx *c) { (void)c; }
cb_status cb_dnnl_ctx_create_lane(cb_dnnl_ctx **out) { return cb_dnnl_ctx_create(out); }
int cb_dnnl_ctx_user_scratchpad(const cb_dnnl_ctx *c)
{
    (void)c;
    return 0;
}
void *cb_dnnl_ctx_scratchpad(cb_dnnl_ctx *c, size_t bytes)
{
    (void)c; (void)bytes;
    return NULL;
}

cb_status cb_dnnl_conv_create(cb_dnnl_ctx *ctx, const cb_conv_shape *s, int has_bias, cb_act act,
                              cb_dnnl_conv **out)
{
    (void)ctx; (void)s; (void)has_bias; (void)act;
    *out = NULL;
    return cb_fail(CB_ERR_UNSUPPORTED, "this build has no oneDNN (install libdnnl-dev and rebuild)");
}
int cb_dnnl_conv_batch(const cb_dnnl_conv *p) { (void)p; return 0; }
cb_status cb_dnnl_conv_fwd(cb_dnnl_conv *p, const float *x, const float *w, const float *b, float *y)
{
    (void)p; (void)x; (void)w; (void)b; (void)y;
    return cb_fail(CB_ERR_UNSUPPORTED, "this build has no oneDNN");
}
cb_status cb_dnnl_conv_bwd(cb_dnnl_conv *p, const float *x, const float *w, const float *dy, float *dx, float *dw,
                           float *db, float *ws, int store_dx)
{
    (void)p; (void)x; (void)w; (void)dy; (void)dx; (void)dw; (void)db; (void)ws; (void)store_dx;
    return cb_fail(CB_ERR_UNSUPPORTED, "this build has no oneDNN");
}
void cb_dnnl_conv_free(cb_dnnl_conv *p) { (void)p; }
#endif
