/* Similarity of two rankings, for differential testing (protocol section 6):
 * rank-biased overlap (Webber, Moffat and Zobel, "A similarity measure for
 * indefinite rankings", TOIS 2010), top-K Jaccard and Kendall's tau-b on
 * the union of two top-K lists.
 *
 * A ranking is a list of distinct items (any finite numbers, e.g. class
 * ids), best first; both are cut to their first K items (the evaluation
 * depth) before anything is computed, and may be of unequal lengths. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/stats.h"

/* Position (0-based) of every item of `a` in `b`, or -1 when absent, by one
 * sort of `b`: O((n + m) log m). */
typedef struct { double v; size_t pos; } keyed;

static int by_value(const void *x, const void *y)
{
    const double a = ((const keyed *)x)->v, b = ((const keyed *)y)->v;
    return a < b ? -1 : a > b;
}

static cb_status positions_in(const double *a, size_t n, const double *b, size_t m, long *pos)
{
    keyed *k = malloc((m ? m : 1) * sizeof *k);
    if (!k) return cb_fail(CB_ERR_NOMEM, "out of memory ranking lists");
    for (size_t j = 0; j < m; j++) k[j] = (keyed){b[j], j};
    qsort(k, m, sizeof *k, by_value);
    for (size_t i = 0; i < n; i++) {
        const keyed key = {a[i], 0};
        const keyed *hit = m ? bsearch(&key, k, m, sizeof *k, by_value) : NULL;
        pos[i] = hit ? (long)hit->pos : -1;
    }
    free(k);
    return CB_OK;
}

static cb_status check_list(const double *a, size_t n, const char *which)
{
    if (n == 0) return cb_fail(CB_ERR_INVALID_ARG, "ranking %s is empty", which);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(a[i])) return cb_fail(CB_ERR_INVALID_ARG, "ranking %s: item %zu is not a finite number", which, i + 1);
    keyed *k = malloc(n * sizeof *k);
    if (!k) return cb_fail(CB_ERR_NOMEM, "out of memory ranking lists");
    for (size_t i = 0; i < n; i++) k[i] = (keyed){a[i], i};
    qsort(k, n, sizeof *k, by_value);
    cb_status st = CB_OK;
    for (size_t i = 1; i < n && st == CB_OK; i++)
        if (k[i].v == k[i - 1].v)
            st = cb_fail(CB_ERR_INVALID_ARG, "ranking %s names item %.17g twice (positions %zu and %zu)", which, k[i].v,
                         (k[i].pos < k[i - 1].pos ? k[i].pos : k[i - 1].pos) + 1,
                         (k[i].pos < k[i - 1].pos ? k[i - 1].pos : k[i].pos) + 1);
    free(k);
    return st;
}

static cb_status check_pair(const double *a, size_t n, const double *b, size_t m, size_t k)
{
    if (k < 1) return cb_fail(CB_ERR_INVALID_ARG, "the depth K must be at least 1");
    cb_status st = check_list(a, n < k ? n : k, "A");
    return st == CB_OK ? check_list(b, m < k ? m : k, "B") : st;
}

cb_status cb_rbo(const double *a, size_t n, const double *b, size_t m, double p, size_t k, cb_rbo_result *out)
{
    memset(out, 0, sizeof *out);
    if (!(p > 0 && p < 1)) return cb_fail(CB_ERR_INVALID_ARG, "RBO's persistence p must be in (0, 1), got %g", p);
    cb_status st = check_pair(a, n, b, m, k);
    if (st != CB_OK) return st;
    if (n > k) n = k;
    if (m > k) m = k;
    /* S the shorter list (s items), L the longer (l). */
    const double *S = n <= m ? a : b, *L = n <= m ? b : a;
    const size_t s = n <= m ? n : m, l = n <= m ? m : n;
    long *in_l = malloc(s * sizeof *in_l), *in_s = malloc(l * sizeof *in_s);
    if (!in_l || !in_s || positions_in(S, s, L, l, in_l) || positions_in(L, l, S, s, in_s)) {
        free(in_l), free(in_s);
        return cb_fail(CB_ERR_NOMEM, "out of memory computing RBO");
    }
    /* X_d, the overlap at depth d: an item counts when both lists have
     * reached it (its later position). Then the sums of Webber et al.:
     * depths 1..s agree on what was seen; at s < d <= l the shorter list's
     * unseen items are taken as none in common (min), as many of L's items
     * as can be (max), or in common at the rate of depth s (extrapolated,
     * equation 32); beyond l the same three assumptions continue. */
    double sum_min = 0, sum_max = 0, sum_ext = 0, pd = 1, x = 0, xs = 0;
    for (size_t d = 1; d <= l; d++) {
        pd *= p;
        if (d <= s) {
            x += in_l[d - 1] >= 0 && (size_t)in_l[d - 1] < d; /* S_d met in L's first d */
            x += in_s[d - 1] >= 0 && (size_t)in_s[d - 1] < d - 1; /* L_d met in S's first d - 1 */
            if (d == s) xs = x;
        } else {
            x += in_s[d - 1] >= 0; /* L_d is one of S's items */
        }
        const double dd = (double)d;
        if (d <= s) {
            sum_min += x / dd * pd;
            sum_max += x / dd * pd;
            sum_ext += x / dd * pd;
        } else {
            const double extra = fmin(dd - (double)s, dd - x); /* L's items that S's unseen places could hold */
            sum_min += x / dd * pd;
            sum_max += (x + extra) / dd * pd;
            sum_ext += (x + (dd - (double)s) * xs / (double)s) / dd * pd;
        }
    }
    const double xl = x, q = (1 - p) / p;
    /* Tail beyond l: sum_{d>l} p^d / d, summed directly (not log(1/(1-p))
     * minus the head, which cancels). */
    double tail = 0, pt = pd;
    for (size_t d = l + 1; d < l + 100000000; d++) {
        pt *= p;
        const double term = pt / (double)d;
        tail += term;
        if (term < 1e-19 * tail || pt == 0) break;
    }
    const double f = (double)l + (double)s - xl;
    double max_tail = 0, pm = pd;
    for (double d = (double)l + 1; d <= f; d++) {
        pm *= p;
        max_tail += (2 * d - (double)l - (double)s + xl) / d * pm;
    }
    max_tail += pm * p / (1 - p); /* p^(f+1) / (1 - p) */
    out->ext = q * sum_ext + (xl + ((double)l - (double)s) * xs / (double)s) / (double)l * pd;
    out->min = q * (sum_min + xl * tail);
    out->max = q * (sum_max + max_tail);
    out->res = out->max - out->min;
    out->overlap = (size_t)xl;
    out->len_a = n;
    out->len_b = m;
    free(in_l), free(in_s);
    return CB_OK;
}

cb_status cb_topk_jaccard(const double *a, size_t n, const double *b, size_t m, size_t k, double *out,
                          size_t *common)
{
    *out = NAN;
    cb_status st = check_pair(a, n, b, m, k);
    if (st != CB_OK) return st;
    if (n > k) n = k;
    if (m > k) m = k;
    long *pos = malloc(n * sizeof *pos);
    if (!pos || positions_in(a, n, b, m, pos)) {
        free(pos);
        return cb_fail(CB_ERR_NOMEM, "out of memory computing Jaccard");
    }
    size_t both = 0;
    for (size_t i = 0; i < n; i++) both += pos[i] >= 0;
    free(pos);
    *out = (double)both / (double)(n + m - both);
    if (common) *common = both;
    return CB_OK;
}

/* Kendall's tau-b of paired ranks (ties in either: tau-b's correction),
 * O(u^2) over u items: top-K lists are short. */
static double tau_b(const double *r1, const double *r2, size_t u)
{
    double conc = 0, disc = 0, t1 = 0, t2 = 0;
    for (size_t i = 0; i < u; i++)
        for (size_t j = i + 1; j < u; j++) {
            const double d1 = r1[i] - r1[j], d2 = r2[i] - r2[j];
            if (d1 == 0 && d2 == 0) continue;
            if (d1 == 0) t1++;
            else if (d2 == 0) t2++;
            else if ((d1 > 0) == (d2 > 0)) conc++;
            else disc++;
        }
    const double denom = sqrt((conc + disc + t1) * (conc + disc + t2));
    return denom > 0 ? (conc - disc) / denom : NAN;
}

cb_status cb_topk_kendall(const double *a, size_t n, const double *b, size_t m, size_t k, double *tau, size_t *items)
{
    *tau = NAN;
    cb_status st = check_pair(a, n, b, m, k);
    if (st != CB_OK) return st;
    if (n > k) n = k;
    if (m > k) m = k;
    long *in_b = malloc(n * sizeof *in_b), *in_a = malloc(m * sizeof *in_a);
    double *r1 = malloc((n + m) * sizeof *r1), *r2 = malloc((n + m) * sizeof *r2);
    if (!in_b || !in_a || !r1 || !r2 || positions_in(a, n, b, m, in_b) || positions_in(b, m, a, n, in_a)) {
        free(in_b), free(in_a), free(r1), free(r2);
        return cb_fail(CB_ERR_NOMEM, "out of memory computing Kendall's tau");
    }
    /* The union of both lists: A's items in A's order, then B's others. An
     * item missing from a list ranks just below that list's last item, all
     * such items tied there (the "k + 1" rule of Fagin, Kumar and
     * Sivakumar's top-k comparisons). */
    size_t u = 0;
    for (size_t i = 0; i < n; i++, u++) {
        r1[u] = (double)i + 1;
        r2[u] = in_b[i] >= 0 ? (double)in_b[i] + 1 : (double)m + 1;
    }
    for (size_t j = 0; j < m; j++)
        if (in_a[j] < 0) {
            r1[u] = (double)n + 1;
            r2[u] = (double)j + 1;
            u++;
        }
    *tau = tau_b(r1, r2, u);
    if (items) *items = u;
    free(in_b), free(in_a), free(r1), free(r2);
    if (isnan(*tau))
        return cb_fail(CB_ERR_INVALID_ARG, "Kendall's tau-b is undefined here: one ranking orders no pair of the %zu items",
                       u);
    return CB_OK;
}

/* Descending score order; equal scores keep index order (a stable rule,
 * stated so that two tools agree). */
static int by_score(const void *x, const void *y, void *ctx)
{
    const double *scores = ctx;
    const size_t i = *(const size_t *)x, j = *(const size_t *)y;
    const double a = scores[i], b = scores[j];
    if (a != b) return a > b ? -1 : 1;
    return i < j ? -1 : i > j;
}

cb_status cb_rank_scores(const double *scores, size_t n, double *ranking)
{
    for (size_t i = 0; i < n; i++)
        if (isnan(scores[i])) return cb_fail(CB_ERR_INVALID_ARG, "score %zu is NaN: it has no rank", i + 1);
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    if (!idx) return cb_fail(CB_ERR_NOMEM, "out of memory ranking scores");
    for (size_t i = 0; i < n; i++) idx[i] = i;
    qsort_r(idx, n, sizeof *idx, by_score, (void *)scores);
    for (size_t i = 0; i < n; i++) ranking[i] = (double)idx[i];
    free(idx);
    return CB_OK;
}
