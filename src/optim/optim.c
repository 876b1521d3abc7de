/* Optimizer state and dispatch; the update rules are in sgd.c and adam.c. */
#include <math.h>
#include <stdlib.h>
#include "crossbind/optim.h"
#include "optim_impl.h"

cb_optim_config cb_optim_defaults(cb_optim_kind kind, float lr)
{
    cb_optim_config c = {.kind = kind, .lr = lr, .momentum = 0.0f, .weight_decay = 0.0f,
                         .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
    return c;
}

cb_status cb_optim_create(const cb_optim_config *cfg, cb_graph *g, cb_optim **out)
{
    *out = NULL;
    if (!(cfg->lr > 0.0f) || !isfinite(cfg->lr))
        return cb_fail(CB_ERR_INVALID_ARG, "learning rate must be positive, got %g", (double)cfg->lr);
    if (!(cfg->momentum >= 0.0f && cfg->momentum < 1.0f))
        return cb_fail(CB_ERR_INVALID_ARG, "momentum must be in [0, 1), got %g", (double)cfg->momentum);
    if (!(cfg->weight_decay >= 0.0f) || !isfinite(cfg->weight_decay))
        return cb_fail(CB_ERR_INVALID_ARG, "weight decay must be >= 0, got %g", (double)cfg->weight_decay);
    if (cfg->kind == CB_OPTIM_ADAM &&
        !(cfg->beta1 >= 0.0f && cfg->beta1 < 1.0f && cfg->beta2 >= 0.0f && cfg->beta2 < 1.0f && cfg->eps >= 0.0f))
        return cb_fail(CB_ERR_INVALID_ARG, "Adam betas must be in [0, 1) and eps >= 0");
    if (cfg->kind != CB_OPTIM_SGD && cfg->kind != CB_OPTIM_ADAM)
        return cb_fail(CB_ERR_INVALID_ARG, "unknown optimizer kind %d", (int)cfg->kind);
    cb_optim *o = calloc(1, sizeof *o);
    if (!o) return cb_fail(CB_ERR_NOMEM, "out of memory creating the optimizer");
    o->cfg = *cfg;
    o->g = g;
    size_t slots = cfg->kind == CB_OPTIM_ADAM ? 2 : (cfg->momentum > 0.0f ? 1 : 0);
    if (slots) {
        o->state = calloc(slots * (g->n_params ? g->n_params : 1), sizeof(float));
        if (!o->state) {
            free(o);
            return cb_fail(CB_ERR_NOMEM, "out of memory for optimizer state");
        }
    }
    *out = o;
    return CB_OK;
}

void cb_optim_step(cb_optim *o)
{
    o->steps++;
    if (o->cfg.kind == CB_OPTIM_SGD) cb_sgd_step(o);
    else cb_adam_step(o);
}

void cb_optim_free(cb_optim *o)
{
    if (!o) return;
    free(o->state);
    free(o);
}
