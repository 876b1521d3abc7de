/* crossbind: evaluation metrics, one implementation used everywhere. */
#ifndef CROSSBIND_STATS_H
#define CROSSBIND_STATS_H

#include <stdint.h>
#include "crossbind/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Predicted class per sample: argmax of k scores (k = 1: score >= 0.5). */
void cb_predict_labels(const float *scores, int64_t n, int k, int *pred);
double cb_accuracy(const int *pred, const float *labels, int64_t n);
/* Macro F1 as scikit-learn's f1_score(average='macro'): the mean over the
 * classes that occur in the labels or the predictions; a class with no
 * true positive scores 0. */
double cb_f1_macro(const int *pred, const float *labels, int64_t n, int k);
/* ROC AUC (ties counted half, as the Mann-Whitney statistic).
 * k > 1: macro one-vs-rest over probabilities [n, k], averaged over the
 * classes that have both positive and negative samples (scikit-learn
 * refuses the case where a class is absent; crossbind skips that class so
 * that subsets stay measurable). k = 1: binary AUC of the scores.
 * NaN when no class qualifies. `work` needs 2 * n doubles. */
double cb_auc_macro(const float *probs, const float *labels, int64_t n, int k, double *work);

#ifdef __cplusplus
}
#endif
#endif
