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
    const int dil_h = s->dh > 1 ? s->dh : 1, dil_w = s->dw > 1 ? s->dw : 1;
    for (int n = 0; n < s->n; n++)
        for (int o = 0; o < s->oc; o++)
            for (int oy = 0; oy < s->oh; oy++)
                for (int ox = 0; ox < s->ow; ox++) {
                    double acc = b ? b[o] : 0.0;
                    for (int c = 0; c < s->c; c++)
                        for (int i = 0; i < s->kh; i++) {
                            int iy = oy * s->sh - s->ph + i * dil_h;
                            if (iy < 0 || iy >= s->h) continue;
                            for (int j = 0; j < s->kw; j++) {
                                int ix = ox * s->sw - s->pw + j * dil_w;
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
    const int dil_h = s->dh > 1 ? s->dh : 1, dil_w = s->dw > 1 ? s->dw : 1;
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
                                int iy = oy * s->sh - s->ph + i * dil_h;
                                if (iy < 0 || iy >= s->h) continue;
                                for (int ox = 0; ox < s->ow; ox++) {
                                    int ix = ox * s->sw - s->pw + j * dil_w;
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
                                int t = iy + s->ph - i * dil_h;
                                if (t < 0 || t % s->sh) continue;
                                int oy = t / s->sh;
                                if (oy >= s->oh) continue;
                                for (int j = 0; j < s->kw; j++) {
                                    int u = ix + s->pw - j * dil_w;
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

/* Samples lowered at once: enough for products at least CONV_MIN_COLS wide
 * (narrower ones waste the GEMM kernel), otherwise as many as fit
 * CONV_CACHE_FLOATS, so that the lowered copy is still in cache when the
 * product reads it. Lowering whole batches (up to the memory cap) streamed
 * VGG-16's 32x32 layers' 59 MB copies through memory twice per chunk. */
#define CONV_MIN_COLS 2048
#define CONV_CACHE_FLOATS ((size_t)2 << 20)

static int chunk_samples(const cb_conv_shape *s)
{
    size_t per_sample = ohw(s) * (2 * kdim(s) + (size_t)s->oc);
    if (!per_sample) per_sample = 1;
    size_t by_width = (CONV_MIN_COLS + ohw(s) - 1) / (ohw(s) ? ohw(s) : 1), by_cache = CONV_CACHE_FLOATS / per_sample;
    size_t nc = by_width > by_cache ? by_width : by_cache, cap = CONV_WS_CAP / per_sample;
    if (nc > cap) nc = cap;
    if (nc < 1) nc = 1;
    if (nc > (size_t)s->n) nc = (size_t)s->n;
    return (int)nc;
}

/* Data gradients through the flattened-row correlation (conv_flat.c) where
 * the layer has at most this many input channels: LeNet-1's second layer (4,
 * which oneDNN pads to 16) took 0.33-0.38 ms per batch of 128 there against
 * oneDNN's 0.69 plus reorders, and its whole backward per 12,800 samples
 * went from 117-121 to 95-103 ms. LeNet-5's (6 channels) took 0.87-1.07 ms
 * against oneDNN's 0.67 plus reorders, and stays there. */
#define DGRAD_FLAT_MAX_C 4

/* The direct kernel wins where the GEMM would be small: few channels in or
 * out, and rows wide enough to fill a register tile. */
int cb_conv2d_direct_pays(const cb_conv_shape *s)
{
    return cb_conv2d_direct_ok(s) && s->ow >= 6 && kdim(s) <= 512 && s->oc <= 64;
}

int cb_conv2d_dgrad_own(const cb_conv_shape *s)
{
    return s->c <= DGRAD_FLAT_MAX_C && cb_conv2d_dgrad_flat_ok(s);
}

/* Backward of a small convolution, where one sample's lowered input (K x P)
 * is small: the samples are split across the threads, each lowering a few
 * at a time into buffers that stay in its own cache and summing its own dW
 * and db, added up in thread order at the end (deterministic for a given
 * thread count). One product over the whole batch instead streams the
 * batch's lowered copy through memory several times (LeNet-5's second
 * layer: 7.7 MB at batch 128) and meets the other thread at every step. */
#define SMALL_SAMPLE_FLOATS 32768 /* K x P of one sample */
#define SMALL_CHUNK_FLOATS 65536  /* a thread's lowered chunk: fits its L2 */

/* Only for few input channels too: VGG-16's 2 x 2 layers (K = 4608, P = 4)
 * are small per sample but make a good product over the whole batch (one
 * sample at a time, their backward took 120 ms instead of 25). */
#define SMALL_MAX_K 1024
int cb_conv2d_small_bwd_ok(const cb_conv_shape *s)
{
    return kdim(s) * ohw(s) <= SMALL_SAMPLE_FLOATS && kdim(s) <= SMALL_MAX_K;
}

static int small_chunk(const cb_conv_shape *s)
{
    size_t per = ohw(s) * (2 * kdim(s) + (size_t)s->oc), nc = SMALL_CHUNK_FLOATS / per;
    return nc < 1 ? 1 : nc > (size_t)s->n ? s->n : (int)nc;
}

static size_t small_per_thread(const cb_conv_shape *s)
{
    return (size_t)small_chunk(s) * ohw(s) * (2 * kdim(s) + (size_t)s->oc) + (size_t)s->oc * kdim(s) + (size_t)s->oc;
}

size_t cb_conv2d_workspace(const cb_conv_shape *s) { return cb_conv2d_workspace_threads(s, omp_get_max_threads()); }

size_t cb_conv2d_workspace_threads(const cb_conv_shape *s, int threads)
{
    size_t gemm = (size_t)chunk_samples(s) * ohw(s) * (2 * kdim(s) + (size_t)s->oc);
    if (cb_conv2d_small_bwd_ok(s)) {
        size_t small = small_per_thread(s) * (size_t)cb_split_threads(threads, s->n);
        if (small > gemm) gemm = small;
    }
    size_t direct = cb_conv2d_direct_pays(s) ? cb_conv2d_direct_workspace(s, threads) : 0;
    const size_t flat = cb_conv2d_flat_ok(s) ? cb_conv2d_flat_workspace(s, threads) : 0;
    const size_t dflat = cb_conv2d_dgrad_own(s) ? cb_conv2d_dgrad_flat_workspace(s, threads) : 0;
    if (flat > direct) direct = flat;
    if (dflat > direct) direct = dflat;
    if (cb_conv2d_bwd_nb_ok(s)) {
        size_t nb = cb_conv2d_bwd_nb_workspace(s, threads);
        if (nb > direct) direct = nb;
    }
    if (cb_conv2d_fwd_nb_ok(s)) {
        size_t nb = cb_conv2d_fwd_nb_workspace(s, threads);
        if (nb > direct) direct = nb;
    }
    if (cb_conv2d_dense_ok(s)) {
        size_t d = cb_conv2d_dense_workspace(s);
        if (d > direct) direct = d;
    }
    if (cb_conv2d_wgrad_direct_ok(s)) {
        size_t wg = cb_conv2d_wgrad_direct_workspace(s, threads);
        if (wg > direct) direct = wg;
    }
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
                    /* valid ox: 0 <= ox - pw + j < w. A plain loop, not memcpy:
                     * rows are 10 to 32 floats, too short for a library call. */
                    int lo = s->pw - j > 0 ? s->pw - j : 0;
                    int hi = s->w + s->pw - j < s->ow ? s->w + s->pw - j : s->ow;
                    if (hi < lo) hi = lo;
                    const float *from = row + (lo - s->pw + j);
                    for (int ox = 0; ox < lo; ox++) d[ox] = 0.0f;
                    for (int k = 0; k < hi - lo; k++) d[lo + k] = from[k];
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
                    const float *srow = src + (size_t)oy * s->ow;
                    float *drow = dst + (size_t)iy * s->w;
                    if (s->sw == 1) { /* the valid ox as one contiguous, vectorised add */
                        int lo = s->pw - j > 0 ? s->pw - j : 0;
                        int hi = s->w + s->pw - j < s->ow ? s->w + s->pw - j : s->ow;
                        float *d = drow + (lo - s->pw + j);
                        for (int k = 0; k < hi - lo; k++) d[k] += srow[lo + k];
                        continue;
                    }
                    for (int ox = 0; ox < s->ow; ox++) {
                        int ix = ox * s->sw - s->pw + j;
                        if (ix >= 0 && ix < s->w) drow[ix] += srow[ox];
                    }
                }
            }
    }
}

void cb_conv2d_fwd_kernel(cb_conv_kernel k, const cb_conv_shape *s, const float *x, const float *w, const float *b,
                          cb_act act, float *y, float *ws)
{
    if (k == CB_CK_DENSE) {
        cb_conv2d_fwd_dense(s, x, w, b, act, y, ws);
        return;
    }
    if (k == CB_CK_FLAT) {
        cb_conv2d_fwd_flat(s, x, w, b, act, y, ws);
        return;
    }
    if (k == CB_CK_DIRECT) {
        cb_conv2d_fwd_direct(s, x, w, b, act, y, ws);
        return;
    }
    if (k == CB_CK_WHOLE_WINDOW) {
        /* A fully connected layer, y[n, OC] = x[n, K] . W[OC, K]^T, with no
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

static void conv2d_bwd_small(const cb_conv_shape *s, const float *x, const float *w, const float *dy, float *dx,
                             float *dw, float *db, float *ws)
{
    const int K = (int)kdim(s), P = (int)ohw(s), step = small_chunk(s), OC = s->oc;
    const int nt = cb_split_threads(omp_get_max_threads(), s->n);
    const size_t per = small_per_thread(s);
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num(), threads = omp_get_num_threads();
        float *cols = ws + per * (size_t)t, *dyt = cols + (size_t)K * step * P, *dcols = dyt + (size_t)OC * step * P;
        float *dw_t = dcols + (size_t)K * step * P, *db_t = dw_t + (size_t)OC * K;
        memset(dw_t, 0, ((size_t)OC * K + OC) * sizeof *dw_t);
        const int lo = (int)((long)s->n * t / threads), hi = (int)((long)s->n * (t + 1) / threads);
        for (int n0 = lo; n0 < hi; n0 += step) {
            const int nc = hi - n0 < step ? hi - n0 : step;
            for (int sm = 0; sm < nc; sm++)
                for (int o = 0; o < OC; o++) {
                    const float *src = dy + (size_t)((n0 + sm) * OC + o) * P;
                    float *d = dyt + (size_t)o * nc * P + (size_t)sm * P;
                    float acc = 0.0f;
                    for (int p = 0; p < P; p++) acc += d[p] = src[p];
                    db_t[o] += acc;
                }
            if (dw) { /* dW_t[OC, K] += dyt[OC, nc*P] . cols[K, nc*P]^T (one thread: in a parallel region) */
                im2col(s, x, n0, nc, cols);
                cb_gemm(0, 1, OC, K, nc * P, 1.0f, dyt, nc * P, cols, nc * P, 1.0f, dw_t, K);
            }
            if (dx) {
                cb_gemm(1, 0, K, nc * P, OC, 1.0f, w, K, dyt, nc * P, 0.0f, dcols, nc * P);
                col2im_add(s, dcols, n0, nc, dx);
            }
        }
#pragma omp barrier
        /* Each thread sums a slice of dW (and db) over the threads, in thread order. */
        const int total = OC * K + OC, a = (int)((long)total * t / threads), b = (int)((long)total * (t + 1) / threads);
        const size_t acc = per - (size_t)total; /* where dw_t starts in each thread's block */
        for (int i = a; i < b; i++) {
            float sum = 0.0f;
            for (int u = 0; u < threads; u++) sum += ws[per * (size_t)u + acc + (size_t)i];
            if (i < OC * K) { if (dw) dw[i] += sum; }
            else if (db) db[i - OC * K] += sum;
        }
    }
}

void cb_conv2d_bwd_kernels(cb_conv_bwd_choice k, const cb_conv_shape *s, const float *x, const float *w,
                           const float *dy, float *dx, float *dw, float *db, float *ws)
{
    if (k.wgrad == CB_CK_WHOLE_WINDOW) {
        /* A fully connected layer's backward: x is [n, K] and dy [n, OC].
         * LeNet-5's conv3 per 12,800 samples: 74 ms through oneDNN, 19 ms so. */
        const int K = (int)kdim(s);
        if (db)
            for (int n = 0; n < s->n; n++)
                for (int o = 0; o < s->oc; o++) db[o] += dy[(size_t)n * s->oc + o];
        if (dw) cb_gemm(1, 0, s->oc, K, s->n, 1.0f, dy, s->oc, x, K, 1.0f, dw, K); /* dW += dy^T . x */
        if (dx) cb_gemm(0, 0, s->n, K, s->oc, 1.0f, dy, s->oc, w, K, 1.0f, dx, K);  /* dx += dy . W */
        return;
    }
    if (k.wgrad == CB_CK_DENSE) {
        cb_conv2d_bwd_dense(s, x, w, dy, dx, dw, db, ws, 0);
        return;
    }
    if (k.wgrad == CB_CK_NB_BWD) {
        cb_conv2d_bwd_nb(s, x, w, dy, dx, dw, db, ws);
        return;
    }
    if (dx && k.dgrad == CB_CK_DGRAD_FLAT) {
        cb_conv2d_dgrad_flat(s, w, dy, dx, ws);
        dx = NULL;
    }
    if (dw && k.wgrad == CB_CK_WGRAD_DIRECT) {
        cb_conv2d_wgrad_direct(s, x, dy, dw, db, ws);
        dw = db = NULL;
    }
    if (!dx && !dw && !db) return;
    /* What is left: the rule that labelled it CB_CK_SMALL or CB_CK_IM2COL. */
    if (cb_conv2d_small_bwd_ok(s)) {
        conv2d_bwd_small(s, x, w, dy, dx, dw, db, ws);
        return;
    }
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

