/* Adam as torch.optim.Adam (amsgrad off), in the same order of operations:
 *   g = grad + wd * p
 *   m = b1 m + (1 - b1) g ;  v = b2 v + (1 - b2) g^2
 *   denom = sqrt(v) / sqrt(1 - b2^t) + eps
 *   p -= (lr / (1 - b1^t)) * m / denom */
#include <math.h>
#include "optim_impl.h"

void cb_adam_step(cb_optim *o)
{
    const float lr = o->cfg.lr, b1 = o->cfg.beta1, b2 = o->cfg.beta2, eps = o->cfg.eps;
    const float wd = o->cfg.weight_decay;
    const long n = (long)o->g->n_trainable; /* buffers (after them) are not trained */
    float *p = o->g->params, *grad = o->g->grads, *m = o->state, *v = o->state + n;
    const double bc1 = 1.0 - pow(b1, (double)o->steps);
    const double bc2_sqrt = sqrt(1.0 - pow(b2, (double)o->steps));
    const float step_size = (float)(lr / bc1);
    const float bc2_sqrt_f = (float)bc2_sqrt;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        float g = grad[i];
        if (wd != 0.0f) g += wd * p[i];
        m[i] = m[i] * b1 + (1.0f - b1) * g;   /* exp_avg.mul_(b1).add_(g, alpha=1-b1) */
        v[i] = v[i] * b2 + (1.0f - b2) * g * g; /* exp_avg_sq.mul_(b2).addcmul_(g, g, value=1-b2) */
        float denom = sqrtf(v[i]) / bc2_sqrt_f + eps;
        p[i] -= step_size * (m[i] / denom);
    }
}
