/* crossbind: the built-in models of the study, as graph builders. */
#ifndef CROSSBIND_MODEL_H
#define CROSSBIND_MODEL_H

#include "crossbind/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cb_model {
    char name[32];
    cb_graph graph;   /* owned */
    int input;        /* node fed with the samples */
    int labels;       /* node fed with the labels (as float) */
    int classes;      /* outputs of the prediction (1: binary with sigmoid) */
} cb_model;

/* Names of the built-in models, NULL-terminated. */
const char *const *cb_model_names(void);
/* Builds a model's graph with zeroed parameters; unknown names fail with
 * CB_ERR_NOT_FOUND and a message listing the known ones. */
cb_status cb_model_create(const char *name, cb_model **out);
void cb_model_free(cb_model *m);
/* PyTorch-default initialisation from the engine's generator. */
void cb_model_init(cb_model *m, uint64_t seed);
size_t cb_model_param_count(const cb_model *m);

#ifdef __cplusplus
}
#endif
#endif
