/* Grouped convolution (ONNX Conv's `group`, PyTorch's `groups`), of which
 * depthwise (one input and one output channel per group, MobileNetV2's
 * 3x3 layers) is the common case: group g reads input channels
 * [g*C/G, (g+1)*C/G) and writes output channels [g*OC/G, (g+1)*OC/G), its
 * weights [OC, C/G, KH, KW]. Direct loops over each output plane: the
 * products of a group are too small for a matrix product to pay (a
 * depthwise layer is one 3x3 window per channel). At fast = 0 every sum
 * is accumulated in double (the reference); otherwise in float, with the
 * innermost loop over a row of outputs so that it vectorises at stride 1. */
#include <omp.h>
#include <string.h>
#include "ops.h"

/* The output columns ox whose input column ox*sw - pw + j*dilation lies
 * inside [0, w): [*lo, *hi). */
static void valid_cols(const cb_conv_shape *s, int j, int *lo, int *hi)
{
    j *= s->dw > 1 ? s->dw : 1; /* the tap's offset in input columns */
    int a = 0, b = s->ow;
    while (a < b && a * s->sw - s->pw + j < 0) a++;
    while (b > a && (b - 1) * s->sw - s->pw + j >= s->w) b--;
    *lo = a, *hi = b;
}

/* One output plane of one sample: y = b + sum over the group's input
 * channels and the window. x points at the group's first input channel. */
static void plane_fwd(const cb_conv_shape *s, int cg, const float *x, const float *w, float bias, float *y, int fast)
{
    const int dil_h = s->dh > 1 ? s->dh : 1, dil_w = s->dw > 1 ? s->dw : 1;
    const int plane = s->oh * s->ow;
    if (!fast) {
        for (int oy = 0; oy < s->oh; oy++)
            for (int ox = 0; ox < s->ow; ox++) {
                double acc = bias;
                for (int c = 0; c < cg; c++)
                    for (int i = 0; i < s->kh; i++) {
                        const int iy = oy * s->sh - s->ph + i * dil_h;
                        if (iy < 0 || iy >= s->h) continue;
                        for (int j = 0; j < s->kw; j++) {
                            const int ix = ox * s->sw - s->pw + j * dil_w;
                            if (ix >= 0 && ix < s->w)
                                acc += (double)x[((size_t)c * s->h + iy) * s->w + ix] *
                                       w[((size_t)c * s->kh + i) * s->kw + j];
                        }
                    }
                y[oy * s->ow + ox] = (float)acc;
            }
        return;
    }
    for (int p = 0; p < plane; p++) y[p] = bias;
    for (int c = 0; c < cg; c++)
        for (int i = 0; i < s->kh; i++)
            for (int j = 0; j < s->kw; j++) {
                const float wv = w[((size_t)c * s->kh + i) * s->kw + j];
                int lo, hi;
                valid_cols(s, j, &lo, &hi);
                for (int oy = 0; oy < s->oh; oy++) {
                    const int iy = oy * s->sh - s->ph + i * dil_h;
                    if (iy < 0 || iy >= s->h) continue;
                    const float *xr = x + ((size_t)c * s->h + iy) * s->w;
                    const int off = j * dil_w - s->pw; /* input column of output column 0 */
                    float *yr = y + (size_t)oy * s->ow;
                    if (s->sw == 1)
                        for (int ox = lo; ox < hi; ox++) yr[ox] += wv * xr[ox + off];
                    else
                        for (int ox = lo; ox < hi; ox++) yr[ox] += wv * xr[ox * s->sw + off];
                }
            }
}

void cb_conv2d_grouped_fwd(const cb_conv_shape *s, int groups, const float *x, const float *w, const float *b,
                           cb_act act, float *y, int fast)
{
    const int cg = s->c / groups, og = s->oc / groups, plane = s->oh * s->ow;
    const size_t ksz = (size_t)cg * s->kh * s->kw;
    const long units = (long)s->n * s->oc;
#pragma omp parallel for schedule(static) if (fast && units > 1)
    for (long u = 0; u < units; u++) {
        const int n = (int)(u / s->oc), o = (int)(u % s->oc), g = o / og;
        const float *xg = x + ((size_t)n * s->c + (size_t)g * cg) * s->h * s->w;
        float *yp = y + (size_t)u * plane;
        plane_fwd(s, cg, xg, w + (size_t)o * ksz, b ? b[o] : 0.0f, yp, fast);
        if (act != CB_ACT_NONE) cb_act_fwd_inplace(act, plane, yp);
    }
}

/* Adds the gradients; any of dx, dw, db may be NULL. Split over the output
 * channels' groups: each thread owns its groups' input channels of dx and
 * their rows of dw, so nothing is shared and the sums keep one order. */
void cb_conv2d_grouped_bwd(const cb_conv_shape *s, int groups, const float *x, const float *w, const float *dy,
                           float *dx, float *dw, float *db, int fast)
{
    const int cg = s->c / groups, og = s->oc / groups;
    const size_t ksz = (size_t)cg * s->kh * s->kw, xplane = (size_t)s->h * s->w, plane = (size_t)s->oh * s->ow;
    const int dil_h = s->dh > 1 ? s->dh : 1, dil_w = s->dw > 1 ? s->dw : 1;
#pragma omp parallel for schedule(static) if (fast && groups > 1)
    for (int g = 0; g < groups; g++)
        for (int o = g * og; o < (g + 1) * og; o++) {
            double bsum = 0;
            for (int n = 0; n < s->n; n++) {
                const float *d = dy + ((size_t)n * s->oc + o) * plane;
                const float *xg = x + ((size_t)n * s->c + (size_t)g * cg) * xplane;
                float *dxg = dx ? dx + ((size_t)n * s->c + (size_t)g * cg) * xplane : NULL;
                for (size_t p = 0; p < plane; p++) bsum += d[p];
                for (int c = 0; c < cg; c++)
                    for (int i = 0; i < s->kh; i++)
                        for (int j = 0; j < s->kw; j++) {
                            const size_t wi = (size_t)o * ksz + ((size_t)c * s->kh + i) * s->kw + j;
                            double wsum = 0;
                            for (int oy = 0; oy < s->oh; oy++) {
                                const int iy = oy * s->sh - s->ph + i * dil_h;
                                if (iy < 0 || iy >= s->h) continue;
                                for (int ox = 0; ox < s->ow; ox++) {
                                    const int ix = ox * s->sw - s->pw + j * dil_w;
                                    if (ix < 0 || ix >= s->w) continue;
                                    const float g1 = d[(size_t)oy * s->ow + ox];
                                    const size_t xi = (size_t)c * xplane + (size_t)iy * s->w + ix;
                                    wsum += (double)g1 * xg[xi];
                                    if (dxg) dxg[xi] += g1 * w[wi];
                                }
                            }
                            if (dw) dw[wi] += (float)wsum;
                        }
            }
            if (db) db[o] += (float)bsum;
        }
}
