/* The measures of a pair of variants (compare.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/stats.h"
#include "compare.h"

static int by_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

void delta_median_range(const double *v, int n, double *median, double *lo, double *hi)
{
    double *s = malloc((size_t)n * sizeof *s);
    if (!s) { *median = *lo = *hi = NAN; return; }
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, by_double);
    *median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    *lo = s[0], *hi = s[n - 1];
    free(s);
}

int delta_classes(int outputs) { return outputs == 1 ? 2 : outputs; }

/* A row's ranking as doubles (cb_rank_scores' form), over
 * delta_classes(outputs) classes: one output p ranks (1 - p, p). */
static cb_status ranking(const float *row, int outputs, double *scores, double *rank)
{
    if (outputs == 1) scores[0] = 1.0 - (double)row[0], scores[1] = row[0];
    else
        for (int c = 0; c < outputs; c++) scores[c] = row[c];
    return cb_rank_scores(scores, (size_t)delta_classes(outputs), rank);
}

cb_status delta_topk(const float *row, int outputs, int k, int *ids)
{
    const int classes = delta_classes(outputs);
    double *scores = malloc((size_t)classes * sizeof *scores), *rank = malloc((size_t)classes * sizeof *rank);
    cb_status s = scores && rank ? ranking(row, outputs, scores, rank) : cb_fail(CB_ERR_NOMEM, "out of memory");
    for (int i = 0; s == CB_OK && i < k && i < classes; i++) ids[i] = (int)rank[i];
    free(scores);
    free(rank);
    return s;
}

static void distances(const float *x, const float *y, int n, delta_input_cmp *c)
{
    double mx = 0, sum = 0, xy = 0, xx = 0, yy = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)x[i] - (double)y[i]);
        if (d > mx || d != d) mx = d;
        sum += d;
        xy += (double)x[i] * y[i], xx += (double)x[i] * x[i], yy += (double)y[i] * y[i];
    }
    c->max_abs = mx;
    c->mean_abs = sum / n;
    c->cosine = xx > 0 && yy > 0 ? xy / sqrt(xx * yy) : (xx == yy ? 1.0 : 0.0);
}

static cb_status compare_times(const delta_result *a, const delta_result *b, delta_pair *p)
{
    size_t na = (size_t)a->n_inputs * (size_t)a->reps, nb = (size_t)b->n_inputs * (size_t)b->reps;
    if (!a->times || !b->times || !na || !nb) {
        p->u = p->p_time = p->cliff = p->median_rel_time = NAN;
        return CB_OK;
    }
    cb_status s = cb_mann_whitney_u(a->times, na, b->times, nb, &p->u, &p->p_time, &p->exact);
    if (s == CB_OK) s = cb_cliff_delta(b->times, nb, a->times, na, &p->cliff); /* > 0: b slower */
    double *rel = malloc((size_t)p->n * sizeof *rel);
    if (!rel) return cb_fail(CB_ERR_NOMEM, "out of memory");
    for (int i = 0; s == CB_OK && i < p->n; i++) {
        double ma, mb, lo, hi;
        delta_median_range(a->times + (size_t)i * (size_t)a->reps, a->reps, &ma, &lo, &hi);
        delta_median_range(b->times + (size_t)i * (size_t)b->reps, b->reps, &mb, &lo, &hi);
        rel[i] = p->in[i].rel_time = ma > 0 ? (mb - ma) / ma : NAN;
    }
    double lo, hi;
    if (s == CB_OK) delta_median_range(rel, p->n, &p->median_rel_time, &lo, &hi);
    free(rel);
    return s;
}

cb_status delta_compare(const delta_result *a, const delta_result *b, int k, double pers, delta_pair *p)
{
    memset(p, 0, sizeof *p);
    if (a->n_inputs != b->n_inputs || a->classes != b->classes)
        return cb_fail(CB_ERR_SHAPE, "%s gives %d x %d outputs, %s %d x %d: they did not run the same task", a->key,
                       a->n_inputs, a->classes, b->key, b->n_inputs, b->classes);
    int n = a->n_inputs, c = a->classes, nc = delta_classes(c);
    if (k > nc) k = nc;
    p->n = n;
    p->in = calloc((size_t)n, sizeof *p->in);
    double *sa = malloc((size_t)nc * sizeof *sa), *sb = malloc((size_t)nc * sizeof *sb);
    double *ra = malloc((size_t)nc * sizeof *ra), *rb = malloc((size_t)nc * sizeof *rb);
    cb_status s = p->in && sa && sb && ra && rb ? CB_OK : cb_fail(CB_ERR_NOMEM, "out of memory comparing variants");
    int n_kendall = 0;
    p->min_cosine = 1;
    for (int i = 0; s == CB_OK && i < n; i++) {
        const float *x = a->outputs + (size_t)i * (size_t)c, *y = b->outputs + (size_t)i * (size_t)c;
        delta_input_cmp *q = &p->in[i];
        s = ranking(x, c, sa, ra);
        if (s == CB_OK) s = ranking(y, c, sb, rb);
        if (s != CB_OK) break;
        q->top1_a = (int)ra[0], q->top1_b = (int)rb[0];
        cb_rbo_result rbo;
        if ((s = cb_rbo(ra, (size_t)k, rb, (size_t)k, pers, (size_t)k, &rbo)) != CB_OK) break;
        q->rbo = rbo.ext, q->rbo_min = rbo.min, q->rbo_max = rbo.max, q->rbo_res = rbo.res;
        if ((s = cb_topk_jaccard(ra, (size_t)k, rb, (size_t)k, (size_t)k, &q->jaccard, NULL)) != CB_OK) break;
        if (cb_topk_kendall(ra, (size_t)k, rb, (size_t)k, (size_t)k, &q->kendall, NULL) != CB_OK) q->kendall = NAN;
        else p->mean_kendall += q->kendall, n_kendall++;
        distances(x, y, c, q);
        p->agree += q->top1_a == q->top1_b;
        p->mean_rbo += q->rbo, p->mean_jaccard += q->jaccard, p->mean_abs += q->mean_abs;
        if (q->max_abs > p->max_abs || q->max_abs != q->max_abs) p->max_abs = q->max_abs;
        if (q->cosine < p->min_cosine) p->min_cosine = q->cosine;
    }
    free(sa), free(sb), free(ra), free(rb);
    if (s == CB_OK) {
        p->n_differ = n - p->agree;
        p->agree_frac = (double)p->agree / n;
        p->mean_rbo /= n, p->mean_jaccard /= n, p->mean_abs /= n;
        p->mean_kendall = n_kendall ? p->mean_kendall / n_kendall : NAN;
        s = compare_times(a, b, p);
    }
    if (s != CB_OK) delta_pair_free(p);
    return s;
}

void delta_pair_free(delta_pair *p)
{
    free(p->in);
    p->in = NULL;
}
