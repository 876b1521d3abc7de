/* crossbind stats: the study's statistics on numbers from files or stdin.
 *
 *   crossbind stats dtw A B [--radius R] [--json]
 *   crossbind stats mwu A B [--json]
 *   crossbind stats cliff A B [--json]
 *   crossbind stats bonferroni [P ...] [--alpha A] [--json]
 *   crossbind stats metrics LABELS SCORES [--json]
 *   crossbind stats rbo|jaccard|kendall A B [--p P] [--k K] [--scores] [--json]
 *
 * A and B are files of whitespace-separated numbers; "-" reads standard
 * input. With neither given, standard input holds A on its first line and
 * B on its second. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "../core/json.h"

typedef struct { double *v; size_t n, cap; } numbers;

static int push(numbers *s, double x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        double *v = realloc(s->v, cap * sizeof *v);
        if (!v) return -1;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = x;
    return 0;
}

/* Parses the numbers of one text; `rows` (may be NULL) receives, per line
 * with numbers, how many it held. Returns 0 or prints an error. */
static int parse_numbers(const char *text, const char *what, numbers *out, numbers *rows)
{
    const char *p = text;
    size_t token = 0, in_row = 0;
    while (*p) {
        if (*p == '\n') {
            if (rows && in_row && push(rows, (double)in_row)) return cli_error("out of memory");
            in_row = 0;
            p++;
            continue;
        }
        if (*p == ' ' || *p == '\t' || *p == '\r' || *p == ',') { p++; continue; }
        char *end;
        errno = 0;
        double x = strtod(p, &end);
        token++;
        if (end == p || (*end && !strchr(" \t\r\n,", *end))) {
            int len = 0;
            while (p[len] && !strchr(" \t\r\n,", p[len]) && len < 20) len++;
            return cli_error("%s: value %zu ('%.*s') is not a number", what, token, len, p);
        }
        if (!isfinite(x)) return cli_error("%s: value %zu is not finite", what, token);
        if (push(out, x)) return cli_error("out of memory");
        in_row++;
        p = end;
    }
    if (rows && in_row && push(rows, (double)in_row)) return cli_error("out of memory");
    return 0;
}

static char *slurp(FILE *f)
{
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len < 2) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); return NULL; }
            buf = nb;
            cap *= 2;
        }
    }
    if (ferror(f)) { free(buf); return NULL; }
    buf[len] = 0;
    if (strlen(buf) != len) { free(buf); errno = EINVAL; return NULL; } /* a NUL byte: not text */
    return buf;
}

static char *read_text(const char *path)
{
    if (!strcmp(path, "-")) {
        char *t = slurp(stdin);
        if (!t) cli_error("standard input: cannot be read as text");
        return t;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_error("%s: %s", path, strerror(errno));
        return NULL;
    }
    char *t = slurp(f);
    fclose(f);
    if (!t) cli_error("%s: cannot be read as text", path);
    return t;
}

static int read_sample(const char *path, numbers *out)
{
    char *t = read_text(path);
    if (!t) return -1;
    int rc = parse_numbers(t, strcmp(path, "-") ? path : "standard input", out, NULL);
    free(t);
    if (rc == 0 && out->n == 0) return cli_error("%s: no numbers", strcmp(path, "-") ? path : "standard input");
    return rc ? -1 : 0;
}

/* Two samples: from two paths (one may be "-"), or from the first two
 * non-empty lines of standard input. */
static int read_two(const char *a, const char *b, numbers *x, numbers *y)
{
    if (a && b) {
        if (!strcmp(a, "-") && !strcmp(b, "-")) return cli_error("only one sample can come from standard input");
        return read_sample(a, x) || read_sample(b, y) ? -1 : 0;
    }
    if (a || b) return cli_error("give two samples (files, or '-' for standard input), or neither to read two lines");
    char *t = read_text("-");
    if (!t) return -1;
    numbers all = {0}, rows = {0};
    int rc = parse_numbers(t, "standard input", &all, &rows);
    free(t);
    if (rc == 0 && rows.n != 2)
        rc = cli_error("standard input: expected two lines of numbers (A, then B), found %zu", rows.n);
    if (rc == 0) {
        size_t na = (size_t)rows.v[0];
        for (size_t i = 0; i < all.n && rc == 0; i++) rc = push(i < na ? x : y, all.v[i]);
    }
    free(all.v);
    free(rows.v);
    return rc ? -1 : 0;
}

typedef struct { const char *a, *b; int json; long radius; double alpha; int npos; char **pos; } stats_args;

static int parse_args(int argc, char **argv, stats_args *s, int allow_radius, int allow_alpha)
{
    s->radius = -1;
    s->alpha = 0.05;
    s->pos = calloc((size_t)argc, sizeof *s->pos);
    if (!s->pos) return cli_error("out of memory");
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--json")) s->json = 1;
        else if (allow_radius && !strcmp(o, "--radius")) {
            const char *v = cli_value(argc, argv, &i);
            if (!v || cli_long("--radius", v, 1, 1000000, &s->radius)) return -1;
        } else if (allow_alpha && !strcmp(o, "--alpha")) {
            const char *v = cli_value(argc, argv, &i);
            float a;
            if (!v || cli_float("--alpha", v, 1e-12, 0.999999, &a)) return -1;
            s->alpha = strtod(v, NULL);
        } else if (o[0] == '-' && o[1] == '-') return cli_error("stats %s: unknown option '%s' (see crossbind stats --help)", argv[0], o);
        else s->pos[s->npos++] = argv[i];
    }
    return 0;
}

static void print_json_or(int json, cb_buf *b)
{
    if (!cb_buf_ok(b)) { cli_error("out of memory"); return; }
    if (json) printf("%s\n", b->data);
}

static int stats_two(int argc, char **argv, const char *which)
{
    stats_args s = {0};
    int is_dtw = !strcmp(which, "dtw");
    int rc = parse_args(argc, argv, &s, is_dtw, 0);
    numbers x = {0}, y = {0};
    if (rc == 0 && s.npos > 2) rc = cli_error("%s takes two samples, got %d arguments", which, s.npos);
    if (rc == 0) rc = read_two(s.npos > 0 ? s.pos[0] : NULL, s.npos > 1 ? s.pos[1] : NULL, &x, &y);
    cb_buf b = {0};
    if (rc == 0 && is_dtw) {
        double d;
        cb_status st = cb_dtw(x.v, x.n, y.v, y.n, (int)s.radius, &d);
        if (st != CB_OK) rc = cli_status(st);
        else if (s.json) {
            cb_buf_printf(&b, "{\"distance\": %.17g, \"normalized\": %.17g, \"n\": %zu, \"m\": %zu, \"method\": ",
                          d, d / (double)x.n, x.n, y.n);
            cb_buf_json_string(&b, s.radius < 0 ? "exact" : "fastdtw");
            if (s.radius >= 0) cb_buf_printf(&b, ", \"radius\": %ld", s.radius);
            cb_buf_printf(&b, "}");
        } else printf("distance %.17g\nnormalized %.17g\n", d, d / (double)x.n);
    } else if (rc == 0 && !strcmp(which, "mwu")) {
        double u, p;
        int exact;
        cb_status st = cb_mann_whitney_u(x.v, x.n, y.v, y.n, &u, &p, &exact);
        if (st != CB_OK) rc = cli_status(st);
        else if (s.json) {
            cb_buf_printf(&b, "{\"u\": %.17g, \"p\": %.17g, \"method\": ", u, p);
            cb_buf_json_string(&b, exact ? "exact" : "asymptotic");
            cb_buf_printf(&b, ", \"n\": %zu, \"m\": %zu}", x.n, y.n);
        } else printf("u %.17g\np %.17g\nmethod %s\n", u, p, exact ? "exact" : "asymptotic");
    } else if (rc == 0) {
        double d;
        cb_status st = cb_cliff_delta(x.v, x.n, y.v, y.n, &d);
        if (st != CB_OK) rc = cli_status(st);
        else if (s.json) {
            cb_buf_printf(&b, "{\"delta\": %.17g, \"magnitude\": ", d);
            cb_buf_json_string(&b, cb_cliff_magnitude(d));
            cb_buf_printf(&b, "}");
        } else printf("delta %.17g\nmagnitude %s\n", d, cb_cliff_magnitude(d));
    }
    if (rc == 0 && s.json) print_json_or(1, &b);
    cb_buf_free(&b);
    free(x.v); free(y.v); free(s.pos);
    return rc ? 1 : 0;
}

static int stats_bonferroni(int argc, char **argv)
{
    stats_args s = {0};
    int rc = parse_args(argc, argv, &s, 0, 1);
    numbers p = {0};
    for (int i = 0; rc == 0 && i < s.npos; i++) {
        char *end;
        double v = strtod(s.pos[i], &end);
        if (end == s.pos[i] || *end) rc = cli_error("bonferroni: '%s' is not a p-value", s.pos[i]);
        else if (push(&p, v)) rc = cli_error("out of memory");
    }
    if (rc == 0 && s.npos == 0) rc = read_sample("-", &p);
    double *adj = rc == 0 ? malloc(p.n * sizeof *adj) : NULL;
    int *sig = rc == 0 ? malloc(p.n * sizeof *sig) : NULL;
    if (rc == 0 && (!adj || !sig)) rc = cli_error("out of memory");
    if (rc == 0) {
        cb_status st = cb_bonferroni(p.v, p.n, s.alpha, adj, sig);
        if (st != CB_OK) rc = cli_status(st);
    }
    if (rc == 0) {
        cb_buf b = {0};
        if (s.json) {
            cb_buf_printf(&b, "{\"alpha\": %.17g, \"comparisons\": %zu, \"threshold\": %.17g, \"adjusted\": [", s.alpha,
                          p.n, s.alpha / (double)p.n);
            for (size_t i = 0; i < p.n; i++) cb_buf_printf(&b, "%s%.17g", i ? ", " : "", adj[i]);
            cb_buf_printf(&b, "], \"significant\": [");
            for (size_t i = 0; i < p.n; i++) cb_buf_printf(&b, "%s%s", i ? ", " : "", sig[i] ? "true" : "false");
            cb_buf_printf(&b, "]}");
            print_json_or(1, &b);
        } else {
            printf("# p adjusted significant (alpha %g over %zu comparisons)\n", s.alpha, p.n);
            for (size_t i = 0; i < p.n; i++) printf("%.17g %.17g %s\n", p.v[i], adj[i], sig[i] ? "yes" : "no");
        }
        cb_buf_free(&b);
    }
    free(adj); free(sig); free(p.v); free(s.pos);
    return rc ? 1 : 0;
}

/* LABELS: one class index per sample; SCORES: one line per sample with k
 * scores (k = 1: the positive-class probability of a binary model). */
static int stats_metrics(int argc, char **argv)
{
    stats_args s = {0};
    int rc = parse_args(argc, argv, &s, 0, 0);
    if (rc == 0 && s.npos != 2) rc = cli_error("metrics takes LABELS and SCORES files");
    numbers lab = {0}, sc = {0}, rows = {0};
    char *t = NULL;
    if (rc == 0) rc = read_sample(s.pos[0], &lab);
    if (rc == 0 && !(t = read_text(s.pos[1]))) rc = -1;
    if (rc == 0) rc = parse_numbers(t, s.pos[1], &sc, &rows);
    free(t);
    int k = 0;
    if (rc == 0) {
        if (rows.n != lab.n)
            rc = cli_error("%s has %zu rows of scores for %zu labels", s.pos[1], rows.n, lab.n);
        else {
            k = rows.n ? (int)rows.v[0] : 0;
            for (size_t i = 0; i < rows.n && rc == 0; i++)
                if ((int)rows.v[i] != k) rc = cli_error("%s: row %zu has %g scores, row 1 has %d", s.pos[1], i + 1, rows.v[i], k);
            for (size_t i = 0; i < lab.n && rc == 0; i++) {
                int c = (int)lab.v[i];
                if (c != lab.v[i] || c < 0 || c >= (k == 1 ? 2 : k))
                    rc = cli_error("%s: label %zu (%g) is not a class of %d", s.pos[0], i + 1, lab.v[i], k == 1 ? 2 : k);
            }
        }
    }
    if (rc == 0) {
        size_t n = lab.n;
        float *fl = malloc(n * sizeof *fl), *fs = malloc(n * (size_t)k * sizeof *fs);
        int *pred = malloc(n * sizeof *pred);
        double *work = malloc(2 * n * sizeof *work);
        if (!fl || !fs || !pred || !work) rc = cli_error("out of memory");
        else {
            for (size_t i = 0; i < n; i++) fl[i] = (float)lab.v[i];
            for (size_t i = 0; i < n * (size_t)k; i++) fs[i] = (float)sc.v[i];
            cb_predict_labels(fs, (int64_t)n, k, pred);
            double acc = cb_accuracy(pred, fl, (int64_t)n), f1 = cb_f1_macro(pred, fl, (int64_t)n, k);
            double auc = cb_auc_macro(fs, fl, (int64_t)n, k, work);
            if (s.json) {
                cb_buf b = {0};
                cb_buf_printf(&b, "{\"accuracy\": ");
                cb_buf_json_number(&b, acc);
                cb_buf_printf(&b, ", \"f1_macro\": ");
                cb_buf_json_number(&b, f1);
                cb_buf_printf(&b, ", \"auc_macro\": ");
                cb_buf_json_number(&b, auc);
                cb_buf_printf(&b, ", \"n\": %zu, \"classes\": %d}", n, k == 1 ? 2 : k);
                print_json_or(1, &b);
                cb_buf_free(&b);
            } else printf("accuracy %.17g\nf1_macro %.17g\nauc_macro %.17g\n", acc, f1, auc);
        }
        free(fl); free(fs); free(pred); free(work);
    }
    free(lab.v); free(sc.v); free(rows.v); free(s.pos);
    return rc ? 1 : 0;
}

/* rbo, jaccard, kendall: two rankings (or, with --scores, two score
 * vectors ranked by cb_rank_scores), cut to depth K. */
static int stats_rank(int argc, char **argv, const char *which)
{
    const char *pos[2] = {NULL, NULL};
    int npos = 0, json = 0, scores = 0, rc = 0;
    double p = 0.9;
    long k = 5;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--json")) json = 1;
        else if (!strcmp(o, "--scores")) scores = 1;
        else if (!strcmp(o, "--k")) {
            const char *v = cli_value(argc, argv, &i);
            rc = !v || cli_long("--k", v, 1, 100000000, &k) ? -1 : 0;
        } else if (!strcmp(o, "--p") && !strcmp(which, "rbo")) {
            const char *v = cli_value(argc, argv, &i);
            char *end = NULL;
            if (v) p = strtod(v, &end);
            if (!v) rc = -1;
            else if (end == v || *end || !(p > 0 && p < 1)) rc = cli_error("--p must be a number in (0, 1), not '%s'", v);
        } else if (o[0] == '-' && o[1] == '-')
            rc = cli_error("stats %s: unknown option '%s' (see crossbind stats --help)", which, o);
        else if (npos == 2) rc = cli_error("%s takes two rankings, got more arguments", which);
        else pos[npos++] = o;
    }
    numbers x = {0}, y = {0};
    if (rc == 0) rc = read_two(pos[0], pos[1], &x, &y);
    if (rc == 0 && scores) {
        if (x.n != y.n) rc = cli_error("--scores: the two score vectors have %zu and %zu values", x.n, y.n);
        double *rx = malloc(x.n * sizeof *rx), *ry = malloc(y.n * sizeof *ry);
        if (rc == 0 && (!rx || !ry)) rc = cli_error("out of memory");
        if (rc == 0) {
            cb_status st = cb_rank_scores(x.v, x.n, rx);
            if (st == CB_OK) st = cb_rank_scores(y.v, y.n, ry);
            if (st != CB_OK) rc = cli_status(st);
        }
        if (rc == 0) {
            memcpy(x.v, rx, x.n * sizeof *rx);
            memcpy(y.v, ry, y.n * sizeof *ry);
        }
        free(rx), free(ry);
    }
    cb_buf b = {0};
    if (rc == 0 && !strcmp(which, "rbo")) {
        cb_rbo_result r;
        cb_status st = cb_rbo(x.v, x.n, y.v, y.n, p, (size_t)k, &r);
        if (st != CB_OK) rc = cli_status(st);
        else if (json)
            cb_buf_printf(&b, "{\"rbo\": %.17g, \"min\": %.17g, \"max\": %.17g, \"residual\": %.17g, \"p\": %.17g, "
                              "\"k\": %ld, \"lengths\": [%zu, %zu], \"overlap\": %zu}",
                          r.ext, r.min, r.max, r.res, p, k, r.len_a, r.len_b, r.overlap);
        else
            printf("rbo %.17g\nmin %.17g\nmax %.17g\nresidual %.17g\np %g\nk %ld\n", r.ext, r.min, r.max, r.res, p, k);
    } else if (rc == 0 && !strcmp(which, "jaccard")) {
        double jac;
        size_t common;
        cb_status st = cb_topk_jaccard(x.v, x.n, y.v, y.n, (size_t)k, &jac, &common);
        if (st != CB_OK) rc = cli_status(st);
        else if (json) cb_buf_printf(&b, "{\"jaccard\": %.17g, \"k\": %ld, \"common\": %zu}", jac, k, common);
        else printf("jaccard %.17g\ncommon %zu\nk %ld\n", jac, common, k);
    } else if (rc == 0) {
        double tau;
        size_t items;
        cb_status st = cb_topk_kendall(x.v, x.n, y.v, y.n, (size_t)k, &tau, &items);
        if (st != CB_OK) rc = cli_status(st);
        else if (json)
            cb_buf_printf(&b, "{\"tau_b\": %.17g, \"k\": %ld, \"items\": %zu, \"missing_rank\": \"k+1, tied\"}", tau,
                          k, items);
        else printf("tau_b %.17g\nitems %zu\nk %ld\n", tau, items, k);
    }
    if (rc == 0 && json) print_json_or(1, &b);
    cb_buf_free(&b);
    free(x.v), free(y.v);
    return rc ? 1 : 0;
}

static const char stats_usage[] =
    "usage: crossbind stats dtw A B [--radius R] [--json]   DTW distance (exact; FastDTW with --radius)\n"
    "       crossbind stats mwu A B [--json]                two-sided Mann-Whitney U (SciPy's method='auto')\n"
    "       crossbind stats cliff A B [--json]              Cliff's delta of A against B and its magnitude\n"
    "       crossbind stats bonferroni [P ...] [--alpha A] [--json]\n"
    "       crossbind stats metrics LABELS SCORES [--json]  accuracy, macro F1, macro one-vs-rest AUC\n"
    "       crossbind stats rbo A B [--p P] [--k K] [--scores] [--json]\n"
    "                                    rank-biased overlap, extrapolated, with its min/max bounds\n"
    "                                    (Webber et al. 2010, eq. 32; default p 0.9, K 5)\n"
    "       crossbind stats jaccard A B [--k K] [--scores] [--json]   top-K Jaccard (default K 5)\n"
    "       crossbind stats kendall A B [--k K] [--scores] [--json]   Kendall's tau-b on the union of the\n"
    "                                    top-K lists, an item a list lacks ranked K+1 there, tied\n"
    "Rankings: distinct items (e.g. class ids), best first, cut to depth K, lengths may differ;\n"
    "--scores: A and B are score vectors of one length, ranked by descending score (ties: lower\n"
    "index first).\n"
    "A, B: files of whitespace-separated numbers, '-' for standard input; with neither,\n"
    "standard input holds A on its first line and B on its second. P values not given\n"
    "as arguments are read from standard input.\n";

int cmd_stats(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(stats_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *w = argv[1];
    if (!strcmp(w, "dtw") || !strcmp(w, "mwu") || !strcmp(w, "cliff")) return stats_two(argc - 1, argv + 1, w);
    if (!strcmp(w, "bonferroni")) return stats_bonferroni(argc - 1, argv + 1);
    if (!strcmp(w, "metrics")) return stats_metrics(argc - 1, argv + 1);
    if (!strcmp(w, "rbo") || !strcmp(w, "jaccard") || !strcmp(w, "kendall")) return stats_rank(argc - 1, argv + 1, w);
    return cli_error("stats: unknown statistic '%s' (dtw, mwu, cliff, bonferroni, metrics, rbo, jaccard, kendall; see "
                     "crossbind stats --help)",
                     w);
}
