#ifndef CB_OPTIM_IMPL_H
#define CB_OPTIM_IMPL_H
#include "crossbind/optim.h"

struct cb_optim {
    cb_optim_config cfg;
    cb_graph *g;
    float *state;  /* SGD: momentum buffer; Adam: exp_avg then exp_avg_sq */
    long steps;    /* steps taken, including the current one */
};

void cb_sgd_step(cb_optim *o);
void cb_adam_step(cb_optim *o);

#endif
