/* Dynamic time warping: exact, and FastDTW (Salvador and Chan 2007).
 *
 * The study compares per-epoch accuracy curves, so curves are short (at most
 * a few hundred points); exact DTW is the default. FastDTW is offered because
 * the original study used it (radius 1); it follows the reference `fastdtw`
 * package: below radius + 2 points plain DTW, otherwise halve both curves by
 * pair means (an odd last point dropped), solve the coarse problem, project
 * its path back at twice the resolution widened by `radius`, and solve DTW
 * inside that window. Ties between predecessors are broken in the package's
 * order (from above, from the left, diagonal), which matters because the
 * coarse path decides the fine window. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/stats.h"

static cb_status check_curves(const double *a, size_t n, const double *b, size_t m)
{
    if (!a || !b || n == 0 || m == 0) return cb_fail(CB_ERR_INVALID_ARG, "dtw: both curves need at least one value");
    for (size_t i = 0; i < n; i++)
        if (!isfinite(a[i])) return cb_fail(CB_ERR_INVALID_ARG, "dtw: value %zu of the first curve is not finite", i + 1);
    for (size_t j = 0; j < m; j++)
        if (!isfinite(b[j])) return cb_fail(CB_ERR_INVALID_ARG, "dtw: value %zu of the second curve is not finite", j + 1);
    return CB_OK;
}

/* Exact DTW with two rows of the cost matrix. */
static double dtw_exact(const double *a, size_t n, const double *b, size_t m, double *prev, double *cur)
{
    for (size_t j = 0; j <= m; j++) prev[j] = INFINITY;
    prev[0] = 0.0;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = INFINITY;
        for (size_t j = 1; j <= m; j++) {
            double best = prev[j];
            if (cur[j - 1] < best) best = cur[j - 1];
            if (prev[j - 1] < best) best = prev[j - 1];
            cur[j] = fabs(a[i - 1] - b[j - 1]) + best;
        }
        double *t = prev; prev = cur; cur = t;
    }
    return prev[m];
}

/* A warping window: for each row i (0-based) the columns lo[i] .. hi[i]
 * (inclusive; lo > hi means an empty row). */
typedef struct { size_t *lo, *hi; } window;

/* A path as (i, j) pairs, 0-based, from (0, 0) to (n-1, m-1). */
typedef struct { size_t *i, *j; size_t len; } path;

/* DTW restricted to `w`; returns the distance and (when p) the path.
 * Cells outside the window cost infinity. The matrix is stored per row
 * over the window's columns only. */
static cb_status dtw_window(const double *a, size_t n, const double *b, size_t m, const window *w, double *dist,
                            path *p)
{
    size_t *off = malloc((n + 1) * sizeof *off);
    if (!off) return cb_fail(CB_ERR_NOMEM, "dtw: out of memory");
    off[0] = 0;
    for (size_t i = 0; i < n; i++) off[i + 1] = off[i] + (w->lo[i] <= w->hi[i] ? w->hi[i] - w->lo[i] + 1 : 0);
    double *d = malloc((off[n] ? off[n] : 1) * sizeof *d);
    unsigned char *from = malloc(off[n] ? off[n] : 1); /* 0 above, 1 left, 2 diagonal, 3 start */
    if (!d || !from) {
        free(off); free(d); free(from);
        return cb_fail(CB_ERR_NOMEM, "dtw: out of memory");
    }
#define CELL(r, c) ((r) < n && w->lo[r] <= (c) && (c) <= w->hi[r] && w->lo[r] <= w->hi[r] ? off[r] + (c) - w->lo[r] : (size_t)-1)
    for (size_t i = 0; i < n; i++) {
        if (w->lo[i] > w->hi[i]) continue;
        for (size_t j = w->lo[i]; j <= w->hi[i]; j++) {
            size_t k = off[i] + j - w->lo[i];
            double cost = fabs(a[i] - b[j]);
            if (i == 0 && j == 0) { d[k] = cost; from[k] = 3; continue; }
            double best = INFINITY;
            unsigned char how = 0;
            size_t c;
            if (i > 0 && (c = CELL(i - 1, j)) != (size_t)-1 && d[c] < best) { best = d[c]; how = 0; }
            if (j > 0 && (c = CELL(i, j - 1)) != (size_t)-1 && d[c] < best) { best = d[c]; how = 1; }
            if (i > 0 && j > 0 && (c = CELL(i - 1, j - 1)) != (size_t)-1 && d[c] < best) { best = d[c]; how = 2; }
            d[k] = cost + best;
            from[k] = how;
        }
    }
    size_t last = CELL(n - 1, m - 1);
    cb_status st = CB_OK;
    if (last == (size_t)-1 || !isfinite(d[last])) {
        st = cb_fail(CB_ERR_INVALID_ARG, "dtw: the warping window does not connect the curves' ends");
    } else {
        *dist = d[last];
        if (p) {
            p->i = malloc((n + m) * sizeof *p->i);
            p->j = malloc((n + m) * sizeof *p->j);
            if (!p->i || !p->j) {
                free(p->i); free(p->j);
                st = cb_fail(CB_ERR_NOMEM, "dtw: out of memory");
            } else {
                size_t len = 0, i = n - 1, j = m - 1;
                for (;;) {
                    p->i[len] = i; p->j[len] = j; len++;
                    unsigned char how = from[CELL(i, j)];
                    if (how == 3) break;
                    if (how == 0) i--;
                    else if (how == 1) j--;
                    else { i--; j--; }
                }
                for (size_t s = 0; s < len / 2; s++) { /* reverse into start-to-end order */
                    size_t ti = p->i[s], tj = p->j[s];
                    p->i[s] = p->i[len - 1 - s]; p->j[s] = p->j[len - 1 - s];
                    p->i[len - 1 - s] = ti; p->j[len - 1 - s] = tj;
                }
                p->len = len;
            }
        }
    }
#undef CELL
    free(off); free(d); free(from);
    return st;
}

static cb_status full_window(size_t n, size_t m, window *w)
{
    w->lo = malloc(n * sizeof *w->lo);
    w->hi = malloc(n * sizeof *w->hi);
    if (!w->lo || !w->hi) return cb_fail(CB_ERR_NOMEM, "dtw: out of memory");
    for (size_t i = 0; i < n; i++) { w->lo[i] = 0; w->hi[i] = m - 1; }
    return CB_OK;
}

/* The coarse path widened by `radius` cells in both directions, projected
 * onto the finer grid (each coarse cell covers 2 x 2 fine cells), then read
 * row by row as the reference does: a row's run starts at or after the
 * previous row's first column and ends at its first gap. */
static cb_status expand_window(const path *cp, size_t n, size_t m, int radius, window *w)
{
    unsigned char *mark = calloc(n * m, 1);
    w->lo = malloc(n * sizeof *w->lo);
    w->hi = malloc(n * sizeof *w->hi);
    if (!mark || !w->lo || !w->hi) { free(mark); return cb_fail(CB_ERR_NOMEM, "dtw: out of memory"); }
    long r = radius;
    for (size_t s = 0; s < cp->len; s++)
        for (long di = -r; di <= r; di++)
            for (long dj = -r; dj <= r; dj++) {
                long ci = (long)cp->i[s] + di, cj = (long)cp->j[s] + dj;
                if (ci < 0 || cj < 0) continue;
                for (int q = 0; q < 4; q++) {
                    size_t fi = (size_t)(2 * ci + q / 2), fj = (size_t)(2 * cj + q % 2);
                    if (fi < n && fj < m) mark[fi * m + fj] = 1;
                }
            }
    size_t start = 0;
    int have_start = 1;
    for (size_t i = 0; i < n; i++) {
        w->lo[i] = 1; w->hi[i] = 0; /* empty */
        if (!have_start) continue; /* the reference stops filling after an empty row */
        int found = 0;
        for (size_t j = start; j < m; j++) {
            if (mark[i * m + j]) {
                if (!found) { w->lo[i] = j; found = 1; }
                w->hi[i] = j;
            } else if (found) break;
        }
        if (found) start = w->lo[i];
        else have_start = 0;
    }
    free(mark);
    return CB_OK;
}

static cb_status fastdtw(const double *a, size_t n, const double *b, size_t m, int radius, double *dist, path *p)
{
    size_t min_size = (size_t)radius + 2;
    window w = {0};
    cb_status st;
    if (n < min_size || m < min_size) {
        st = full_window(n, m, &w);
        if (st == CB_OK) st = dtw_window(a, n, b, m, &w, dist, p);
        free(w.lo); free(w.hi);
        return st;
    }
    size_t hn = n / 2, hm = m / 2;
    double *ha = malloc(hn * sizeof *ha), *hb = malloc(hm * sizeof *hb);
    if (!ha || !hb) { free(ha); free(hb); return cb_fail(CB_ERR_NOMEM, "dtw: out of memory"); }
    for (size_t i = 0; i < hn; i++) ha[i] = (a[2 * i] + a[2 * i + 1]) / 2;
    for (size_t j = 0; j < hm; j++) hb[j] = (b[2 * j] + b[2 * j + 1]) / 2;
    path coarse = {0};
    double coarse_dist;
    st = fastdtw(ha, hn, hb, hm, radius, &coarse_dist, &coarse);
    free(ha); free(hb);
    if (st != CB_OK) return st;
    st = expand_window(&coarse, n, m, radius, &w);
    free(coarse.i); free(coarse.j);
    if (st == CB_OK) st = dtw_window(a, n, b, m, &w, dist, p);
    free(w.lo); free(w.hi);
    return st;
}

cb_status cb_dtw(const double *a, size_t n, const double *b, size_t m, int radius, double *distance)
{
    cb_status st = check_curves(a, n, b, m);
    if (st != CB_OK) return st;
    if (!distance) return cb_fail(CB_ERR_INVALID_ARG, "dtw: no place for the result");
    if (radius == 0)
        /* At radius 0 the projected window misses the last row of an odd-length
         * curve (the reference package fails there too). */
        return cb_fail(CB_ERR_INVALID_ARG, "dtw: FastDTW needs a radius of at least 1");
    if (radius > 0) {
        if ((size_t)radius > n + m) radius = (int)(n + m); /* wider changes nothing */
        return fastdtw(a, n, b, m, radius, distance, NULL);
    }
    double *rows = malloc(2 * (m + 1) * sizeof *rows);
    if (!rows) return cb_fail(CB_ERR_NOMEM, "dtw: out of memory");
    *distance = dtw_exact(a, n, b, m, rows, rows + m + 1);
    free(rows);
    return CB_OK;
}
