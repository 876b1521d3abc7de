/* Backward of small stride-1 convolutions (the LeNets' second layers) with
 * the samples in the vector lanes.
 *
 * Sixteen samples at a time are transposed so that one 16-float vector holds
 * one position of all of them: Xi[c][y][x][lane], and the incoming gradient
 * Gi[o][y][x][lane] inside a zero border of kh - 1 rows and kw - 1 columns.
 * Every multiply-add then does useful work on whole aligned vectors, whatever
 * the layer's channel count or row width (LeNet-1's 10-pixel rows filled 10
 * of 16 lanes row by row, 100 of 144 flattened):
 *  - weight gradient: a tile of NB_OB output channels x KW taps of one
 *    (input channel, kernel row), summed over every output position, then
 *    over the lanes (the samples) once per block;
 *  - data gradient: the correlation of the bordered gradient with the
 *    flipped weights, a tile of up to NB_ACC / NB_CB positions of a row x
 *    the input channels (the border's zeros are multiplied too: about half
 *    of LeNet's taps).
 * Blocks are split across the threads; each thread's weight-gradient sums
 * are added in thread order (deterministic for a given thread count). The
 * last block's missing samples are zero lanes. AVX-512 builds only (16
 * lanes). */
#include <string.h>
#include <omp.h>
#include "ops.h"
#include "vec.h"
#include "lanes.h"
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#define NB 16      /* samples per block: the vector's lanes */
#define NB_OB 4    /* weight gradient: output channels per tile (x KW = 5: 20 accumulators) */
#define NB_ACC 24  /* data gradient: accumulators per tile */

#if CB_RVL == NB

int cb_conv2d_bwd_nb_ok(const cb_conv_shape *s)
{
    return s->sh == 1 && s->sw == 1 && s->c >= 3 && s->c <= 8 && s->oc >= 1 && s->oc <= 16 && s->kh >= 1 &&
           s->kh <= 5 && s->kw >= 1 && s->kw <= 5 && s->ph <= s->kh - 1 && s->pw <= s->kw - 1 &&
           (long)(s->h + 2 * s->ph) * (s->w + 2 * s->pw) <= 1024;
}

static int hp_of(const cb_conv_shape *s) { return s->h + 2 * s->ph; }   /* padded input rows */
static int wp_of(const cb_conv_shape *s) { return s->w + 2 * s->pw; }
static int gh_of(const cb_conv_shape *s) { return s->oh + 2 * (s->kh - 1); } /* bordered gradient rows */
static int gw_of(const cb_conv_shape *s) { return s->ow + 2 * (s->kw - 1); }

static size_t xi_floats(const cb_conv_shape *s) { return (size_t)s->c * hp_of(s) * wp_of(s) * NB; }
static size_t gi_floats(const cb_conv_shape *s) { return (size_t)s->oc * gh_of(s) * gw_of(s) * NB; }
static size_t di_floats(const cb_conv_shape *s) { return (size_t)s->c * s->h * s->w * NB; }
static size_t nw_of(const cb_conv_shape *s) { return (size_t)s->oc * s->c * s->kh * s->kw; }

static size_t per_thread(const cb_conv_shape *s)
{
    return xi_floats(s) + gi_floats(s) + di_floats(s) + nw_of(s) + (size_t)s->oc;
}

size_t cb_conv2d_bwd_nb_workspace(const cb_conv_shape *s, int threads)
{
    return per_thread(s) * (size_t)cb_split_threads(threads, (s->n + NB - 1) / NB);
}

/* Samples n0 .. n0 + count - 1 into the lanes of xi and gi, whose padding
 * and border the caller has zeroed (every block writes the same interior;
 * missing samples are zero lanes). */
static void gather(const cb_conv_shape *s, const float *x, const float *dy, int n0, int count, float *xi, float *gi)
{
    cb_to_lanes(x, (size_t)s->c * s->h * s->w, n0, count, s->c, s->h, s->w, xi, hp_of(s), wp_of(s), s->ph, s->pw);
    cb_to_lanes(dy, (size_t)s->oc * s->oh * s->ow, n0, count, s->oc, s->oh, s->ow, gi, gh_of(s), gw_of(s), s->kh - 1,
             s->kw - 1);
}

/* ---- weight gradient */

static inline __attribute__((always_inline)) void wtile(const cb_conv_shape *s, const float *xi, const float *gi,
                                                       int o0, int c, int i, float *dw, const int OB, const int KW)
{
    const int hp = hp_of(s), wp = wp_of(s), gh = gh_of(s), gw = gw_of(s);
    cb_vrow acc[NB_OB * 5];
    for (int a = 0; a < OB * KW; a++) acc[a] = cb_vrow_splat(0.0f);
    for (int oy = 0; oy < s->oh; oy++) {
        const float *xr = xi + ((size_t)c * hp + oy + i) * wp * NB;
        const float *gr = gi + (((size_t)o0 * gh + oy + s->kh - 1) * gw + s->kw - 1) * NB;
        for (int ox = 0; ox < s->ow; ox++) {
            cb_vrow g[NB_OB];
            for (int o = 0; o < OB; o++) g[o] = cb_vrow_load(gr + ((size_t)o * gh * gw + ox) * NB);
            for (int j = 0; j < KW; j++) {
                const cb_vrow xv = cb_vrow_load(xr + (size_t)(ox + j) * NB);
                for (int o = 0; o < OB; o++) acc[o * KW + j] += g[o] * xv;
            }
        }
    }
    for (int o = 0; o < OB; o++)
        for (int j = 0; j < KW; j++)
            dw[(((size_t)(o0 + o) * s->c + c) * s->kh + i) * s->kw + j] += cb_vrow_hsum(acc[o * KW + j]);
}

#define WT(ob, kw) wtile(s, xi, gi, o0, c, i, dw, ob, kw)
#define WT_KW(ob)                                                                                                     \
    switch (s->kw) {                                                                                                  \
    case 1: WT(ob, 1); break; case 2: WT(ob, 2); break; case 3: WT(ob, 3); break; case 4: WT(ob, 4); break;           \
    default: WT(ob, 5); break;                                                                                        \
    }
static void wtile_n(const cb_conv_shape *s, const float *xi, const float *gi, int o0, int c, int i, float *dw, int ob)
{
    switch (ob) {
    case 1: WT_KW(1); break;
    case 2: WT_KW(2); break;
    case 3: WT_KW(3); break;
    default: WT_KW(4); break;
    }
}
#undef WT_KW
#undef WT

static void wgrad_block(const cb_conv_shape *s, const float *xi, const float *gi, float *dw, float *db)
{
    for (int o0 = 0; o0 < s->oc; o0 += NB_OB)
        for (int c = 0; c < s->c; c++)
            for (int i = 0; i < s->kh; i++) wtile_n(s, xi, gi, o0, c, i, dw, s->oc - o0 < NB_OB ? s->oc - o0 : NB_OB);
    const int gh = gh_of(s), gw = gw_of(s);
    for (int o = 0; o < s->oc; o++) { /* the border is zero: sum the whole bordered plane */
        cb_vrow acc = cb_vrow_splat(0.0f);
        const float *p = gi + (size_t)o * gh * gw * NB;
        for (int k = 0; k < gh * gw; k++) acc += cb_vrow_load(p + (size_t)k * NB);
        db[o] += cb_vrow_hsum(acc);
    }
}

/* ---- data gradient: dXpad[c][py][px] = sum of W[o][c][i][j] * Gi[o][py - i + kh - 1][px - j + kw - 1] */

static inline __attribute__((always_inline)) void dtile(const cb_conv_shape *s, const float *gi, const float *w,
                                                       float *di, int c0, int y, int x0, const int CB, const int NP)
{
    const int gh = gh_of(s), gw = gw_of(s), taps = s->kh * s->kw;
    const int py = y + s->ph, px0 = x0 + s->pw;
    cb_vrow acc[NB_ACC];
    for (int a = 0; a < CB * NP; a++) acc[a] = cb_vrow_splat(0.0f);
    /* Kernel rows whose gradient row py - i lies outside the border: the
     * others would only multiply its zeros (LeNet's 14 rows: 50 of 70). */
    const int i_lo = py - s->oh + 1 > 0 ? py - s->oh + 1 : 0, i_hi = py < s->kh - 1 ? py : s->kh - 1;
    for (int o = 0; o < s->oc; o++)
        for (int i = i_lo; i <= i_hi; i++) {
            const float *gr = gi + (((size_t)o * gh + py - i + s->kh - 1) * gw + px0 + s->kw - 1) * NB;
            const float *wr = w + ((size_t)o * s->c + c0) * taps + (size_t)i * s->kw;
            for (int j = 0; j < s->kw; j++) {
                cb_vrow wv[NB_ACC];
                for (int c = 0; c < CB; c++) wv[c] = cb_vrow_splat(wr[(size_t)c * taps + j]);
                for (int p = 0; p < NP; p++) {
                    const cb_vrow gv = cb_vrow_load(gr + (size_t)(p - j) * NB);
                    for (int c = 0; c < CB; c++) acc[c * NP + p] += wv[c] * gv;
                }
            }
        }
    for (int c = 0; c < CB; c++)
        for (int p = 0; p < NP; p++)
            memcpy(di + (((size_t)(c0 + c) * s->h + y) * s->w + x0 + p) * NB, &acc[c * NP + p], sizeof(cb_vrow));
}

/* Channel blocks of 3 to 6 (LeNet-5's 6 input channels in one; 7 or 8 as
 * 4 + 3 or 4 + 4), positions per tile NB_ACC / channels. */
static int d_cb(const cb_conv_shape *s) { return s->c <= 6 ? s->c : 4; }

#define DT(cb, np) dtile(s, gi, w, di, c0, y, x0, cb, np)
static void dtile_n(const cb_conv_shape *s, const float *gi, const float *w, float *di, int c0, int y, int x0, int cb,
                    int np)
{
    /* np runs from 1 to NB_ACC / cb */
    switch (cb) {
    case 3:
        switch (np) { case 1: DT(3, 1); break; case 2: DT(3, 2); break; case 3: DT(3, 3); break; case 4: DT(3, 4); break;
                      case 5: DT(3, 5); break; case 6: DT(3, 6); break; case 7: DT(3, 7); break; default: DT(3, 8); break; }
        break;
    case 4:
        switch (np) { case 1: DT(4, 1); break; case 2: DT(4, 2); break; case 3: DT(4, 3); break; case 4: DT(4, 4); break;
                      case 5: DT(4, 5); break; default: DT(4, 6); break; }
        break;
    case 5:
        switch (np) { case 1: DT(5, 1); break; case 2: DT(5, 2); break; case 3: DT(5, 3); break; default: DT(5, 4); break; }
        break;
    default:
        switch (np) { case 1: DT(6, 1); break; case 2: DT(6, 2); break; case 3: DT(6, 3); break; default: DT(6, 4); break; }
        break;
    }
}
#undef DT

static void dgrad_block(const cb_conv_shape *s, const float *gi, const float *w, float *di)
{
    const int cb = d_cb(s), np_max = NB_ACC / cb;
    for (int c0 = 0; c0 < s->c; c0 += cb)
        for (int y = 0; y < s->h; y++)
            for (int x0 = 0; x0 < s->w; x0 += np_max) {
                const int np = s->w - x0 < np_max ? s->w - x0 : np_max;
                dtile_n(s, gi, w, di, c0, y, x0, s->c - c0 < cb ? s->c - c0 : cb, np);
            }
}

void cb_conv2d_bwd_nb(const cb_conv_shape *s, const float *x, const float *w, const float *dy, float *dx, float *dw,
                      float *db, float *ws)
{
    const int blocks = (s->n + NB - 1) / NB;
    const size_t nw = nw_of(s), xs = (size_t)s->c * s->h * s->w;
    const int threads = cb_split_threads(omp_get_max_threads(), blocks);
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        float *xi = ws + per_thread(s) * (size_t)t, *gi = xi + xi_floats(s), *di = gi + gi_floats(s);
        float *pdw = di + di_floats(s), *pdb = pdw + nw;
        memset(pdw, 0, (nw + (size_t)s->oc) * sizeof *pdw);
        memset(xi, 0, (xi_floats(s) + gi_floats(s)) * sizeof *xi); /* once per call, not per block */
        const int b0 = (int)((long)blocks * t / nt), b1 = (int)((long)blocks * (t + 1) / nt);
        for (int b = b0; b < b1; b++) {
            const int n0 = b * NB, count = s->n - n0 < NB ? s->n - n0 : NB;
            gather(s, x, dy, n0, count, xi, gi);
            if (dw) wgrad_block(s, xi, gi, pdw, pdb);
            if (dx) {
                dgrad_block(s, gi, w, di);
                cb_from_lanes(di, xs, n0, count, dx, 1);
            }
        }
#pragma omp barrier
#pragma omp single
        if (dw)
            for (int u = 0; u < nt; u++) { /* thread order: the same sums every run */
                const float *p = ws + per_thread(s) * (size_t)u + xi_floats(s) + gi_floats(s) + di_floats(s);
                for (size_t k = 0; k < nw; k++) dw[k] += p[k];
                if (db)
                    for (int o = 0; o < s->oc; o++) db[o] += p[nw + o];
            }
    }
}

#else /* no 16-float vectors: never chosen */

int cb_conv2d_bwd_nb_ok(const cb_conv_shape *s) { (void)s; return 0; }
size_t cb_conv2d_bwd_nb_workspace(const cb_conv_shape *s, int threads) { (void)s; (void)threads; return 0; }
void cb_conv2d_bwd_nb(const cb_conv_shape *s, const float *x, const float *w, const float *dy, float *dx, float *dw,
                      float *db, float *ws)
{
    (void)s; (void)x; (void)w; (void)dy; (void)dx; (void)dw; (void)db; (void)ws;
}

#endif
