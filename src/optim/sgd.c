/* SGD as torch.optim.SGD (dampening 0, no Nesterov):
 *   g = grad + wd * p
 *   buf = g on the first step, else momentum * buf + g;  g = buf
 *   p -= lr * g */
#include "optim_impl.h"

void cb_sgd_step(cb_optim *o)
{
    const float lr = o->cfg.lr, mu = o->cfg.momentum, wd = o->cfg.weight_decay;
    float *p = o->g->params, *grad = o->g->grads, *buf = o->state;
    const long n = (long)o->g->n_trainable; /* buffers (after them) are not trained */
    const int first = o->steps == 1;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        float g = grad[i];
        if (wd != 0.0f) g += wd * p[i];
        if (buf) {
            buf[i] = first ? g : mu * buf[i] + g;
            g = buf[i];
        }
        p[i] -= lr * g;
    }
}
