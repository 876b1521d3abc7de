/* Max and average pooling, forward and backward. One loop nest serves both
 * kernel levels: the fast level runs the (sample, channel) planes in
 * parallel, which cannot change any result because planes are independent. */
#include <math.h>
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

/* The 2x2, stride 2, unpadded window of the LeNets and VGG: the same
 * selection rule as window_argmax without its bounds checks. */
static int is_2x2(const cb_conv_shape *s)
{
    return s->kh == 2 && s->kw == 2 && s->sh == 2 && s->sw == 2 && s->ph == 0 && s->pw == 0;
}

static inline int argmax_2x2(const float *xp, int w, int oy, int ox)
{
    int base = 2 * oy * w + 2 * ox;
    int cand[4] = {base, base + 1, base + w, base + w + 1};
    int best = cand[0];
    for (int t = 1; t < 4; t++) {
        float v = xp[cand[t]], m = xp[best];
        if (!isnan(m) && (v > m || isnan(v))) best = cand[t];
    }
    return best;
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

void cb_maxpool_bwd(const cb_conv_shape *s, const float *x, const float *dy, float *dx, int fast)
{
    if (fast && is_2x2(s)) {
        /* argmax_2x2's rule as selects instead of branches, so that the
         * compiler vectorises the row: each window's gradient goes to its
         * first maximum (NaN winning), 0 is added to the other three. The
         * windows do not overlap, so no position is written twice. */
        const int planes = s->n * s->c;
#pragma omp parallel for schedule(static)
        for (int p = 0; p < planes; p++) {
            const float *xp = x + (size_t)p * s->h * s->w;
            const float *dyp = dy + (size_t)p * s->oh * s->ow;
            float *dxp = dx + (size_t)p * s->h * s->w;
            for (int oy = 0; oy < s->oh; oy++) {
                const float *r0 = xp + (size_t)2 * oy * s->w, *r1 = r0 + s->w;
                float *d0 = dxp + (size_t)2 * oy * s->w, *d1 = d0 + s->w;
                const float *g = dyp + (size_t)oy * s->ow;
                for (int ox = 0; ox < s->ow; ox++) {
                    const float a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], d = r1[2 * ox + 1];
                    int k = 0;
                    float m = a;
                    const int tb = m == m && (b > m || b != b);
                    k = tb ? 1 : k, m = tb ? b : m;
                    const int tc = m == m && (c > m || c != c);
                    k = tc ? 2 : k, m = tc ? c : m;
                    const int td = m == m && (d > m || d != d);
                    k = td ? 3 : k;
                    const float gv = g[ox];
                    d0[2 * ox] += k == 0 ? gv : 0.0f;
                    d0[2 * ox + 1] += k == 1 ? gv : 0.0f;
                    d1[2 * ox] += k == 2 ? gv : 0.0f;
                    d1[2 * ox + 1] += k == 3 ? gv : 0.0f;
                }
            }
        }
        return;
    }
    const int planes = s->n * s->c;
#pragma omp parallel for schedule(static) if (fast)
    for (int p = 0; p < planes; p++) {
        const float *xp = x + (size_t)p * s->h * s->w;
        const float *dyp = dy + (size_t)p * s->oh * s->ow;
        float *dxp = dx + (size_t)p * s->h * s->w;
        for (int oy = 0; oy < s->oh; oy++)
            for (int ox = 0; ox < s->ow; ox++) {
                int a = window_argmax(s, xp, oy, ox);
                if (a >= 0) dxp[a] += dyp[oy * s->ow + ox];
            }
    }
}

void cb_avgpool_fwd(const cb_conv_shape *s, const float *x, float *y, int fast)
{
    const int planes = s->n * s->c;
    const float inv = 1.0f / (float)(s->kh * s->kw);
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
                yp[oy * s->ow + ox] = acc * inv;
            }
    }
}

void cb_avgpool_bwd(const cb_conv_shape *s, const float *dy, float *dx, int fast)
{
    const int planes = s->n * s->c;
    const float inv = 1.0f / (float)(s->kh * s->kw);
#pragma omp parallel for schedule(static) if (fast)
    for (int p = 0; p < planes; p++) {
        const float *dyp = dy + (size_t)p * s->oh * s->ow;
        float *dxp = dx + (size_t)p * s->h * s->w;
        for (int oy = 0; oy < s->oh; oy++)
            for (int ox = 0; ox < s->ow; ox++) {
                float g = dyp[oy * s->ow + ox] * inv;
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
