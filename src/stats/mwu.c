/* Two-sided Mann-Whitney U test with SciPy's choice of method.
 *
 * SciPy (mannwhitneyu, method='auto') uses the exact null distribution of U
 * unless both samples have more than 8 values or there is any tie in the
 * pooled sample; otherwise the normal approximation with the tie-corrected
 * variance and a continuity correction of 0.5. The two-sided p-value is
 * twice the upper tail at U = max(U1, U2), clipped to 1. */
#include <math.h>
#include <stdlib.h>
#include "crossbind/stats.h"

typedef struct { double v; size_t idx; } ranked;

static int cmp_ranked(const void *a, const void *b)
{
    double x = ((const ranked *)a)->v, y = ((const ranked *)b)->v;
    return (x > y) - (x < y);
}

/* Number of ways f[u] (u = 0 .. n*m) to arrange two samples of sizes n and
 * m so that U = u, by the recurrence on the largest value: with a values
 * of the small sample and b of the large one, f(a, b, u) = f(a-1, b, u-b)
 * (the largest is from the small sample and beats all b others) +
 * f(a, b-1, u). Only additions, so the counts keep full relative precision
 * in doubles even where they exceed 2^53. Rows a = 0..s are kept for the
 * current b and updated in place in ascending a (row a-1 already holds b,
 * row a still b-1). Time O(s^2 l^2), memory O(s^2 l) for sizes s <= l;
 * SciPy's rule uses the exact method only when s <= 8. The result is row s
 * (the caller frees the whole block through the returned pointer's base,
 * which is the block itself: row s is copied to the front). */
static double *u_counts(size_t n, size_t m)
{
    size_t s = n < m ? n : m, l = n < m ? m : n, w = s * l + 1;
    double *f = calloc((s + 1) * w, sizeof *f);
    if (!f) return NULL;
    for (size_t a = 0; a <= s; a++) f[a * w] = 1.0; /* b = 0: U = 0 only */
    for (size_t b = 1; b <= l; b++)
        for (size_t a = 1; a <= s; a++) {
            double *row = f + a * w;
            const double *prev = f + (a - 1) * w;
            for (size_t u = a * b; u >= b; u--) { /* f(a, b, u) is zero above u = a b */
                row[u] += prev[u - b];
                if (u == b) break;
            }
        }
    for (size_t u = 0; u < w; u++) f[u] = f[s * w + u];
    return f;
}

cb_status cb_mann_whitney_u(const double *x, size_t n, const double *y, size_t m, double *u, double *p, int *exact)
{
    if (!x || !y || n == 0 || m == 0) return cb_fail(CB_ERR_INVALID_ARG, "mann-whitney u: both samples need values");
    if (!u || !p) return cb_fail(CB_ERR_INVALID_ARG, "mann-whitney u: no place for the result");
    size_t total = n + m;
    ranked *r = malloc(total * sizeof *r);
    if (!r) return cb_fail(CB_ERR_NOMEM, "mann-whitney u: out of memory");
    for (size_t i = 0; i < total; i++) {
        r[i].v = i < n ? x[i] : y[i - n];
        r[i].idx = i;
        if (isnan(r[i].v)) {
            free(r);
            return cb_fail(CB_ERR_INVALID_ARG, "mann-whitney u: value %zu of sample %s is NaN", i < n ? i + 1 : i - n + 1,
                           i < n ? "A" : "B");
        }
    }
    qsort(r, total, sizeof *r, cmp_ranked);
    /* Mid-ranks; the tie term sum(t^3 - t) over groups of t equal values. */
    double rank_x = 0.0, tie_term = 0.0;
    int ties = 0;
    for (size_t i = 0; i < total;) {
        size_t j = i;
        while (j < total && r[j].v == r[i].v) j++;
        double t = (double)(j - i), mid = (double)(i + 1 + j) / 2.0;
        if (j - i > 1) { ties = 1; tie_term += t * t * t - t; }
        for (size_t k = i; k < j; k++) if (r[k].idx < n) rank_x += mid;
        i = j;
    }
    free(r);
    double dn = (double)n, dm = (double)m;
    double u1 = rank_x - dn * (dn + 1) / 2, u2 = dn * dm - u1, big = u1 > u2 ? u1 : u2;
    int use_exact = !(n > 8 && m > 8) && !ties;
    double pv;
    if (use_exact) {
        double *f = u_counts(n, m);
        if (!f) return cb_fail(CB_ERR_NOMEM, "mann-whitney u: out of memory");
        size_t top = n * m, k0 = (size_t)llround(big);
        double all = 0.0, tail = 0.0;
        for (size_t k = 0; k <= top; k++) {
            all += f[k];
            if (k >= k0) tail += f[k];
        }
        free(f);
        pv = 2.0 * tail / all;
    } else {
        double nn = dn + dm;
        double s = sqrt(dn * dm / 12.0 * ((nn + 1) - tie_term / (nn * (nn - 1))));
        double z = (big - dn * dm / 2.0 - 0.5) / s; /* s = 0 (all equal): z = -inf, p = 1 */
        if (isnan(z)) z = -INFINITY;
        pv = 2.0 * 0.5 * erfc(z / sqrt(2.0));
    }
    if (pv > 1.0) pv = 1.0;
    if (pv < 0.0) pv = 0.0;
    *u = u1;
    *p = pv;
    if (exact) *exact = use_exact;
    return CB_OK;
}
