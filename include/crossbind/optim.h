/* crossbind: optimizers with PyTorch's exact update rules (torch.optim.SGD
 * and torch.optim.Adam, single-tensor implementations, PyTorch 1.13). */
#ifndef CROSSBIND_OPTIM_H
#define CROSSBIND_OPTIM_H

#include "crossbind/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cb_optim_kind { CB_OPTIM_SGD = 0, CB_OPTIM_ADAM } cb_optim_kind;

typedef struct cb_optim_config {
    cb_optim_kind kind;
    float lr;
    float momentum;      /* SGD */
    float weight_decay;  /* both: L2 added to the gradient */
    float beta1, beta2, eps; /* Adam */
} cb_optim_config;

/* PyTorch's defaults for the kind, with the given learning rate. */
cb_optim_config cb_optim_defaults(cb_optim_kind kind, float lr);

typedef struct cb_optim cb_optim;

/* The optimizer updates every parameter of `g` (which must outlive it) from
 * the gradients in g->grads. Its state is allocated here, once. */
cb_status cb_optim_create(const cb_optim_config *cfg, cb_graph *g, cb_optim **out);
void cb_optim_step(cb_optim *o);
void cb_optim_free(cb_optim *o);

#ifdef __cplusplus
}
#endif
#endif
