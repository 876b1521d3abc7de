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
 * Each thread takes a contiguous range of samples and prepares one at a
 * time, so that its planes stay in the first-level cache while every tile
 * reads them (16-sample chunks put 170 KB of dYp behind each tile; on one
 * thread LeNet-1's first layer went from 0.38 to 0.34 ms per batch of 128
 * so). A register tile holds WG_OB channels x KW
 * taps of one (input channel, kernel row) as vectors along q, added to the
 * thread's per-lane sums after each sample; those are summed over the
 * lanes once, and the threads' sums in thread order (deterministic for a
 * given thread count).
 *
 * The zeros of dYp multiply inputs right of each row; an infinite or NaN
 * input there turns into NaN in taps that would not have touched it (finite
 * inputs are unaffected). */
#include <string.h>
#include <omp.h>
#include "ops.h"
#include "vec.h"

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
/* One input plane of Xp: every tap's loads stay inside it, and so do the
 * whole vectors of the last row's copy (cb_row_copy_zfill). */
static size_t x_plane(const cb_conv_shape *s)
{
    return (size_t)q_len(s) + (size_t)(s->kh - 1) * row_stride(s) + s->kw + CB_RVL;
}
/* dYp's planes, q_len apart, with one vector after the last for its last
 * row's copy. */
static size_t x_sample(const cb_conv_shape *s) { return (size_t)s->c * x_plane(s); }
static size_t g_sample(const cb_conv_shape *s) { return (size_t)s->oc * q_len(s) + CB_RVL; }

static size_t nw_of(const cb_conv_shape *s) { return (size_t)s->oc * s->c * s->kh * s->kw; }

/* Per thread: one sample's planes, then its weight-gradient sums per lane
 * (CB_RVL floats each) and its bias-gradient sums. */
static size_t sample_floats(const cb_conv_shape *s) { return x_sample(s) + g_sample(s); }
static size_t per_thread(const cb_conv_shape *s)
{
    return sample_floats(s) + nw_of(s) * CB_RVL + (size_t)s->oc;
}

size_t cb_conv2d_wgrad_direct_workspace(const cb_conv_shape *s, int threads)
{
    return per_thread(s) * (size_t)cb_split_threads(threads, s->n);
}

/* One sample's Xp and dYp into xp / gp, and its bias gradient into db.
 * Only the rows are written: the zeros around them are the caller's, set
 * once per call, since every sample writes the same positions. */
static void prepare(const cb_conv_shape *s, const float *x, const float *dy, float *xp, float *gp, float *db)
{
    const int xs = row_stride(s), ql = q_len(s);
    for (int c = 0; c < s->c; c++)
        for (int iy = 0; iy < s->h; iy++)
            cb_row_copy_zfill(xp + c * x_plane(s) + (size_t)(iy + s->ph) * xs + s->pw,
                              x + ((size_t)c * s->h + iy) * s->w, s->w);
    for (int o = 0; o < s->oc; o++) {
        float *plane = gp + (size_t)o * ql;
        for (int oy = 0; oy < s->oh; oy++)
            cb_row_copy_zfill(plane + (size_t)oy * xs, dy + ((size_t)o * s->oh + oy) * s->ow, s->ow);
        cb_vrow acc = cb_vrow_splat(0.0f); /* vector sums: a scalar chain of adds took longer than the tiles */
        for (int q = 0; q < ql; q += CB_RVL) acc += cb_vrow_load(plane + q);
        db[o] += cb_vrow_hsum(acc);
    }
}

/* Channels o0 .. o0 + OB - 1, input channel c, kernel row i, over the
 * prepared sample: adds to the per-lane sums dw[o][c][i][j][lane]. */
static inline __attribute__((always_inline)) void tile(const cb_conv_shape *s, const float *xp, const float *gp,
                                                      int o0, int c, int i, float *dw, const int OB, const int KW)
{
    const int ql = q_len(s);
    const float *xr = xp + c * x_plane(s) + (size_t)i * row_stride(s), *gr = gp + (size_t)o0 * ql;
    cb_vrow acc[WG_OB * 5];
    for (int a = 0; a < OB * KW; a++) acc[a] = cb_vrow_splat(0.0f);
    for (int q = 0; q < ql; q += CB_RVL) {
        cb_vrow g[WG_OB];
        for (int o = 0; o < OB; o++) g[o] = cb_vrow_load(gr + (size_t)o * ql + q);
        for (int j = 0; j < KW; j++) {
            const cb_vrow xv = cb_vrow_load(xr + q + j);
            for (int o = 0; o < OB; o++) acc[o * KW + j] += g[o] * xv;
        }
    }
    for (int o = 0; o < OB; o++)
        for (int j = 0; j < KW; j++) {
            float *d = dw + ((((size_t)(o0 + o) * s->c + c) * s->kh + i) * s->kw + j) * CB_RVL;
            const cb_vrow sum = cb_vrow_load(d) + acc[o * KW + j];
            memcpy(d, &sum, sizeof sum);
        }
}

#define WG_CASE(ob, kw) tile(s, xp, gp, o0, c, i, dw, ob, kw)
static void tile_n(const cb_conv_shape *s, const float *xp, const float *gp, int o0, int c, int i, float *dw, int ob)
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
    const size_t xs = (size_t)s->c * s->h * s->w, ys = (size_t)s->oc * s->oh * s->ow, nw = nw_of(s);
    const int threads = cb_split_threads(omp_get_max_threads(), s->n);
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        float *mine = ws + per_thread(s) * (size_t)t;
        float *xp = mine, *gp = xp + x_sample(s);
        float *pdw = mine + sample_floats(s), *pdb = pdw + nw * CB_RVL;
        memset(mine, 0, per_thread(s) * sizeof *mine); /* the planes' padding, the sums */
        const int n0 = (int)((long)s->n * t / nt), n1 = (int)((long)s->n * (t + 1) / nt);
        for (int n = n0; n < n1; n++) {
            prepare(s, x + (size_t)n * xs, dy + (size_t)n * ys, xp, gp, pdb);
            for (int o0 = 0; o0 < s->oc; o0 += WG_OB)
                for (int c = 0; c < s->c; c++)
                    for (int i = 0; i < s->kh; i++)
                        tile_n(s, xp, gp, o0, c, i, pdw, s->oc - o0 < WG_OB ? s->oc - o0 : WG_OB);
        }
        /* This thread's sums over its lanes, in lane order, in place. */
        for (size_t k = 0; k < nw; k++) pdw[k] = cb_vrow_hsum(cb_vrow_load(pdw + k * CB_RVL));
#pragma omp barrier
#pragma omp single
        for (int u = 0; u < nt; u++) { /* thread order: the same sums every run */
            const float *p = ws + per_thread(s) * (size_t)u + sample_floats(s);
            for (size_t k = 0; k < nw; k++) dw[k] += p[k];
            if (db)
                for (int o = 0; o < s->oc; o++) db[o] += p[nw * CB_RVL + o];
        }
    }
}
