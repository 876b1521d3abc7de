/* Max and average pooling, forward and backward. One loop nest serves both
 * kernel levels: the fast level runs the (sample, channel) planes in
 * parallel, which cannot change any result because planes are independent. */
#include <math.h>
#include <string.h>
#include "ops.h"
#include "vec.h"

/* Index (into the input plane) of the window's maximum: the first maximum in
 * scan order, NaN counting as the maximum, as PyTorch's CPU kernel. -1 if the
 * window lies entirely in padding (cannot happen for valid shapes). */
static int window_argmax(const cb_conv_shape *s, const float *plane, int oy, int ox)
{
    int best = -1;
    float maxval = -INFINITY;
    for (int i = 0; i < s->kh; i++) {
        int iy = oy * s->sh - s->ph + i;
        if (iy < 0 || iy >= s->h) continue;
        for (int j = 0; j < s->kw; j++) {
            int ix = ox * s->sw - s->pw + j;
            if (ix < 0 || ix >= s->w) continue;
            float v = plane[iy * s->w + ix];
            if (best < 0 || v > maxval || isnan(v)) {
                best = iy * s->w + ix;
                maxval = v;
                if (isnan(v)) return best;
            }
        }
    }
    return best;
}

/* The 2x2, stride 2, unpadded window of the LeNets and VGG, which has
 * branch-free fast paths. */
static int is_2x2(const cb_conv_shape *s)
{
    return s->kh == 2 && s->kw == 2 && s->sh == 2 && s->sw == 2 && s->ph == 0 && s->pw == 0;
}

/* The larger of m and v, NaN winning: with the first value as m, folding
 * the window's values in scan order gives the value at window_argmax. */
static inline float max_nan(float m, float v) { return (v > m || v != v) ? v : m; }

void cb_maxpool_fwd(const cb_conv_shape *s, const float *x, float *y, int fast)
{
    if (fast && is_2x2(s)) {
        /* Values only (the backward pass finds the argmax again), in two
         * branch-free passes the compiler vectorises: pairs along each row
         * (a plane's rows have even width, so its pairs are consecutive),
         * then the two rows of each window. Folding row 0's pair before
         * row 1's keeps the scan order, so ties resolve as window_argmax. */
        const int planes = s->n * s->c, w = s->w, ow = s->ow, oh = s->oh;
        /* Row pairs per block, so that a block's pairs fit a stack buffer. */
        const int block = ow > 0 && 2 * ow <= 2048 ? 2048 / (2 * ow) : 1;
#pragma omp parallel for schedule(static)
        for (int p = 0; p < planes; p++) {
            const float *xp = x + (size_t)p * s->h * w;
            float *yp = y + (size_t)p * oh * ow;
            float pairs[4096];
            for (int oy0 = 0; oy0 < oh; oy0 += block) {
                int rows = 2 * (oy0 + block < oh ? block : oh - oy0);
                const float *a = xp + (size_t)2 * oy0 * w;
                if (w == 2 * ow) { /* consecutive pairs over the whole block */
                    for (int k = 0; k < rows * ow; k++) pairs[k] = max_nan(a[2 * k], a[2 * k + 1]);
                } else { /* odd width: the last column is outside every window */
                    for (int r = 0; r < rows; r++)
                        for (int k = 0; k < ow; k++)
                            pairs[r * ow + k] = max_nan(a[(size_t)r * w + 2 * k], a[(size_t)r * w + 2 * k + 1]);
                }
                float *yo = yp + (size_t)oy0 * ow;
                if (ow >= CB_VL) {
                    /* Whole vectors; the last one overlaps the one before
                     * rather than leaving a scalar tail (rows are short:
                     * 14 outputs for LeNet's first pooling). */
                    for (int r = 0; r < rows / 2; r++) {
                        const float *p0 = pairs + 2 * r * ow, *p1 = p0 + ow;
                        float *yr = yo + r * ow;
                        for (int k = 0;; k += CB_VL) {
                            if (k > ow - CB_VL) k = ow - CB_VL;
                            v8_store(yr + k, v8_max_nan(v8_load(p0 + k), v8_load(p1 + k)));
                            if (k == ow - CB_VL) break;
                        }
                    }
                } else {
                    for (int r = 0; r < rows / 2; r++)
                        for (int k = 0; k < ow; k++)
                            yo[r * ow + k] = max_nan(pairs[2 * r * ow + k], pairs[(2 * r + 1) * ow + k]);
                }
            }
        }
        return;
    }
    const int planes = s->n * s->c;
#pragma omp parallel for schedule(static) if (fast)
    for (int p = 0; p < planes; p++) {
        const float *xp = x + (size_t)p * s->h * s->w;
        float *yp = y + (size_t)p * s->oh * s->ow;
        for (int oy = 0; oy < s->oh; oy++)
            for (int ox = 0; ox < s->ow; ox++) {
                int a = window_argmax(s, xp, oy, ox);
                yp[oy * s->ow + ox] = a >= 0 ? xp[a] : -INFINITY;
            }
    }
}

/* Gradients of 8 adjacent 2x2 windows (rows r0/r1, 16 floats each), added
 * to d0/d1: window_argmax's rule as lane masks. The windows' left and right
 * columns are split apart with shuffles, and the four gradient vectors
 * interleaved back. */
static inline void maxpool_bwd_2x2_8(const float *r0, const float *r1, const float *g, float *d0, float *d1,
                                     int add)
{
    const v8i even = {0, 2, 4, 6, 8, 10, 12, 14}, odd = even + 1;
    const v8i lo = {0, 8, 1, 9, 2, 10, 3, 11}, hi = lo + 4;
    const v8f t0 = v8_load(r0), t1 = v8_load(r0 + CB_VL), u0 = v8_load(r1), u1 = v8_load(r1 + CB_VL);
    const v8f a = __builtin_shuffle(t0, t1, even), b = __builtin_shuffle(t0, t1, odd);
    const v8f c = __builtin_shuffle(u0, u1, even), d = __builtin_shuffle(u0, u1, odd);
    const v8f cand[3] = {b, c, d};
    v8f m = a;
    v8i k = {0};
    for (int t = 0; t < 3; t++) { /* m stays at the first NaN; later values must be strictly larger */
        const v8f v = cand[t];
        const v8i take = (m == m) & ((v > m) | (v != v));
        m = v8_select(take, v, m);
        k = (take & (t + 1)) | (~take & k);
    }
    const v8f gv = v8_load(g), zero = v8_splat(0.0f);
    const v8f ga = v8_select(k == 0, gv, zero), gb = v8_select(k == 1, gv, zero);
    const v8f gc = v8_select(k == 2, gv, zero), gd = v8_select(k == 3, gv, zero);
    v8f out[4] = {__builtin_shuffle(ga, gb, lo), __builtin_shuffle(ga, gb, hi), __builtin_shuffle(gc, gd, lo),
                  __builtin_shuffle(gc, gd, hi)};
    float *dst[4] = {d0, d0 + CB_VL, d1, d1 + CB_VL};
    for (int q = 0; q < 4; q++) v8_store(dst[q], add ? v8_load(dst[q]) + out[q] : out[q]);
}

#if defined(__AVX512F__)
#include <immintrin.h>

/* The derivative of an activation from its output y, in 16 lanes. */
static inline __m512 act_grad16(cb_act a, __m512 y)
{
    switch (a) {
    case CB_ACT_TANH: return _mm512_fnmadd_ps(y, y, _mm512_set1_ps(1.0f)); /* 1 - y^2 */
    case CB_ACT_RELU: return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_GT_OQ),
                                                 _mm512_set1_ps(1.0f));
    case CB_ACT_SIGMOID: return _mm512_mul_ps(y, _mm512_sub_ps(_mm512_set1_ps(1.0f), y));
    case CB_ACT_NONE: break;
    }
    return _mm512_set1_ps(1.0f);
}

/* Up to 16 adjacent 2x2 windows (n of them) with AVX-512's lane masks, so
 * that a row's rest costs one masked step instead of padded copies (LeNet's
 * rows of 14 and 5 windows are all rest with 8-float vectors). The windows'
 * gradient is dy, times act'(y) unless act is CB_ACT_NONE (y unused), formed
 * in the same vectors (a loop over a buffer stayed scalar). */
static inline void maxpool_bwd_2x2_16(const float *r0, const float *r1, const float *dy, const float *y, cb_act act,
                                      float *d0, float *d1, int n, int add)
{
    const __mmask16 mg = (__mmask16)(n >= 16 ? 0xFFFF : (1u << n) - 1);
    const __mmask16 mlo = (__mmask16)(2 * n >= 16 ? 0xFFFF : (1u << 2 * n) - 1);
    const __mmask16 mhi = (__mmask16)(2 * n <= 16 ? 0 : 2 * n >= 32 ? 0xFFFF : (1u << (2 * n - 16)) - 1);
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
    const __m512 t0 = _mm512_maskz_loadu_ps(mlo, r0), t1 = _mm512_maskz_loadu_ps(mhi, r0 + 16);
    const __m512 u0 = _mm512_maskz_loadu_ps(mlo, r1), u1 = _mm512_maskz_loadu_ps(mhi, r1 + 16);
    const __m512 cand[3] = {_mm512_permutex2var_ps(t0, odd, t1), _mm512_permutex2var_ps(u0, even, u1),
                            _mm512_permutex2var_ps(u0, odd, u1)};
    __m512 m = _mm512_permutex2var_ps(t0, even, t1);
    __mmask16 k[4] = {0xFFFF, 0, 0, 0}; /* which of a, b, c, d holds the window's first maximum */
    for (int t = 0; t < 3; t++) { /* m stays at the first NaN; later values must be strictly larger */
        const __m512 v = cand[t];
        const __mmask16 take = _mm512_cmp_ps_mask(m, m, _CMP_ORD_Q) &
                               (_mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q));
        m = _mm512_mask_blend_ps(take, m, v);
        for (int q = 0; q <= t; q++) k[q] &= (__mmask16)~take;
        k[t + 1] = take;
    }
    __m512 gv = _mm512_maskz_loadu_ps(mg, dy);
    if (act != CB_ACT_NONE) gv = _mm512_mul_ps(gv, act_grad16(act, _mm512_maskz_loadu_ps(mg, y)));
    const __m512 ga = _mm512_maskz_mov_ps(k[0], gv), gb = _mm512_maskz_mov_ps(k[1], gv);
    const __m512 gc = _mm512_maskz_mov_ps(k[2], gv), gd = _mm512_maskz_mov_ps(k[3], gv);
    const __m512 out[4] = {_mm512_permutex2var_ps(ga, lo, gb), _mm512_permutex2var_ps(ga, hi, gb),
                           _mm512_permutex2var_ps(gc, lo, gd), _mm512_permutex2var_ps(gc, hi, gd)};
    float *dst[4] = {d0, d0 + 16, d1, d1 + 16};
    const __mmask16 mk[4] = {mlo, mhi, mlo, mhi};
    for (int q = 0; q < 4; q++)
        _mm512_mask_storeu_ps(dst[q], mk[q], add ? _mm512_add_ps(_mm512_maskz_loadu_ps(mk[q], dst[q]), out[q]) : out[q]);
}

#else
/* One row of 2x2 windows with gradient g, added to d0/d1 (add = 1) or
 * stored there (0): whole groups of 8, then the rest through zero-padded
 * copies (a zero gradient adds nothing to the padding). */
static void maxpool_bwd_2x2_row(const float *r0, const float *r1, const float *g, float *d0, float *d1, int ow,
                                int add)
{
    int ox = 0;
    for (; ox + CB_VL <= ow; ox += CB_VL)
        maxpool_bwd_2x2_8(r0 + 2 * ox, r1 + 2 * ox, g + ox, d0 + 2 * ox, d1 + 2 * ox, add);
    const int rest = ow - ox;
    if (rest == 0) return;
    float a[2 * CB_VL] = {0}, b[2 * CB_VL] = {0}, gg[CB_VL] = {0}, e0[2 * CB_VL] = {0}, e1[2 * CB_VL] = {0};
    memcpy(a, r0 + 2 * ox, (size_t)2 * rest * sizeof *a);
    memcpy(b, r1 + 2 * ox, (size_t)2 * rest * sizeof *b);
    memcpy(gg, g + ox, (size_t)rest * sizeof *gg);
    maxpool_bwd_2x2_8(a, b, gg, e0, e1, 0);
    for (int t = 0; t < 2 * rest; t++) {
        d0[2 * ox + t] = add ? d0[2 * ox + t] + e0[t] : e0[t];
        d1[2 * ox + t] = add ? d1[2 * ox + t] + e1[t] : e1[t];
    }
}
#endif

/* The derivative of an activation from its output y. */
static inline float act_grad(cb_act a, float y)
{
    switch (a) {
    case CB_ACT_TANH: return 1.0f - y * y;
    case CB_ACT_RELU: return y > 0.0f ? 1.0f : 0.0f;
    case CB_ACT_SIGMOID: return y * (1.0f - y);
    case CB_ACT_NONE: break;
    }
    return 1.0f;
}

#define ACT_POOL_SEG 256 /* windows of a row scaled at a time (a stack buffer) */

int cb_maxpool_act_bwd_stores(const cb_conv_shape *s, int fast)
{
    return fast && is_2x2(s) && s->h == 2 * s->oh && s->w == 2 * s->ow;
}

/* Max pooling's backward, with the activation before it (act, y) or
 * without (CB_ACT_NONE: y unused, dy passed through unscaled). Each window's
 * gradient goes to its first maximum (NaN winning); 2x2 windows do not
 * overlap, so no position is written twice. */
void cb_maxpool_act_bwd(const cb_conv_shape *s, cb_act act, const float *x, const float *y, const float *dy,
                        float *dx, int fast, int store)
{
    const int planes = s->n * s->c;
    if (fast && is_2x2(s)) {
        const int add = !(store && cb_maxpool_act_bwd_stores(s, fast));
#pragma omp parallel for schedule(static)
        for (int p = 0; p < planes; p++) {
            const float *xp = x + (size_t)p * s->h * s->w;
            float *dxp = dx + (size_t)p * s->h * s->w;
            for (int oy = 0; oy < s->oh; oy++) {
                const size_t r = (size_t)2 * oy * s->w, o = ((size_t)p * s->oh + oy) * s->ow;
#if defined(__AVX512F__)
                for (int ox = 0; ox < s->ow; ox += 16)
                    maxpool_bwd_2x2_16(xp + r + 2 * ox, xp + r + s->w + 2 * ox, dy + o + ox, y + o + ox, act,
                                       dxp + r + 2 * ox, dxp + r + s->w + 2 * ox, s->ow - ox < 16 ? s->ow - ox : 16,
                                       add);
#else
                for (int ox0 = 0; ox0 < s->ow; ox0 += ACT_POOL_SEG) {
                    const int len = s->ow - ox0 < ACT_POOL_SEG ? s->ow - ox0 : ACT_POOL_SEG;
                    float g[ACT_POOL_SEG]; /* the gradient at each window's maximum, through the activation */
                    if (act != CB_ACT_NONE)
                        for (int k = 0; k < len; k++) g[k] = dy[o + ox0 + k] * act_grad(act, y[o + ox0 + k]);
                    maxpool_bwd_2x2_row(xp + r + 2 * ox0, xp + r + s->w + 2 * ox0,
                                        act != CB_ACT_NONE ? g : dy + o + ox0, dxp + r + 2 * ox0,
                                        dxp + r + s->w + 2 * ox0, len, add);
                }
#endif
            }
        }
        return;
    }
#pragma omp parallel for schedule(static) if (fast)
    for (int p = 0; p < planes; p++) {
        const float *xp = x + (size_t)p * s->h * s->w;
        float *dxp = dx + (size_t)p * s->h * s->w;
        for (int oy = 0; oy < s->oh; oy++)
            for (int ox = 0; ox < s->ow; ox++) {
                const size_t o = ((size_t)p * s->oh + oy) * s->ow + ox;
                const int a = window_argmax(s, xp, oy, ox);
                if (a >= 0) dxp[a] += act != CB_ACT_NONE ? dy[o] * act_grad(act, y[o]) : dy[o];
            }
    }
}

void cb_maxpool_bwd(const cb_conv_shape *s, const float *x, const float *dy, float *dx, int fast)
{
    cb_maxpool_act_bwd(s, CB_ACT_NONE, x, NULL, dy, dx, fast, 0);
}

/* The divisor of output (oy, ox): the window's size, or with exclude_pad
 * the number of its elements inside the input (at least 1: the padding is
 * smaller than the window). */
static float avg_inv(const cb_conv_shape *s, int oy, int ox)
{
    if (!s->exclude_pad) return 1.0f / (float)(s->kh * s->kw);
    int y0 = oy * s->sh - s->ph, x0 = ox * s->sw - s->pw;
    int y1 = y0 + s->kh < s->h ? y0 + s->kh : s->h, x1 = x0 + s->kw < s->w ? x0 + s->kw : s->w;
    if (y0 < 0) y0 = 0;
    if (x0 < 0) x0 = 0;
    return 1.0f / (float)((y1 - y0) * (x1 - x0));
}

void cb_avgpool_fwd(const cb_conv_shape *s, const float *x, float *y, int fast)
{
    const int planes = s->n * s->c;
#pragma omp parallel for schedule(static) if (fast)
    for (int p = 0; p < planes; p++) {
        const float *xp = x + (size_t)p * s->h * s->w;
        float *yp = y + (size_t)p * s->oh * s->ow;
        for (int oy = 0; oy < s->oh; oy++)
            for (int ox = 0; ox < s->ow; ox++) {
                float acc = 0.0f;
                for (int i = 0; i < s->kh; i++) {
                    int iy = oy * s->sh - s->ph + i;
                    if (iy < 0 || iy >= s->h) continue;
                    for (int j = 0; j < s->kw; j++) {
                        int ix = ox * s->sw - s->pw + j;
                        if (ix >= 0 && ix < s->w) acc += xp[iy * s->w + ix];
                    }
                }
                yp[oy * s->ow + ox] = acc * avg_inv(s, oy, ox);
            }
    }
}

void cb_avgpool_bwd(const cb_conv_shape *s, const float *dy, float *dx, int fast)
{
    const int planes = s->n * s->c;
#pragma omp parallel for schedule(static) if (fast)
    for (int p = 0; p < planes; p++) {
        const float *dyp = dy + (size_t)p * s->oh * s->ow;
        float *dxp = dx + (size_t)p * s->h * s->w;
        for (int oy = 0; oy < s->oh; oy++)
            for (int ox = 0; ox < s->ow; ox++) {
                float g = dyp[oy * s->ow + ox] * avg_inv(s, oy, ox);
                for (int i = 0; i < s->kh; i++) {
                    int iy = oy * s->sh - s->ph + i;
                    if (iy < 0 || iy >= s->h) continue;
                    for (int j = 0; j < s->kw; j++) {
                        int ix = ox * s->sw - s->pw + j;
                        if (ix >= 0 && ix < s->w) dxp[iy * s->w + ix] += g;
                    }
                }
            }
    }
}
