/* Cliff's delta, its magnitude, and the Bonferroni correction. */
#include <math.h>
#include <stdlib.h>
#include "crossbind/stats.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Counts by binary search in a sorted copy of y: O((n + m) log m), so that
 * per-input timing samples of thousands of values stay cheap. */
cb_status cb_cliff_delta(const double *x, size_t n, const double *y, size_t m, double *delta)
{
    if (!x || !y || n == 0 || m == 0) return cb_fail(CB_ERR_INVALID_ARG, "cliff's delta: both samples need values");
    if (!delta) return cb_fail(CB_ERR_INVALID_ARG, "cliff's delta: no place for the result");
    double *s = malloc(m * sizeof *s);
    if (!s) return cb_fail(CB_ERR_NOMEM, "cliff's delta: out of memory");
    for (size_t j = 0; j < m; j++) {
        if (isnan(y[j])) { free(s); return cb_fail(CB_ERR_INVALID_ARG, "cliff's delta: value %zu of sample B is NaN", j + 1); }
        s[j] = y[j];
    }
    qsort(s, m, sizeof *s, cmp_double);
    double more = 0, less = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i])) { free(s); return cb_fail(CB_ERR_INVALID_ARG, "cliff's delta: value %zu of sample A is NaN", i + 1); }
        size_t lo = 0, hi = m; /* first index with s >= x[i] */
        while (lo < hi) { size_t mid = (lo + hi) / 2; if (s[mid] < x[i]) lo = mid + 1; else hi = mid; }
        size_t below = lo;
        hi = m; /* first index with s > x[i] */
        while (lo < hi) { size_t mid = (lo + hi) / 2; if (s[mid] <= x[i]) lo = mid + 1; else hi = mid; }
        more += (double)below;
        less += (double)(m - lo);
    }
    free(s);
    *delta = (more - less) / ((double)n * (double)m);
    return CB_OK;
}

const char *cb_cliff_magnitude(double delta)
{
    double d = fabs(delta);
    if (isnan(d)) return "undefined";
    if (d < 0.147) return "negligible";
    if (d < 0.33) return "small";
    if (d < 0.474) return "medium";
    return "large";
}

cb_status cb_bonferroni(const double *p, size_t k, double alpha, double *adjusted, int *significant)
{
    if (!p || !adjusted || k == 0) return cb_fail(CB_ERR_INVALID_ARG, "bonferroni: no p-values");
    if (!(alpha > 0 && alpha < 1)) return cb_fail(CB_ERR_INVALID_ARG, "bonferroni: alpha must lie in (0, 1)");
    for (size_t i = 0; i < k; i++) {
        if (!(p[i] >= 0 && p[i] <= 1)) return cb_fail(CB_ERR_INVALID_ARG, "bonferroni: p-value %zu is not in [0, 1]", i + 1);
        double a = p[i] * (double)k;
        adjusted[i] = a > 1 ? 1 : a;
        if (significant) significant[i] = p[i] < alpha / (double)k;
    }
    return CB_OK;
}
