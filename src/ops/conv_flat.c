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
#include <stdint.h>
#include <string.h>
#include <omp.h>
#include "fastmath.h"
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
/* One padded input plane, with room for every tap's loads of the last tile
 * (and of the pooled tiles' second vectors, which may reach past a row of
 * 17 by up to 2 x CB_RVL - 1 floats, and of the whole vectors that copy
 * the last row in: cb_row_copy_zfill). */
static size_t x_plane(const cb_conv_shape *s)
{
    return (size_t)q_len(s) + (size_t)(s->kh - 1) * xs_of(s) + s->kw + 2 * CB_RVL;
}

static size_t per_thread(const cb_conv_shape *s)
{
    return (size_t)s->c * x_plane(s) + (size_t)s->oc * q_len(s);
}

size_t cb_conv2d_flat_workspace(const cb_conv_shape *s, int threads)
{
    /* + the data gradient's flipped weights, shared */
    return per_thread(s) * (size_t)cb_split_threads(threads, s->n) + (size_t)s->oc * s->c * s->kh * s->kw;
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

#if CB_RVL == 16
/* AVX-512 builds store each output vector straight into the unflattened
 * output with lane masks (and activate it in registers first), where other
 * builds stage the flattened planes and copy their rows out: 28% of LeNet-5's
 * first layer's profile samples fell in that copying loop. A vector's lanes meet
 * at most three output rows where padded rows are at least 8 wide. */
#define FLAT_DIRECT 1
typedef struct {
    int n;            /* row segments */
    int off[3];       /* the plane index of lane 0 for each segment's row */
    __mmask16 mask[3]; /* the lanes that are output positions of that row */
} lane_map;

static int direct_ok(const cb_conv_shape *s) { return xs_of(s) >= 8; }
/* Output vectors of the largest plane cb_conv2d_flat_ok admits. */
#define FLAT_MAX_VECTORS ((8192 + FL_ACC * CB_RVL) / CB_RVL)

/* The lane maps of a layer's ql / 16 output vectors. */
static void lane_maps(const cb_conv_shape *s, lane_map *maps)
{
    const int xs = xs_of(s), ql = q_len(s);
    for (int k = 0; k < ql / CB_RVL; k++) {
        lane_map *m = &maps[k];
        const int q0 = k * CB_RVL;
        m->n = 0;
        for (int r = q0 / xs; r <= (q0 + CB_RVL - 1) / xs && r < s->oh; r++) {
            unsigned bits = 0;
            for (int l = 0; l < CB_RVL; l++)
                if ((q0 + l) / xs == r && (q0 + l) % xs < s->ow) bits |= 1u << l;
            if (!bits) continue;
            m->off[m->n] = q0 - r * (xs - s->ow);
            m->mask[m->n++] = (__mmask16)bits;
        }
    }
}

/* v stored (or added) at its output positions in one output plane. Lane 0's
 * position may lie before the plane (masked-out lanes are never touched),
 * hence the integer arithmetic on the address. */
static inline void store_mapped(const lane_map *m, float *plane, cb_vrow v, int add)
{
    for (int k = 0; k < m->n; k++) {
        float *p = (float *)((uintptr_t)plane + (uintptr_t)((intptr_t)m->off[k] * (intptr_t)sizeof(float)));
        __m512 o = (__m512)v;
        if (add) o = _mm512_add_ps(_mm512_maskz_loadu_ps(m->mask[k], p), o);
        _mm512_mask_storeu_ps(p, m->mask[k], o);
    }
}

/* tanh and ReLU in registers (the same approximation as cb_act_fwd's
 * 16-lane blocks); the logistic function is applied to the stored sample. */
static inline cb_vrow act_in_registers(cb_act act, cb_vrow v)
{
    if (act == CB_ACT_TANH) return tanh16_approx(v);
    if (act == CB_ACT_RELU) {
        const cb_v16i keep = (v > 0.0f) | (v != v);
        return (cb_vrow)(keep & (cb_v16i)v);
    }
    return v;
}
#endif

/* Where a tile's results go: the staging planes yp[o][q] (map NULL), or,
 * with FLAT_DIRECT, the sample's output planes y (plane floats apart)
 * through the lane maps, activated by act or added (add). */
typedef struct {
    float *yp;
    float *y;
    size_t plane;
    const void *map;
    cb_act act;
    int add;
} flat_dst;

/* Channels o0 .. o0 + OB - 1 at positions q0 .. q0 + NV vectors of the
 * padded sample xp, into d. KW: the window's width as a constant (5, the
 * LeNets': the tap loop unrolled), or 0 for g->kw. */
static inline __attribute__((always_inline)) void tile(const flat_geom *g, const float *xp, const float *w,
                                                      const float *b, const flat_dst *d, int o0, int q0,
                                                      const int OB, const int NV, const int KW)
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
#ifdef FLAT_DIRECT
    if (d->map) {
        const lane_map *maps = (const lane_map *)d->map + q0 / CB_RVL;
        for (int o = 0; o < OB; o++)
            for (int v = 0; v < NV; v++)
                store_mapped(&maps[v], d->y + (size_t)(o0 + o) * d->plane, act_in_registers(d->act, acc[o * NV + v]),
                             d->add);
        return;
    }
#endif
    for (int o = 0; o < OB; o++)
        for (int v = 0; v < NV; v++)
            memcpy(d->yp + (size_t)(o0 + o) * g->ql + q0 + v * CB_RVL, &acc[o * NV + v], sizeof(cb_vrow));
}

#define TILE(ob, nv) (g->kw == 5 ? tile(g, xp, w, b, d, o0, q0, ob, nv, 5) : tile(g, xp, w, b, d, o0, q0, ob, nv, 0))
static void tile_n(const flat_geom *g, int six, const float *xp, const float *w, const float *b, const flat_dst *d,
                   int o0, int q0, int ob)
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

/* One sample's convolution output src (rows rs floats apart, planes ps),
 * 2x2 max-pooled into y (oc x oh/2 x ow/2) and then activated by act. */
static void pool_out(const cb_conv_shape *s, const float *src, int rs, size_t ps, cb_act act, float *y)
{
    const int ph = s->oh / 2, pw = s->ow / 2;
    for (int o = 0; o < s->oc; o++) {
        float *dst = y + (size_t)o * ph * pw;
        for (int py = 0; py < ph; py++) {
            const float *r0 = src + (size_t)o * ps + (size_t)2 * py * rs, *r1 = r0 + rs;
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

#ifdef FLAT_DIRECT
/* Pooling in registers, for output rows of 17 to 32 (LeNet's 24 and 28): a
 * tile is PB channels x one pair of output rows, two vectors per row, so
 * that each 2x2 window lies in the tile. The pair's maxima are formed
 * before anything is stored: a vertical maximum, then the even and odd
 * columns split by permutes. With `full` the tile is activated first and
 * stored whole as well (training: the pooling's backward reads it), and
 * the pooled values are those of the stored ones; without, the maxima are
 * activated (a quarter of the work, the same values for the monotonic
 * activations). */
static int pool_rows_ok(const cb_conv_shape *s) { return s->ow > CB_RVL && s->ow <= 2 * CB_RVL; }
static int pool_ob(const cb_conv_shape *s) { return s->oc % 6 == 0 || s->oc == 5 ? 6 : 4; }

static inline cb_vrow vmax_nan(cb_vrow m, cb_vrow v)
{
    const cb_v16i take = (v > m) | (v != v);
    return (cb_vrow)((take & (cb_v16i)v) | (~take & (cb_v16i)m));
}

static inline __attribute__((always_inline)) void pool_tile(const cb_conv_shape *s, const flat_geom *g,
                                                           const float *xp, const float *w, const float *b,
                                                           cb_act act, float *full, float *y, int o0, int py,
                                                           const int PB, const int KW)
{
    const int kw = KW ? KW : g->kw, ow = s->ow, pw = ow / 2;
    cb_vrow acc[FL_ACC];
    for (int o = 0; o < PB; o++)
        for (int k = 0; k < 4; k++) acc[o * 4 + k] = cb_vrow_splat(b ? b[o0 + o] : 0.0f);
    for (int c = 0; c < g->c; c++)
        for (int i = 0; i < g->kh; i++) {
            const float *row = xp + c * g->plane + (size_t)(2 * py + i) * g->xs;
            const float *wk = w + (size_t)o0 * g->taps + (size_t)(c * g->kh + i) * kw;
            for (int j = 0; j < kw; j++) {
                cb_vrow wv[6];
                for (int o = 0; o < PB; o++) wv[o] = cb_vrow_splat(wk[(size_t)o * g->taps + j]);
                for (int k = 0; k < 4; k++) { /* k: row (k / 2) and vector (k % 2) */
                    const cb_vrow xv = cb_vrow_load(row + (k / 2) * g->xs + j + (k % 2) * CB_RVL);
                    for (int o = 0; o < PB; o++) acc[o * 4 + k] += wv[o] * xv;
                }
            }
        }
    const __mmask16 rest = (__mmask16)((1u << (ow - CB_RVL)) - 1), pooled = (__mmask16)((1u << pw) - 1);
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (int o = 0; o < PB; o++) {
        cb_vrow *r = &acc[o * 4];
        if (full) {
            float *f = full + ((size_t)(o0 + o) * s->oh + 2 * py) * ow;
            for (int k = 0; k < 4; k++) {
                r[k] = act_in_registers(act, r[k]);
                _mm512_mask_storeu_ps(f + (k / 2) * ow + (k % 2) * CB_RVL, k % 2 ? rest : 0xFFFF, (__m512)r[k]);
            }
        }
        const __m512 m0 = (__m512)vmax_nan(r[0], r[2]), m1 = (__m512)vmax_nan(r[1], r[3]);
        cb_vrow p = vmax_nan((cb_vrow)_mm512_permutex2var_ps(m0, even, m1), (cb_vrow)_mm512_permutex2var_ps(m0, odd, m1));
        if (!full) p = act_in_registers(act, p);
        _mm512_mask_storeu_ps(y + ((size_t)(o0 + o) * (s->oh / 2) + py) * pw, pooled, (__m512)p);
    }
}

#define PTILE(pb) (g->kw == 5 ? pool_tile(s, g, xp, w, b, act, full, y, o0, py, pb, 5) \
                              : pool_tile(s, g, xp, w, b, act, full, y, o0, py, pb, 0))
/* One sample's channels, every pair of rows. */
static void pool_tiles(const cb_conv_shape *s, const flat_geom *g, const float *xp, const float *w, const float *b,
                       cb_act act, float *full, float *y)
{
    const int pb = pool_ob(s);
    for (int o0 = 0; o0 < s->oc; o0 += pb)
        for (int py = 0; py < s->oh / 2; py++) switch (s->oc - o0 < pb ? s->oc - o0 : pb) {
            case 1: PTILE(1); break;
            case 2: PTILE(2); break;
            case 3: PTILE(3); break;
            case 4: PTILE(4); break;
            case 5: PTILE(5); break;
            default: PTILE(6); break;
            }
}
#undef PTILE
#endif

enum flat_out { FLAT_STORE, FLAT_ADD, FLAT_POOL };

/* y = act(conv(x)) (FLAT_STORE), y += conv(x) (FLAT_ADD, no activation) or
 * y = maxpool2x2(act(conv(x))) (FLAT_POOL; with full, act(conv(x)) is
 * stored there too). */
static void flat_run(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act,
                     enum flat_out mode, float *full, float *y, float *ws)
{
    const int add = mode == FLAT_ADD, pool = mode == FLAT_POOL;
    const size_t xsz = (size_t)s->c * s->h * s->w, ysz = (size_t)s->oc * s->oh * s->ow;
    const flat_geom g = geom_of(s);
    const int xs = g.xs, ql = g.ql, ob = tile_ob(s), step = tile_nv(s) * CB_RVL;
    flat_dst dst = {.plane = (size_t)s->oh * s->ow, .act = add ? CB_ACT_NONE : act, .add = add};
    int in_registers = 0; /* pooled by pool_tiles */
#ifdef FLAT_DIRECT
    lane_map maps[FLAT_MAX_VECTORS];
    in_registers = pool && pool_rows_ok(s);
    if ((!pool || full) && !in_registers && direct_ok(s)) {
        lane_maps(s, maps);
        dst.map = maps;
    }
#endif
    /* activated after the tiles only where the registers cannot be */
    const cb_act after = (dst.map || in_registers) && act != CB_ACT_SIGMOID ? CB_ACT_NONE : act;
#pragma omp parallel firstprivate(dst) num_threads(cb_split_threads(omp_get_max_threads(), s->n))
    {
        float *xp = ws + per_thread(s) * (size_t)omp_get_thread_num();
        dst.yp = xp + (size_t)s->c * g.plane;
        /* The padding is zeroed once: every sample rewrites the same interior. */
        memset(xp, 0, (size_t)s->c * g.plane * sizeof *xp);
#pragma omp for schedule(static)
        for (int n = 0; n < s->n; n++) {
            for (int c = 0; c < s->c; c++)
                for (int iy = 0; iy < s->h; iy++)
                    cb_row_copy_zfill(xp + c * g.plane + (size_t)(iy + s->ph) * xs + s->pw,
                                      x + n * xsz + ((size_t)c * s->h + iy) * s->w, s->w);
            float *yn = pool ? (full ? full + n * ysz : NULL) : y + n * ysz; /* the whole output, if stored */
            float *pn = pool ? y + n * (ysz / 4) : NULL;                       /* the pooled one */
#ifdef FLAT_DIRECT
            if (in_registers) {
                pool_tiles(s, &g, xp, w, b, act, yn, pn);
                if (yn) cb_act_fwd_inplace(after, (int64_t)ysz, yn);
                cb_act_fwd_inplace(after, (int64_t)ysz / 4, pn);
                continue;
            }
#endif
            dst.y = yn;
            for (int o0 = 0; o0 < s->oc; o0 += ob)
                for (int q0 = 0; q0 < ql; q0 += step)
                    tile_n(&g, ob == 6, xp, w, b, &dst, o0, q0, s->oc - o0 < ob ? s->oc - o0 : ob);
            if (pool && !yn) { /* pooled from the staged planes, activated after */
                pool_out(s, dst.yp, xs, (size_t)ql, act, pn);
                continue;
            }
            if (!dst.map)
                for (int o = 0; o < s->oc; o++)
                    for (int oy = 0; oy < s->oh; oy++)
                        cb_row_copy(yn + ((size_t)o * s->oh + oy) * s->ow, dst.yp + (size_t)o * ql + (size_t)oy * xs,
                                    s->ow, add);
            if (!add) cb_act_fwd_inplace(after, (int64_t)ysz, yn);
            if (pool) pool_out(s, yn, s->ow, (size_t)s->oh * s->ow, CB_ACT_NONE, pn);
        }
    }
}

void cb_conv2d_fwd_flat(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act,
                        float *y, float *ws)
{
    flat_run(s, x, w, b, act, FLAT_STORE, NULL, y, ws);
}

int cb_conv2d_flat_pool_ok(const cb_conv_shape *s)
{
    return cb_conv2d_flat_ok(s) && s->oh % 2 == 0 && s->ow % 2 == 0;
}

int cb_conv2d_flat_pool_in_registers(const cb_conv_shape *s)
{
#ifdef FLAT_DIRECT
    return cb_conv2d_flat_pool_ok(s) && pool_rows_ok(s);
#else
    (void)s;
    return 0;
#endif
}

void cb_conv2d_fwd_flat_pool(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act,
                             float *full, float *y, float *ws)
{
    flat_run(s, x, w, b, act, FLAT_POOL, full, y, ws);
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
    flat_run(&t, dy, wt, NULL, CB_ACT_NONE, FLAT_ADD, NULL, dx, rest);
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
