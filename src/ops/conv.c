/* 2-D convolution, forward and backward.
 *
 * Fast path: the batch is lowered with im2col into one matrix
 * cols[K = C*KH*KW, n*OH*OW] so that each layer is ONE large SGEMM per chunk
 * of samples instead of many thin per-sample products (LeNet's layers have
 * 6-16 output channels: per-sample GEMMs would leave BLAS starved).
 * The products are split across the engine's threads by cb_gemm. */
#include <omp.h>
#include <string.h>
#include "ops.h"

/* Workspace cap per chunk, in floats (128 MiB): bounds memory for wide
 * layers (VGG-16 at batch 128) while keeping each GEMM large. */
#define CONV_WS_CAP ((size_t)32 << 20)

static size_t ohw(const cb_conv_shape *s) { return (size_t)s->oh * s->ow; }
static size_t kdim(const cb_conv_shape *s) { return (size_t)s->c * s->kh * s->kw; }

/* ---------------------------------------------------------------- reference */

void cb_conv2d_fwd_ref(const cb_conv_shape *s, const float *x, const float *w, const float *b, float *y)
{
    for (int n = 0; n < s->n; n++)
        for (int o = 0; o < s->oc; o++)
            for (int oy = 0; oy < s->oh; oy++)
                for (int ox = 0; ox < s->ow; ox++) {
                    double acc = b ? b[o] : 0.0;
                    for (int c = 0; c < s->c; c++)
                        for (int i = 0; i < s->kh; i++) {
                            int iy = oy * s->sh - s->ph + i;
                            if (iy < 0 || iy >= s->h) continue;
                            for (int j = 0; j < s->kw; j++) {
                                int ix = ox * s->sw - s->pw + j;
                                if (ix < 0 || ix >= s->w) continue;
                                acc += (double)x[((size_t)(n * s->c + c) * s->h + iy) * s->w + ix] *
                                       w[((size_t)(o * s->c + c) * s->kh + i) * s->kw + j];
                            }
                        }
                    y[((size_t)(n * s->oc + o) * s->oh + oy) * s->ow + ox] = (float)acc;
                }
}

void cb_conv2d_bwd_ref(const cb_conv_shape *s, const float *x, const float *w, const float *dy,
                       float *dx, float *dw, float *db)
{
    if (db)
        for (int o = 0; o < s->oc; o++) {
            double acc = 0;
            for (int n = 0; n < s->n; n++)
                for (size_t p = 0; p < ohw(s); p++) acc += dy[(size_t)(n * s->oc + o) * ohw(s) + p];
            db[o] += (float)acc;
        }
    if (dw)
        for (int o = 0; o < s->oc; o++)
            for (int c = 0; c < s->c; c++)
                for (int i = 0; i < s->kh; i++)
                    for (int j = 0; j < s->kw; j++) {
                        double acc = 0;
                        for (int n = 0; n < s->n; n++)
                            for (int oy = 0; oy < s->oh; oy++) {
                                int iy = oy * s->sh - s->ph + i;
                                if (iy < 0 || iy >= s->h) continue;
                                for (int ox = 0; ox < s->ow; ox++) {
                                    int ix = ox * s->sw - s->pw + j;
                                    if (ix < 0 || ix >= s->w) continue;
                                    acc += (double)x[((size_t)(n * s->c + c) * s->h + iy) * s->w + ix] *
                                           dy[((size_t)(n * s->oc + o) * s->oh + oy) * s->ow + ox];
                                }
                            }
                        dw[((size_t)(o * s->c + c) * s->kh + i) * s->kw + j] += (float)acc;
                    }
    if (dx)
        for (int n = 0; n < s->n; n++)
            for (int c = 0; c < s->c; c++)
                for (int iy = 0; iy < s->h; iy++)
                    for (int ix = 0; ix < s->w; ix++) {
                        double acc = 0;
                        for (int o = 0; o < s->oc; o++)
                            for (int i = 0; i < s->kh; i++) {
                                int t = iy + s->ph - i;
                                if (t < 0 || t % s->sh) continue;
                                int oy = t / s->sh;
                                if (oy >= s->oh) continue;
                                for (int j = 0; j < s->kw; j++) {
                                    int u = ix + s->pw - j;
                                    if (u < 0 || u % s->sw) continue;
                                    int ox = u / s->sw;
                                    if (ox >= s->ow) continue;
                                    acc += (double)w[((size_t)(o * s->c + c) * s->kh + i) * s->kw + j] *
                                           dy[((size_t)(n * s->oc + o) * s->oh + oy) * s->ow + ox];
                                }
                            }
                        dx[((size_t)(n * s->c + c) * s->h + iy) * s->w + ix] += (float)acc;
                    }
}

/* --------------------------------------------------------------------- fast */

static int chunk_samples(const cb_conv_shape *s)
{
    size_t per_sample = ohw(s) * (2 * kdim(s) + (size_t)s->oc);
    size_t nc = CONV_WS_CAP / (per_sample ? per_sample : 1);
    if (nc < 1) nc = 1;
    if (nc > (size_t)s->n) nc = (size_t)s->n;
    return (int)nc;
}

/* The direct kernel wins where the GEMM would be small: few channels in or
 * out, and rows wide enough to fill a register tile. */
static int use_direct(const cb_conv_shape *s)
{
    return cb_conv2d_direct_ok(s) && s->ow >= 6 && kdim(s) <= 512 && s->oc <= 64;
}

size_t cb_conv2d_workspace(const cb_conv_shape *s)
{
    size_t gemm = (size_t)chunk_samples(s) * ohw(s) * (2 * kdim(s) + (size_t)s->oc);
    size_t direct = use_direct(s) ? cb_conv2d_direct_workspace(s, omp_get_max_threads()) : 0;
    return gemm > direct ? gemm : direct;
}

/* cols[(c*KH+i)*KW+j][s*OHW + oy*OW + ox] = x[n0+s][c][oy*SH-PH+i][ox*SW-PW+j] */
static void im2col(const cb_conv_shape *s, const float *x, int n0, int nc, float *cols)
{
    const size_t plane = ohw(s), ld = (size_t)nc * plane;
    const int rows = (int)kdim(s);
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++) {
        int c = r / (s->kh * s->kw), i = (r / s->kw) % s->kh, j = r % s->kw;
        float *dst = cols + (size_t)r * ld;
        for (int sm = 0; sm < nc; sm++) {
            const float *src = x + (size_t)((n0 + sm) * s->c + c) * s->h * s->w;
            for (int oy = 0; oy < s->oh; oy++) {
                int iy = oy * s->sh - s->ph + i;
                float *d = dst + (size_t)sm * plane + (size_t)oy * s->ow;
                if (iy < 0 || iy >= s->h) {
                    memset(d, 0, (size_t)s->ow * sizeof *d);
                    continue;
                }
                const float *row = src + (size_t)iy * s->w;
                if (s->sw == 1) {
                    /* valid ox: 0 <= ox - pw + j < w */
                    int lo = s->pw - j > 0 ? s->pw - j : 0;
                    int hi = s->w + s->pw - j < s->ow ? s->w + s->pw - j : s->ow;
                    if (hi < lo) hi = lo;
                    for (int ox = 0; ox < lo; ox++) d[ox] = 0.0f;
                    memcpy(d + lo, row + lo - s->pw + j, (size_t)(hi - lo) * sizeof *d);
                    for (int ox = hi; ox < s->ow; ox++) d[ox] = 0.0f;
                    continue;
                }
                for (int ox = 0; ox < s->ow; ox++) {
                    int ix = ox * s->sw - s->pw + j;
                    d[ox] = (ix >= 0 && ix < s->w) ? row[ix] : 0.0f;
                }
            }
        }
    }
}

/* dx[n0+s][c][...] += scatter of dcols; each (sample, channel) plane is
 * written by one thread only, so there are no races. */
static void col2im_add(const cb_conv_shape *s, const float *dcols, int n0, int nc, float *dx)
{
    const size_t plane = ohw(s), ld = (size_t)nc * plane;
    const int planes = nc * s->c;
#pragma omp parallel for schedule(static)
    for (int pc = 0; pc < planes; pc++) {
        int sm = pc / s->c, c = pc % s->c;
        float *dst = dx + (size_t)((n0 + sm) * s->c + c) * s->h * s->w;
        for (int i = 0; i < s->kh; i++)
            for (int j = 0; j < s->kw; j++) {
                const float *src = dcols + (size_t)((c * s->kh + i) * s->kw + j) * ld + (size_t)sm * plane;
                for (int oy = 0; oy < s->oh; oy++) {
                    int iy = oy * s->sh - s->ph + i;
                    if (iy < 0 || iy >= s->h) continue;
                    for (int ox = 0; ox < s->ow; ox++) {
                        int ix = ox * s->sw - s->pw + j;
                        if (ix >= 0 && ix < s->w) dst[(size_t)iy * s->w + ix] += src[(size_t)oy * s->ow + ox];
                    }
                }
            }
    }
}

void cb_conv2d_fwd_fast(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act,
                        float *y, float *ws)
{
    if (use_direct(s)) {
        cb_conv2d_fwd_direct(s, x, w, b, act, y, ws);
        return;
    }
    if (s->oh == 1 && s->ow == 1 && s->ph == 0 && s->pw == 0 && s->kh == s->h && s->kw == s->w) {
        /* The window covers the whole unpadded input (LeNet-5's conv3): a
         * fully connected layer, y[n, OC] = x[n, K] . W[OC, K]^T, with no
         * im2col and the output already in NCHW order. */
        const int K = (int)kdim(s);
        for (int n = 0; n < s->n; n++)
            for (int o = 0; o < s->oc; o++) y[(size_t)n * s->oc + o] = b ? b[o] : 0.0f;
        cb_gemm(0, 1, s->n, s->oc, K, 1.0f, x, K, w, K, 1.0f, y, s->oc);
        cb_act_fwd_inplace(act, (int64_t)s->n * s->oc, y);
        return;
    }
    const int K = (int)kdim(s), P = (int)ohw(s), step = chunk_samples(s);
    for (int n0 = 0; n0 < s->n; n0 += step) {
        int nc = s->n - n0 < step ? s->n - n0 : step;
        float *cols = ws, *yt = ws + (size_t)K * nc * P;
        im2col(s, x, n0, nc, cols);
        /* yt[OC, nc*P] = W[OC, K] . cols[K, nc*P] */
        cb_gemm(0, 0, s->oc, nc * P, K, 1.0f, w, K, cols, nc * P, 0.0f, yt, nc * P);
        const int planes = nc * s->oc;
#pragma omp parallel for schedule(static)
        for (int pc = 0; pc < planes; pc++) {
            int sm = pc / s->oc, o = pc % s->oc;
            const float *src = yt + (size_t)o * nc * P + (size_t)sm * P;
            float *dst = y + (size_t)((n0 + sm) * s->oc + o) * P;
            float bias = b ? b[o] : 0.0f;
            for (int p = 0; p < P; p++) dst[p] = src[p] + bias;
        }
        /* The fused activation over the chunk's output, still in cache. */
        cb_act_fwd_inplace(act, (int64_t)nc * s->oc * P, y + (size_t)n0 * s->oc * P);
    }
}

void cb_conv2d_bwd_fast(const cb_conv_shape *s, const float *x, const float *w, const float *dy,
                        float *dx, float *dw, float *db, float *ws)
{
    const int K = (int)kdim(s), P = (int)ohw(s), step = chunk_samples(s);
    for (int n0 = 0; n0 < s->n; n0 += step) {
        int nc = s->n - n0 < step ? s->n - n0 : step;
        float *cols = ws, *dyt = ws + (size_t)K * nc * P, *dcols = dyt + (size_t)s->oc * nc * P;
        const int planes = nc * s->oc;
#pragma omp parallel for schedule(static)
        for (int pc = 0; pc < planes; pc++) {
            int sm = pc / s->oc, o = pc % s->oc;
            memcpy(dyt + (size_t)o * nc * P + (size_t)sm * P, dy + (size_t)((n0 + sm) * s->oc + o) * P,
                   (size_t)P * sizeof(float));
        }
        if (db)
#pragma omp parallel for schedule(static)
            for (int o = 0; o < s->oc; o++) {
                const float *row = dyt + (size_t)o * nc * P;
                float acc = 0.0f;
                for (size_t p = 0; p < (size_t)nc * P; p++) acc += row[p];
                db[o] += acc;
            }
        if (dw) {
            im2col(s, x, n0, nc, cols);
            /* dW[OC, K] += dyt[OC, nc*P] . cols[K, nc*P]^T */
            cb_gemm(0, 1, s->oc, K, nc * P, 1.0f, dyt, nc * P, cols, nc * P, 1.0f, dw, K);
        }
        if (dx) {
            /* dcols[K, nc*P] = W[OC, K]^T . dyt[OC, nc*P] */
            cb_gemm(1, 0, K, nc * P, s->oc, 1.0f, w, K, dyt, nc * P, 0.0f, dcols, nc * P);
            col2im_add(s, dcols, n0, nc, dx);
        }
    }
}
