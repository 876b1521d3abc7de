/* Accuracy, macro F1 and macro one-vs-rest ROC AUC. Scores that are NaN or
 * infinite have a defined meaning in each (see crossbind/stats.h): a model
 * whose outputs went NaN still gets an evaluation, never a hang. */
#include <math.h>
#include <stdlib.h>
#include "crossbind/stats.h"

void cb_predict_labels(const float *scores, int64_t n, int k, int *pred)
{
    for (int64_t i = 0; i < n; i++) {
        const float *s = scores + i * k;
        if (k == 1) { pred[i] = s[0] >= 0.5f; continue; } /* NaN: false, as in PyTorch */
        /* The first maximum, a NaN counting as larger than any number: what
         * torch.argmax and numpy.argmax return, so that runners agree. */
        int best = 0;
        for (int j = 1; j < k && !isnan(s[best]); j++) if (isnan(s[j]) || s[j] > s[best]) best = j;
        pred[i] = best;
    }
}

int64_t cb_count_nonfinite(const float *scores, int64_t n, int k)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        int ok = 1;
        for (int j = 0; j < k; j++) ok &= isfinite(scores[i * k + j]) != 0;
        bad += !ok;
    }
    return bad;
}

/* A label as a class index, or -1 for one that names no class (NaN, an
 * infinity, a fraction or a negative number): it matches no prediction. */
static int label_class(float y)
{
    return y >= 0.0f && y < 2147483648.0f && y == floorf(y) ? (int)y : -1;
}

double cb_accuracy(const int *pred, const float *labels, int64_t n)
{
    int64_t ok = 0;
    for (int64_t i = 0; i < n; i++) ok += pred[i] == label_class(labels[i]);
    return n ? (double)ok / (double)n : NAN;
}

double cb_f1_macro(const int *pred, const float *labels, int64_t n, int k)
{
    int classes = k == 1 ? 2 : k;
    double sum = 0.0;
    int used = 0;
    for (int c = 0; c < classes; c++) {
        int64_t tp = 0, fp = 0, fn = 0;
        for (int64_t i = 0; i < n; i++) {
            int t = label_class(labels[i]) == c, p = pred[i] == c;
            tp += t && p;
            fp += !t && p;
            fn += t && !p;
        }
        if (tp + fp + fn == 0) continue; /* class absent from both */
        sum += 2.0 * (double)tp / (double)(2 * tp + fp + fn);
        used++;
    }
    return used ? sum / used : NAN;
}

typedef struct { double score; double positive; } scored;

static int cmp_scored(const void *a, const void *b)
{
    double x = ((const scored *)a)->score, y = ((const scored *)b)->score;
    return (x > y) - (x < y);
}

/* AUC = (sum of positive ranks - P(P+1)/2) / (P N), with mid-ranks for ties. */
static double auc_binary(scored *s, int64_t n)
{
    /* A NaN score has no rank (and would break the sort's ordering): the
     * AUC is undefined, as scikit-learn refuses such input. Infinities rank
     * like any number. */
    for (int64_t i = 0; i < n; i++) if (isnan(s[i].score)) return NAN;
    qsort(s, (size_t)n, sizeof *s, cmp_scored);
    double pos = 0, rank_sum = 0;
    for (int64_t i = 0; i < n;) {
        int64_t j = i + 1; /* a tie group has at least one member: the loop always advances */
        while (j < n && s[j].score == s[i].score) j++;
        double mid = (double)(i + 1 + j) / 2.0; /* ranks i+1 .. j */
        for (int64_t t = i; t < j; t++) if (s[t].positive > 0) { rank_sum += mid; pos++; }
        i = j;
    }
    double neg = (double)n - pos;
    if (pos == 0 || neg == 0) return NAN;
    return (rank_sum - pos * (pos + 1) / 2.0) / (pos * neg);
}

double cb_auc_macro(const float *probs, const float *labels, int64_t n, int k, double *work)
{
    scored *s = (scored *)work;
    if (k == 1) {
        for (int64_t i = 0; i < n; i++) s[i] = (scored){probs[i], labels[i] > 0.5f};
        return auc_binary(s, n);
    }
    double sum = 0;
    int used = 0;
    for (int c = 0; c < k; c++) {
        for (int64_t i = 0; i < n; i++) s[i] = (scored){probs[i * k + c], label_class(labels[i]) == c};
        for (int64_t i = 0; i < n; i++) if (isnan(s[i].score)) return NAN; /* undefined, not skipped */
        double a = auc_binary(s, n);
        if (isnan(a)) continue;
        sum += a;
        used++;
    }
    return used ? sum / used : NAN;
}
