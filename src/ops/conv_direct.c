/* Direct 2-D convolution (stride 1), forward only: the fast path for the
 * small convolutions where im2col + SGEMM wastes most of the machine (LeNet's
 * 1 -> 6 channel layer multiplies a 6 x 25 matrix; its 6 -> 16 layer has
 * 10-pixel rows).
 *
 * Each sample's input is first copied into a zero-padded buffer, so that
 * every tap of the window is a plain unaligned load. Then one of two register
 * tilings accumulates whole output tiles in vector registers over all
 * C * KH * KW taps before storing them once:
 *  - across output channels (OC a multiple of 8): a tile is RX pixels of one
 *    row times 8 or 16 channels; weights are repacked [c][i][j][oc] so that
 *    each tap loads whole channel vectors and broadcasts one input value per
 *    pixel;
 *  - across the output row (any OC): a tile is OB channels times up to 32
 *    pixels of one row; each tap loads row vectors and broadcasts one weight
 *    per channel.
 * GCC's vector extensions keep this portable C; tile sizes are constants at
 * each call site so the accumulators live in registers. A fused activation
 * runs over each sample's output right after it is written. */
#include <string.h>
#include <omp.h>
#include "ops.h"
#include "vec.h"

#define VL CB_VL
typedef v8f v8;
#define load8 v8_load
#define splat v8_splat

int cb_conv2d_direct_ok(const cb_conv_shape *s)
{
    return s->sh == 1 && s->sw == 1 && s->ow >= 1 && s->ow <= 4096 && s->c >= 1 &&
           (long)s->c * s->kh * s->kw <= 4096;
}

/* Padded row length: room for the widest tile's loads past the last pixel. */
static int padded_w(const cb_conv_shape *s) { return ((s->ow + 31) / 32) * 32 + s->kw + 16; }
static int padded_h(const cb_conv_shape *s) { return s->h + 2 * s->ph; }

static size_t per_thread(const cb_conv_shape *s)
{
    return (size_t)s->c * padded_h(s) * padded_w(s)         /* padded sample */
           + (size_t)s->c * s->kh * s->kw * ((s->oc + 15) / 16 * 16) /* repacked weights */
           + (s->oc + 15) / 16 * 16                          /* padded bias */
           + 16 * 16;                                        /* output tile */
}

size_t cb_conv2d_direct_workspace(const cb_conv_shape *s, int threads)
{
    return per_thread(s) * (size_t)cb_split_threads(threads, s->n);
}

static void pad_sample(const cb_conv_shape *s, const float *x, float *xp)
{
    const int hp = padded_h(s), wp = padded_w(s);
    memset(xp, 0, (size_t)s->c * hp * wp * sizeof *xp);
    for (int c = 0; c < s->c; c++)
        for (int iy = 0; iy < s->h; iy++)
            memcpy(xp + ((size_t)c * hp + iy + s->ph) * wp + s->pw, x + ((size_t)c * s->h + iy) * s->w,
                   (size_t)s->w * sizeof *xp);
}

/* ---- tiling across output channels: RX pixels x NV vectors of channels */

static inline __attribute__((always_inline)) void tile_oc(const cb_conv_shape *s, const float *xp, const float *wt,
                                                         const float *b, float *y, int oy, int ox0, int o0,
                                                         float *tmp, const int RX, const int NV)
{
    const int hp = padded_h(s), wp = padded_w(s), ocp = (s->oc + 15) / 16 * 16, P = s->oh * s->ow;
    v8 acc[12];
    for (int v = 0; v < NV; v++) {
        v8 bias = load8(b + o0 + VL * v); /* b: the bias padded to ocp channels */
        for (int r = 0; r < RX; r++) acc[r * NV + v] = bias;
    }
    for (int c = 0; c < s->c; c++)
        for (int i = 0; i < s->kh; i++) {
            const float *row = xp + ((size_t)c * hp + oy + i) * wp + ox0;
            const float *wk = wt + ((size_t)(c * s->kh + i) * s->kw) * ocp + o0;
            for (int j = 0; j < s->kw; j++) {
                v8 wv[2];
                for (int v = 0; v < NV; v++) wv[v] = load8(wk + (size_t)j * ocp + VL * v);
                for (int r = 0; r < RX; r++) {
                    v8 xv = splat(row[j + r]);
                    for (int v = 0; v < NV; v++) acc[r * NV + v] += xv * wv[v];
                }
            }
        }
    /* Pixel-major tile to the channel-major output. */
    for (int r = 0; r < RX; r++)
        for (int v = 0; v < NV; v++) v8_store(tmp + r * 16 + VL * v, acc[r * NV + v]);
    const int real = s->oc - o0 < NV * VL ? s->oc - o0 : NV * VL; /* padding channels are not stored */
    for (int o = 0; o < real; o++) {
        float *dst = y + (size_t)(o0 + o) * P + (size_t)oy * s->ow + ox0;
        for (int r = 0; r < RX; r++) dst[r] = tmp[r * 16 + o];
    }
}

static void sample_oc(const cb_conv_shape *s, const float *xp, const float *wt, const float *b, float *y,
                      float *tmp)
{
    for (int oy = 0; oy < s->oh; oy++)
        for (int o0 = 0; o0 < s->oc; o0 += 16) {
            int ox0 = 0;
            if (s->oc - o0 > 8) { /* two channel vectors: tiles of 6, 4, 2, 1 pixels */
                for (; ox0 + 6 <= s->ow; ox0 += 6) tile_oc(s, xp, wt, b, y, oy, ox0, o0, tmp, 6, 2);
                for (; ox0 + 4 <= s->ow; ox0 += 4) tile_oc(s, xp, wt, b, y, oy, ox0, o0, tmp, 4, 2);
                for (; ox0 + 2 <= s->ow; ox0 += 2) tile_oc(s, xp, wt, b, y, oy, ox0, o0, tmp, 2, 2);
                for (; ox0 < s->ow; ox0++) tile_oc(s, xp, wt, b, y, oy, ox0, o0, tmp, 1, 2);
            } else { /* one channel vector: tiles of 12, 8, 4, 1 pixels */
                for (; ox0 + 12 <= s->ow; ox0 += 12) tile_oc(s, xp, wt, b, y, oy, ox0, o0, tmp, 12, 1);
                for (; ox0 + 8 <= s->ow; ox0 += 8) tile_oc(s, xp, wt, b, y, oy, ox0, o0, tmp, 8, 1);
                for (; ox0 + 4 <= s->ow; ox0 += 4) tile_oc(s, xp, wt, b, y, oy, ox0, o0, tmp, 4, 1);
                for (; ox0 < s->ow; ox0++) tile_oc(s, xp, wt, b, y, oy, ox0, o0, tmp, 1, 1);
            }
        }
}

/* ---- tiling across the output row: OB channels x NV row vectors */

/* Row tiles use cb_vrow (vec.h): LeNet's 28-pixel rows are two vectors with
 * AVX-512, not four. A tile holds at most ROW_ACC accumulators and 32
 * pixels. */
#define ROW_ACC 12
#define ROW_PIX 32

static inline __attribute__((always_inline)) void tile_row(const cb_conv_shape *s, const float *xp, const float *w,
                                                          const float *b, float *y, int oy, int ox0, int o0,
                                                          const int OB, const int NV)
{
    const int hp = padded_h(s), wp = padded_w(s), taps = s->c * s->kh * s->kw, P = s->oh * s->ow;
    cb_vrow acc[ROW_ACC];
    for (int a = 0; a < OB * NV; a++) acc[a] = cb_vrow_splat(b ? b[o0 + a / NV] : 0.0f);
    for (int c = 0; c < s->c; c++)
        for (int i = 0; i < s->kh; i++) {
            const float *row = xp + ((size_t)c * hp + oy + i) * wp + ox0;
            const float *wk = w + (size_t)o0 * taps + (size_t)(c * s->kh + i) * s->kw;
            for (int j = 0; j < s->kw; j++) {
                cb_vrow xv[ROW_PIX / CB_RVL];
                for (int v = 0; v < NV; v++) xv[v] = cb_vrow_load(row + j + CB_RVL * v);
                for (int o = 0; o < OB; o++) {
                    const cb_vrow wv = cb_vrow_splat(wk[(size_t)o * taps + j]);
                    for (int v = 0; v < NV; v++) acc[o * NV + v] += wv * xv[v];
                }
            }
        }
    const int n = s->ow - ox0 < NV * CB_RVL ? s->ow - ox0 : NV * CB_RVL;
    for (int o = 0; o < OB; o++) {
        float tmp[ROW_PIX];
        for (int v = 0; v < NV; v++) memcpy(tmp + CB_RVL * v, &acc[o * NV + v], sizeof(cb_vrow));
        memcpy(y + (size_t)(o0 + o) * P + (size_t)oy * s->ow + ox0, tmp, (size_t)n * sizeof(float));
    }
}

/* tile_row with the channel count OB (1 to ROW_ACC / NV) as a constant of
 * each case, so that its accumulators stay in registers. */
#define ROW_CASE(ob, nv) case ob: tile_row(s, xp, w, b, y, oy, ox0, o0, ob, nv); break
static void tile_row_n(const cb_conv_shape *s, const float *xp, const float *w, const float *b, float *y, int oy,
                       int ox0, int o0, int ob, int nv)
{
    if (nv == 1) {
        switch (ob) {
        ROW_CASE(1, 1); ROW_CASE(2, 1); ROW_CASE(3, 1); ROW_CASE(4, 1); ROW_CASE(5, 1); ROW_CASE(6, 1);
        ROW_CASE(7, 1); ROW_CASE(8, 1); ROW_CASE(9, 1); ROW_CASE(10, 1); ROW_CASE(11, 1); default: ROW_CASE(12, 1);
        }
    } else if (nv == 2) {
        switch (ob) {
        ROW_CASE(1, 2); ROW_CASE(2, 2); ROW_CASE(3, 2); ROW_CASE(4, 2); ROW_CASE(5, 2); default: ROW_CASE(6, 2);
        }
    }
#if CB_RVL == 8 /* 32 pixels are up to four vectors */
    else if (nv == 3) {
        switch (ob) { ROW_CASE(1, 3); ROW_CASE(2, 3); ROW_CASE(3, 3); default: ROW_CASE(4, 3); }
    } else {
        switch (ob) { ROW_CASE(1, 4); ROW_CASE(2, 4); default: ROW_CASE(3, 4); }
    }
#endif
}
#undef ROW_CASE

static void sample_row(const cb_conv_shape *s, const float *xp, const float *w, const float *b, float *y)
{
    for (int oy = 0; oy < s->oh; oy++) {
        for (int ox0 = 0; ox0 < s->ow; ox0 += ROW_PIX) {
            const int left = s->ow - ox0, nv = left >= ROW_PIX ? ROW_PIX / CB_RVL : (left + CB_RVL - 1) / CB_RVL;
            const int most = ROW_ACC / nv; /* channels per tile */
            for (int o0 = 0; o0 < s->oc; o0 += most)
                tile_row_n(s, xp, w, b, y, oy, ox0, o0, s->oc - o0 < most ? s->oc - o0 : most, nv);
        }
    }
}

void cb_conv2d_fwd_direct(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act,
                          float *y, float *ws)
{
    const size_t xs = (size_t)s->c * s->h * s->w, ys = (size_t)s->oc * s->oh * s->ow;
    const int by_channel = s->oc % VL == 0;
    const int taps = s->c * s->kh * s->kw, ocp = (s->oc + 15) / 16 * 16;
#pragma omp parallel num_threads(cb_split_threads(omp_get_max_threads(), s->n))
    {
        float *mine = ws + per_thread(s) * (size_t)omp_get_thread_num();
        float *xp = mine, *wt = xp + (size_t)s->c * padded_h(s) * padded_w(s), *bp = wt + (size_t)taps * ocp,
              *tmp = bp + ocp;
        if (by_channel) { /* weights [oc][tap] -> [tap][oc] and the bias, padded with zero channels */
            for (int t = 0; t < taps; t++)
                for (int o = 0; o < ocp; o++) wt[(size_t)t * ocp + o] = o < s->oc ? w[(size_t)o * taps + t] : 0.0f;
            for (int o = 0; o < ocp; o++) bp[o] = b && o < s->oc ? b[o] : 0.0f;
        }
#pragma omp for schedule(static)
        for (int n = 0; n < s->n; n++) {
            pad_sample(s, x + (size_t)n * xs, xp);
            if (by_channel) sample_oc(s, xp, wt, bp, y + (size_t)n * ys, tmp);
            else sample_row(s, xp, w, b, y + (size_t)n * ys);
            /* The fused activation over the sample's output, still in cache. */
            cb_act_fwd_inplace(act, (int64_t)ys, y + (size_t)n * ys);
        }
    }
}
