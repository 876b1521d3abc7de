/* Forward of small stride-1 convolutions (the LeNets' second layers) in
 * training, with 16 samples in the vector lanes, as their backward does
 * (conv_nb.c).
 *
 * Why: these layers have 4 to 6 input channels and 8- to 10-pixel output
 * rows. oneDNN pads the channels to 16 (LeNet-1: 4 of 16 lanes do work), and
 * the flattened-row kernel fills 8 of every 12 lanes of LeNet-1's rows. With
 * a block's samples transposed so that a vector holds one input position of
 * all 16 (Xi[c][y][x][lane], zero-padded), every multiply-add is useful: a
 * tile of up to NF_OB output channels x NF_NP positions of a row
 * accumulates, per (input channel, tap), one broadcast weight per channel
 * times one input vector per position. The tile goes to a lane-layout
 * output block, whose activation is applied there and which is transposed
 * back to the batch's NCHW planes.
 *
 * Blocks of 16 samples are split across the threads (each output is written
 * by one thread; no sums across threads, so results do not depend on the
 * thread count). The last block's missing samples are zero lanes, so a batch
 * under 16 would waste lanes: the executor uses the kernel for training
 * batches only, where the batch is the protocol's (cb_conv2d_fwd_nb_ok asks
 * for 16 samples or more). AVX-512 builds only. */
#include <string.h>
#include <omp.h>
#include "ops.h"
#include "vec.h"
#include "lanes.h"

#define NF_OB 4 /* output channels per tile */
#define NF_NP 6 /* positions per tile: NF_OB x NF_NP = 24 accumulators of 32 registers */

#if CB_RVL == 16

/* Up to 4 input channels: LeNet-1's second layer's forward per 12,800
 * samples in training went from 29-34 ms (oneDNN) to 24-27 ms, its whole
 * step 3-4% faster; LeNet-5's (6 channels) went from 36-40 to 40-44 ms and
 * stays with oneDNN (bench-worker --model M --kind train --samples 12800
 * --threads 2 --profile, alternating binaries). */
#define NF_MAX_C 4

int cb_conv2d_fwd_nb_ok(const cb_conv_shape *s)
{
    return s->n >= CB_LANES && s->c <= NF_MAX_C && cb_conv2d_bwd_nb_ok(s);
}

static int hp_of(const cb_conv_shape *s) { return s->h + 2 * s->ph; }
static int wp_of(const cb_conv_shape *s) { return s->w + 2 * s->pw; }
static size_t xi_floats(const cb_conv_shape *s) { return (size_t)s->c * hp_of(s) * wp_of(s) * CB_LANES; }
static size_t yi_floats(const cb_conv_shape *s) { return (size_t)s->oc * s->oh * s->ow * CB_LANES; }
static size_t per_thread(const cb_conv_shape *s) { return xi_floats(s) + yi_floats(s); }

size_t cb_conv2d_fwd_nb_workspace(const cb_conv_shape *s, int threads)
{
    return per_thread(s) * (size_t)cb_split_threads(threads, (s->n + CB_LANES - 1) / CB_LANES);
}

/* yi[o0 .. o0 + OB)[oy][x0 .. x0 + NP) = b + the correlation of xi with w. */
static inline __attribute__((always_inline)) void ftile(const cb_conv_shape *s, const float *xi, const float *w,
                                                       const float *b, float *yi, int o0, int oy, int x0,
                                                       const int OB, const int NP)
{
    const int hp = hp_of(s), wp = wp_of(s), taps = s->kh * s->kw;
    const size_t wstride = (size_t)s->c * taps; /* from one output channel's weights to the next */
    cb_vrow acc[NF_OB * NF_NP];
    for (int o = 0; o < OB; o++)
        for (int p = 0; p < NP; p++) acc[o * NP + p] = cb_vrow_splat(b ? b[o0 + o] : 0.0f);
    for (int c = 0; c < s->c; c++)
        for (int i = 0; i < s->kh; i++) {
            const float *xr = xi + (((size_t)c * hp + oy + i) * wp + x0) * CB_LANES;
            const float *wr = w + (size_t)o0 * wstride + (size_t)c * taps + (size_t)i * s->kw;
            for (int j = 0; j < s->kw; j++) {
                cb_vrow wv[NF_OB];
                for (int o = 0; o < OB; o++) wv[o] = cb_vrow_splat(wr[o * wstride + j]);
                for (int p = 0; p < NP; p++) {
                    const cb_vrow xv = cb_vrow_load(xr + (size_t)(p + j) * CB_LANES);
                    for (int o = 0; o < OB; o++) acc[o * NP + p] += wv[o] * xv;
                }
            }
        }
    for (int o = 0; o < OB; o++)
        for (int p = 0; p < NP; p++)
            memcpy(yi + ((((size_t)o0 + o) * s->oh + oy) * s->ow + x0 + p) * CB_LANES, &acc[o * NP + p],
                   sizeof(cb_vrow));
}

#define FT(ob, np) ftile(s, xi, w, b, yi, o0, oy, x0, ob, np)
#define FT_NP(ob)                                                                                                     \
    switch (np) {                                                                                                     \
    case 1: FT(ob, 1); break; case 2: FT(ob, 2); break; case 3: FT(ob, 3); break; case 4: FT(ob, 4); break;           \
    case 5: FT(ob, 5); break; default: FT(ob, 6); break;                                                              \
    }
static void ftile_n(const cb_conv_shape *s, const float *xi, const float *w, const float *b, float *yi, int o0,
                    int oy, int x0, int ob, int np)
{
    switch (ob) {
    case 1: FT_NP(1); break;
    case 2: FT_NP(2); break;
    case 3: FT_NP(3); break;
    default: FT_NP(4); break;
    }
}
#undef FT_NP
#undef FT

/* A row's positions in tiles of nearly equal width (LeNet-1's 8: 4 + 4, not
 * 6 + 2, which would run a 2-wide tile at a third of the reuse). */
static void fwd_block(const cb_conv_shape *s, const float *xi, const float *w, const float *b, float *yi)
{
    const int tiles = (s->ow + NF_NP - 1) / NF_NP, np_max = (s->ow + tiles - 1) / tiles;
    for (int o0 = 0; o0 < s->oc; o0 += NF_OB)
        for (int oy = 0; oy < s->oh; oy++)
            for (int x0 = 0; x0 < s->ow; x0 += np_max)
                ftile_n(s, xi, w, b, yi, o0, oy, x0, s->oc - o0 < NF_OB ? s->oc - o0 : NF_OB,
                        s->ow - x0 < np_max ? s->ow - x0 : np_max);
}

void cb_conv2d_fwd_nb(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act, float *y,
                      float *ws)
{
    const int blocks = (s->n + CB_LANES - 1) / CB_LANES;
    const size_t xs = (size_t)s->c * s->h * s->w, ys = (size_t)s->oc * s->oh * s->ow;
    const int threads = cb_split_threads(omp_get_max_threads(), blocks);
#pragma omp parallel num_threads(threads)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        float *xi = ws + per_thread(s) * (size_t)t, *yi = xi + xi_floats(s);
        memset(xi, 0, xi_floats(s) * sizeof *xi); /* the padding, once per call: blocks write the interior */
        const int b0 = (int)((long)blocks * t / nt), b1 = (int)((long)blocks * (t + 1) / nt);
        for (int k = b0; k < b1; k++) {
            const int n0 = k * CB_LANES, count = s->n - n0 < CB_LANES ? s->n - n0 : CB_LANES;
            cb_to_lanes(x, xs, n0, count, s->c, s->h, s->w, xi, hp_of(s), wp_of(s), s->ph, s->pw);
            fwd_block(s, xi, w, b, yi);
            cb_act_fwd_inplace(act, (int64_t)yi_floats(s), yi); /* elementwise: the layout does not matter */
            cb_from_lanes(yi, ys, n0, count, y, 0);
        }
    }
}

#else /* no 16-float vectors: never chosen */

int cb_conv2d_fwd_nb_ok(const cb_conv_shape *s) { (void)s; return 0; }
size_t cb_conv2d_fwd_nb_workspace(const cb_conv_shape *s, int threads) { (void)s; (void)threads; return 0; }
void cb_conv2d_fwd_nb(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act, float *y,
                      float *ws)
{
    (void)s; (void)x; (void)w; (void)b; (void)act; (void)y; (void)ws;
}

#endif
