/* Direct stride-1 convolution over flattened rows, for layers with few
 * channels (the LeNets), forward or as the data gradient.
 *
 * Each sample's input is zero-padded into planes with rows of XS = w + 2 pw
 * floats. With the output laid out with the same row stride, every output
 * position q = oy * XS + ox reads input q + i * XS + j for tap (i, j), so
 *   Yp[o][q] = b[o] + sum over c, i, j of W[o][c][i][j] * Xp[c][q + i * XS + j]
 * is a correlation along q, and a vector along q runs across row ends: the
 * columns ox >= ow it computes are garbage and never stored. LeNet-1's
 * 10-pixel rows would fill 10 of 16 lanes one row at a time; flattened, 100
 * of every 144.
 *
 * A register tile is OB output channels x NV vectors along q; per tap it
 * broadcasts OB weights and loads NV input vectors for OB x NV
 * multiply-adds. Samples are split across the threads.
 *
 * The data gradient of a stride-1 convolution is this correlation of the
 * incoming gradient, padded by kh - 1 - ph rows and kw - 1 - pw columns,
 * with the weights flipped and their channel roles swapped
 * (cb_conv2d_dgrad_flat). */
#include <string.h>
#include <omp.h>
#include "ops.h"
#include "vec.h"

/* Tiles: 4 channels x 6 vectors, or 6 x 4 where a layer has 5-6 output
 * channels (LeNet-5's first layer, its second's data gradient), 24
 * accumulators either way. */
#define FL_ACC 24
static int tile_ob(const cb_conv_shape *s) { return s->oc == 5 || s->oc == 6 ? 6 : 4; }
static int tile_nv(const cb_conv_shape *s) { return FL_ACC / tile_ob(s); }

int cb_conv2d_flat_ok(const cb_conv_shape *s)
{
    return s->sh == 1 && s->sw == 1 && s->c >= 1 && s->c <= 16 && s->oc >= 1 && s->oc <= 16 && s->kh <= 7 &&
           s->kw <= 7 && s->oh >= 1 && s->ow >= 1 && (long)(s->h + 2 * s->ph) * (s->w + 2 * s->pw) <= 8192;
}

static int xs_of(const cb_conv_shape *s) { return s->w + 2 * s->pw; }
/* Output positions computed per plane: whole tiles of vectors. */
static int q_len(const cb_conv_shape *s)
{
    const int q = s->oh * xs_of(s), step = tile_nv(s) * CB_RVL;
    return (q + step - 1) / step * step;
}
/* One padded input plane, with room for every tap's loads of the last tile. */
static size_t x_plane(const cb_conv_shape *s) { return (size_t)q_len(s) + (size_t)(s->kh - 1) * xs_of(s) + s->kw; }

static size_t per_thread(const cb_conv_shape *s)
{
    return (size_t)s->c * x_plane(s) + (size_t)s->oc * q_len(s);
}

size_t cb_conv2d_flat_workspace(const cb_conv_shape *s, int threads)
{
    /* + the data gradient's flipped weights, shared */
    return per_thread(s) * (size_t)(threads > 0 ? threads : 1) + (size_t)s->oc * s->c * s->kh * s->kw;
}

/* A layer's sizes, worked out once per call (q_len divides). */
typedef struct {
    int xs, ql, taps, kh, kw, c;
    size_t plane;
} flat_geom;

static flat_geom geom_of(const cb_conv_shape *s)
{
    return (flat_geom){.xs = xs_of(s), .ql = q_len(s), .taps = s->c * s->kh * s->kw, .kh = s->kh, .kw = s->kw,
                       .c = s->c, .plane = x_plane(s)};
}

/* Channels o0 .. o0 + OB - 1 at positions q0 .. q0 + NV vectors of the
 * padded sample xp, into yp[o][q]. KW: the window's width as a constant
 * (5, the LeNets': the tap loop unrolled), or 0 for g->kw. */
static inline __attribute__((always_inline)) void tile(const flat_geom *g, const float *xp, const float *w,
                                                      const float *b, float *yp, int o0, int q0, const int OB,
                                                      const int NV, const int KW)
{
    const int kw = KW ? KW : g->kw;
    cb_vrow acc[FL_ACC];
    for (int o = 0; o < OB; o++)
        for (int v = 0; v < NV; v++) acc[o * NV + v] = cb_vrow_splat(b ? b[o0 + o] : 0.0f);
    for (int c = 0; c < g->c; c++)
        for (int i = 0; i < g->kh; i++) {
            const float *row = xp + c * g->plane + (size_t)i * g->xs + q0;
            const float *wk = w + (size_t)o0 * g->taps + (size_t)(c * g->kh + i) * kw;
            for (int j = 0; j < kw; j++) {
                cb_vrow wv[6];
                for (int o = 0; o < OB; o++) wv[o] = cb_vrow_splat(wk[(size_t)o * g->taps + j]);
                for (int v = 0; v < NV; v++) {
                    const cb_vrow xv = cb_vrow_load(row + j + v * CB_RVL);
                    for (int o = 0; o < OB; o++) acc[o * NV + v] += wv[o] * xv;
                }
            }
        }
    for (int o = 0; o < OB; o++)
        for (int v = 0; v < NV; v++)
            memcpy(yp + (size_t)(o0 + o) * g->ql + q0 + v * CB_RVL, &acc[o * NV + v], sizeof(cb_vrow));
}

#define TILE(ob, nv) (g->kw == 5 ? tile(g, xp, w, b, yp, o0, q0, ob, nv, 5) : tile(g, xp, w, b, yp, o0, q0, ob, nv, 0))
static void tile_n(const flat_geom *g, int six, const float *xp, const float *w, const float *b, float *yp, int o0,
                   int q0, int ob)
{
    if (six) {
        switch (ob) {
        case 5: TILE(5, 4); break;
        default: TILE(6, 4); break;
        }
        return;
    }
    switch (ob) {
    case 1: TILE(1, 6); break;
    case 2: TILE(2, 6); break;
    case 3: TILE(3, 6); break;
    default: TILE(4, 6); break;
    }
}
#undef TILE

/* The larger of m and v, NaN winning (max pooling's value rule, m the
 * earlier value in scan order). */
static inline float max_nan(float m, float v) { return (v > m || v != v) ? v : m; }

/* One sample's flattened output yp, 2x2 max-pooled into y (oc x oh/2 x ow/2)
 * and then activated. */
static void pool_out(const cb_conv_shape *s, const float *yp, cb_act act, float *y)
{
    const int xs = xs_of(s), ql = q_len(s), ph = s->oh / 2, pw = s->ow / 2;
    for (int o = 0; o < s->oc; o++) {
        float *dst = y + (size_t)o * ph * pw;
        for (int py = 0; py < ph; py++) {
            const float *r0 = yp + (size_t)o * ql + (size_t)2 * py * xs, *r1 = r0 + xs;
            int px = 0;
            for (; px + CB_VL <= pw; px += CB_VL) { /* 8 windows: even and odd columns split by shuffles */
                const v8i even = {0, 2, 4, 6, 8, 10, 12, 14}, odd = even + 1;
                const v8f a0 = v8_load(r0 + 2 * px), a1 = v8_load(r0 + 2 * px + CB_VL);
                const v8f b0 = v8_load(r1 + 2 * px), b1 = v8_load(r1 + 2 * px + CB_VL);
                const v8f top = v8_max_nan(__builtin_shuffle(a0, a1, even), __builtin_shuffle(a0, a1, odd));
                const v8f m = v8_max_nan(v8_max_nan(top, __builtin_shuffle(b0, b1, even)), __builtin_shuffle(b0, b1, odd));
                v8_store(dst + py * pw + px, m);
            }
            for (; px < pw; px++) /* the rest, by the same rule */
                dst[py * pw + px] = max_nan(max_nan(max_nan(r0[2 * px], r0[2 * px + 1]), r1[2 * px]), r1[2 * px + 1]);
        }
        cb_act_fwd_inplace(act, (int64_t)ph * pw, dst);
    }
}

enum flat_out { FLAT_STORE, FLAT_ADD, FLAT_POOL };

/* y = act(conv(x)) (FLAT_STORE), y += conv(x) (FLAT_ADD, no activation) or
 * y = act(maxpool2x2(conv(x))) (FLAT_POOL). */
static void flat_run(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act,
                     enum flat_out mode, float *y, float *ws)
{
    const int add = mode == FLAT_ADD;
    const size_t xsz = (size_t)s->c * s->h * s->w, ysz = (size_t)s->oc * s->oh * s->ow;
    const flat_geom g = geom_of(s);
    const int xs = g.xs, ql = g.ql, ob = tile_ob(s), step = tile_nv(s) * CB_RVL;
#pragma omp parallel
    {
        float *xp = ws + per_thread(s) * (size_t)omp_get_thread_num(), *yp = xp + (size_t)s->c * x_plane(s);
#pragma omp for schedule(static)
        for (int n = 0; n < s->n; n++) {
            memset(xp, 0, (size_t)s->c * x_plane(s) * sizeof *xp);
            for (int c = 0; c < s->c; c++)
                for (int iy = 0; iy < s->h; iy++)
                    memcpy(xp + c * x_plane(s) + (size_t)(iy + s->ph) * xs + s->pw,
                           x + n * xsz + ((size_t)c * s->h + iy) * s->w, (size_t)s->w * sizeof *xp);
            for (int o0 = 0; o0 < s->oc; o0 += ob)
                for (int q0 = 0; q0 < ql; q0 += step)
                    tile_n(&g, ob == 6, xp, w, b, yp, o0, q0, s->oc - o0 < ob ? s->oc - o0 : ob);
            if (mode == FLAT_POOL) {
                pool_out(s, yp, act, y + n * (ysz / 4));
                continue;
            }
            float *yn = y + n * ysz;
            for (int o = 0; o < s->oc; o++)
                for (int oy = 0; oy < s->oh; oy++) {
                    const float *src = yp + (size_t)o * ql + (size_t)oy * xs;
                    float *dst = yn + ((size_t)o * s->oh + oy) * s->ow;
                    if (add)
                        for (int ox = 0; ox < s->ow; ox++) dst[ox] += src[ox];
                    else
                        memcpy(dst, src, (size_t)s->ow * sizeof *dst);
                }
            if (!add) cb_act_fwd_inplace(act, (int64_t)ysz, yn);
        }
    }
}

void cb_conv2d_fwd_flat(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act,
                        float *y, float *ws)
{
    flat_run(s, x, w, b, act, FLAT_STORE, y, ws);
}

int cb_conv2d_flat_pool_ok(const cb_conv_shape *s)
{
    return cb_conv2d_flat_ok(s) && s->oh % 2 == 0 && s->ow % 2 == 0;
}

void cb_conv2d_fwd_flat_pool(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act,
                             float *y, float *ws)
{
    flat_run(s, x, w, b, act, FLAT_POOL, y, ws);
}

/* The correlation that gives a stride-1 convolution's data gradient: the
 * forward's output is its input and vice versa. */
static cb_conv_shape dgrad_shape(const cb_conv_shape *s)
{
    return (cb_conv_shape){.n = s->n, .c = s->oc, .h = s->oh, .w = s->ow, .oc = s->c, .kh = s->kh, .kw = s->kw,
                           .sh = 1, .sw = 1, .ph = s->kh - 1 - s->ph, .pw = s->kw - 1 - s->pw, .oh = s->h, .ow = s->w};
}

void cb_conv2d_dgrad_flat(const cb_conv_shape *s, const float *w, const float *dy, float *dx, float *ws)
{
    const cb_conv_shape t = dgrad_shape(s);
    float *wt = ws, *rest = ws + (size_t)s->oc * s->c * s->kh * s->kw;
    for (int o = 0; o < s->oc; o++) /* wt[c][o][i][j] = w[o][c][kh-1-i][kw-1-j] */
        for (int c = 0; c < s->c; c++)
            for (int i = 0; i < s->kh; i++)
                for (int j = 0; j < s->kw; j++)
                    wt[(((size_t)c * s->oc + o) * s->kh + i) * s->kw + j] =
                        w[(((size_t)o * s->c + c) * s->kh + (s->kh - 1 - i)) * s->kw + (s->kw - 1 - j)];
    flat_run(&t, dy, wt, NULL, CB_ACT_NONE, FLAT_ADD, dx, rest);
}

int cb_conv2d_dgrad_flat_ok(const cb_conv_shape *s)
{
    if (s->sh != 1 || s->sw != 1 || s->ph > s->kh - 1 || s->pw > s->kw - 1) return 0;
    const cb_conv_shape t = dgrad_shape(s);
    return cb_conv2d_flat_ok(&t);
}

size_t cb_conv2d_dgrad_flat_workspace(const cb_conv_shape *s, int threads)
{
    const cb_conv_shape t = dgrad_shape(s);
    return cb_conv2d_flat_workspace(&t, threads);
}
