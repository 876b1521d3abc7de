/* Direct weight gradient of stride-1 convolutions with one input channel
 * (the LeNets' first layers), where the general paths waste the machine:
 * im2col + GEMM multiplies a 25-row lowered matrix, and oneDNN pads the
 * 4 or 6 output channels of the incoming gradient to blocks of 16.
 *
 *   dW[o][i][j] = sum over samples, oy, ox of dY[o][oy][ox] * X[oy + i][ox + j]
 *
 * Each thread takes a contiguous range of samples and prepares WG_CHUNK of
 * them at a time: the input zero-padded (so every tap is a plain load) and
 * the incoming gradient with its rows padded to whole vectors with zeros.
 * A register tile then holds WG_OB channels x KW taps of one kernel row as
 * vectors along ox, accumulated over the chunk's every row and sample before
 * one horizontal sum. The threads' partial sums are added in thread order
 * (deterministic for a given thread count).
 *
 * The padded lanes multiply zeros of dY by inputs right of the row; an
 * infinite or NaN input there turns into NaN in taps that would not have
 * touched it (finite inputs are unaffected). */
#include <string.h>
#include <omp.h>
#include "ops.h"
#include "vec.h"

#define WG_CHUNK 16 /* samples prepared at a time: about 0.3 MB for LeNet-5 */
#define WG_OB 4     /* output channels per tile: 4 x 5 accumulators */

int cb_conv2d_wgrad_direct_ok(const cb_conv_shape *s)
{
    return s->c == 1 && s->sh == 1 && s->sw == 1 && (s->kw == 3 || s->kw == 5) && s->ow >= 1 &&
           s->ow <= 1024 && s->oh >= 1;
}

static int row_vectors(const cb_conv_shape *s) { return (s->ow + CB_RVL - 1) / CB_RVL; }
static int dy_stride(const cb_conv_shape *s) { return row_vectors(s) * CB_RVL; }
static int x_stride(const cb_conv_shape *s) { return dy_stride(s) + s->kw - 1; }
static int x_rows(const cb_conv_shape *s) { return s->oh + s->kh - 1; }

static size_t chunk_floats(const cb_conv_shape *s)
{
    return (size_t)WG_CHUNK * ((size_t)x_rows(s) * x_stride(s) + (size_t)s->oc * s->oh * dy_stride(s));
}

static size_t per_thread(const cb_conv_shape *s)
{
    return chunk_floats(s) + (size_t)s->oc * s->kh * s->kw + (size_t)s->oc;
}

size_t cb_conv2d_wgrad_direct_workspace(const cb_conv_shape *s, int threads)
{
    return per_thread(s) * (size_t)(threads > 0 ? threads : 1);
}

static inline float hsum(cb_vrow v)
{
    float t[CB_RVL], acc = 0.0f;
    memcpy(t, &v, sizeof t);
    for (int l = 0; l < CB_RVL; l++) acc += t[l];
    return acc;
}

/* Sample n's padded input and gradient into xp / gp, and its bias gradient
 * into db. Input rows outside the image, and columns left or right of it,
 * are zero. */
static void prepare(const cb_conv_shape *s, const float *x, const float *dy, float *xp, float *gp, float *db)
{
    const int xs = x_stride(s), gs = dy_stride(s);
    memset(xp, 0, (size_t)x_rows(s) * xs * sizeof *xp);
    for (int r = 0; r < x_rows(s); r++) {
        const int iy = r - s->ph; /* xs >= ow + kw - 1 = w + 2 pw: the row fits */
        if (iy >= 0 && iy < s->h) memcpy(xp + (size_t)r * xs + s->pw, x + (size_t)iy * s->w, (size_t)s->w * sizeof *xp);
    }
    for (int o = 0; o < s->oc; o++) {
        cb_vrow acc = cb_vrow_splat(0.0f); /* vector sums: a scalar chain of adds took longer than the tiles */
        for (int oy = 0; oy < s->oh; oy++) {
            float *dst = gp + ((size_t)o * s->oh + oy) * gs;
            memcpy(dst, dy + ((size_t)o * s->oh + oy) * s->ow, (size_t)s->ow * sizeof *dst);
            memset(dst + s->ow, 0, (size_t)(gs - s->ow) * sizeof *dst);
            for (int v = 0; v < gs; v += CB_RVL) acc += cb_vrow_load(dst + v);
        }
        db[o] += hsum(acc);
    }
}

/* Channels o0 .. o0 + OB - 1, kernel row i, over `count` prepared samples:
 * adds to dw[o][i][j]. */
static inline __attribute__((always_inline)) void tile(const cb_conv_shape *s, const float *xp, const float *gp,
                                                      int count, int o0, int i, float *dw, const int OB,
                                                      const int KW)
{
    const int xs = x_stride(s), gs = dy_stride(s), nv = row_vectors(s);
    const size_t xn = (size_t)x_rows(s) * xs, gn = (size_t)s->oc * s->oh * gs;
    cb_vrow acc[WG_OB * 5];
    for (int a = 0; a < OB * KW; a++) acc[a] = cb_vrow_splat(0.0f);
    for (int n = 0; n < count; n++)
        for (int oy = 0; oy < s->oh; oy++) {
            const float *xr = xp + n * xn + (size_t)(oy + i) * xs;
            const float *gr = gp + n * gn + ((size_t)o0 * s->oh + oy) * gs;
            for (int v = 0; v < nv; v++) {
                cb_vrow g[WG_OB];
                for (int o = 0; o < OB; o++) g[o] = cb_vrow_load(gr + (size_t)o * s->oh * gs + v * CB_RVL);
                for (int j = 0; j < KW; j++) {
                    const cb_vrow xv = cb_vrow_load(xr + v * CB_RVL + j);
                    for (int o = 0; o < OB; o++) acc[o * KW + j] += g[o] * xv;
                }
            }
        }
    for (int o = 0; o < OB; o++)
        for (int j = 0; j < KW; j++) dw[((size_t)(o0 + o) * s->kh + i) * s->kw + j] += hsum(acc[o * KW + j]);
}

#define WG_CASE(ob, kw) tile(s, xp, gp, count, o0, i, dw, ob, kw)
static void tile_n(const cb_conv_shape *s, const float *xp, const float *gp, int count, int o0, int i, float *dw,
                   int ob)
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
    const size_t xs = (size_t)s->h * s->w, ys = (size_t)s->oc * s->oh * s->ow, nw = (size_t)s->oc * s->kh * s->kw;
    const int threads = omp_get_max_threads();
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        float *mine = ws + per_thread(s) * (size_t)t;
        float *xp = mine, *gp = xp + (size_t)WG_CHUNK * x_rows(s) * x_stride(s);
        float *pdw = mine + chunk_floats(s), *pdb = pdw + nw;
        memset(pdw, 0, (nw + (size_t)s->oc) * sizeof *pdw);
        const int n0 = (int)((long)s->n * t / nt), n1 = (int)((long)s->n * (t + 1) / nt);
        for (int c0 = n0; c0 < n1; c0 += WG_CHUNK) {
            const int count = n1 - c0 < WG_CHUNK ? n1 - c0 : WG_CHUNK;
            for (int k = 0; k < count; k++)
                prepare(s, x + (size_t)(c0 + k) * xs, dy + (size_t)(c0 + k) * ys,
                        xp + (size_t)k * x_rows(s) * x_stride(s), gp + (size_t)k * s->oc * s->oh * dy_stride(s), pdb);
            for (int o0 = 0; o0 < s->oc; o0 += WG_OB)
                for (int i = 0; i < s->kh; i++)
                    tile_n(s, xp, gp, count, o0, i, pdw, s->oc - o0 < WG_OB ? s->oc - o0 : WG_OB);
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
