/* crossbind delta's run: prepare, run every variant not yet stored, compare,
 * localise, write the summary and the report (experiment.c). Internal. */
#ifndef CB_DELTA_EXPERIMENT_H
#define CB_DELTA_EXPERIMENT_H

#include "../study/study.h"
#include "delta.h"

typedef struct delta_options {
    const char *store;   /* the SQLite store */
    const char *work;    /* the work directory (model, inputs, runners' files) */
    const char *report;  /* the report's directory, NULL for none */
    const char *json;    /* the summary's path, NULL for none */
    double timeout_s;    /* per runner process */
    int localise;        /* 0: skip localisation */
} delta_options;

cb_status delta_experiment(const delta_config *c, const cb_runners *runners, const delta_options *o);

#endif
