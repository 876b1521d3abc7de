/* The measures of one pair of variants, input by input (protocol section
 * 6): rankings from the logits (softmax keeps their order), top-1
 * agreement, top-K Jaccard, Kendall tau-b and RBO (crossbind/stats.h has
 * the definitions), logit distances, and the times compared. Internal. */
#ifndef CB_DELTA_COMPARE_H
#define CB_DELTA_COMPARE_H

#include "store.h"

typedef struct delta_input_cmp {
    int top1_a, top1_b;
    double jaccard, kendall;    /* kendall NaN where undefined (the lists order no pair) */
    double rbo, rbo_min, rbo_max, rbo_res;
    double max_abs, mean_abs, cosine;
    double rel_time;            /* (median_b - median_a) / median_a */
} delta_input_cmp;

typedef struct delta_pair {
    int a, b;                   /* variant indices */
    int n;
    delta_input_cmp *in;        /* n (owned) */
    int agree, n_differ;
    double agree_frac, mean_rbo, mean_jaccard, mean_kendall, max_abs, mean_abs, min_cosine;
    double u, p_time, p_adj, cliff, median_rel_time;
    int exact, significant;
} delta_pair;

/* Fills *out (a and b set by the caller afterwards); the two results
 * must have the same inputs and classes. */
cb_status delta_compare(const delta_result *a, const delta_result *b, int k, double p, delta_pair *out);
void delta_pair_free(delta_pair *p);

/* Median, minimum and maximum of n values (n >= 1). */
void delta_median_range(const double *v, int n, double *median, double *lo, double *hi);
/* The classes a row of `outputs` values ranks. A model with one output
 * (the study's IMDb classifiers: the sigmoid probability p of the positive
 * class) is read as two classes, 0 negative and 1 positive, scored
 * (1 - p, p): top-1 is its label at the threshold 0.5 and every rank
 * measure is defined; the distances stay those of p itself. */
int delta_classes(int outputs);
/* The top-k class ids of one row of `outputs` values, best first
 * (k <= delta_classes(outputs)). */
cb_status delta_topk(const float *row, int outputs, int k, int *ids);

#endif
