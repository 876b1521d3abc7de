/* 2-D batch normalisation, forward (training and inference) and backward,
 * NCHW, statistics per channel over the batch and both spatial axes.
 * The reference level accumulates in double one channel after another; the
 * fast level runs the channels in parallel, sums each plane in float lanes
 * and the planes in double (per-channel sums over up to 128 x 32 x 32
 * values lose digits in float). */
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

/* The fast level's sums run in 16 independent float lanes (they vectorise;
 * a scalar double sum is bound by the adder's latency). The lanes are
 * emptied into a double total whenever each holds 64 values, across planes
 * (small planes, 2 x 2 to 4 x 4, would otherwise pay a reduction each), so
 * float rounds over 64 terms at most. */
#define LANES 16
#define LANE_TERMS 64

typedef struct {
    float acc[LANES];
    double total;
    size_t terms; /* values in each lane since it was emptied */
} lane_sum;

static void lanes_flush(lane_sum *l)
{
    for (int k = 0; k < LANES; k++) {
        l->total += l->acc[k];
        l->acc[k] = 0;
    }
    l->terms = 0;
}

static void lanes_counted(lane_sum *l, size_t n)
{
    l->terms += n / LANES;
    if (l->terms >= LANE_TERMS) lanes_flush(l);
}

/* sum(p) */
static void plane_sum(lane_sum *l, const float *p, size_t n)
{
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) l->acc[k] += p[i + k];
    for (; i < n; i++) l->total += p[i];
    lanes_counted(l, n);
}

/* sum((p - mean)^2) */
static void plane_sqdev(lane_sum *l, const float *p, size_t n, float mean)
{
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) {
            float d = p[i + k] - mean;
            l->acc[k] += d * d;
        }
    for (; i < n; i++) l->total += (double)(p[i] - mean) * (p[i] - mean);
    lanes_counted(l, n);
}

/* sum(g) into a, sum(g * (p - mean) * invstd) into b. */
static void plane_dsums(lane_sum *a, lane_sum *b, const float *p, const float *g, size_t n, float mean,
                        float invstd)
{
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) {
            a->acc[k] += g[i + k];
            b->acc[k] += g[i + k] * ((p[i + k] - mean) * invstd);
        }
    for (; i < n; i++) {
        a->total += g[i];
        b->total += g[i] * ((p[i] - mean) * invstd);
    }
    lanes_counted(a, n);
    lanes_counted(b, n);
}

static void channel_stats_fast(const cb_bn_shape *s, const float *x, int c, double *mean, double *var)
{
    const size_t hw = (size_t)s->h * s->w;
    const double m = (double)s->n * hw;
    lane_sum sum = {0}, sq = {0};
    for (int n = 0; n < s->n; n++) plane_sum(&sum, x + ((size_t)n * s->c + c) * hw, hw);
    lanes_flush(&sum);
    *mean = sum.total / m;
    for (int n = 0; n < s->n; n++) plane_sqdev(&sq, x + ((size_t)n * s->c + c) * hw, hw, (float)*mean);
    lanes_flush(&sq);
    *var = sq.total / m;
}

/* One channel's normalisation as y = x * scale + shift. */
static inline void scale_shift(double mean, double var, float eps, float gamma, float beta, float *invstd,
                               float *scale, float *shift)
{
    *invstd = (float)(1.0 / sqrt(var + eps));
    *scale = gamma * *invstd;
    *shift = beta - (float)mean * *scale;
}

void cb_bn_infer_coef(int c, float eps, const float *gamma, const float *beta, const float *running_mean,
                      const float *running_var, float *coef)
{
    float invstd;
    for (int j = 0; j < c; j++)
        scale_shift(running_mean[j], running_var[j], eps, gamma[j], beta[j], &invstd, &coef[j], &coef[c + j]);
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
            if (fast) channel_stats_fast(s, x, c, &mean, &var);
            else channel_stats(s, x, c, &mean, &var);
            /* PyTorch updates the running variance with the unbiased estimate. */
            double unbiased = m > 1 ? var * m / (m - 1) : var;
            running_mean[c] = (float)((1.0 - s->momentum) * running_mean[c] + s->momentum * mean);
            running_var[c] = (float)((1.0 - s->momentum) * running_var[c] + s->momentum * unbiased);
        } else {
            mean = running_mean[c];
            var = running_var[c];
        }
        float invstd, scale, shift;
        scale_shift(mean, var, s->eps, gamma[c], beta[c], &invstd, &scale, &shift);
        if (saved) {
            saved[c] = (float)mean;
            saved[s->c + c] = invstd;
        }
        for (int n = 0; n < s->n; n++) {
            const float *p = x + ((size_t)n * s->c + c) * hw;
            float *q = y + ((size_t)n * s->c + c) * hw;
            for (size_t i = 0; i < hw; i++) q[i] = p[i] * scale + shift;
        }
    }
}

void cb_bn_bwd(const cb_bn_shape *s, const float *x, const float *gamma, const float *saved, const float *dy,
               float *dx, float *dgamma, float *dbeta, int fast, int store_dx)
{
    const size_t hw = (size_t)s->h * s->w;
    const double m = (double)s->n * hw;
#pragma omp parallel for schedule(static) if (fast)
    for (int c = 0; c < s->c; c++) {
        const double mean = saved[c], invstd = saved[s->c + c];
        double sdy = 0, sdyx = 0;
        if (fast) {
            lane_sum a = {0}, b = {0};
            for (int n = 0; n < s->n; n++)
                plane_dsums(&a, &b, x + ((size_t)n * s->c + c) * hw, dy + ((size_t)n * s->c + c) * hw, hw,
                            (float)mean, (float)invstd);
            lanes_flush(&a);
            lanes_flush(&b);
            sdy = a.total;
            sdyx = b.total;
        } else
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
            if (fast) { /* the same expression in float (it vectorises) */
                const float kf = (float)k, mf = (float)m, sdyf = (float)sdy, sdyxf = (float)sdyx,
                            meanf = (float)mean, invf = (float)invstd;
                if (store_dx)
                    for (size_t i = 0; i < hw; i++) q[i] = kf * (mf * g[i] - sdyf - ((p[i] - meanf) * invf) * sdyxf);
                else
                    for (size_t i = 0; i < hw; i++) q[i] += kf * (mf * g[i] - sdyf - ((p[i] - meanf) * invf) * sdyxf);
                continue;
            }
            for (size_t i = 0; i < hw; i++) {
                double xhat = (p[i] - mean) * invstd;
                q[i] = (store_dx ? 0.0f : q[i]) + (float)(k * (m * g[i] - sdy - xhat * sdyx));
            }
        }
    }
}
