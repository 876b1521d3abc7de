/* crossbind: evaluation metrics, one implementation used everywhere. */
#ifndef CROSSBIND_STATS_H
#define CROSSBIND_STATS_H

#include <stddef.h>
#include <stdint.h>
#include "crossbind/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Non-finite scores have one defined meaning everywhere, and no metric
 * loops or reads out of bounds on them:
 * - prediction: a NaN counts as larger than any number (the first NaN of a
 *   row wins, as torch.argmax and numpy.argmax); k = 1: NaN >= 0.5 is false;
 * - AUC: NaN when any score it would rank is NaN (scikit-learn refuses such
 *   input); infinities rank as the largest and smallest numbers;
 * - a label that is not a class index (NaN, negative, a fraction) matches
 *   no prediction: it counts as wrong in accuracy and in F1.
 * cb_count_nonfinite tells how many samples are affected, for reporting. */

/* Predicted class per sample: argmax of k scores (k = 1: score >= 0.5). */
void cb_predict_labels(const float *scores, int64_t n, int k, int *pred);
/* Samples (rows of k scores) holding a NaN or an infinity. */
int64_t cb_count_nonfinite(const float *scores, int64_t n, int k);
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
 * NaN when no class qualifies or any score is NaN. `work` needs 2 * n
 * doubles. */
double cb_auc_macro(const float *probs, const float *labels, int64_t n, int k, double *work);

/* ---- Statistics of the study's analysis (protocol section 5) ---- */

/* Dynamic time warping distance between curves a[n] and b[m] (n, m >= 1)
 * with |a_i - b_j| as the local cost. radius < 0: exact DTW (O(n m) time,
 * O(m) memory). radius >= 1: FastDTW (Salvador and Chan) with that radius,
 * following the reference `fastdtw` package step for step (coarsening by
 * pair means, window expansion, ties broken in the same order), so its
 * approximate distances match that package's. radius 0 is refused. */
cb_status cb_dtw(const double *a, size_t n, const double *b, size_t m, int radius, double *distance);

/* Two-sided Mann-Whitney U test, as SciPy's mannwhitneyu(x, y,
 * alternative='two-sided', method='auto', use_continuity=True): `u` is the
 * U statistic of sample x; the exact null distribution is used unless both
 * samples have more than 8 values or any value is tied (SciPy's rule), and
 * otherwise the normal approximation with tie and continuity correction.
 * `exact` (may be NULL) tells which was used. Needs n, m >= 1. */
cb_status cb_mann_whitney_u(const double *x, size_t n, const double *y, size_t m,
                            double *u, double *p, int *exact);

/* Cliff's delta of x against y: (#{x_i > y_j} - #{x_i < y_j}) / (n m).
 * DTW refuses non-finite values, Mann-Whitney U and Cliff's delta refuse
 * NaN (an error naming the value), all three before any loop runs;
 * infinities are ordinary values to the two rank statistics. */
cb_status cb_cliff_delta(const double *x, size_t n, const double *y, size_t m, double *delta);
/* "negligible" (|d| < 0.147), "small" (< 0.33), "medium" (< 0.474), "large". */
const char *cb_cliff_magnitude(double delta);

/* Bonferroni: adjusted[i] = min(1, p[i] * k); the test is significant when
 * p[i] < alpha / k (equivalently adjusted[i] < alpha). `significant` may be NULL. */
cb_status cb_bonferroni(const double *p, size_t k, double alpha, double *adjusted, int *significant);

/* ---- Similarity of rankings (differential testing, protocol section 6) ----
 * A ranking lists distinct items (finite numbers, e.g. class ids), best
 * first. Each is cut to its first k items (the evaluation depth, k >= 1)
 * before anything is computed; the two may then differ in length. An empty
 * ranking, a repeated item or a non-finite one is refused. */

/* Rank-biased overlap (Webber, Moffat, Zobel 2010) with persistence p in
 * (0, 1): `ext` the extrapolated point score (equation 32, which is
 * equation 30 for equal lengths), `min` and `max` the bounds on every
 * continuation of the lists, `res` = max - min; identical lists give
 * ext 1, disjoint ones 0. `overlap`: items the two cut lists share. */
typedef struct cb_rbo_result {
    double ext, min, max, res;
    size_t overlap, len_a, len_b;
} cb_rbo_result;
cb_status cb_rbo(const double *a, size_t n, const double *b, size_t m, double p, size_t k, cb_rbo_result *out);
/* |A_k intersect B_k| / |A_k union B_k|; *common (may be NULL): the intersection's size. */
cb_status cb_topk_jaccard(const double *a, size_t n, const double *b, size_t m, size_t k, double *out,
                          size_t *common);
/* Kendall's tau-b between the two cut lists over the union of their items:
 * an item's rank is its position in a list, and an item a list lacks ranks
 * just below that list's last item, tied with the other missing ones
 * (the "k + 1" rule of Fagin, Kumar and Sivakumar). Refused where it is
 * undefined (a list ordering no pair). *items (may be NULL): the union's size. */
cb_status cb_topk_kendall(const double *a, size_t n, const double *b, size_t m, size_t k, double *tau, size_t *items);
/* The ranking of n scores: item indices by descending score, equal scores
 * in index order; NaN refused. ranking: n values. */
cb_status cb_rank_scores(const double *scores, size_t n, double *ranking);

#ifdef __cplusplus
}
#endif
#endif
