/* Losses, averaged over the batch like PyTorch's default reduction='mean'. */
#include <math.h>
#include "ops.h"

static int label_index(float v, int k)
{
    int c = (int)v;
    return ((float)c == v && c >= 0 && c < k) ? c : -1;
}

cb_status cb_softmax_xent_fwd(int n, int k, const float *logits, const float *labels, float *loss)
{
    double total = 0.0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * k;
        int y = label_index(labels[i], k);
        if (y < 0) return cb_fail(CB_ERR_INVALID_ARG, "label %g of sample %d is not a class in [0, %d)",
                                  (double)labels[i], i, k);
        double m = z[0];
        for (int j = 1; j < k; j++) if (z[j] > m) m = z[j];
        double sum = 0.0;
        for (int j = 0; j < k; j++) sum += exp((double)z[j] - m);
        total += m + log(sum) - z[y];
    }
    *loss = (float)(total / n);
    return CB_OK;
}

void cb_softmax_xent_bwd(int n, int k, const float *logits, const float *labels, float dloss,
                         float *dlogits)
{
    const float scale = dloss / (float)n;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * k;
        float *dz = dlogits + (size_t)i * k;
        int y = label_index(labels[i], k);
        float m = z[0];
        for (int j = 1; j < k; j++) if (z[j] > m) m = z[j];
        float sum = 0.0f;
        for (int j = 0; j < k; j++) sum += expf(z[j] - m);
        for (int j = 0; j < k; j++) dz[j] += scale * (expf(z[j] - m) / sum - (j == y ? 1.0f : 0.0f));
    }
}

/* PyTorch clamps each log term at -100 so that p = 0 or 1 gives a finite loss. */
static double clamped_log(double v) { double l = log(v); return l < -100.0 ? -100.0 : l; }

cb_status cb_bce_fwd(int n, const float *p, const float *labels, float *loss)
{
    double total = 0.0;
    for (int i = 0; i < n; i++) {
        if (!(p[i] >= 0.0f && p[i] <= 1.0f))
            return cb_fail(CB_ERR_INVALID_ARG, "binary cross-entropy: input %g of sample %d is not in [0, 1]",
                           (double)p[i], i);
        if (!(labels[i] >= 0.0f && labels[i] <= 1.0f))
            return cb_fail(CB_ERR_INVALID_ARG, "binary cross-entropy: target %g of sample %d is not in [0, 1]",
                           (double)labels[i], i);
        total -= labels[i] * clamped_log(p[i]) + (1.0 - labels[i]) * clamped_log(1.0 - p[i]);
    }
    *loss = (float)(total / n);
    return CB_OK;
}

void cb_bce_bwd(int n, const float *p, const float *labels, float dloss, float *dp)
{
    /* PyTorch: grad = (p - y) / max(p (1 - p), 1e-12) * dloss / n */
    const float scale = dloss / (float)n;
    for (int i = 0; i < n; i++) {
        float denom = p[i] * (1.0f - p[i]);
        if (denom < 1e-12f) denom = 1e-12f;
        dp[i] += scale * (p[i] - labels[i]) / denom;
    }
}
