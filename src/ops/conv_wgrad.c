/* Direct weight gradient of small stride-1 convolutions (the LeNets'
 * layers), where the general paths waste the machine: im2col + GEMM
 * multiplies matrices of 25-150 rows, and oneDNN pads the 4 to 16 channels
 * to blocks of 16 (or 8) and reached 30-45 GFLOP/s there.
 *
 *   dW[o][c][i][j] = sum over samples, oy, ox of dY[o][oy][ox] * X[c][oy + i][ox + j]
 *
 * With the input zero-padded to rows of XS = w + 2 pw floats and dY laid out
 * with the same row stride (zeros right of each row), the sum over (oy, ox)
 * is one sum over the flattened position q = oy * XS + ox:
 *   dW[o][c][i][j] = sum_q dYp[o][q] * Xp[c][q + i * XS + j],
 * so a vector along q runs over whole rows and across row ends (LeNet's
 * 10-pixel rows would fill 10 of 16 lanes one row at a time).
 *
 * Each thread takes a contiguous range of samples and prepares WG_CHUNK of
 * them at a time. A register tile holds WG_OB channels x KW taps of one
 * (input channel, kernel row) as vectors along q, accumulated over the
 * chunk before one horizontal sum. The threads' partial sums are added in
 * thread order (deterministic for a given thread count).
 *
 * The zeros of dYp multiply inputs right of each row; an infinite or NaN
 * input there turns into NaN in taps that would not have touched it (finite
 * inputs are unaffected). */
#include <string.h>
#include <omp.h>
#include "ops.h"
#include "vec.h"

#define WG_CHUNK 16 /* samples prepared at a time: at most about 0.5 MB for the LeNets */
#define WG_OB 4     /* output channels per tile: 4 x 5 accumulators */
/* The shapes it was measured on (the LeNets: 1-6 input channels, 4-16
 * output channels); wider layers stay with the products. */
#define WG_MAX_C 8
#define WG_MAX_OC 16

int cb_conv2d_wgrad_direct_ok(const cb_conv_shape *s)
{
    return s->c >= 1 && s->c <= WG_MAX_C && s->oc <= WG_MAX_OC && s->sh == 1 && s->sw == 1 &&
           (s->kw == 3 || s->kw == 5) && s->oh >= 1 && s->ow >= 1 && (long)s->oh * (s->w + 2 * s->pw) <= 4096;
}

static int row_stride(const cb_conv_shape *s) { return s->w + 2 * s->pw; } /* = ow + kw - 1 */
/* Flattened positions of one plane of dYp, rounded up to whole vectors. */
static int q_len(const cb_conv_shape *s)
{
    const int q = s->oh * row_stride(s);
    return (q + CB_RVL - 1) / CB_RVL * CB_RVL;
}
/* One input plane of Xp: every tap's loads stay inside it. */
static size_t x_plane(const cb_conv_shape *s) { return (size_t)q_len(s) + (size_t)(s->kh - 1) * row_stride(s) + s->kw; }
static size_t x_sample(const cb_conv_shape *s) { return (size_t)s->c * x_plane(s); }
static size_t g_sample(const cb_conv_shape *s) { return (size_t)s->oc * q_len(s); }

static size_t chunk_floats(const cb_conv_shape *s) { return (size_t)WG_CHUNK * (x_sample(s) + g_sample(s)); }

static size_t per_thread(const cb_conv_shape *s)
{
    return chunk_floats(s) + (size_t)s->oc * s->c * s->kh * s->kw + (size_t)s->oc;
}

size_t cb_conv2d_wgrad_direct_workspace(const cb_conv_shape *s, int threads)
{
    return per_thread(s) * (size_t)(threads > 0 ? threads : 1);
}

/* One sample's Xp and dYp into xp / gp, and its bias gradient into db. */
static void prepare(const cb_conv_shape *s, const float *x, const float *dy, float *xp, float *gp, float *db)
{
    const int xs = row_stride(s), ql = q_len(s);
    memset(xp, 0, x_sample(s) * sizeof *xp);
    for (int c = 0; c < s->c; c++)
        for (int iy = 0; iy < s->h; iy++)
            memcpy(xp + c * x_plane(s) + (size_t)(iy + s->ph) * xs + s->pw, x + ((size_t)c * s->h + iy) * s->w,
                   (size_t)s->w * sizeof *xp);
    memset(gp, 0, g_sample(s) * sizeof *gp);
    for (int o = 0; o < s->oc; o++) {
        float *plane = gp + (size_t)o * ql;
        for (int oy = 0; oy < s->oh; oy++)
            memcpy(plane + (size_t)oy * xs, dy + ((size_t)o * s->oh + oy) * s->ow, (size_t)s->ow * sizeof *plane);
        cb_vrow acc = cb_vrow_splat(0.0f); /* vector sums: a scalar chain of adds took longer than the tiles */
        for (int q = 0; q < ql; q += CB_RVL) acc += cb_vrow_load(plane + q);
        db[o] += cb_vrow_hsum(acc);
    }
}

/* Channels o0 .. o0 + OB - 1, input channel c, kernel row i, over `count`
 * prepared samples: adds to dw[o][c][i][j]. */
static inline __attribute__((always_inline)) void tile(const cb_conv_shape *s, const float *xp, const float *gp,
                                                      int count, int o0, int c, int i, float *dw, const int OB,
                                                      const int KW)
{
    const int ql = q_len(s);
    const size_t xn = x_sample(s), gn = g_sample(s), off = c * x_plane(s) + (size_t)i * row_stride(s);
    cb_vrow acc[WG_OB * 5];
    for (int a = 0; a < OB * KW; a++) acc[a] = cb_vrow_splat(0.0f);
    for (int n = 0; n < count; n++) {
        const float *xr = xp + n * xn + off, *gr = gp + n * gn + (size_t)o0 * ql;
        for (int q = 0; q < ql; q += CB_RVL) {
            cb_vrow g[WG_OB];
            for (int o = 0; o < OB; o++) g[o] = cb_vrow_load(gr + (size_t)o * ql + q);
            for (int j = 0; j < KW; j++) {
                const cb_vrow xv = cb_vrow_load(xr + q + j);
                for (int o = 0; o < OB; o++) acc[o * KW + j] += g[o] * xv;
            }
        }
    }
    for (int o = 0; o < OB; o++)
        for (int j = 0; j < KW; j++)
            dw[(((size_t)(o0 + o) * s->c + c) * s->kh + i) * s->kw + j] += cb_vrow_hsum(acc[o * KW + j]);
}

#define WG_CASE(ob, kw) tile(s, xp, gp, count, o0, c, i, dw, ob, kw)
static void tile_n(const cb_conv_shape *s, const float *xp, const float *gp, int count, int o0, int c, int i,
                   float *dw, int ob)
{
    if (s->kw == 5) {
        switch (ob) { case 1: WG_CASE(1, 5); break; case 2: WG_CASE(2, 5); break; case 3: WG_CASE(3, 5); break;
                      default: WG_CASE(4, 5); break; }
    } else {
        switch (ob) { case 1: WG_CASE(1, 3); break; case 2: WG_CASE(2, 3); break; case 3: WG_CASE(3, 3); break;
                      default: WG_CASE(4, 3); break; }
    }
}
#undef WG_CASE

void cb_conv2d_wgrad_direct(const cb_conv_shape *s, const float *x, const float *dy, float *dw, float *db,
                            float *ws)
{
    const size_t xs = (size_t)s->c * s->h * s->w, ys = (size_t)s->oc * s->oh * s->ow;
    const size_t nw = (size_t)s->oc * s->c * s->kh * s->kw;
    const int threads = omp_get_max_threads();
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        float *mine = ws + per_thread(s) * (size_t)t;
        float *xp = mine, *gp = xp + (size_t)WG_CHUNK * x_sample(s);
        float *pdw = mine + chunk_floats(s), *pdb = pdw + nw;
        memset(pdw, 0, (nw + (size_t)s->oc) * sizeof *pdw);
        const int n0 = (int)((long)s->n * t / nt), n1 = (int)((long)s->n * (t + 1) / nt);
        for (int c0 = n0; c0 < n1; c0 += WG_CHUNK) {
            const int count = n1 - c0 < WG_CHUNK ? n1 - c0 : WG_CHUNK;
            for (int k = 0; k < count; k++)
                prepare(s, x + (size_t)(c0 + k) * xs, dy + (size_t)(c0 + k) * ys, xp + (size_t)k * x_sample(s),
                        gp + (size_t)k * g_sample(s), pdb);
            for (int o0 = 0; o0 < s->oc; o0 += WG_OB)
                for (int c = 0; c < s->c; c++)
                    for (int i = 0; i < s->kh; i++)
                        tile_n(s, xp, gp, count, o0, c, i, pdw, s->oc - o0 < WG_OB ? s->oc - o0 : WG_OB);
        }
#pragma omp barrier
#pragma omp single
        for (int u = 0; u < nt; u++) { /* thread order: the same sums every run */
            const float *p = ws + per_thread(s) * (size_t)u + chunk_floats(s);
            for (size_t k = 0; k < nw; k++) dw[k] += p[k];
            if (db)
                for (int o = 0; o < s->oc; o++) db[o] += p[nw + o];
        }
    }
}
