/* An experiment's results as the summary (summary.c) and the report
 * (page.c) read them: every variant's stored result, every pair of every
 * axis compared, and the localisations. Internal. */
#ifndef CB_DELTA_ANALYSIS_H
#define CB_DELTA_ANALYSIS_H

#include "compare.h"
#include "prepare.h"

typedef struct delta_axis_pair {
    int axis;
    delta_pair pair;    /* a, b: variant indices */
    int diverges;       /* a top-1 differs, or a logit differs beyond the tolerance */
    int input;          /* the input localised: the first whose top-1 differs, else the largest difference */
    char *localisation; /* JSON (owned), NULL when not localised */
} delta_axis_pair;

typedef struct delta_analysis {
    const delta_config *c;
    delta_result res[DELTA_MAX_VARIANTS];
    delta_inputs inputs;
    delta_axis_pair *pairs;
    int n_pairs;
    char pipeline[1024], machine[512];
    char model_sha[65], weights_sha[65], keras_sha[65];
    double wall_s;
} delta_analysis;

void delta_analysis_free(delta_analysis *a);
/* The fraction of inputs whose top-1 is their label (the inputs have labels). */
double delta_accuracy(const delta_analysis *a, const delta_result *r);

/* The summary (--json): per pair of variants the measures and the first
 * diverging node. */
cb_status delta_write_summary(const delta_analysis *a, const char *path);
/* The HTML report, DIR/index.html. */
cb_status delta_write_report(const delta_analysis *a, const char *dir);

#endif
