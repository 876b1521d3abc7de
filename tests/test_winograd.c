/* The blocked layouts' own convolution kernels against the reference
 * convolution: the few-output product (src/ops/conv_few.c) on shapes of at
 * most 16 outputs per channel (strides, padding, 1x1 and 3x3 kernels, one
 * to four samples), the direct nChw16c kernel (src/ops/conv_direct16.c;
 * full and partial register rows, strides 1 and 2), and Winograd F(2x2,
 * 3x3) (src/ops/conv_winograd.c): image sizes that leave partial 2x2 tiles, tile
 * counts that leave partial register tiles and uneven thread groups, the
 * post-ops in order (the sum reading the destination's old value, ReLU and
 * Clip letting NaN through), one and two threads, both layouts (nChw8c
 * and nChw16c), and which shapes it takes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "../src/ops/ops.h"
#include "../src/ops/vec.h"

static int B = 8; /* the layout's block: 8 (nChw8c) or 16 (nChw16c) */

static void to_blocked(const float *x, float *y, int n, int c, int hw)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < c; k++)
            for (int p = 0; p < hw; p++)
                y[(((size_t)i * (c / B) + k / B) * hw + p) * B + k % B] = x[((size_t)i * c + k) * hw + p];
}

static void from_blocked(const float *x, float *y, int n, int c, int hw)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < c; k++)
            for (int p = 0; p < hw; p++)
                y[((size_t)i * c + k) * hw + p] = x[(((size_t)i * (c / B) + k / B) * hw + p) * B + k % B];
}

static cb_conv_shape shape(int n, int c, int oc, int h, int w)
{
    return (cb_conv_shape){.n = n, .c = c, .h = h, .w = w, .oc = oc, .kh = 3, .kw = 3, .sh = 1, .sw = 1,
                           .ph = 1, .pw = 1, .oh = h, .ow = w};
}

enum { WINOGRAD, FEW, DIRECT16 };
static int kind = WINOGRAD; /* run_case's kernel */

/* Runs one case; returns whether it matched the reference (with the
 * post-ops applied to the reference's plain result). */
static int run_case(const cb_conv_shape *s, const cb_blk_post *post, int npost, int threads, int nan_at)
{
    const size_t xn = (size_t)s->n * s->c * s->h * s->w, yn = (size_t)s->n * s->oc * s->oh * s->ow,
                 wn = (size_t)s->oc * s->c * s->kh * s->kw;
    float *x = malloc(xn * sizeof *x), *xb = malloc(xn * sizeof *x), *w = malloc(wn * sizeof *w),
          *b = malloc((size_t)s->oc * sizeof *b), *old = malloc(yn * sizeof *old), *ref = malloc(yn * sizeof *ref),
          *yb = malloc(yn * sizeof *yb), *y = malloc(yn * sizeof *y),
          *u = malloc((kind == FEW ? cb_few_weight_floats(s) : kind == DIRECT16 ? cb_direct16_weight_floats(s)
                                                                               : cb_wino_weight_floats(s)) *
                      sizeof *u),
          *ws = malloc((kind == FEW        ? cb_few_workspace(s, threads)
                        : kind == DIRECT16 ? cb_direct16_workspace(s, threads)
                                           : cb_wino_workspace(s, threads)) *
                       sizeof *ws);
    int ok = x && xb && w && b && old && ref && yb && y && u && ws;
    if (ok) {
        for (size_t i = 0; i < xn; i++) x[i] = sinf(0.61f * (float)i) + 0.25f * cosf(0.07f * (float)i);
        for (size_t i = 0; i < wn; i++) w[i] = 0.3f * sinf(1.3f * (float)i + 0.5f);
        for (int o = 0; o < s->oc; o++) b[o] = 0.1f * (float)(o % 7) - 0.3f;
        for (size_t i = 0; i < yn; i++) old[i] = cosf(0.11f * (float)i);
        if (nan_at >= 0) x[nan_at] = NAN;
        cb_conv2d_fwd_ref(s, x, w, b, ref);
        for (size_t i = 0; i < yn; i++)
            for (int k = 0; k < npost; k++) {
                float v = ref[i];
                if (post[k].kind == CB_POST_SUM) v += old[i];
                else if (post[k].kind == CB_POST_RELU) v = v > 0.0f ? v : (isnan(v) ? v : 0.0f);
                else v = v < post[k].lo ? post[k].lo : v > post[k].hi ? post[k].hi : v;
                ref[i] = v;
            }
        to_blocked(x, xb, s->n, s->c, s->h * s->w);
        to_blocked(old, yb, s->n, s->oc, s->oh * s->ow); /* the sum's operand, in the destination */
        if (kind == FEW) {
            cb_few_weights(s, w, u);
            cb_few_conv(s, B, xb, u, b, post, npost, yb, ws, threads);
        } else if (kind == DIRECT16) {
            cb_direct16_weights(s, w, u);
            cb_direct16_conv(s, B, xb, u, b, post, npost, yb, ws, threads);
        } else {
            cb_wino_weights(s, w, u);
            cb_wino_conv(s, B, xb, u, b, post, npost, yb, ws, threads);
        }
        from_blocked(yb, y, s->n, s->oc, s->oh * s->ow);
        ok = check_close(kind == FEW        ? "few-output product against the reference convolution"
                         : kind == DIRECT16 ? "direct nChw16c kernel against the reference convolution"
                                            : "winograd against the reference convolution",
                         y, ref, (int64_t)yn, TOL_KERNEL_ATOL, TOL_KERNEL_RTOL);
    }
    free(x), free(xb), free(w), free(b), free(old), free(ref), free(yb), free(y), free(u), free(ws);
    return ok;
}

TEST(winograd_matches_reference_convolution)
{
    static const cb_blk_post none[1] = {{0}};
    const cb_blk_post relu = {CB_POST_RELU, 0, 0}, sum = {CB_POST_SUM, 0, 0}, clip = {CB_POST_CLIP, 0.0f, 0.5f};
    const cb_blk_post sum_relu[] = {sum, relu}, clip_only[] = {clip};
    /* even and odd sizes, 1 to 3 samples, channels 8 to 48 (those of 16 in both layouts) */
    static const int cases[][5] = {{1, 8, 16, 4, 4},  {2, 16, 32, 7, 7},   {3, 24, 16, 5, 9},
                                   {1, 48, 32, 14, 14}, {2, 32, 48, 1, 3}, {1, 16, 16, 29, 13}};
    int ran16 = 0;
    for (B = 8; B <= 16; B *= 2) {
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            const cb_conv_shape s = shape(cases[k][0], cases[k][1], cases[k][2], cases[k][3], cases[k][4]);
            /* The kernel serves any tile count; the rule of 96 tiles on nChw16c is checked below. */
            const int fits = B == 8 || (cases[k][1] % 16 == 0 && cases[k][2] % 16 == 0);
            if (B == 8) CHECK(cb_wino_supports(&s, 1, B));
            if (!fits) continue;
            ran16 += B == 16;
            for (int threads = 1; threads <= 2; threads++) {
                CHECK(run_case(&s, none, 0, threads, -1));
                CHECK(run_case(&s, sum_relu, 2, threads, -1));
                CHECK(run_case(&s, clip_only, 1, threads, -1));
            }
        }
        /* NaN in one input spreads to the outputs whose windows hold it, through the ReLU */
        const cb_conv_shape s = shape(1, 16, 16, 6, 6);
        CHECK(run_case(&s, sum_relu, 2, 2, 3 * 6 + 2));
    }
    CHECK(ran16 == 4);
    B = 8;
}

TEST(winograd_takes_only_its_shapes)
{
    const cb_conv_shape ok = shape(1, 64, 64, 56, 56);
    CHECK(cb_wino_supports(&ok, 0, 8) && cb_wino_supports(&ok, 1, 16));
    cb_conv_shape s = ok;
    s.sh = s.sw = 2, s.oh = s.ow = 28; /* strided */
    CHECK(!cb_wino_supports(&s, 1, 8));
    s = ok, s.kh = s.kw = 5, s.ph = s.pw = 2; /* 5x5 */
    CHECK(!cb_wino_supports(&s, 1, 8));
    s = ok, s.dh = s.dw = 2, s.ph = s.pw = 2; /* dilated */
    CHECK(!cb_wino_supports(&s, 1, 8));
    CHECK(!cb_wino_supports(&ok, 2, 8)); /* grouped */
    s = ok, s.c = 12; /* channels not a multiple of the block */
    CHECK(!cb_wino_supports(&s, 1, 8));
    s = ok, s.c = 24; /* ... of 16, in nChw16c */
    CHECK(cb_wino_supports(&s, 1, 8) && !cb_wino_supports(&s, 1, 16));
    CHECK(!cb_wino_supports(&ok, 1, 4)); /* no other layout */
    s = shape(1, 256, 256, 6, 6); /* 9 tiles: nChw8c only */
    CHECK(cb_wino_supports(&s, 1, 8) && !cb_wino_supports(&s, 1, 16));
    s.n = 2; /* 18 */
    CHECK(cb_wino_supports(&s, 1, 16));
    s = shape(1, 256, 256, 8, 8); /* 16: the least on nChw16c */
    CHECK(cb_wino_supports(&s, 1, 16));
    s.h = s.w = s.oh = s.ow = 7; /* 16 (the last row and column of tiles half used) */
    CHECK(cb_wino_supports(&s, 1, 16));
    s.h = s.w = s.oh = s.ow = 6; /* 9 */
    CHECK(!cb_wino_supports(&s, 1, 16));
    s = ok, s.oc = 40; /* output channels not a multiple of the panel */
    CHECK(!cb_wino_supports(&s, 1, 8));
    s = ok, s.c = 512; /* above the measured rule */
    CHECK(!cb_wino_supports(&s, 1, 8));
    s = ok, s.ph = s.pw = 0, s.oh = s.ow = 54; /* unpadded */
    CHECK(!cb_wino_supports(&s, 1, 8));
}

/* n, c, oc, h, w, kernel, stride, padding: 16 outputs (4x4, 2x2 from 3x3
 * stride 2 of four samples...), 12, 9 and 1; 1x1 and 3x3 kernels; 49 and
 * 50 outputs (several register tiles of positions) of 3x3 kernels. */
TEST(few_output_product_matches_reference_convolution)
{
    const cb_blk_post relu = {CB_POST_RELU, 0, 0}, sum = {CB_POST_SUM, 0, 0}, clip = {CB_POST_CLIP, 0.0f, 0.5f};
    const cb_blk_post sum_relu[] = {sum, relu}, clip_only[] = {clip};
    static const int cases[][8] = {{1, 32, 48, 4, 4, 3, 1, 1}, {4, 16, 16, 3, 3, 3, 2, 1}, {3, 64, 32, 2, 2, 3, 1, 1},
                                   {1, 16, 32, 3, 3, 3, 1, 0}, {1, 48, 16, 5, 5, 1, 2, 0}, {2, 32, 64, 2, 2, 1, 1, 0},
                                   {1, 32, 32, 7, 7, 3, 1, 1}, {2, 16, 48, 10, 10, 3, 2, 1}};
    kind = FEW;
    for (B = 8; B <= 16; B *= 2)
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            const int *q = cases[k];
            cb_conv_shape s = {.n = q[0], .c = q[1], .oc = q[2], .h = q[3], .w = q[4], .kh = q[5], .kw = q[5],
                               .sh = q[6], .sw = q[6], .ph = q[7], .pw = q[7]};
            s.oh = (s.h + 2 * s.ph - s.kh) / s.sh + 1, s.ow = (s.w + 2 * s.pw - s.kw) / s.sw + 1;
            CHECK(cb_few_supports(&s, 1, B));
            for (int threads = 1; threads <= 2; threads++) {
                CHECK(run_case(&s, NULL, 0, threads, -1));
                CHECK(run_case(&s, sum_relu, 2, threads, -1));
                CHECK(run_case(&s, clip_only, 1, threads, -1));
            }
        }
    /* NaN in one input spreads to every output of its sample's windows, through the ReLU */
    B = 16;
    const cb_conv_shape s = shape(1, 16, 16, 4, 4);
    CHECK(run_case(&s, sum_relu, 2, 2, 5));
    /* what it takes: at most 64 outputs (16 of a 1x1 kernel), ungrouped, undilated, channels of the block
     * and the panel */
    cb_conv_shape t = shape(1, 16, 16, 8, 8);
    CHECK(cb_few_supports(&t, 1, 16));
    t = shape(1, 16, 16, 9, 9);
    CHECK(!cb_few_supports(&t, 1, 16));
    t = shape(1, 16, 16, 4, 4), t.kh = t.kw = 1, t.ph = t.pw = 0;
    CHECK(cb_few_supports(&t, 1, 16));
    t = shape(1, 16, 16, 5, 5), t.kh = t.kw = 1, t.ph = t.pw = 0;
    CHECK(!cb_few_supports(&t, 1, 16));
    t = shape(1, 16, 16, 4, 4);
    CHECK(!cb_few_supports(&t, 2, 16));
    t.dh = t.dw = 2;
    CHECK(!cb_few_supports(&t, 1, 16));
    t = shape(1, 24, 16, 4, 4);
    CHECK(cb_few_supports(&t, 1, 8) && !cb_few_supports(&t, 1, 16));
    t = shape(1, 16, 24, 4, 4);
    CHECK(!cb_few_supports(&t, 1, 8));
    kind = WINOGRAD, B = 8;
}

/* n, c, oc, h, w, stride: rows of 14 outputs (one register row), of 15,
 * 16 and 30 (runs of equal length: 8 + 7, 8 + 8, 10 x 3), 5 and 9 (one
 * short run); strides 1 and 2; one and two samples; 1 to 3 input blocks. */
TEST(direct16_matches_reference_convolution)
{
    const cb_blk_post relu = {CB_POST_RELU, 0, 0}, sum = {CB_POST_SUM, 0, 0}, clip = {CB_POST_CLIP, 0.0f, 0.5f};
    const cb_blk_post sum_relu[] = {sum, relu}, clip_only[] = {clip};
    static const int cases[][6] = {{1, 32, 32, 14, 14, 1}, {1, 16, 64, 28, 28, 2}, {2, 48, 32, 5, 9, 1},
                                   {1, 16, 32, 30, 30, 1}, {1, 32, 32, 29, 29, 2}, {2, 16, 32, 15, 8, 1},
                                   {1, 32, 32, 16, 16, 1}};
    kind = DIRECT16, B = 16;
    cb_conv_shape s = shape(1, 32, 32, 14, 14);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const int *q = cases[k];
        s = shape(q[0], q[1], q[2], q[3], q[4]);
        s.sh = s.sw = q[5], s.oh = (s.h - 1) / s.sh + 1, s.ow = (s.w - 1) / s.sw + 1;
        CHECK(cb_direct16_fits(&s, 1, 16));
        for (int threads = 1; threads <= 2; threads++) {
            CHECK(run_case(&s, NULL, 0, threads, -1));
            CHECK(run_case(&s, sum_relu, 2, threads, -1));
            CHECK(run_case(&s, clip_only, 1, threads, -1));
        }
    }
    /* NaN in one input spreads to the outputs whose windows hold it, through the ReLU */
    s = shape(1, 16, 32, 6, 6);
    CHECK(run_case(&s, sum_relu, 2, 2, 3 * 6 + 2));
    /* what it can do: 3x3, padding 1, stride 1 or 2, ungrouped, undilated, channels of 16 and 32 */
    s = shape(1, 32, 32, 14, 14);
    CHECK(cb_direct16_fits(&s, 1, 16) && !cb_direct16_fits(&s, 1, 8) && !cb_direct16_fits(&s, 2, 16));
    s.oc = 48;
    CHECK(!cb_direct16_fits(&s, 1, 16));
    s = shape(1, 24, 32, 14, 14);
    CHECK(!cb_direct16_fits(&s, 1, 16));
    s = shape(1, 32, 32, 14, 14), s.dh = s.dw = 2, s.ph = s.pw = 2;
    CHECK(!cb_direct16_fits(&s, 1, 16));
    s = shape(1, 32, 32, 14, 14), s.sh = s.sw = 3, s.oh = s.ow = 5;
    CHECK(!cb_direct16_fits(&s, 1, 16));
    /* what a plan gives it (the measured rule): rows of 7 or more; stride 1 for one sample only */
    const int avx512 = CB_RVL == 16;
    s = shape(1, 256, 256, 14, 14);
    CHECK(cb_direct16_supports(&s, 1, 16) == avx512);
    s.n = 32;
    CHECK(!cb_direct16_supports(&s, 1, 16));
    s.h = s.w = 28, s.sh = s.sw = 2, s.oh = s.ow = 14;
    CHECK(cb_direct16_supports(&s, 1, 16) == avx512);
    s = shape(1, 512, 512, 7, 7);
    CHECK(cb_direct16_supports(&s, 1, 16) == avx512);
    s = shape(1, 512, 512, 4, 4);
    CHECK(!cb_direct16_supports(&s, 1, 16) && cb_direct16_fits(&s, 1, 16));

    kind = WINOGRAD, B = 8;
}
