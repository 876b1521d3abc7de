/* Dropout (inverted, as PyTorch): in training each value is kept with
 * probability 1 - p and scaled by 1 / (1 - p); the mask (0 or the scale) is
 * kept for the backward pass. The mask comes from the engine's generator, so
 * a seed fixes it; it cannot match PyTorch's generator, and parity tests run
 * with p = 0. */
#include "ops.h"

void cb_dropout_fwd(int64_t n, float p, cb_rng *rng, const float *x, float *mask, float *y)
{
    const float scale = 1.0f / (1.0f - p);
    for (int64_t i = 0; i < n; i++) {
        mask[i] = cb_rng_uniform(rng) >= (double)p ? scale : 0.0f;
        y[i] = x[i] * mask[i];
    }
}

void cb_dropout_bwd(int64_t n, const float *mask, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] += dy[i] * mask[i];
}
