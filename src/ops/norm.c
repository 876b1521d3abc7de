/* 2-D batch normalisation, forward (training and inference) and backward,
 * NCHW, statistics per channel over the batch and both spatial axes.
 * The reference level accumulates in double one channel after another; the
 * fast level runs the channels in parallel with float data and double sums
 * (per-channel sums over up to 128 x 32 x 32 values lose digits in float). */
#include <math.h>
#include "ops.h"

/* Mean and biased variance of channel c (two passes: no cancellation). */
static void channel_stats(const cb_bn_shape *s, const float *x, int c, double *mean, double *var)
{
    const size_t hw = (size_t)s->h * s->w;
    double sum = 0, sq = 0;
    for (int n = 0; n < s->n; n++) {
        const float *p = x + ((size_t)n * s->c + c) * hw;
        for (size_t i = 0; i < hw; i++) sum += p[i];
    }
    const double m = (double)s->n * hw;
    *mean = sum / m;
    for (int n = 0; n < s->n; n++) {
        const float *p = x + ((size_t)n * s->c + c) * hw;
        for (size_t i = 0; i < hw; i++) {
            double d = p[i] - *mean;
            sq += d * d;
        }
    }
    *var = sq / m;
}

void cb_bn_fwd(const cb_bn_shape *s, int training, const float *x, const float *gamma, const float *beta,
               float *running_mean, float *running_var, float *saved, float *y, int fast)
{
    const size_t hw = (size_t)s->h * s->w;
    const double m = (double)s->n * hw;
#pragma omp parallel for schedule(static) if (fast)
    for (int c = 0; c < s->c; c++) {
        double mean, var;
        if (training) {
            channel_stats(s, x, c, &mean, &var);
            /* PyTorch updates the running variance with the unbiased estimate. */
            double unbiased = m > 1 ? var * m / (m - 1) : var;
            running_mean[c] = (float)((1.0 - s->momentum) * running_mean[c] + s->momentum * mean);
            running_var[c] = (float)((1.0 - s->momentum) * running_var[c] + s->momentum * unbiased);
        } else {
            mean = running_mean[c];
            var = running_var[c];
        }
        const float invstd = (float)(1.0 / sqrt(var + s->eps));
        if (saved) {
            saved[c] = (float)mean;
            saved[s->c + c] = invstd;
        }
        const float scale = gamma[c] * invstd, shift = beta[c] - (float)mean * scale;
        for (int n = 0; n < s->n; n++) {
            const float *p = x + ((size_t)n * s->c + c) * hw;
            float *q = y + ((size_t)n * s->c + c) * hw;
            for (size_t i = 0; i < hw; i++) q[i] = p[i] * scale + shift;
        }
    }
}

void cb_bn_bwd(const cb_bn_shape *s, const float *x, const float *gamma, const float *saved, const float *dy,
               float *dx, float *dgamma, float *dbeta, int fast)
{
    const size_t hw = (size_t)s->h * s->w;
    const double m = (double)s->n * hw;
#pragma omp parallel for schedule(static) if (fast)
    for (int c = 0; c < s->c; c++) {
        const double mean = saved[c], invstd = saved[s->c + c];
        double sdy = 0, sdyx = 0;
        for (int n = 0; n < s->n; n++) {
            const float *p = x + ((size_t)n * s->c + c) * hw, *g = dy + ((size_t)n * s->c + c) * hw;
            for (size_t i = 0; i < hw; i++) {
                sdy += g[i];
                sdyx += g[i] * ((p[i] - mean) * invstd);
            }
        }
        if (dgamma) dgamma[c] += (float)sdyx;
        if (dbeta) dbeta[c] += (float)sdy;
        if (!dx) continue;
        /* dx = gamma * invstd / m * (m * dy - sum(dy) - xhat * sum(dy * xhat)) */
        const double k = gamma[c] * invstd / m;
        for (int n = 0; n < s->n; n++) {
            const float *p = x + ((size_t)n * s->c + c) * hw, *g = dy + ((size_t)n * s->c + c) * hw;
            float *q = dx + ((size_t)n * s->c + c) * hw;
            for (size_t i = 0; i < hw; i++) {
                double xhat = (p[i] - mean) * invstd;
                q[i] += (float)(k * (m * g[i] - sdy - xhat * sdyx));
            }
        }
    }
}
