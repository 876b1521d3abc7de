/* Every op: fast kernel against reference kernel, and gradients against
 * central finite differences through the executor. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "../src/ops/ops.h"

static void fill(float *p, size_t n, cb_rng *r, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * (float)cb_rng_uniform(r);
}

static float *alloc0(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

/* A convolution's shape (oh, ow completed) and its tensors: inputs filled
 * from `seed` (weights in [-wmax, wmax]), the rest zero; *1 for the
 * reference kernels, *2 for the kernels under test. */
typedef struct {
    cb_conv_shape s;
    size_t nx, nw, ny;
    float *x, *w, *b, *dy, *y1, *y2, *dx1, *dx2, *dw1, *dw2, *db1, *db2;
} conv_bufs;

static conv_bufs conv_bufs_make(cb_conv_shape s, uint64_t seed, float wmax)
{
    conv_bufs t = {.s = s};
    t.s.oh = (s.h + 2 * s.ph - s.kh) / s.sh + 1;
    t.s.ow = (s.w + 2 * s.pw - s.kw) / s.sw + 1;
    t.nx = (size_t)s.n * s.c * s.h * s.w;
    t.nw = (size_t)s.oc * s.c * s.kh * s.kw;
    t.ny = (size_t)s.n * s.oc * t.s.oh * t.s.ow;
    t.x = alloc0(t.nx), t.w = alloc0(t.nw), t.b = alloc0(s.oc), t.dy = alloc0(t.ny);
    t.y1 = alloc0(t.ny), t.y2 = alloc0(t.ny), t.dx1 = alloc0(t.nx), t.dx2 = alloc0(t.nx);
    t.dw1 = alloc0(t.nw), t.dw2 = alloc0(t.nw), t.db1 = alloc0(s.oc), t.db2 = alloc0(s.oc);
    cb_rng r;
    cb_rng_seed(&r, seed);
    fill(t.x, t.nx, &r, -1, 1);
    fill(t.w, t.nw, &r, -wmax, wmax);
    fill(t.b, s.oc, &r, -1, 1);
    fill(t.dy, t.ny, &r, -1, 1);
    return t;
}

/* Gradients are added to what the buffers hold: both sides start from the
 * same random values. */
static void conv_bufs_prefill_grads(conv_bufs *t, uint64_t seed)
{
    cb_rng r;
    cb_rng_seed(&r, seed);
    fill(t->dx1, t->nx, &r, -1, 1);
    fill(t->dw1, t->nw, &r, -1, 1);
    fill(t->db1, t->s.oc, &r, -1, 1);
    memcpy(t->dx2, t->dx1, t->nx * sizeof *t->dx2);
    memcpy(t->dw2, t->dw1, t->nw * sizeof *t->dw2);
    memcpy(t->db2, t->db1, (size_t)t->s.oc * sizeof *t->db2);
}

static void conv_bufs_free(conv_bufs *t)
{
    float *all[] = {t->x, t->w, t->b, t->dy, t->y1, t->y2, t->dx1, t->dx2, t->dw1, t->dw2, t->db1, t->db2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

static void conv_case(cb_conv_shape shape)
{
    conv_bufs t = conv_bufs_make(shape, 7, 1.0f);
    const cb_conv_shape s = t.s;
    float *ws = alloc0(cb_conv2d_workspace(&s));
    cb_conv2d_fwd_ref(&s, t.x, t.w, t.b, t.y1);
    cb_conv2d_fwd_fast(&s, t.x, t.w, t.b, CB_ACT_NONE, t.y2, ws);
    check_close("conv forward", t.y2, t.y1, (int64_t)t.ny, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
    conv_bufs_prefill_grads(&t, 8);
    cb_conv2d_bwd_ref(&s, t.x, t.w, t.dy, t.dx1, t.dw1, t.db1);
    cb_conv2d_bwd_fast(&s, t.x, t.w, t.dy, t.dx2, t.dw2, t.db2, ws);
    check_close("conv dx", t.dx2, t.dx1, (int64_t)t.nx, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
    check_close("conv dw", t.dw2, t.dw1, (int64_t)t.nw, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
    check_close("conv db", t.db2, t.db1, s.oc, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
    free(ws);
    conv_bufs_free(&t);
}

TEST(conv_fast_matches_reference)
{
    conv_case((cb_conv_shape){.n = 3, .c = 3, .h = 9, .w = 7, .oc = 4, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1});
    conv_case((cb_conv_shape){.n = 4, .c = 1, .h = 28, .w = 28, .oc = 6, .kh = 5, .kw = 5, .sh = 1, .sw = 1, .ph = 2, .pw = 2});
    conv_case((cb_conv_shape){.n = 2, .c = 5, .h = 6, .w = 6, .oc = 3, .kh = 1, .kw = 1, .sh = 1, .sw = 1, .ph = 0, .pw = 0});
    conv_case((cb_conv_shape){.n = 2, .c = 2, .h = 5, .w = 8, .oc = 2, .kh = 3, .kw = 3, .sh = 1, .sw = 3, .ph = 2, .pw = 2});
    /* The direct kernel's tilings: across channels (OC = 8, 16, 24, with
     * pixel remainders), across rows (1, 2, 3 and 4+ vectors per row, channel
     * remainders), rectangular windows and unequal padding. */
    conv_case((cb_conv_shape){.n = 3, .c = 6, .h = 14, .w = 14, .oc = 16, .kh = 5, .kw = 5, .sh = 1, .sw = 1});
    conv_case((cb_conv_shape){.n = 2, .c = 3, .h = 9, .w = 17, .oc = 24, .kh = 3, .kw = 2, .sh = 1, .sw = 1, .ph = 1, .pw = 0});
    conv_case((cb_conv_shape){.n = 2, .c = 2, .h = 7, .w = 11, .oc = 8, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1});
    conv_case((cb_conv_shape){.n = 2, .c = 2, .h = 6, .w = 45, .oc = 7, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1});
    conv_case((cb_conv_shape){.n = 2, .c = 1, .h = 8, .w = 20, .oc = 5, .kh = 2, .kw = 4, .sh = 1, .sw = 1, .ph = 0, .pw = 2});
    conv_case((cb_conv_shape){.n = 2, .c = 2, .h = 8, .w = 13, .oc = 13, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1});
    conv_case((cb_conv_shape){.n = 2, .c = 2, .h = 8, .w = 8, .oc = 14, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1});
    /* The small-convolution backward over many chunks per thread, the batch
     * split unevenly (LeNet-5's second layer, LeNet-1's first). */
    conv_case((cb_conv_shape){.n = 9, .c = 6, .h = 14, .w = 14, .oc = 16, .kh = 5, .kw = 5, .sh = 1, .sw = 1});
    conv_case((cb_conv_shape){.n = 11, .c = 1, .h = 28, .w = 28, .oc = 4, .kh = 5, .kw = 5, .sh = 1, .sw = 1, .ph = 2, .pw = 2});
    /* The direct weight gradient of one-channel layers: 3 x 3 windows, five
     * channels (tiles of 4 and 1), a row of 19 (padded lanes), and chunks of
     * 16 samples and a rest in each thread. */
    conv_case((cb_conv_shape){.n = 37, .c = 1, .h = 9, .w = 21, .oc = 5, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 0});
    /* Samples in the lanes (conv_nb.c): LeNet-1's second layer over three
     * blocks and a part one; 7 input channels (blocks of 4 and 3), uneven
     * windows and padding, a single part block. */
    conv_case((cb_conv_shape){.n = 37, .c = 4, .h = 14, .w = 14, .oc = 12, .kh = 5, .kw = 5, .sh = 1, .sw = 1});
    conv_case((cb_conv_shape){.n = 5, .c = 7, .h = 9, .w = 11, .oc = 9, .kh = 3, .kw = 2, .sh = 1, .sw = 1, .ph = 2, .pw = 1});
    /* Padded rows narrower than 8: the flattened kernel stages its planes
     * instead of storing through lane maps. */
    conv_case((cb_conv_shape){.n = 3, .c = 2, .h = 6, .w = 5, .oc = 3, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1});
    /* A window covering the whole input: computed as a fully connected layer. */
    conv_case((cb_conv_shape){.n = 3, .c = 4, .h = 5, .w = 5, .oc = 7, .kh = 5, .kw = 5, .sh = 1, .sw = 1});
}

/* Planes every output sees whole (conv_dense.c): VGG-16's 2 x 2 layers'
 * kind, and a 2 x 3 plane under a 3 x 5 window, through the dense products. */
TEST(conv_dense_plane_matches_reference)
{
    const cb_conv_shape vgg = {.n = 64, .c = 5, .h = 2, .w = 2, .oc = 7, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1,
                               .pw = 1, .oh = 2, .ow = 2};
    const cb_conv_shape wide = {.n = 70, .c = 3, .h = 2, .w = 3, .oc = 4, .kh = 3, .kw = 5, .sh = 1, .sw = 1, .ph = 1,
                                .pw = 2, .oh = 2, .ow = 3};
    CHECK(cb_conv2d_dense_ok(&vgg));
    CHECK(cb_conv2d_dense_ok(&wide));
    conv_case(vgg);
    conv_case(wide);
    /* dx stored, not added. */
    conv_bufs t = conv_bufs_make(vgg, 21, 1.0f);
    float *ws = alloc0(cb_conv2d_workspace(&t.s));
    cb_conv2d_bwd_ref(&t.s, t.x, t.w, t.dy, t.dx1, NULL, NULL);
    for (size_t i = 0; i < t.nx; i++) t.dx2[i] = 1e6f;
    cb_conv2d_bwd_dense(&t.s, t.x, t.w, t.dy, t.dx2, NULL, NULL, ws, 1);
    check_close("dense conv dx (stored)", t.dx2, t.dx1, (int64_t)t.nx, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
    free(ws);
    conv_bufs_free(&t);
    /* Not chosen: a small batch, an output that misses part of the plane
     * (4 x 4 under 3 x 3), a whole-window layer. */
    cb_conv_shape small = vgg, part = vgg, whole = {.n = 64, .c = 4, .h = 5, .w = 5, .oc = 7, .kh = 5, .kw = 5, .sh = 1,
                                                    .sw = 1, .oh = 1, .ow = 1};
    small.n = 63;
    part.h = part.w = part.oh = part.ow = 4;
    CHECK(!cb_conv2d_dense_ok(&small));
    CHECK(!cb_conv2d_dense_ok(&part));
    CHECK(!cb_conv2d_dense_ok(&whole));
}

#if defined(__AVX512F__)
/* The training forward with samples in the lanes (conv_nb_fwd.c) against
 * the reference, its activation fused, with and without bias. */
static void fwd_nb_case(cb_conv_shape shape, int bias, cb_act act)
{
    conv_bufs t = conv_bufs_make(shape, 13, 0.5f);
    const cb_conv_shape s = t.s;
    CHECK(cb_conv2d_fwd_nb_ok(&s));
    float *ws = alloc0(cb_conv2d_workspace(&s));
    CHECK(cb_conv2d_workspace(&s) >= cb_conv2d_fwd_nb_workspace(&s, omp_get_max_threads()));
    cb_conv2d_fwd_ref(&s, t.x, t.w, bias ? t.b : NULL, t.y1);
    cb_act_fwd(act, (int64_t)t.ny, t.y1, t.y1, 0);
    for (size_t i = 0; i < t.ny; i++) t.y2[i] = NAN; /* every output must be written */
    cb_conv2d_fwd_nb(&s, t.x, t.w, bias ? t.b : NULL, act, t.y2, ws);
    check_close("conv forward, samples in lanes", t.y2, t.y1, (int64_t)t.ny, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
    free(ws);
    conv_bufs_free(&t);
}
#endif

TEST(conv_forward_samples_in_lanes_matches_reference)
{
#if defined(__AVX512F__)
    /* LeNet-1's second layer: 8 blocks and a part one of 3 samples (the
     * zero lanes must not leak), rows of 8 in tiles of 4 + 4. */
    fwd_nb_case((cb_conv_shape){.n = 131, .c = 4, .h = 12, .w = 12, .oc = 12, .kh = 5, .kw = 5, .sh = 1, .sw = 1}, 1,
                CB_ACT_TANH);
    /* 3 channels, 7 outputs (tiles of 4 and 3), padding, rows of 13 (tiles of
     * 5 + 5 + 3), a 3 x 2 window, no bias, no activation; one block. */
    fwd_nb_case((cb_conv_shape){.n = 16, .c = 3, .h = 9, .w = 12, .oc = 7, .kh = 3, .kw = 2, .sh = 1, .sw = 1, .ph = 2,
                                .pw = 1},
                0, CB_ACT_NONE);
    /* One output channel, rows of 6 (one tile), ReLU. */
    fwd_nb_case((cb_conv_shape){.n = 20, .c = 4, .h = 8, .w = 8, .oc = 1, .kh = 3, .kw = 3, .sh = 1, .sw = 1}, 1,
                CB_ACT_RELU);
    /* Not chosen: under a block of samples, or more than 4 channels. */
    CHECK(!cb_conv2d_fwd_nb_ok(&(cb_conv_shape){.n = 15, .c = 4, .h = 12, .w = 12, .oc = 12, .kh = 5, .kw = 5, .sh = 1,
                                                 .sw = 1, .oh = 8, .ow = 8}));
    CHECK(!cb_conv2d_fwd_nb_ok(&(cb_conv_shape){.n = 128, .c = 6, .h = 14, .w = 14, .oc = 16, .kh = 5, .kw = 5,
                                                 .sh = 1, .sw = 1, .oh = 10, .ow = 10}));
#else
    CHECK(!cb_conv2d_fwd_nb_ok(&(cb_conv_shape){.n = 128, .c = 4, .h = 12, .w = 12, .oc = 12, .kh = 5, .kw = 5,
                                                 .sh = 1, .sw = 1, .oh = 8, .ow = 8}));
#endif
}

/* The oneDNN backend against the reference: forward (with a fused
 * activation), and backward adding to gradients that already hold values
 * (2 x 2 planes: the weight gradient from the BLAS product beside it). */
static void dnnl_case(cb_conv_shape shape, int bias, cb_act act)
{
    conv_bufs t = conv_bufs_make(shape, 11, 0.3f);
    const cb_conv_shape s = t.s;
    conv_bufs_prefill_grads(&t, 12);
    float *dw0 = alloc0(t.nw), *ws = alloc0(cb_conv2d_workspace(&s));
    memcpy(dw0, t.dw1, t.nw * sizeof *dw0);
    float *b = bias ? t.b : NULL;
    cb_conv2d_fwd_ref(&s, t.x, t.w, b, t.y1);
    if (act != CB_ACT_NONE) cb_act_fwd(act, (int64_t)t.ny, t.y1, t.y1, 0);
    cb_conv2d_bwd_ref(&s, t.x, t.w, t.dy, t.dx1, t.dw1, bias ? t.db1 : NULL);
    cb_dnnl_ctx *ctx;
    cb_dnnl_conv *p;
    CHECK_OK(cb_dnnl_ctx_create(&ctx));
    CHECK_OK(cb_dnnl_conv_create(ctx, &s, bias, act, &p));
    for (int rep = 0; rep < 2; rep++) { /* a second call reuses the plan and the shared buffers */
        CHECK_OK(cb_dnnl_conv_fwd(p, t.x, t.w, b, t.y2));
        check_close("oneDNN conv forward", t.y2, t.y1, (int64_t)t.ny, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
    }
    if (act == CB_ACT_NONE) {
        CHECK_OK(cb_dnnl_conv_bwd(p, t.x, t.w, t.dy, t.dx2, t.dw2, bias ? t.db2 : NULL, ws, 0));
        check_close("oneDNN conv dx (added)", t.dx2, t.dx1, (int64_t)t.nx, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
        check_close("oneDNN conv dw (added)", t.dw2, t.dw1, (int64_t)t.nw, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
        check_close("oneDNN conv db (added)", t.db2, t.db1, s.oc, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
        /* No input gradient wanted: dx untouched, the same dW added once more. */
        memcpy(t.dx1, t.dx2, t.nx * sizeof *t.dx1);
        for (size_t i = 0; i < t.nw; i++) t.dw1[i] = 2 * t.dw1[i] - dw0[i];
        CHECK_OK(cb_dnnl_conv_bwd(p, t.x, t.w, t.dy, NULL, t.dw2, NULL, ws, 0));
        check_close("oneDNN conv without dx: dx", t.dx2, t.dx1, (int64_t)t.nx, 0, 0);
        check_close("oneDNN conv without dx: dw", t.dw2, t.dw1, (int64_t)t.nw, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
        /* dx stored, not added: what it held before does not matter. */
        float *dx0 = alloc0(t.nx);
        cb_conv2d_bwd_ref(&s, t.x, t.w, t.dy, dx0, NULL, NULL);
        for (size_t i = 0; i < t.nx; i++) t.dx2[i] = 1e6f;
        CHECK_OK(cb_dnnl_conv_bwd(p, t.x, t.w, t.dy, t.dx2, NULL, NULL, ws, 1));
        check_close("oneDNN conv dx (stored)", t.dx2, dx0, (int64_t)t.nx, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
        free(dx0);
    }
    cb_dnnl_conv_free(p);
    cb_dnnl_ctx_free(ctx);
    free(dw0);
    free(ws);
    conv_bufs_free(&t);
}

TEST(conv_onednn_matches_reference)
{
    if (!cb_dnnl_version()) {
        /* Not a pass: the test fails where the build has no oneDNN but the
         * machine does (the Makefile should have found it). */
        CHECK(access("/usr/include/oneapi/dnnl/dnnl.h", F_OK) != 0);
        printf("  oneDNN is not built in: its convolution is not tested\n");
        return;
    }
    const cb_act none = CB_ACT_NONE;
    /* VGG-16's shapes, small: 3 -> 16 channels, 32 -> 32 at 4x4 and at 2x2
     * (the last block: padding larger than half the input). */
    dnnl_case((cb_conv_shape){.n = 2, .c = 3, .h = 8, .w = 8, .oc = 16, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1}, 0, none);
    dnnl_case((cb_conv_shape){.n = 3, .c = 32, .h = 4, .w = 4, .oc = 32, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1}, 0, none);
    dnnl_case((cb_conv_shape){.n = 2, .c = 32, .h = 2, .w = 2, .oc = 48, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1}, 0, none);
    /* Bias, stride 2, unequal sizes and a channel count that is no multiple of 16. */
    dnnl_case((cb_conv_shape){.n = 2, .c = 20, .h = 9, .w = 7, .oc = 24, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1}, 1, none);
    dnnl_case((cb_conv_shape){.n = 1, .c = 16, .h = 6, .w = 10, .oc = 16, .kh = 5, .kw = 3, .sh = 1, .sw = 1, .ph = 2, .pw = 0}, 1, none);
    /* Inference with the activation fused. */
    dnnl_case((cb_conv_shape){.n = 2, .c = 16, .h = 8, .w = 8, .oc = 32, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1}, 1, CB_ACT_RELU);
    dnnl_case((cb_conv_shape){.n = 2, .c = 16, .h = 8, .w = 8, .oc = 32, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1}, 0, CB_ACT_TANH);
}

TEST(conv_fused_activation_matches_separate)
{
    /* LeNet-5's first layer: its pooled rows of 14 are a vector of 8 and a rest */
    cb_conv_shape s = {.n = 3, .c = 1, .h = 28, .w = 28, .oc = 6, .kh = 5, .kw = 5, .sh = 1, .sw = 1, .ph = 2, .pw = 2,
                       .oh = 28, .ow = 28};
    const cb_act acts[3] = {CB_ACT_TANH, CB_ACT_RELU, CB_ACT_SIGMOID};
    size_t nx = 3 * 784, nw = 6 * 25, ny = 3 * 6 * 784;
    float *x = alloc0(nx), *w = alloc0(nw), *b = alloc0(6), *y1 = alloc0(ny), *y2 = alloc0(ny);
    float *ws = alloc0(cb_conv2d_workspace(&s));
    cb_rng r;
    cb_rng_seed(&r, 9);
    fill(x, nx, &r, -1, 1);
    fill(w, nw, &r, -1, 1);
    fill(b, 6, &r, -1, 1);
    cb_conv_shape ps = {.n = 3, .c = 6, .h = 28, .w = 28, .kh = 2, .kw = 2, .sh = 2, .sw = 2, .oh = 14, .ow = 14};
    float *p1 = alloc0(ny / 4), *p2 = alloc0(ny / 4);
    x[5] = NAN; /* a NaN window: NaN whichever comes first */
    for (int k = 0; k < 3; k++) {
        cb_conv2d_fwd_fast(&s, x, w, b, CB_ACT_NONE, y1, ws);
        cb_act_fwd(acts[k], (int64_t)ny, y1, y1, 1);
        cb_conv2d_fwd_fast(&s, x, w, b, acts[k], y2, ws);
        check_close("fused activation", y2, y1, (int64_t)ny, 0, 0);
        /* ... and the 2x2 max pooling after it, pooled before activating */
        CHECK(cb_conv2d_flat_pool_ok(&s));
        cb_maxpool_fwd(&ps, y1, p1, 1);
        cb_conv2d_fwd_flat_pool(&s, x, w, b, acts[k], NULL, p2, ws);
        check_close("fused activation and pooling", p2, p1, (int64_t)ny / 4, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
    }
    free(x); free(w); free(b); free(y1); free(y2); free(p1); free(p2); free(ws);
    /* LeNet-1's layers, whose output vectors run across row ends (rows of
     * 28 and 12 flattened floats): the activation in registers equals the
     * separate pass. */
    const cb_conv_shape lenet1[2] = {
        {.n = 3, .c = 1, .h = 28, .w = 28, .oc = 4, .kh = 5, .kw = 5, .sh = 1, .sw = 1, .oh = 24, .ow = 24},
        {.n = 3, .c = 4, .h = 12, .w = 12, .oc = 12, .kh = 5, .kw = 5, .sh = 1, .sw = 1, .oh = 8, .ow = 8}};
    for (int l = 0; l < 2; l++) {
        conv_bufs t = conv_bufs_make(lenet1[l], 13, 1.0f);
        float *lws = alloc0(cb_conv2d_workspace(&t.s));
        for (int k = 0; k < 3; k++) {
            cb_conv2d_fwd_fast(&t.s, t.x, t.w, t.b, CB_ACT_NONE, t.y1, lws);
            cb_act_fwd(acts[k], (int64_t)t.ny, t.y1, t.y1, 1);
            cb_conv2d_fwd_fast(&t.s, t.x, t.w, t.b, acts[k], t.y2, lws);
            check_close("fused activation, rows across vectors", t.y2, t.y1, (int64_t)t.ny, 0, 0);
        }
        free(lws);
        conv_bufs_free(&t);
    }
}

/* Training's fused pass, cb_conv2d_fwd_flat_pool with the full output:
 * that output equals the convolution with its activation fused, and the
 * pooled one its 2x2 max pooling, on LeNet-5's and LeNet-1's first layers
 * (pooled in registers: rows of 28 and 24), LeNet-1's second (rows of 8:
 * pooled from the stored output), a layer whose channels leave a part tile,
 * and a NaN window. */
TEST(conv_fused_pool_training_outputs)
{
    const cb_conv_shape shapes[4] = {
        {.n = 3, .c = 1, .h = 28, .w = 28, .oc = 6, .kh = 5, .kw = 5, .sh = 1, .sw = 1, .ph = 2, .pw = 2},
        {.n = 3, .c = 1, .h = 28, .w = 28, .oc = 4, .kh = 5, .kw = 5, .sh = 1, .sw = 1},
        {.n = 3, .c = 4, .h = 12, .w = 12, .oc = 12, .kh = 5, .kw = 5, .sh = 1, .sw = 1},
        /* 7 channels (tiles of 4 and 3), 3 x 3 windows, rows of 18 */
        {.n = 2, .c = 2, .h = 10, .w = 18, .oc = 7, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1}};
    const cb_act acts[3] = {CB_ACT_TANH, CB_ACT_RELU, CB_ACT_SIGMOID};
    for (int l = 0; l < 4; l++) {
        conv_bufs t = conv_bufs_make(shapes[l], 17 + l, 1.0f);
        t.x[7] = NAN;
        cb_conv_shape ps = {.n = t.s.n, .c = t.s.oc, .h = t.s.oh, .w = t.s.ow, .kh = 2, .kw = 2, .sh = 2, .sw = 2,
                            .oh = t.s.oh / 2, .ow = t.s.ow / 2};
        float *ws = alloc0(cb_conv2d_workspace(&t.s)), *p1 = alloc0(t.ny / 4), *p2 = alloc0(t.ny / 4);
        CHECK(cb_conv2d_flat_pool_ok(&t.s));
        for (int k = 0; k < 3; k++) {
            cb_conv2d_fwd_fast(&t.s, t.x, t.w, t.b, acts[k], t.y1, ws);
            cb_maxpool_fwd(&ps, t.y1, p1, 1);
            for (size_t e = 0; e < t.ny; e++) t.y2[e] = NAN; /* every element written */
            cb_conv2d_fwd_flat_pool(&t.s, t.x, t.w, t.b, acts[k], t.y2, p2, ws);
            check_close("fused pooling: full output", t.y2, t.y1, (int64_t)t.ny, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
            check_close("fused pooling: pooled output", p2, p1, (int64_t)t.ny / 4, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
        }
        free(ws); free(p1); free(p2);
        conv_bufs_free(&t);
    }
}

static void pool_case(int max, cb_conv_shape s)
{
    s.oh = (s.h + 2 * s.ph - s.kh) / s.sh + 1;
    s.ow = (s.w + 2 * s.pw - s.kw) / s.sw + 1;
    cb_rng r;
    cb_rng_seed(&r, 11);
    size_t nx = (size_t)s.n * s.c * s.h * s.w, ny = (size_t)s.n * s.c * s.oh * s.ow;
    float *x = alloc0(nx), *dy = alloc0(ny), *y1 = alloc0(ny), *y2 = alloc0(ny), *dx1 = alloc0(nx), *dx2 = alloc0(nx);
    fill(x, nx, &r, -1, 1);
    x[3] = x[2]; /* a tie: both levels must route the gradient to the first */
    if (max) x[nx / 2 + 1] = NAN; /* NaN wins its window at both levels */
    fill(dy, ny, &r, -1, 1);
    fill(dx1, nx, &r, -1, 1); /* gradients are added to what is there */
    memcpy(dx2, dx1, nx * sizeof *dx2);
    for (int fast = 0; fast < 2; fast++) {
        float *y = fast ? y2 : y1, *dx = fast ? dx2 : dx1;
        if (max) {
            cb_maxpool_fwd(&s, x, y, fast);
            cb_maxpool_bwd(&s, x, dy, dx, fast);
        } else {
            cb_avgpool_fwd(&s, x, y, fast);
            cb_avgpool_bwd(&s, dy, dx, fast);
        }
    }
    check_close(max ? "maxpool forward" : "avgpool forward", y2, y1, (int64_t)ny, 0, 0);
    check_close(max ? "maxpool dx" : "avgpool dx", dx2, dx1, (int64_t)nx, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
    free(x); free(dy); free(y1); free(y2); free(dx1); free(dx2);
}

TEST(pool_fast_matches_reference)
{
    cb_conv_shape a = {.n = 2, .c = 3, .h = 8, .w = 6, .kh = 2, .kw = 2, .sh = 2, .sw = 2};
    cb_conv_shape b = {.n = 2, .c = 2, .h = 7, .w = 7, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1};
    /* 2x2 fast path: odd sizes (last row and column outside every window),
     * and planes wide enough to take several row blocks. */
    cb_conv_shape c = {.n = 2, .c = 2, .h = 7, .w = 9, .kh = 2, .kw = 2, .sh = 2, .sw = 2};
    cb_conv_shape d = {.n = 1, .c = 2, .h = 130, .w = 132, .kh = 2, .kw = 2, .sh = 2, .sw = 2};
    /* LeNet's first pooling: a row of 14 windows is one vector of 8 and a
     * padded rest of 6. */
    cb_conv_shape e = {.n = 3, .c = 4, .h = 28, .w = 28, .kh = 2, .kw = 2, .sh = 2, .sw = 2};
    pool_case(1, a);
    pool_case(1, e);
    pool_case(1, b);
    pool_case(1, c);
    pool_case(1, d);
    pool_case(0, a);
    pool_case(0, b);
}

/* The pooling's backward that does its activation's too equals the two
 * backward passes one after the other, at both kernel levels, on the 2x2
 * fast path and a general window. */
TEST(maxpool_act_backward_equals_two_passes)
{
    cb_conv_shape shapes[2] = {{.n = 2, .c = 3, .h = 28, .w = 28, .kh = 2, .kw = 2, .sh = 2, .sw = 2},
                               {.n = 2, .c = 2, .h = 7, .w = 7, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .ph = 1, .pw = 1}};
    const cb_act acts[3] = {CB_ACT_TANH, CB_ACT_RELU, CB_ACT_SIGMOID};
    for (int k = 0; k < 2; k++) {
        cb_conv_shape s = shapes[k];
        s.oh = (s.h + 2 * s.ph - s.kh) / s.sh + 1;
        s.ow = (s.w + 2 * s.pw - s.kw) / s.sw + 1;
        size_t nx = (size_t)s.n * s.c * s.h * s.w, ny = (size_t)s.n * s.c * s.oh * s.ow;
        float *z = alloc0(nx), *x = alloc0(nx), *y = alloc0(ny), *dy = alloc0(ny), *dxa = alloc0(nx);
        float *dz1 = alloc0(nx), *dz2 = alloc0(nx);
        for (int a = 0; a < 3; a++)
            for (int fast = 0; fast < 2; fast++) {
                cb_rng r;
                cb_rng_seed(&r, 21);
                fill(z, nx, &r, -3, 3);
                fill(dy, ny, &r, -1, 1);
                fill(dz1, nx, &r, -1, 1); /* added to */
                memcpy(dz2, dz1, nx * sizeof *dz2);
                cb_act_fwd(acts[a], (int64_t)nx, z, x, fast);
                cb_maxpool_fwd(&s, x, y, fast);
                memset(dxa, 0, nx * sizeof *dxa);
                cb_maxpool_bwd(&s, x, dy, dxa, fast);
                cb_act_bwd(acts[a], (int64_t)nx, x, dxa, dz1, fast);
                cb_maxpool_act_bwd(&s, acts[a], x, y, dy, dz2, fast, 0);
                check_close("maxpool + activation backward", dz2, dz1, (int64_t)nx, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
                /* Store mode writes the whole gradient over whatever was there. */
                CHECK(cb_maxpool_act_bwd_stores(&s, fast) == (fast && k == 0));
                if (cb_maxpool_act_bwd_stores(&s, fast)) {
                    for (size_t e = 0; e < nx; e++) dz2[e] = NAN;
                    memset(dz1, 0, nx * sizeof *dz1);
                    cb_act_bwd(acts[a], (int64_t)nx, x, dxa, dz1, fast);
                    cb_maxpool_act_bwd(&s, acts[a], x, y, dy, dz2, fast, 1);
                    check_close("maxpool + activation backward, stored", dz2, dz1, (int64_t)nx, TOL_KERNEL_ATOL,
                                TOL_KERNEL_RTOL);
                }
            }
        free(z); free(x); free(y); free(dy); free(dxa); free(dz1); free(dz2);
    }
}

TEST(maxpool_semantics_match_pytorch)
{
    /* One 2x2 window: ties go to the first maximum, NaN wins. */
    cb_conv_shape s = {.n = 1, .c = 1, .h = 2, .w = 2, .kh = 2, .kw = 2, .sh = 2, .sw = 2, .oh = 1, .ow = 1};
    for (int fast = 0; fast < 2; fast++) {
        float x[4] = {1, 3, 3, 2}, y, dy = 1, dx[4] = {0};
        cb_maxpool_fwd(&s, x, &y, fast);
        cb_maxpool_bwd(&s, x, &dy, dx, fast);
        CHECK(y == 3 && dx[1] == 1 && dx[2] == 0);
        float xn[4] = {1, NAN, 5, 2};
        cb_maxpool_fwd(&s, xn, &y, fast);
        CHECK(isnan(y));
    }
    /* avg pool counts padding, as PyTorch's default count_include_pad */
    cb_conv_shape p = {.n = 1, .c = 1, .h = 1, .w = 1, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1, .pw = 1, .oh = 1, .ow = 1};
    float one = 9, out;
    cb_avgpool_fwd(&p, &one, &out, 1);
    CHECK(out == 1.0f);
}

TEST(linear_fast_matches_reference)
{
    int shapes[][3] = {{5, 7, 3}, {130, 300, 10}, {1, 120, 84}};
    for (size_t t = 0; t < 3; t++) {
        int n = shapes[t][0], k = shapes[t][1], o = shapes[t][2];
        cb_rng r;
        cb_rng_seed(&r, 3);
        float *x = alloc0((size_t)n * k), *w = alloc0((size_t)o * k), *b = alloc0(o), *dy = alloc0((size_t)n * o);
        float *y1 = alloc0((size_t)n * o), *y2 = alloc0((size_t)n * o), *dx1 = alloc0((size_t)n * k),
              *dx2 = alloc0((size_t)n * k), *dw1 = alloc0((size_t)o * k), *dw2 = alloc0((size_t)o * k),
              *db1 = alloc0(o), *db2 = alloc0(o);
        fill(x, (size_t)n * k, &r, -1, 1);
        fill(w, (size_t)o * k, &r, -1, 1);
        fill(b, o, &r, -1, 1);
        fill(dy, (size_t)n * o, &r, -1, 1);
        cb_linear_fwd_ref(n, k, o, x, w, b, y1);
        cb_linear_fwd_fast(n, k, o, x, w, b, y2);
        check_close("linear forward", y2, y1, (int64_t)n * o, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
        cb_linear_bwd_ref(n, k, o, x, w, dy, dx1, dw1, db1);
        cb_linear_bwd_fast(n, k, o, x, w, dy, dx2, dw2, db2);
        check_close("linear dx", dx2, dx1, (int64_t)n * k, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
        check_close("linear dw", dw2, dw1, (int64_t)o * k, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
        check_close("linear db", db2, db1, o, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
        float *all[] = {x, w, b, dy, y1, y2, dx1, dx2, dw1, dw2, db1, db2};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
    }
}

TEST(activations_fast_match_reference)
{
    enum { N = 4099 };
    static float x[N], y1[N], y2[N], dy[N], dx1[N], dx2[N];
    cb_rng r;
    cb_rng_seed(&r, 5);
    fill(x, N, &r, -12, 12);
    fill(dy, N, &r, -1, 1);
    x[0] = 0.0f; x[1] = 1e-8f; x[2] = -0.6f; x[3] = 0.63f; x[4] = NAN; x[5] = INFINITY; x[6] = -INFINITY;
    x[7] = 90.0f; x[8] = -90.0f;
    const char *names[] = {"tanh", "relu", "sigmoid"};
    for (int a = 0; a < 3; a++) {
        cb_act_fwd((cb_act)a, N, x, y1, 0);
        cb_act_fwd((cb_act)a, N, x, y2, 1);
        check_close(names[a], y2, y1, N, 1e-7, 2e-6);
        memset(dx1, 0, sizeof dx1);
        memset(dx2, 0, sizeof dx2);
        cb_act_bwd((cb_act)a, N, y1, dy, dx1, 0);
        cb_act_bwd((cb_act)a, N, y1, dy, dx2, 1);
        check_close(names[a], dx2, dx1, N, 0, 0);
        /* Stored rather than added: what dx held does not matter. */
        for (int i = 0; i < N; i++) dx2[i] = 1e6f;
        cb_act_bwd_to((cb_act)a, N, y1, dy, dx2, 1, 1);
        check_close(names[a], dx2, dx1, N, 0, 0);
    }
}

TEST(losses_match_closed_forms)
{
    float logits[6] = {1, 2, 3, 0, 0, 0}, labels[2] = {2, 0}, loss;
    CHECK_OK(cb_softmax_xent_fwd(2, 3, logits, labels, &loss));
    double want = ((log(exp(1) + exp(2) + exp(3)) - 3) + log(3.0)) / 2;
    CHECK(fabs(loss - want) < 1e-6);
    float bad[2] = {2, 3};
    CHECK(cb_softmax_xent_fwd(2, 3, logits, bad, &loss) == CB_ERR_INVALID_ARG);
    float p[3] = {0.9f, 0.2f, 0.0f}, t[3] = {1, 0, 1};
    CHECK_OK(cb_bce_fwd(3, p, t, &loss));
    want = (-log(0.9) - log(0.8) + 100.0) / 3; /* log(0) clamps at -100 as in PyTorch */
    CHECK(fabs(loss - want) < 1e-5);
    float outside[1] = {1.5f};
    CHECK(cb_bce_fwd(1, outside, t, &loss) == CB_ERR_INVALID_ARG);
}

/* ------------------------------------------------ finite differences */

/* Builds: x (a parameter, so it gets a gradient) -> op -> [flatten] ->
 * linear -> loss, and compares every parameter's gradient (x included) with
 * central differences of the loss. */
typedef int (*build_fn)(cb_graph *g, int x);

/* Dropout draws a new mask on every forward pass; finite differences need
 * the same mask each time, so fd_check reseeds before every pass. */
static const uint64_t fd_seed = 7;

/* Every parameter's analytic gradient against central differences of the
 * loss (inputs and labels already fed). */
static void fd_compare(cb_graph *g, cb_exec *ex, int batch, const char *what)
{
    cb_exec_seed(ex, fd_seed);
    CHECK_OK(cb_exec_forward(ex, batch));
    CHECK_OK(cb_exec_backward(ex, batch));
    float *analytic = malloc(g->n_params * sizeof(float)), *numeric = malloc(g->n_params * sizeof(float));
    memcpy(analytic, g->grads, g->n_params * sizeof(float));
    const float eps = 1e-3f;
    for (size_t i = 0; i < g->n_params; i++) {
        float keep = g->params[i];
        g->params[i] = keep + eps;
        cb_exec_seed(ex, fd_seed);
        cb_exec_forward(ex, batch);
        double up = cb_exec_loss(ex);
        g->params[i] = keep - eps;
        cb_exec_seed(ex, fd_seed);
        cb_exec_forward(ex, batch);
        double down = cb_exec_loss(ex);
        g->params[i] = keep;
        numeric[i] = (float)((up - down) / (2.0 * eps));
    }
    check_close(what, analytic, numeric, (int64_t)g->n_params, TOL_FD_ATOL, TOL_FD_RTOL);
    free(analytic);
    free(numeric);
}

static void fd_check(const char *what, int64_t c, int64_t h, int64_t w, build_fn build, int binary,
                     cb_kernels kernels, float spacing)
{
    cb_graph g;
    cb_graph_init(&g);
    int64_t xd[3] = {c, h, w}, one[1] = {1};
    int x = cb_graph_param(&g, "x", h ? 3 : 1, xd, CB_INIT_FAN_IN_UNIFORM, 1);
    int labels = cb_graph_input(&g, "labels", 1, one);
    int y = build(&g, x);
    if (g.nodes[y].ndim != 1) y = cb_graph_unary(&g, CB_OP_FLATTEN, y);
    int logits = cb_graph_linear(&g, "head", y, binary ? 1 : 3, 1);
    if (binary) logits = cb_graph_unary(&g, CB_OP_SIGMOID, logits);
    int loss = cb_graph_loss(&g, binary ? CB_OP_BCE : CB_OP_SOFTMAX_XENT, logits, labels);
    CHECK(loss >= 0);
    if (loss < 0) { fprintf(stderr, "  %s: %s\n", what, cb_last_error()); cb_graph_free(&g); return; }
    CHECK_OK(cb_graph_finalize(&g));
    cb_rng r;
    cb_rng_seed(&r, 99);
    cb_graph_init_params(&g, &r);
    /* Distinct, well-separated inputs: no ties for max, nothing near relu's kink. */
    float *xv = cb_graph_param_data(&g, x);
    int64_t nx = cb_node_numel(&g.nodes[x]);
    for (int64_t i = 0; i < nx; i++) {
        int64_t k = (i * 7919) % nx;
        xv[i] = spacing * (float)(k - nx / 2) + spacing / 2;
    }
    cb_exec *ex;
    CHECK_OK(cb_exec_create(&g, 1, 1, kernels, &ex));
    cb_exec_value(ex, labels)[0] = 1;
    fd_compare(&g, ex, 1, what);
    cb_exec_free(ex);
    cb_graph_free(&g);
}

static int b_conv(cb_graph *g, int x) { return cb_graph_conv2d(g, "conv", x, 3, 3, 2, 1, 1); }
static int b_conv5(cb_graph *g, int x) { return cb_graph_conv2d(g, "conv", x, 2, 5, 1, 2, 1); }
static int b_maxpool(cb_graph *g, int x) { return cb_graph_pool2d(g, CB_OP_MAXPOOL2D, x, 3, 2, 1); }
static int b_maxpool2(cb_graph *g, int x) { return cb_graph_pool2d(g, CB_OP_MAXPOOL2D, x, 2, 2, 0); }
static int b_avgpool(cb_graph *g, int x) { return cb_graph_pool2d(g, CB_OP_AVGPOOL2D, x, 3, 2, 1); }
/* Average pooling that leaves its (asymmetric) padding out of the count:
 * border windows divide by 4 or 6 input elements, inner ones by 9. */
static int b_avgpool_excl(cb_graph *g, int x)
{
    const cb_window win = {3, 3, 2, 1, 0, 0, 1, 1};
    const int pads[4] = {1, 0, 2, 1};
    return cb_graph_avgpool2d_exclude_pad(g, x, &win, pads);
}
static int b_tanh(cb_graph *g, int x) { return cb_graph_unary(g, CB_OP_TANH, x); }
static int b_relu(cb_graph *g, int x) { return cb_graph_unary(g, CB_OP_RELU, x); }
static int b_sigmoid(cb_graph *g, int x) { return cb_graph_unary(g, CB_OP_SIGMOID, x); }
static int b_linear(cb_graph *g, int x) { return cb_graph_linear(g, "fc", x, 4, 1); }
/* Batch normalisation in training mode (statistics over one sample's 4x4
 * plane per channel), and dropout with a fixed mask. */
static int b_bn(cb_graph *g, int x) { return cb_graph_batchnorm2d(g, "bn", x, 1e-5f, 0.1f); }
static int b_dropout(cb_graph *g, int x) { return cb_graph_dropout(g, x, 0.4f); }
/* What the fused and fastmath levels rewrite: a convolution computing its
 * activation and the 2x2 max pooling after it, the pooling doing the
 * activation's backward. */
static int b_conv_relu_pool(cb_graph *g, int x) { return b_maxpool2(g, b_relu(g, b_conv5(g, x))); }
/* A residual connection (the convolution reaches the sum twice: directly
 * and through its tanh) and global average pooling. */
static int b_residual(cb_graph *g, int x)
{
    int c = cb_graph_conv2d(g, "conv", x, 2, 3, 1, 1, 1);
    return cb_graph_add(g, c, b_tanh(g, c));
}
static int b_gap(cb_graph *g, int x) { return cb_graph_global_avgpool(g, b_relu(g, x)); }
/* Grouped convolution: 2 input channels, 2 groups of 2 outputs each
 * (channel multiplier 2, a depthwise layer's shape), stride 2, padding 1;
 * then ReLU6 (a clip whose bounds the well-separated inputs straddle). */
static int b_grouped(cb_graph *g, int x)
{
    int64_t wd[4] = {4, 1, 3, 3}, bd[1] = {4};
    int w = cb_graph_param(g, "gconv.weight", 4, wd, CB_INIT_KAIMING_UNIFORM, 9);
    int b = cb_graph_param(g, "gconv.bias", 1, bd, CB_INIT_FAN_IN_UNIFORM, 9);
    const cb_window win = {3, 3, 2, 2, 1, 1, 1, 1};
    return cb_graph_conv2d_grouped(g, "gconv", x, w, b, &win, 2);
}
/* Concatenation along the channels, of two and of seven inputs (beyond
 * CB_MAX_INPUTS: a chain), one node among them several times. */
static int b_concat(cb_graph *g, int x)
{
    int c = cb_graph_conv2d(g, "conv", x, 2, 3, 1, 1, 1);
    int in[2] = {c, b_tanh(g, c)};
    return cb_graph_concat(g, 2, in);
}
static int b_concat7(cb_graph *g, int x)
{
    int c = cb_graph_conv2d(g, "conv", x, 2, 3, 1, 1, 1), t = b_tanh(g, c), r = b_relu(g, c);
    int in[7] = {c, t, r, t, c, r, c};
    return cb_graph_concat(g, 7, in);
}
/* An asymmetric border (top 1, left 0, bottom 2, right 1) of a non-zero
 * value; softmax along the channels and along the rows' last axis. */
static int b_pad(cb_graph *g, int x)
{
    const int pads[4] = {1, 0, 2, 1};
    return cb_graph_pad(g, cb_graph_conv2d(g, "conv", x, 2, 3, 1, 1, 1), pads, 0.5f);
}
/* Reflect and edge borders (pads up to one less than the 4x3 plane for
 * reflect): every border value is a copy, whose gradient goes back to
 * its source. */
static int b_pad_mode(cb_graph *g, int x, cb_pad_mode mode)
{
    const int pads[4] = {3, 2, 1, 0};
    return cb_graph_pad_mode(g, cb_graph_conv2d(g, "conv", x, 2, 3, 1, 1, 1), pads, mode, 0.0f);
}
/* A crop and a border at once (negative pads crop: Slice of the height
 * and width, Keras' Cropping2D): the cropped inputs get no gradient. */
static int b_crop(cb_graph *g, int x)
{
    const int pads[4] = {-1, 2, -1, -1};
    return cb_graph_pad(g, cb_graph_conv2d(g, "conv", x, 2, 3, 1, 1, 1), pads, 0.25f);
}
static int b_pad_reflect(cb_graph *g, int x) { return b_pad_mode(g, x, CB_PAD_REFLECT); }
static int b_pad_edge(cb_graph *g, int x) { return b_pad_mode(g, x, CB_PAD_EDGE); }
/* Dilated convolutions: dilation 2x3 with padding 2 (the direct loops at
 * the fast levels), and dilation 2 in 2 groups. */
static int b_dilated_with(cb_graph *g, int x, int groups, int dh, int dw)
{
    int64_t wd[4] = {4, 2 / groups, 3, 3}, bd[1] = {4};
    int w = cb_graph_param(g, "dconv.weight", 4, wd, CB_INIT_KAIMING_UNIFORM, 9 * 2 / groups);
    int b = cb_graph_param(g, "dconv.bias", 1, bd, CB_INIT_FAN_IN_UNIFORM, 9 * 2 / groups);
    const cb_window win = {3, 3, 1, 1, 2, 2, dh, dw};
    return cb_graph_conv2d_grouped(g, "dconv", x, w, b, &win, groups);
}
static int b_dilated(cb_graph *g, int x) { return b_dilated_with(g, x, 1, 2, 3); }
static int b_dilated_grouped(cb_graph *g, int x) { return b_dilated_with(g, x, 2, 2, 2); }
static int b_softmax0(cb_graph *g, int x) { return cb_graph_softmax(g, cb_graph_conv2d(g, "conv", x, 3, 3, 1, 1, 1), 0); }
static int b_softmax2(cb_graph *g, int x) { return cb_graph_softmax(g, cb_graph_conv2d(g, "conv", x, 3, 3, 1, 1, 1), 2); }
static int b_clip(cb_graph *g, int x) { return cb_graph_clip(g, x, -0.2f, 0.3f); }
static int b_conv_tanh_pool(cb_graph *g, int x) { return b_maxpool2(g, b_tanh(g, b_conv5(g, x))); }
/* Products: a squeeze-and-excitation gate (each plane scaled by the sigmoid
 * of its mean), SiLU's x * sigmoid(x) of one shape, and a node times
 * itself; MobileNetV3's hard sigmoid (ONNX's default slope) and hard
 * swish, over inputs clear of their corners. */
static int b_mul_gate(cb_graph *g, int x)
{
    int c = cb_graph_conv2d(g, "conv", x, 2, 3, 1, 1, 1);
    return cb_graph_mul(g, c, b_sigmoid(g, cb_graph_global_avgpool(g, c)));
}
static int b_mul_silu(cb_graph *g, int x)
{
    int c = cb_graph_conv2d(g, "conv", x, 2, 3, 1, 1, 1);
    return cb_graph_mul(g, c, b_sigmoid(g, c));
}
static int b_mul_square(cb_graph *g, int x)
{
    int c = cb_graph_conv2d(g, "conv", x, 2, 3, 1, 1, 1);
    return cb_graph_mul(g, c, c);
}
static int b_hardsigmoid(cb_graph *g, int x) { return cb_graph_hardsigmoid(g, x, 0.2f, 0.5f); }
static int b_hardswish(cb_graph *g, int x) { return cb_graph_unary(g, CB_OP_HARDSWISH, x); }
static int b_hardsigmoid_keras(cb_graph *g, int x) { return cb_graph_hard_keras(g, CB_OP_HARDSIGMOID, x, 0.25f); }
static int b_hardswish_keras(cb_graph *g, int x) { return cb_graph_hard_keras(g, CB_OP_HARDSWISH, x, 0.25f); }

TEST(gradients_match_finite_differences)
{
    const cb_kernels levels[] = {CB_KERNELS_REFERENCE, CB_KERNELS_EXACT, CB_KERNELS_FUSED, CB_KERNELS_FAST};
    for (int k = 0; k < 4; k++) {
        cb_kernels kern = levels[k];
        fd_check("fd conv 5x5 + relu + maxpool 2x2", 1, 8, 8, b_conv_relu_pool, 0, kern, 0.05f);
        fd_check("fd conv 5x5 + tanh + maxpool 2x2", 1, 8, 8, b_conv_tanh_pool, 0, kern, 0.05f);
        fd_check("fd conv 3x3 s2 p1", 2, 6, 6, b_conv, 0, kern, 0.03f);
        fd_check("fd residual add", 2, 5, 5, b_residual, 0, kern, 0.03f);
        fd_check("fd grouped conv 3x3 s2 p1, 2 groups", 2, 7, 6, b_grouped, 0, kern, 0.03f);
        fd_check("fd clip", 2, 3, 3, b_clip, 0, kern, 0.1f);
        fd_check("fd concat of 2", 2, 4, 3, b_concat, 0, kern, 0.03f);
        fd_check("fd pad (asymmetric, value 0.5)", 2, 4, 3, b_pad, 0, kern, 0.03f);
        fd_check("fd pad that crops rows and a column and pads columns", 2, 4, 3, b_crop, 0, kern, 0.03f);
        fd_check("fd pad reflect", 2, 4, 3, b_pad_reflect, 0, kern, 0.03f);
        fd_check("fd pad edge", 2, 4, 3, b_pad_edge, 0, kern, 0.03f);
        fd_check("fd dilated conv 3x3 d2x3 p2", 2, 6, 7, b_dilated, 0, kern, 0.03f);
        fd_check("fd dilated grouped conv 3x3 d2 p2, 2 groups", 2, 6, 5, b_dilated_grouped, 0, kern, 0.03f);
        fd_check("fd softmax over the channels", 2, 4, 3, b_softmax0, 0, kern, 0.03f);
        fd_check("fd softmax over the last axis", 2, 4, 3, b_softmax2, 0, kern, 0.03f);
        fd_check("fd concat of 7 (chained)", 2, 4, 3, b_concat7, 0, kern, 0.03f);
        fd_check("fd global average pooling", 3, 4, 5, b_gap, 0, kern, 0.1f);
        fd_check("fd conv 5x5 p2", 1, 7, 7, b_conv5, 0, kern, 0.03f);
        fd_check("fd maxpool 3x3 s2 p1", 2, 6, 6, b_maxpool, 0, kern, 0.03f);
        fd_check("fd maxpool 2x2", 2, 6, 6, b_maxpool2, 0, kern, 0.03f);
        fd_check("fd avgpool 3x3 s2 p1", 2, 6, 6, b_avgpool, 0, kern, 0.03f);
        fd_check("fd avgpool 3x3 s2,1, padding 1,0,2,1 left out of the count", 2, 6, 5, b_avgpool_excl, 0, kern, 0.03f);
        fd_check("fd tanh", 2, 3, 3, b_tanh, 0, kern, 0.1f);
        fd_check("fd relu", 2, 3, 3, b_relu, 0, kern, 0.1f);
        fd_check("fd sigmoid", 2, 3, 3, b_sigmoid, 0, kern, 0.2f);
        fd_check("fd linear + softmax cross-entropy", 7, 0, 0, b_linear, 0, kern, 0.1f);
        fd_check("fd linear + sigmoid + binary cross-entropy", 7, 0, 0, b_linear, 1, kern, 0.1f);
        fd_check("fd batchnorm (training)", 2, 4, 4, b_bn, 0, kern, 0.05f);
        fd_check("fd dropout", 2, 3, 3, b_dropout, 0, kern, 0.1f);
        fd_check("fd mul by a channel gate", 2, 4, 3, b_mul_gate, 0, kern, 0.03f);
        fd_check("fd mul of one shape (x sigmoid(x))", 2, 4, 3, b_mul_silu, 0, kern, 0.03f);
        fd_check("fd mul of a node by itself", 2, 4, 3, b_mul_square, 0, kern, 0.03f);
        fd_check("fd hard sigmoid", 2, 3, 3, b_hardsigmoid, 0, kern, 0.4f);
        fd_check("fd hard swish", 2, 3, 3, b_hardswish, 0, kern, 0.45f);
        fd_check("fd hard sigmoid in Keras' order", 2, 3, 3, b_hardsigmoid_keras, 0, kern, 0.45f);
        fd_check("fd hard swish in Keras' order", 2, 3, 3, b_hardswish_keras, 0, kern, 0.45f);
    }
}

/* Which rewrites each level makes, as its plan prints them: tanh is fused
 * into the convolution at fastmath only, ReLU from fused on, nothing at
 * fast and reference. */
static int plan_has(build_fn build, cb_kernels level, int with_grads, const char *needle)
{
    cb_graph g;
    cb_graph_init(&g);
    int64_t xd[3] = {1, 8, 8}, one[1] = {1};
    int x = cb_graph_input(&g, "x", 3, xd), labels = cb_graph_input(&g, "labels", 1, one);
    int y = cb_graph_unary(&g, CB_OP_FLATTEN, build(&g, x));
    cb_graph_loss(&g, CB_OP_SOFTMAX_XENT, cb_graph_linear(&g, "head", y, 3, 1), labels);
    int found = -1;
    cb_exec *ex = NULL;
    if (cb_graph_finalize(&g) == CB_OK && cb_exec_create(&g, 16, with_grads, level, &ex) == CB_OK) {
        char *text = cb_exec_plan_text(ex);
        found = text && strstr(text, needle) != NULL;
        free(text);
    }
    cb_exec_free(ex);
    cb_graph_free(&g);
    return found;
}

TEST(levels_choose_their_rewrites)
{
    for (int train = 0; train < 2; train++) {
        CHECK(plan_has(b_conv_relu_pool, CB_KERNELS_REFERENCE, train, "conv2d+relu") == 0);
        CHECK(plan_has(b_conv_relu_pool, CB_KERNELS_EXACT, train, "conv2d+relu") == 0);
        CHECK(plan_has(b_conv_relu_pool, CB_KERNELS_FUSED, train, "conv2d+relu") == 1);
        CHECK(plan_has(b_conv_relu_pool, CB_KERNELS_FAST, train, "conv2d+relu") == 1);
        CHECK(plan_has(b_conv_tanh_pool, CB_KERNELS_FUSED, train, "conv2d+tanh") == 0);
        CHECK(plan_has(b_conv_tanh_pool, CB_KERNELS_FUSED, train, "tanh.exact") == 1);
        CHECK(plan_has(b_conv_tanh_pool, CB_KERNELS_FAST, train, "conv2d+tanh") == 1);
    }
    /* Training: the pooling does its activation's backward from fused on. */
    CHECK(plan_has(b_conv_tanh_pool, CB_KERNELS_EXACT, 1, "with node") == 0);
    CHECK(plan_has(b_conv_tanh_pool, CB_KERNELS_FUSED, 1, "with node") == 1);
}

/* Inference executors fuse convolution and activation and split batches
 * across threads; their outputs must match those of an executor that
 * runs every node on its own (a training executor), for any batch size. The
 * fused kernels compute the same values; only the fully connected layers'
 * GEMMs see other row counts, which may sum in another order. */
TEST(fused_inference_equals_unfused)
{
    const char *names[] = {"lenet1", "lenet5"};
    for (int k = 0; k < 2; k++) {
        cb_model *m;
        CHECK_OK(cb_model_create(names[k], &m));
        cb_model_init(m, 5);
        cb_exec *inf, *train;
        CHECK_OK(cb_exec_create(&m->graph, 100, 0, CB_KERNELS_FAST, &inf));
        CHECK_OK(cb_exec_create(&m->graph, 100, 1, CB_KERNELS_FAST, &train));
        cb_rng r;
        cb_rng_seed(&r, 3);
        const int batches[3] = {1, 37, 100};
        for (int t = 0; t < 3; t++) {
            int n = batches[t];
            float *x1 = cb_exec_value(inf, m->input), *x2 = cb_exec_value(train, m->input);
            fill(x1, (size_t)n * 784, &r, 0, 1);
            memcpy(x2, x1, (size_t)n * 784 * sizeof(float));
            memset(cb_exec_value(inf, m->labels), 0, (size_t)n * sizeof(float));
            memset(cb_exec_value(train, m->labels), 0, (size_t)n * sizeof(float));
            CHECK_OK(cb_exec_forward(inf, n));
            CHECK_OK(cb_exec_forward(train, n));
            check_close("fused logits", cb_exec_value(inf, m->graph.output), cb_exec_value(train, m->graph.output),
                        (int64_t)n * 10, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
            float l1 = cb_exec_loss(inf), l2 = cb_exec_loss(train);
            check_close("fused loss", &l1, &l2, 1, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
        }
        cb_exec_free(inf);
        cb_exec_free(train);
        cb_model_free(m);
    }
}

/* A CROSSBIND_CONV value the library does not know fails executor creation
 * (at the fast level, which reads it) with the reason, and nothing leaks. */
TEST(exec_refuses_unknown_conv_backend)
{
    cb_model *m;
    CHECK_OK(cb_model_create("lenet5", &m));
    cb_exec *ex = NULL;
    setenv("CROSSBIND_CONV", "dnn", 1);
    cb_status st = cb_exec_create(&m->graph, 8, 1, CB_KERNELS_FAST, &ex);
    unsetenv("CROSSBIND_CONV");
    CHECK(st == CB_ERR_INVALID_ARG && ex == NULL);
    CHECK(strstr(cb_last_error(), "CROSSBIND_CONV must be 'blas' or 'onednn'") != NULL);
    setenv("CROSSBIND_CONV", "blas", 1);
    CHECK_OK(cb_exec_create(&m->graph, 8, 1, CB_KERNELS_FAST, &ex));
    unsetenv("CROSSBIND_CONV");
    cb_exec_free(ex);
    cb_model_free(m);
}

/* Embedding -> recurrent layer -> last step -> dense -> loss, batch of 2
 * sequences of 4 tokens: every parameter against finite differences, both
 * kernel levels; layer 0 is the LSTM, 1 the GRU, 2 the reset-before GRU. */
TEST(recurrent_gradients_match_finite_differences)
{
    for (int k = 0; k < 6; k++) {
        const int layer = k / 2;
        cb_graph g;
        cb_graph_init(&g);
        int64_t t[1] = {4}, one[1] = {1};
        int ids = cb_graph_input(&g, "ids", 1, t);
        int e = cb_graph_embedding(&g, "emb", ids, 5, 3);
        int l = layer == 0 ? cb_graph_lstm(&g, "rnn", e, 4) : cb_graph_gru(&g, "rnn", e, 4, layer == 2);
        int h = cb_graph_last_step(&g, l);
        int logits = cb_graph_linear(&g, "head", h, 3, 1);
        int labels = cb_graph_input(&g, "labels", 1, one);
        CHECK(cb_graph_loss(&g, CB_OP_SOFTMAX_XENT, logits, labels) >= 0);
        CHECK_OK(cb_graph_finalize(&g));
        cb_rng r;
        cb_rng_seed(&r, 21);
        cb_graph_init_params(&g, &r);
        cb_exec *ex;
        CHECK_OK(cb_exec_create(&g, 2, 1, k % 2 ? CB_KERNELS_FAST : CB_KERNELS_REFERENCE, &ex));
        const float tokens[8] = {0, 3, 3, 1, 4, 2, 0, 1}, lab[2] = {2, 0};
        memcpy(cb_exec_value(ex, ids), tokens, sizeof tokens);
        memcpy(cb_exec_value(ex, labels), lab, sizeof lab);
        const char *what[6] = {"fd lstm (reference)", "fd lstm (fast)", "fd gru (reference)", "fd gru (fast)",
                               "fd gru-rb (reference)", "fd gru-rb (fast)"};
        fd_compare(&g, ex, 2, what[k]);
        /* A token id outside the vocabulary is an error, not a read out of bounds. */
        cb_exec_value(ex, ids)[5] = 5;
        CHECK(cb_exec_forward(ex, 2) == CB_ERR_INVALID_ARG);
        cb_exec_free(ex);
        cb_graph_free(&g);
    }
}

/* A recurrent classifier over T token ids (vocabulary `vocab`, embedding
 * width `dim`): an LSTM (layer 0), GRU (1) or reset-before GRU (2) of
 * `hidden` units, its last step into 3 logits and a cross-entropy loss,
 * with seeded parameters. Sets the ids, recurrent, logits and labels nodes. */
static void recurrent_classifier(cb_graph *g, int layer, int64_t T, int vocab, int dim, int hidden, uint64_t seed,
                                 int *ids, int *l, int *logits, int *labels)
{
    cb_graph_init(g);
    int64_t t[1] = {T}, one[1] = {1};
    *ids = cb_graph_input(g, "ids", 1, t);
    const int e = cb_graph_embedding(g, "emb", *ids, vocab, dim);
    *l = layer == 0 ? cb_graph_lstm(g, "rnn", e, hidden) : cb_graph_gru(g, "rnn", e, hidden, layer == 2);
    *logits = cb_graph_linear(g, "head", cb_graph_last_step(g, *l), 3, 1);
    *labels = cb_graph_input(g, "labels", 1, one);
    CHECK(cb_graph_loss(g, CB_OP_SOFTMAX_XENT, *logits, *labels) >= 0);
    CHECK_OK(cb_graph_finalize(g));
    cb_rng r;
    cb_rng_seed(&r, seed);
    cb_graph_init_params(g, &r);
}

/* Fast inference executors run recurrent layers on chunks of the batch
 * (each with its own workspace; the GRU also with its part of the saved
 * gates, the LSTM keeping none: cb_lstm_infer); reference
 * inference executors run the whole batch at once, with a workspace sized
 * for it (it once was sized for one chunk). Both must match a training
 * executor on the whole batch. */
TEST(recurrent_inference_slices_match)
{
    /* LSTM, GRU, GRU-rb of 7 units; an LSTM of 8 and GRUs of 16, whose
     * slices' steps multiply the packed recurrent matrix (cb_rnn_infer_packs) */
    static const int layers[] = {0, 1, 2, 0, 1, 2}, hiddens[] = {7, 7, 7, 8, 16, 16};
    for (int k = 0; k < 12; k++) {
        const int layer = layers[k % 6], hidden = hiddens[k % 6];
        const cb_kernels kernels = k < 6 ? CB_KERNELS_FAST : CB_KERNELS_REFERENCE;
        /* 20 steps: LSTM inference projects its inputs a block of steps at
         * a time (cb_lstm_infer), here in blocks of 4 or 7 steps */
        cb_graph g;
        int ids, l, logits, labels;
        recurrent_classifier(&g, layer, 20, 9, 5, hidden, 4, &ids, &l, &logits, &labels);
        cb_exec *inf, *train;
        const int n = 150; /* more than one slice of samples */
        CHECK_OK(cb_exec_create(&g, n, 0, kernels, &inf));
        CHECK_OK(cb_exec_create(&g, n, 1, kernels, &train));
        for (int i = 0; i < n * 20; i++) cb_exec_value(inf, ids)[i] = cb_exec_value(train, ids)[i] = (float)((i * 7) % 9);
        memset(cb_exec_value(inf, labels), 0, n * sizeof(float));
        memset(cb_exec_value(train, labels), 0, n * sizeof(float));
        CHECK_OK(cb_exec_forward(inf, n));
        CHECK_OK(cb_exec_forward(train, n));
        check_close("recurrent inference slices", cb_exec_value(inf, logits), cb_exec_value(train, logits), n * 3,
                    TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
        cb_exec_free(inf);
        cb_exec_free(train);
        cb_graph_free(&g);
    }
}

/* One sample on two threads: an LSTM's or GRU's steps (reset after or
 * before the product) run in one parallel region, each thread the gates
 * and state of its hidden units (cb_lstm_infer, cb_gru_infer), in
 * graphs big enough (over 2e7 FLOPs per sample: 300 steps) that a batch of
 * one runs whole on the threads. 8 units leave the second thread none, 112
 * give it 48 of 64 + 48, 300 give each thread 3 runs of at most 64 rows a
 * gate (read in reverse at odd steps: recurrent_rows); 112 and 320 (3
 * runs of 64, 64 and 32 rows) multiply W_hh's panels, each thread packing
 * its own rows, 8 and 300 read it in place; inputs projected
 * directly (vocabulary 500 > 300 tokens) or looked up in a table
 * (vocabulary 9); at both fast levels, against a training executor. */
TEST(recurrent_one_sample_on_two_threads_matches_training)
{
    enum { T = 300 };
    static const int hiddens[] = {8, 112, 300, 320}, dims[] = {1500, 5, 5, 5}, vocabs[] = {9, 500};
    static const cb_kernels levels[] = {CB_KERNELS_FAST, CB_KERNELS_EXACT};
    CHECK_OK(cb_set_threads(2));
    for (int k = 0; k < 48; k++) {
        const int hidden = hiddens[k % 4], vocab = vocabs[k / 4 % 2], layer = k / 16;
        cb_graph g;
        int ids, l, logits, labels;
        recurrent_classifier(&g, layer, T, vocab, dims[k % 4], hidden, 6, &ids, &l, &logits, &labels);
        cb_exec *inf, *train;
        CHECK_OK(cb_exec_create(&g, 1, 0, levels[k / 8 % 2], &inf));
        CHECK_OK(cb_exec_create(&g, 1, 1, levels[k / 8 % 2], &train));
        char *plan = cb_exec_plan_text(inf);
        CHECK(plan && strstr(plan, "batches 1-1: the whole batch, threaded kernels"));
        free(plan);
        for (int i = 0; i < T; i++) cb_exec_value(inf, ids)[i] = cb_exec_value(train, ids)[i] = (float)((i * 7) % vocab);
        cb_exec_value(inf, labels)[0] = cb_exec_value(train, labels)[0] = 0.0f;
        CHECK_OK(cb_exec_forward(inf, 1));
        CHECK_OK(cb_exec_forward(train, 1));
        CHECK(check_close(layer == 0 ? "LSTM, one sample on two threads" : "GRU, one sample on two threads",
                          cb_exec_value(inf, l), cb_exec_value(train, l),
                          T * hidden, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL));
        cb_exec_free(inf);
        cb_exec_free(train);
        cb_graph_free(&g);
    }
}

/* One sample on one thread: the steps multiply W_hh packed whole once per
 * pass (cb_gemm_packed at one row, 8 panels per tile on AVX-512 builds);
 * LSTM, GRU and GRU-rb of 112 and 320 units at both fast levels, against
 * a training executor. */
TEST(recurrent_one_sample_on_one_thread_matches_training)
{
    enum { T = 40 };
    static const int hiddens[] = {112, 320};
    static const cb_kernels levels[] = {CB_KERNELS_FAST, CB_KERNELS_EXACT};
    const int was = cb_get_threads();
    CHECK_OK(cb_set_threads(1));
    for (int k = 0; k < 12; k++) {
        const int hidden = hiddens[k % 2], layer = k / 4;
        cb_graph g;
        int ids, l, logits, labels;
        recurrent_classifier(&g, layer, T, 500, 5, hidden, 6, &ids, &l, &logits, &labels);
        cb_exec *inf, *train;
        CHECK_OK(cb_exec_create(&g, 1, 0, levels[k / 2 % 2], &inf));
        CHECK_OK(cb_exec_create(&g, 1, 1, levels[k / 2 % 2], &train));
        for (int i = 0; i < T; i++) cb_exec_value(inf, ids)[i] = cb_exec_value(train, ids)[i] = (float)((i * 7) % 500);
        cb_exec_value(inf, labels)[0] = cb_exec_value(train, labels)[0] = 0.0f;
        CHECK_OK(cb_exec_forward(inf, 1));
        CHECK_OK(cb_exec_forward(train, 1));
        CHECK(check_close("recurrent layer, one sample on one thread", cb_exec_value(inf, l), cb_exec_value(train, l),
                          T * hidden, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL));
        cb_exec_free(inf);
        cb_exec_free(train);
        cb_graph_free(&g);
    }
    cb_set_threads(was);
}

/* cb_gemm_packed against double sums: row counts that leave partial
 * register tiles, an odd inner dimension, strided rows, with and without
 * adding to C's old value. */
TEST(gemm_packed_matches_double_sums)
{
    /* 13 panels and every row count up to 13: each tile shape (rows by 8, 4,
     * 2 or 1 panels on AVX-512 builds) and the remainders of both. */
    enum { M = 13, N = 208, K = 37, LDA = 41, LDB = 40, LDC = 210 };
    float *a = malloc(sizeof(float) * M * LDA), *b = malloc(sizeof(float) * N * LDB), *bp = malloc(sizeof(float) * N * K),
          *c = malloc(sizeof(float) * M * LDC), *want = malloc(sizeof(float) * M * LDC);
    CHECK(a && b && bp && c && want);
    if (!a || !b || !bp || !c || !want) return;
    for (int i = 0; i < M * LDA; i++) a[i] = sinf(0.7f * (float)i);
    for (int i = 0; i < N * LDB; i++) b[i] = cosf(0.3f * (float)i);
    cb_pack_rows_as_panels(N, K, b, LDB, bp);
    for (int m = 1; m <= M; m++)
        for (int add = 0; add <= 1; add++) {
            for (int i = 0; i < M * LDC; i++) c[i] = want[i] = 0.25f * (float)(i % 5);
            for (int i = 0; i < m; i++)
                for (int j = 0; j < N; j++) {
                    double acc = 0;
                    for (int p = 0; p < K; p++) acc += (double)a[i * LDA + p] * b[j * LDB + p];
                    want[i * LDC + j] = (float)(acc + (add ? want[i * LDC + j] : 0.0));
                }
            cb_gemm_packed(m, N, K, a, LDA, bp, c, LDC, add);
            CHECK(check_close("cb_gemm_packed", c, want, (int64_t)M * LDC, 1e-5, 1e-5));
        }
    free(a), free(b), free(bp), free(c), free(want);
}

/* Runs finalized graph g on one sample whose input x holds 1, 2, ... and
 * checks that node y's first n values are want[]. */
static void check_plane(cb_graph *g, int x, int y, cb_kernels level, const float *want, size_t n)
{
    cb_exec *ex = NULL;
    CHECK_OK(cb_exec_create(g, 1, 0, level, &ex));
    if (ex) {
        for (int64_t i = 0; i < cb_node_numel(&g->nodes[x]); i++) cb_exec_value(ex, x)[i] = (float)(i + 1);
        CHECK_OK(cb_exec_forward(ex, 1));
        CHECK(!memcmp(cb_exec_value(ex, y), want, n * sizeof *want));
    }
    cb_exec_free(ex);
}

/* Pad's modes on a 3x3 plane 1..9, one row and column of border each
 * side: reflect mirrors without the edge (ONNX's and PyTorch's reflect),
 * edge repeats it (PyTorch's replicate). */
TEST(pad_modes_match_hand_worked_planes)
{
    static const float want_reflect[25] = {5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5, 8, 7, 8, 9, 8, 5, 4, 5, 6, 5};
    static const float want_edge[25] = {1, 1, 2, 3, 3, 1, 1, 2, 3, 3, 4, 4, 5, 6, 6, 7, 7, 8, 9, 9, 7, 7, 8, 9, 9};
    for (int m = 0; m < 2; m++) {
        cb_graph g;
        cb_graph_init(&g);
        const int64_t d[3] = {1, 3, 3};
        const int pads[4] = {1, 1, 1, 1};
        int x = cb_graph_input(&g, "x", 3, d);
        int y = cb_graph_pad_mode(&g, x, pads, m ? CB_PAD_EDGE : CB_PAD_REFLECT, 0.0f);
        CHECK(y >= 0);
        CHECK_OK(cb_graph_finalize(&g));
        check_plane(&g, x, y, CB_KERNELS_FAST, m ? want_edge : want_reflect, 25);
        cb_graph_free(&g);
    }
    /* Reflect needs pads shorter than the plane; an unknown mode is refused. */
    cb_graph g;
    cb_graph_init(&g);
    const int64_t d[3] = {1, 3, 3};
    const int big[4] = {3, 0, 0, 0}, small[4] = {1, 1, 1, 1};
    int x = cb_graph_input(&g, "x", 3, d);
    CHECK(cb_graph_pad_mode(&g, x, big, CB_PAD_REFLECT, 0.0f) < 0);
    CHECK(strstr(cb_last_error(), "smaller than") != NULL);
    CHECK(cb_graph_pad_mode(&g, x, big, CB_PAD_EDGE, 0.0f) >= 0);
    CHECK(cb_graph_pad_mode(&g, x, small, (cb_pad_mode)7, 0.0f) < 0);
    cb_graph_free(&g);
}

/* Negative pads crop (ONNX Pad's meaning; Slice of the height and width):
 * a 3x3 plane 1..9 without its top row and left column, with a column of
 * 0.5 on the right. Only the constant mode crops; a crop must leave a row
 * and a column. */
TEST(pad_crops_with_negative_pads)
{
    static const float want[6] = {5, 6, 0.5f, 8, 9, 0.5f};
    cb_graph g;
    cb_graph_init(&g);
    const int64_t d[3] = {1, 3, 3};
    const int pads[4] = {-1, -1, 0, 1};
    int x = cb_graph_input(&g, "x", 3, d);
    int y = cb_graph_pad(&g, x, pads, 0.5f);
    CHECK(y >= 0 && g.nodes[y].dims[1] == 2 && g.nodes[y].dims[2] == 3);
    CHECK_OK(cb_graph_finalize(&g));
    check_plane(&g, x, y, CB_KERNELS_REFERENCE, want, 6);
    check_plane(&g, x, y, CB_KERNELS_FAST, want, 6);
    cb_graph_free(&g);
    cb_graph_init(&g);
    x = cb_graph_input(&g, "x", 3, d);
    const int all_rows[4] = {-2, 0, -1, 0}, past[4] = {-4, 0, 2, 0};
    CHECK(cb_graph_pad_mode(&g, x, pads, CB_PAD_REFLECT, 0.0f) < 0);
    CHECK(strstr(cb_last_error(), "constant mode only") != NULL);
    CHECK(cb_graph_pad_mode(&g, x, pads, CB_PAD_EDGE, 0.0f) < 0);
    CHECK(cb_graph_pad(&g, x, all_rows, 0.0f) < 0);
    CHECK(strstr(cb_last_error(), "to nothing") != NULL);
    /* Cropped past the far side but padded back: every value is the border. */
    y = cb_graph_pad(&g, x, past, 0.5f);
    CHECK(y >= 0 && g.nodes[y].dims[1] == 1 && g.nodes[y].dims[2] == 3);
    CHECK_OK(cb_graph_finalize(&g));
    static const float border[3] = {0.5f, 0.5f, 0.5f};
    check_plane(&g, x, y, CB_KERNELS_FAST, border, 3);
    cb_graph_free(&g);
}

/* cb_gemm on one row of A (the matrix-vector path) and on several, each
 * way of storing B, against double sums: beta 0 ignores NaN in C, beta 1
 * adds to it, at one thread and at two (columns split). */
TEST(gemm_single_row_and_general_match_double_sums)
{
    enum { M = 3, N = 700, K = 400 };
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * N * K), *c = malloc(sizeof(float) * M * N),
          *want = malloc(sizeof(float) * M * N);
    CHECK(a && b && c && want);
    if (!a || !b || !c || !want) return;
    for (int i = 0; i < M * K; i++) a[i] = sinf(0.7f * (float)i);
    for (int i = 0; i < N * K; i++) b[i] = cosf(0.3f * (float)i);
    const int was = cb_get_threads();
    for (int threads = 1; threads <= 2; threads++) {
        cb_set_threads(threads);
        for (int tb = 0; tb <= 1; tb++)
            for (int m = 1; m <= M; m += M - 1)
                for (int beta = 0; beta <= 1; beta++) {
                    for (int i = 0; i < m; i++)
                        for (int j = 0; j < N; j++) {
                            double acc = 0;
                            for (int p = 0; p < K; p++) acc += (double)a[i * K + p] * (tb ? b[j * K + p] : b[p * N + j]);
                            want[i * N + j] = (float)(2.0 * acc + (beta ? 0.5 : 0.0));
                            c[i * N + j] = beta ? 0.5f : NAN;
                        }
                    cb_gemm(0, tb, m, N, K, 2.0f, a, K, b, tb ? K : N, (float)beta, c, N);
                    CHECK(check_close("cb_gemm", c, want, (int64_t)m * N, 1e-4, 1e-4));
                }
    }
    cb_set_threads(was);
    free(a), free(b), free(c), free(want);
}

/* Training at fastmath: a ReLU whose input (a batch normalisation's
 * output) nothing else reads overwrites that value in place
 * (plan_inplace_relu); one whose input is read twice does not. The loss and
 * every parameter gradient match the reference level's (which plans no
 * rewrite), and the overwritten value is reported as not materialised. */
TEST(inplace_relu_in_training_matches_reference)
{
    cb_graph g;
    cb_graph_init(&g);
    const int64_t d[3] = {4, 8, 8}, one[1] = {1};
    const int x = cb_graph_input(&g, "x", 3, d);
    const int bn1 = cb_graph_batchnorm2d(&g, "bn1", cb_graph_conv2d(&g, "c1", x, 8, 3, 1, 1, 1), 1e-5f, 0.1f);
    const int r1 = cb_graph_unary(&g, CB_OP_RELU, bn1);
    const int bn2 = cb_graph_batchnorm2d(&g, "bn2", cb_graph_conv2d(&g, "c2", r1, 8, 3, 1, 1, 1), 1e-5f, 0.1f);
    const int r2 = cb_graph_unary(&g, CB_OP_RELU, bn2);
    const int64_t flat[1] = {8};
    const int pooled = cb_graph_reshape(&g, cb_graph_global_avgpool(&g, cb_graph_add(&g, r2, bn2)), 1, flat);
    const int logits = cb_graph_linear(&g, "fc", pooled, 3, 1);
    const int labels = cb_graph_input(&g, "labels", 1, one);
    const int loss_node = cb_graph_loss(&g, CB_OP_SOFTMAX_XENT, logits, labels);
    CHECK(loss_node >= 0);
    CHECK_OK(cb_graph_finalize(&g));
    if (loss_node < 0) {
        cb_graph_free(&g);
        return;
    }
    cb_rng r;
    cb_rng_seed(&r, 8);
    cb_graph_init_params(&g, &r);
    enum { N = 5 };
    float *want = malloc(g.n_params * sizeof *want);
    CHECK(want != NULL);
    if (!want) return;
    float loss[2];
    for (int pass = 0; pass < 2; pass++) { /* the reference level, then fastmath */
        cb_exec *ex = NULL;
        CHECK_OK(cb_exec_create(&g, N, 1, pass ? CB_KERNELS_FAST : CB_KERNELS_REFERENCE, &ex));
        if (!ex) break;
        for (int i = 0; i < N * 4 * 64; i++) cb_exec_value(ex, x)[i] = sinf(0.37f * (float)i);
        for (int n = 0; n < N; n++) cb_exec_value(ex, labels)[n] = (float)(n % 3);
        memset(g.grads, 0, g.n_params * sizeof *g.grads);
        CHECK_OK(cb_exec_forward(ex, N));
        CHECK_OK(cb_exec_backward(ex, N));
        loss[pass] = cb_exec_value(ex, loss_node)[0];
        if (!pass) memcpy(want, g.grads, g.n_params * sizeof *want);
        else CHECK(check_close("parameter gradients, in place against the reference", g.grads, want,
                               (int64_t)g.n_params, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL));
        int by = -1;
        CHECK(cb_exec_materialised(ex, bn1, &by) == !pass && by == (pass ? r1 : -1));
        CHECK(cb_exec_materialised(ex, bn2, &by) == 1); /* read by the Add too */
        char *plan = cb_exec_plan_text(ex);
        char want_line[64];
        snprintf(want_line, sizeof want_line, "in place over node %d's value", bn1);
        CHECK(plan && (strstr(plan, want_line) != NULL) == pass && (strstr(plan, "in place over") == strstr(plan, want_line)));
        free(plan);
        cb_exec_free(ex);
    }
    CHECK(fabsf(loss[0] - loss[1]) <= 1e-5f * (1.0f + fabsf(loss[0])));
    free(want);
    cb_graph_free(&g);
}
