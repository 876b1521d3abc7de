/* Convolutions whose every output position sees every input position of
 * its plane through some tap (VGG-16's 2 x 2 layers: 3 x 3 windows, padding
 * 1), run as one dense matrix product each way.
 *
 * Why: such a layer is a fully connected layer from the C x Q inputs of a
 * sample (Q = h x w) to its OC x P outputs (P = oh x ow), whose matrix
 * MT[(o, p)][(c, q)] = W[o][c][tap(p, q)] is made from the weights. Of the
 * nominal C x kh x kw multiply-adds per output, only those of in-plane taps
 * are done (VGG-16's 2 x 2 layers: 16 of 36; im2col multiplies the padding's
 * zeros too, and oneDNN pads and reorders); the tensors' NCHW rows are the
 * product's rows as they are, with no lowering or reorders:
 *   y[n][(o, p)]  = x[n][(c, q)] . MT^T                (+ bias, activation)
 *   dx[n][(c, q)] += dy[n][(o, p)] . MT
 *   dMT           = dy^T . x, folded into dw[o][c][tap] (summed over the
 *                   (p, q) pairs of each tap), db[o] += dy summed over n, p.
 * MT is made again in the backward pass (the workspace is shared between
 * layers): about 3 ms of a layer's 9.5-11 ms forward at batch 128.
 * VGG-16's three 2 x 2 layers per training step at 2 threads: forward
 * 36-44 -> 30-38 ms, backward 86-105 -> 61-67 ms (against oneDNN forward
 * and backward data, and the im2col + BLAS weight gradient). */
#include <string.h>
#include "ops.h"

/* MT's size limit: VGG-16's 2 x 2 layers' is 4 M floats, 1.7 times their
 * weights. */
#define DENSE_MAX_MT ((size_t)1 << 23)
/* Making MT writes all of it: batches under this would spend more time
 * there than in the product (VGG-16's batch-1 latency would pay it three
 * times per sample). */
#define DENSE_MIN_BATCH 64
/* (output, input) position pairs: the tap table's size. */
#define DENSE_MAX_PAIRS 1024

static size_t plane_in(const cb_conv_shape *s) { return (size_t)s->h * s->w; }
static size_t plane_out(const cb_conv_shape *s) { return (size_t)s->oh * s->ow; }
static size_t mt_floats(const cb_conv_shape *s) { return (size_t)s->oc * plane_out(s) * s->c * plane_in(s); }

/* The tap through which output (oy, ox) sees input (iy, ix): i * kw + j, or
 * -1 where none does. */
static int tap_of(const cb_conv_shape *s, int oy, int ox, int iy, int ix)
{
    const int i = iy - oy * s->sh + s->ph, j = ix - ox * s->sw + s->pw;
    return i >= 0 && i < s->kh && j >= 0 && j < s->kw ? i * s->kw + j : -1;
}

int cb_conv2d_matrix_product(const cb_conv_shape *s) { return cb_conv2d_whole_window(s) || cb_conv2d_dense_ok(s); }

int cb_conv2d_dense_ok(const cb_conv_shape *s)
{
    if (s->n < DENSE_MIN_BATCH || cb_conv2d_whole_window(s) || mt_floats(s) > DENSE_MAX_MT || mt_floats(s) == 0)
        return 0;
    /* Worth it only where the in-plane taps are fewer than the window's:
     * otherwise im2col and oneDNN do the same work without making MT. */
    if (plane_in(s) >= (size_t)s->kh * s->kw || plane_in(s) * plane_out(s) > DENSE_MAX_PAIRS) return 0;
    for (int oy = 0; oy < s->oh; oy++)
        for (int ox = 0; ox < s->ow; ox++)
            for (int iy = 0; iy < s->h; iy++)
                for (int ix = 0; ix < s->w; ix++)
                    if (tap_of(s, oy, ox, iy, ix) < 0) return 0;
    return 1;
}

size_t cb_conv2d_dense_workspace(const cb_conv_shape *s) { return 2 * mt_floats(s); }

/* The tap of each (output, input) position pair, tap[p * Q + q]. */
static void tap_table(const cb_conv_shape *s, int *tap)
{
    const int P = (int)plane_out(s), Q = (int)plane_in(s);
    for (int p = 0; p < P; p++)
        for (int q = 0; q < Q; q++) tap[p * Q + q] = tap_of(s, p / s->ow, p % s->ow, q / s->w, q % s->w);
}

/* mt[(o * P + p) * CQ + c * Q + q] = w[o][c][tap(p, q)]: rows written in
 * order, each reading one output channel's weights. */
static void make_mt(const cb_conv_shape *s, const float *w, float *mt)
{
    const int P = (int)plane_out(s), Q = (int)plane_in(s), taps = s->kh * s->kw;
    const size_t cq = (size_t)s->c * Q;
    int tap[DENSE_MAX_PAIRS];
    tap_table(s, tap);
#pragma omp parallel for schedule(static)
    for (int o = 0; o < s->oc; o++)
        for (int p = 0; p < P; p++) {
            float *row = mt + ((size_t)o * P + p) * cq;
            const int *tp = tap + p * Q;
            for (int c = 0; c < s->c; c++) {
                const float *wc = w + ((size_t)o * s->c + c) * taps;
                for (int q = 0; q < Q; q++) row[(size_t)c * Q + q] = wc[tp[q]];
            }
        }
}

void cb_conv2d_fwd_dense(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act,
                         float *y, float *ws)
{
    const int P = (int)plane_out(s), CQ = (int)(s->c * plane_in(s)), OP = s->oc * P;
    make_mt(s, w, ws);
    cb_gemm(0, 1, s->n, OP, CQ, 1.0f, x, CQ, ws, CQ, 0.0f, y, OP);
#pragma omp parallel for schedule(static)
    for (int n = 0; n < s->n; n++) {
        float *yn = y + (size_t)n * OP;
        if (b)
            for (int o = 0; o < s->oc; o++)
                for (int p = 0; p < P; p++) yn[o * P + p] += b[o];
        cb_act_fwd_inplace(act, OP, yn);
    }
}

void cb_conv2d_bwd_dense(const cb_conv_shape *s, const float *x, const float *w, const float *dy, float *dx,
                         float *dw, float *db, float *ws, int store_dx)
{
    const int P = (int)plane_out(s), Q = (int)plane_in(s), CQ = s->c * Q, OP = s->oc * P, taps = s->kh * s->kw;
    if (dx) {
        make_mt(s, w, ws);
        cb_gemm(0, 0, s->n, CQ, OP, 1.0f, dy, OP, ws, CQ, store_dx ? 0.0f : 1.0f, dx, CQ);
    }
    if (dw) {
        float *dmt = ws + mt_floats(s);
        cb_gemm(1, 0, OP, CQ, s->n, 1.0f, dy, OP, x, CQ, 0.0f, dmt, CQ);
        int tap[DENSE_MAX_PAIRS];
        tap_table(s, tap);
#pragma omp parallel for schedule(static)
        for (int o = 0; o < s->oc; o++)
            for (int p = 0; p < P; p++) {
                const float *row = dmt + ((size_t)o * P + p) * CQ;
                const int *tp = tap + p * Q;
                for (int c = 0; c < s->c; c++) {
                    float *dwc = dw + ((size_t)o * s->c + c) * taps;
                    for (int q = 0; q < Q; q++) dwc[tp[q]] += row[(size_t)c * Q + q];
                }
            }
    }
    if (db)
#pragma omp parallel for schedule(static)
        for (int o = 0; o < s->oc; o++) {
            float acc = 0.0f;
            for (int n = 0; n < s->n; n++)
                for (int p = 0; p < P; p++) acc += dy[((size_t)n * s->oc + o) * P + p];
            db[o] += acc;
        }
}
