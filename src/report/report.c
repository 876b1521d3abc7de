/* The study report (protocol section 5): figures and tables from the
 * results store. Everything shown is read back from the store, so a
 * report of a running study shows what has been measured so far. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <errno.h>
#include "crossbind/crossbind.h"
#include "crossbind/stats.h"
#include "../core/file.h"
#include "../core/json.h"
#include "out.h"
#include "report.h"
#include "svg.h"
#include "table.h"

#define MAXN 16

typedef struct {
    char binding[32], model[32], device[16], status[24];
    char *error; /* as the harness stored it, or NULL */
    int run, complete, nep;
    double train_time, acc, f1, auc, sub[3];
    double *epoch, *train_acc;
} trun;

typedef struct {
    char trainer[32], binding[32], model[32], device[16], format[16], mode[16], status[24]; /* "malformed output" is the longest */
    char *error;
    int run, stable;
    long correct, ref;
    double time, agree, diff;
} infer;

typedef struct {
    cb_store *store;
    int64_t id;
    char models[MAXN][32]; int nmodels;
    char bindings[MAXN][32]; int nbindings;
    char devices[4][16]; int ndevices;
    char reference[32];
    int runs[MAXN];
    trun *tr; int ntr;
    infer *in; int nin;
} rdata;

static const char *col_text(sqlite3_stmt *q, int i)
{
    const unsigned char *t = sqlite3_column_text(q, i);
    return t ? (const char *)t : "";
}

/* A manifest or configuration from the store may hold anything: "" for a non-string. */
static const char *json_str(const cb_json *v) { return v && v->type == CB_JSON_STR ? v->str : ""; }

static double col_num(sqlite3_stmt *q, int i)
{
    return sqlite3_column_type(q, i) == SQLITE_NULL ? NAN : sqlite3_column_double(q, i);
}

static cb_status db_error(rdata *d, const char *what)
{
    return cb_fail(CB_ERR_IO, "%s: reading the table %s: %s", cb_store_path(d->store), what,
                   sqlite3_errmsg(cb_store_db(d->store)));
}

/* Ends a query whose last step returned rc: anything but the end of its rows
 * is an error of the report, never a shorter table. */
static cb_status query_end(rdata *d, sqlite3_stmt *q, int rc, const char *table)
{
    cb_status st = rc == SQLITE_DONE ? CB_OK : db_error(d, table);
    sqlite3_finalize(q);
    return st;
}

/* The one row of a study; CB_ERR_NOT_FOUND when there is none. */
static cb_status study_row(rdata *d, sqlite3_stmt *q)
{
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) return CB_OK;
    cb_status st = rc == SQLITE_DONE ? cb_fail(CB_ERR_NOT_FOUND, "%s: the store has no study %lld",
                                               cb_store_path(d->store), (long long)d->id)
                                     : db_error(d, "study");
    sqlite3_finalize(q);
    return st;
}

static cb_status load(rdata *d)
{
    sqlite3 *db = cb_store_db(d->store);
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, "SELECT config FROM study WHERE id=?", -1, &q, NULL) != SQLITE_OK) return db_error(d, "study");
    sqlite3_bind_int64(q, 1, d->id);
    cb_status st = study_row(d, q);
    if (st != CB_OK) return st;
    const char *cfg = col_text(q, 0);
    cb_json c;
    st = cb_json_parse(cfg, strlen(cfg), "the study's configuration", &c);
    sqlite3_finalize(q);
    if (st != CB_OK) return st;
    const cb_json *models = cb_json_get(&c, "models"), *bindings = cb_json_get(&c, "bindings");
    const cb_json *devices = cb_json_get(&c, "devices"), *ref = cb_json_get(&c, "reference");
    for (int i = 0; models && i < models->count && i < MAXN; i++) {
        const cb_json *m = cb_json_get(&models->items[i], "model"), *r = cb_json_get(&models->items[i], "runs");
        if (m && m->type == CB_JSON_STR) snprintf(d->models[d->nmodels], 32, "%s", m->str);
        d->runs[d->nmodels++] = r ? (int)r->num : 0;
    }
    for (int i = 0; bindings && i < bindings->count && i < MAXN; i++)
        if (bindings->items[i].type == CB_JSON_STR) snprintf(d->bindings[d->nbindings++], 32, "%s", bindings->items[i].str);
    for (int i = 0; devices && i < devices->count && i < 4; i++)
        if (devices->items[i].type == CB_JSON_STR) snprintf(d->devices[d->ndevices++], 16, "%s", devices->items[i].str);
    snprintf(d->reference, sizeof d->reference, "%s", ref && ref->type == CB_JSON_STR ? ref->str : "");
    cb_json_free(&c);

    int rc;
    if (sqlite3_prepare_v2(db, "SELECT binding, model, device, run, status, training_time_s, test_accuracy, f1_macro,"
                           " auc_macro, load_s, forward_s, backward_s, error FROM train_run WHERE study_id=?"
                           " ORDER BY model, binding, device, run", -1, &q, NULL) != SQLITE_OK)
        return db_error(d, "train_run");
    sqlite3_bind_int64(q, 1, d->id);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        trun *g = realloc(d->tr, (size_t)(d->ntr + 1) * sizeof *g);
        if (!g) { sqlite3_finalize(q); return cb_fail(CB_ERR_NOMEM, "out of memory"); }
        d->tr = g;
        trun *t = &d->tr[d->ntr++];
        memset(t, 0, sizeof *t);
        snprintf(t->binding, 32, "%s", col_text(q, 0));
        snprintf(t->model, 32, "%s", col_text(q, 1));
        snprintf(t->device, 16, "%s", col_text(q, 2));
        t->run = sqlite3_column_int(q, 3);
        snprintf(t->status, 16, "%s", col_text(q, 4));
        t->complete = !strcmp(t->status, "complete");
        if (sqlite3_column_type(q, 12) != SQLITE_NULL && !(t->error = strdup(col_text(q, 12)))) {
            sqlite3_finalize(q);
            return cb_fail(CB_ERR_NOMEM, "out of memory");
        }
        t->train_time = col_num(q, 5);
        t->acc = col_num(q, 6);
        t->f1 = col_num(q, 7);
        t->auc = col_num(q, 8);
        for (int k = 0; k < 3; k++) t->sub[k] = col_num(q, 9 + k);
    }
    if ((st = query_end(d, q, rc, "train_run")) != CB_OK) return st;
    for (int i = 0; i < d->ntr; i++) {
        trun *t = &d->tr[i];
        if (sqlite3_prepare_v2(db, "SELECT epoch, train_acc FROM epoch WHERE study_id=? AND binding=? AND model=? AND"
                               " run=? AND device=? ORDER BY epoch", -1, &q, NULL) != SQLITE_OK)
            return db_error(d, "epoch");
        sqlite3_bind_int64(q, 1, d->id);
        sqlite3_bind_text(q, 2, t->binding, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 3, t->model, -1, SQLITE_STATIC);
        sqlite3_bind_int(q, 4, t->run);
        sqlite3_bind_text(q, 5, t->device, -1, SQLITE_STATIC);
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            double *e = realloc(t->epoch, (size_t)(t->nep + 1) * sizeof *e);
            double *a = e ? realloc(t->train_acc, (size_t)(t->nep + 1) * sizeof *a) : NULL;
            if (e) t->epoch = e;
            if (!e || !a) { sqlite3_finalize(q); return cb_fail(CB_ERR_NOMEM, "out of memory"); }
            t->train_acc = a;
            t->epoch[t->nep] = col_num(q, 0);
            t->train_acc[t->nep++] = col_num(q, 1);
        }
        if ((st = query_end(d, q, rc, "epoch")) != CB_OK) return st;
    }
    if (sqlite3_prepare_v2(db, "SELECT trainer, binding, model, device, format, load_mode, status, run, stable, correct,"
                           " reference_correct, mean_time_s, label_agreement, max_abs_logit_diff, error FROM inference"
                           " WHERE study_id=? ORDER BY model, binding, format, run", -1, &q, NULL) != SQLITE_OK)
        return db_error(d, "inference");
    sqlite3_bind_int64(q, 1, d->id);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        infer *g = realloc(d->in, (size_t)(d->nin + 1) * sizeof *g);
        if (!g) { sqlite3_finalize(q); return cb_fail(CB_ERR_NOMEM, "out of memory"); }
        d->in = g;
        infer *x = &d->in[d->nin++];
        memset(x, 0, sizeof *x);
        snprintf(x->trainer, 32, "%s", col_text(q, 0));
        snprintf(x->binding, 32, "%s", col_text(q, 1));
        snprintf(x->model, 32, "%s", col_text(q, 2));
        snprintf(x->device, 16, "%s", col_text(q, 3));
        snprintf(x->format, 16, "%s", col_text(q, 4));
        snprintf(x->mode, 16, "%s", col_text(q, 5));
        snprintf(x->status, sizeof x->status, "%s", col_text(q, 6));
        x->run = sqlite3_column_int(q, 7);
        x->stable = sqlite3_column_int(q, 8);
        x->correct = sqlite3_column_int64(q, 9);
        x->ref = sqlite3_column_int64(q, 10);
        x->time = col_num(q, 11);
        x->agree = col_num(q, 12);
        x->diff = col_num(q, 13);
        if (sqlite3_column_type(q, 14) != SQLITE_NULL && !(x->error = strdup(col_text(q, 14)))) {
            sqlite3_finalize(q);
            return cb_fail(CB_ERR_NOMEM, "out of memory");
        }
    }
    return query_end(d, q, rc, "inference");
}

static void rdata_free(rdata *d)
{
    for (int i = 0; i < d->ntr; i++) { free(d->tr[i].epoch); free(d->tr[i].train_acc); free(d->tr[i].error); }
    for (int i = 0; i < d->nin; i++) free(d->in[i].error);
    free(d->tr);
    free(d->in);
}

/* ---- small helpers ---- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    if (n == 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double mean(const double *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    return n ? s / n : NAN;
}

static const char *fmtd(char *buf, const char *fmt, double v)
{
    if (isnan(v)) return "–";
    snprintf(buf, 48, fmt, v);
    return buf;
}

/* Complete runs' value (0 time, 1 acc, 2 f1, 3 auc, 4.. subactivity) for one binding, model, device. */
static int train_values(const rdata *d, const char *binding, const char *model, const char *device, int what, double *out)
{
    int n = 0;
    for (int i = 0; i < d->ntr; i++) {
        const trun *t = &d->tr[i];
        if (!t->complete || strcmp(t->binding, binding) || strcmp(t->model, model) || strcmp(t->device, device)) continue;
        double v = what == 0 ? t->train_time : what == 1 ? t->acc : what == 2 ? t->f1 : what == 3 ? t->auc : t->sub[what - 4];
        if (!isnan(v)) out[n++] = v;
    }
    return n;
}

static int infer_times(const rdata *d, const char *binding, const char *model, const char *device, double *out, int cap)
{
    int n = 0;
    for (int i = 0; i < d->nin && n < cap; i++) {
        const infer *x = &d->in[i];
        if (strcmp(x->status, "ok") || strcmp(x->binding, binding) || strcmp(x->model, model) ||
            strcmp(x->device, device) || isnan(x->time))
            continue;
        out[n++] = x->time;
    }
    return n;
}

/* MWU p and Cliff's delta of a against b ("–" when either is empty). */
static void compare(const double *a, int na, const double *b, int nb, double *p, double *delta)
{
    double u;
    *p = NAN;
    *delta = NAN;
    if (na == 0 || nb == 0) return;
    if (cb_mann_whitney_u(a, (size_t)na, b, (size_t)nb, &u, p, NULL) != CB_OK) *p = NAN;
    if (cb_cliff_delta(a, (size_t)na, b, (size_t)nb, delta) != CB_OK) *delta = NAN;
}

/* ---- sections ---- */

static void section(cb_out *html, cb_out *md, const char *id, const char *title, const char *text)
{
    cb_out_lit(html, "<h2 id=\"");
    cb_out_text(html, id);
    cb_out_lit(html, "\">");
    cb_out_text(html, title);
    cb_out_lit(html, "</h2>\n");
    cb_out_lit(md, "## ");
    cb_out_text(md, title);
    cb_out_lit(md, "\n\n");
    if (text) {
        cb_out_lit(html, "<p>");
        cb_out_text(html, text);
        cb_out_lit(html, "</p>\n");
        cb_out_text(md, text);
        cb_out_lit(md, "\n\n");
    }
}

static void curves(rdata *d, cb_out *html)
{
    for (int m = 0; m < d->nmodels; m++)
        for (int dv = 0; dv < d->ndevices; dv++) {
            svg_line lines[MAXN];
            char names[MAXN][64];
            int n = 0;
            for (int b = 0; b < d->nbindings; b++) {
                const trun *best = NULL;
                for (int i = 0; i < d->ntr; i++) {
                    const trun *t = &d->tr[i];
                    if (!t->complete || t->nep == 0 || strcmp(t->binding, d->bindings[b]) ||
                        strcmp(t->model, d->models[m]) || strcmp(t->device, d->devices[dv]))
                        continue;
                    if (!best || t->acc > best->acc) best = t;
                }
                if (!best) continue;
                snprintf(names[n], sizeof names[n], "%s (run %d)", d->bindings[b], best->run);
                lines[n] = (svg_line){names[n], best->epoch, best->train_acc, best->nep};
                n++;
            }
            if (!n) continue;
            char id[96], title[160];
            snprintf(id, sizeof id, "curves-%s-%s", d->models[m], d->devices[dv]);
            snprintf(title, sizeof title, "%s (%s): training accuracy per epoch, best run of each binding",
                     d->models[m], d->devices[dv]);
            svg_line_chart(html, id, title, "epoch", "training accuracy", lines, n, 0, 1);
        }
}

/* RQ2: a binding x load mode x device cell of one model is reproduced when
 * every run's model gives the reference's count in every timed pass. */
static const char *cell_status(const rdata *d, const char *binding, const char *mode, const char *device,
                               const char *model, int runs, char *why, size_t cap)
{
    int ok = 0, bad = 0, unsup = 0, any = 0;
    char first[100] = "";
    for (int i = 0; i < d->nin; i++) {
        const infer *x = &d->in[i];
        if (strcmp(x->binding, binding) || strcmp(x->mode, mode) || strcmp(x->device, device) || strcmp(x->model, model))
            continue;
        any++;
        if (!strcmp(x->status, "unsupported")) unsup++;
        else if (!strcmp(x->status, "ok") && x->stable == 1 && x->correct == x->ref) ok++;
        else {
            bad++;
            if (!first[0]) snprintf(first, sizeof first, "run %d %s: %s", x->run, x->format,
                                    !strcmp(x->status, "ok") ? (x->stable != 1 ? "unstable count" : "count differs") : "error");
        }
    }
    if (!any) return NULL;
    if (unsup == any) { snprintf(why, cap, "unsupported: the binding cannot load this mode"); return "unsupported"; }
    if (bad) { snprintf(why, cap, "%d of %d evaluations differ (%s)", bad, ok + bad, first); return "failed"; }
    if (ok < runs) { snprintf(why, cap, "%d of %d runs measured so far", ok, runs); return NULL; }
    snprintf(why, cap, "%d evaluations, every count equal to the reference's", ok);
    return "reproduced";
}

static cb_status reproduction(rdata *d, cb_out *html, cb_out *md, const char *dir)
{
    const char *modes[2] = {"parameters", "serialization"};
    int nrows = d->nbindings * 2 * d->ndevices;
    char (*rows)[96] = calloc((size_t)nrows + 1, sizeof *rows);
    const char **rowp = calloc((size_t)nrows + 1, sizeof *rowp), **status = calloc((size_t)nrows * d->nmodels + 1, sizeof *status);
    char (*why)[200] = calloc((size_t)nrows * d->nmodels + 1, sizeof *why);
    const char **whyp = calloc((size_t)nrows * d->nmodels + 1, sizeof *whyp);
    const char *cols[MAXN];
    if (!rows || !rowp || !status || !why || !whyp) {
        free(rows); free(rowp); free(status); free(why); free(whyp);
        return cb_fail(CB_ERR_NOMEM, "out of memory");
    }
    for (int m = 0; m < d->nmodels; m++) cols[m] = d->models[m];
    rtable t;
    const char *hdr[MAXN + 3] = {"binding", "load mode", "device"};
    for (int m = 0; m < d->nmodels; m++) hdr[3 + m] = d->models[m];
    rtable_init(&t, "reproduction", 3 + d->nmodels, hdr);
    int r = 0;
    for (int b = 0; b < d->nbindings; b++)
        for (int k = 0; k < 2; k++)
            for (int dv = 0; dv < d->ndevices; dv++, r++) {
                snprintf(rows[r], sizeof rows[r], "%s / %s / %s", d->bindings[b], modes[k], d->devices[dv]);
                rowp[r] = rows[r];
                rtable_cell(&t, "%s", d->bindings[b]);
                rtable_cell(&t, "%s", modes[k]);
                rtable_cell(&t, "%s", d->devices[dv]);
                for (int m = 0; m < d->nmodels; m++) {
                    int c = r * d->nmodels + m;
                    status[c] = cell_status(d, d->bindings[b], modes[k], d->devices[dv], d->models[m], d->runs[m],
                                            why[c], sizeof why[c]);
                    whyp[c] = why[c][0] ? why[c] : NULL;
                    rtable_cell(&t, "%s", status[c] ? status[c] : why[c][0] ? why[c] : "not measured");
                }
            }
    svg_heat_map(html, "reproduction", "Reproduction of the reference models' accuracy (RQ2): binding x load mode x "
                 "device against model", rowp, nrows, cols, d->nmodels, status, whyp);
    cb_status st = rtable_emit(&t, html, md, dir);
    rtable_free(&t);
    /* Per evaluation: counts, label agreement and logit differences. */
    const char *h2[] = {"model", "binding", "format", "load mode", "device", "run", "status", "correct", "reference",
                        "stable", "label agreement", "max |logit diff|", "mean time (s)"};
    rtable_init(&t, "inference", 13, h2);
    for (int i = 0; i < d->nin; i++) {
        const infer *x = &d->in[i];
        char b1[48], b2[48], b3[48];
        rtable_cell(&t, "%s", x->model); rtable_cell(&t, "%s", x->binding); rtable_cell(&t, "%s", x->format);
        rtable_cell(&t, "%s", x->mode); rtable_cell(&t, "%s", x->device); rtable_cell(&t, "%d", x->run);
        rtable_cell(&t, "%s", x->status);
        if (strcmp(x->status, "ok")) { for (int k = 0; k < 6; k++) rtable_cell(&t, "–"); continue; }
        rtable_cell(&t, "%ld", x->correct); rtable_cell(&t, "%ld", x->ref); rtable_cell(&t, "%s", x->stable == 1 ? "yes" : "no");
        rtable_cell(&t, "%s", fmtd(b1, "%.4f", x->agree)); rtable_cell(&t, "%s", fmtd(b2, "%.3g", x->diff));
        rtable_cell(&t, "%s", fmtd(b3, "%.4f", x->time));
    }
    if (st == CB_OK) {
        cb_out_lit(html, "<details><summary>Every evaluation</summary>\n");
        st = rtable_emit(&t, html, md, dir);
        cb_out_lit(html, "</details>\n");
    }
    rtable_free(&t);
    free(rows); free(rowp); free(status); free(why); free(whyp);
    return st;
}

static cb_status dtw_table(rdata *d, cb_out *html, cb_out *md, const char *dir)
{
    const char *h[] = {"model", "device", "binding A", "binding B", "run pairs", "DTW mean", "DTW max"};
    rtable t;
    rtable_init(&t, "dtw", 7, h);
    for (int m = 0; m < d->nmodels; m++)
        for (int dv = 0; dv < d->ndevices; dv++)
            for (int a = 0; a < d->nbindings; a++)
                for (int b = a + 1; b < d->nbindings; b++) {
                    double vals[8];
                    int n = 0;
                    for (int i = 0; i < d->ntr; i++) {
                        const trun *x = &d->tr[i];
                        if (!x->complete || x->nep == 0 || strcmp(x->binding, d->bindings[a]) ||
                            strcmp(x->model, d->models[m]) || strcmp(x->device, d->devices[dv]))
                            continue;
                        for (int j = 0; j < d->ntr && n < 8; j++) {
                            const trun *y = &d->tr[j];
                            if (!y->complete || y->nep == 0 || strcmp(y->binding, d->bindings[b]) ||
                                strcmp(y->model, x->model) || strcmp(y->device, x->device) || y->run != x->run)
                                continue;
                            double dist;
                            if (cb_dtw(x->train_acc, (size_t)x->nep, y->train_acc, (size_t)y->nep, -1, &dist) == CB_OK)
                                vals[n++] = dist / x->nep;
                        }
                    }
                    if (!n) continue;
                    double mx = 0;
                    for (int k = 0; k < n; k++) if (vals[k] > mx) mx = vals[k];
                    rtable_cell(&t, "%s", d->models[m]); rtable_cell(&t, "%s", d->devices[dv]);
                    rtable_cell(&t, "%s", d->bindings[a]); rtable_cell(&t, "%s", d->bindings[b]);
                    rtable_cell(&t, "%d", n); rtable_cell(&t, "%.3f", mean(vals, n)); rtable_cell(&t, "%.3f", mx);
                }
    cb_status st = rtable_emit(&t, html, md, dir);
    rtable_free(&t);
    return st;
}

static cb_status final_table(rdata *d, cb_out *html, cb_out *md, const char *dir)
{
    const char *h[] = {"model", "device", "binding", "runs", "test accuracy", "macro F1", "AUC",
                       "largest accuracy difference", "p (MWU vs reference)", "Cliff's delta vs reference"};
    rtable t;
    rtable_init(&t, "final_models", 10, h);
    for (int m = 0; m < d->nmodels; m++)
        for (int dv = 0; dv < d->ndevices; dv++) {
            double ref[8];
            int nref = train_values(d, d->reference, d->models[m], d->devices[dv], 1, ref);
            double lo = INFINITY, hi = -INFINITY;
            for (int b = 0; b < d->nbindings; b++) {
                double v[8];
                int n = train_values(d, d->bindings[b], d->models[m], d->devices[dv], 1, v);
                if (n) { double mu = mean(v, n); if (mu < lo) lo = mu; if (mu > hi) hi = mu; }
            }
            for (int b = 0; b < d->nbindings; b++) {
                double acc[8], f1[8], auc[8];
                int n = train_values(d, d->bindings[b], d->models[m], d->devices[dv], 1, acc);
                if (!n) continue;
                int nf = train_values(d, d->bindings[b], d->models[m], d->devices[dv], 2, f1);
                int na = train_values(d, d->bindings[b], d->models[m], d->devices[dv], 3, auc);
                double p = NAN, delta = NAN;
                if (strcmp(d->bindings[b], d->reference)) compare(ref, nref, acc, n, &p, &delta);
                char b1[48], b2[48];
                rtable_cell(&t, "%s", d->models[m]); rtable_cell(&t, "%s", d->devices[dv]);
                rtable_cell(&t, "%s%s", d->bindings[b], strcmp(d->bindings[b], d->reference) ? "" : " (reference)");
                rtable_cell(&t, "%d", n); rtable_cell(&t, "%.4f", mean(acc, n));
                rtable_cell(&t, "%s", fmtd(b1, "%.4f", mean(f1, nf))); rtable_cell(&t, "%s", fmtd(b2, "%.4f", mean(auc, na)));
                rtable_cell(&t, "%.4f", hi - lo);
                rtable_cell(&t, "%s", fmtd(b1, "%.4g", p));
                if (isnan(delta)) rtable_cell(&t, "–");
                else rtable_cell(&t, "%.3f (%s)", delta, cb_cliff_magnitude(delta));
            }
        }
    cb_status st = rtable_emit(&t, html, md, dir);
    rtable_free(&t);
    return st;
}

/* RQ3/RQ4: the reference binding against each other binding, Bonferroni
 * within each model x device group. kind 0: training time, 1: inference. */
static cb_status time_table(rdata *d, int kind, cb_out *html, cb_out *md, const char *dir)
{
    const char *h[] = {"model", "device", "binding", "n", "median (s)", "ratio to reference", "p (MWU)",
                       "p (Bonferroni)", "significant (alpha 0.05)", "Cliff's delta (reference vs binding)"};
    rtable t;
    rtable_init(&t, kind ? "inference_time" : "training_time", 10, h);
    enum { CAP = 4096 };
    double *ref = malloc(CAP * sizeof *ref), *v = malloc(CAP * sizeof *v), *tmp = malloc(CAP * sizeof *tmp);
    if (!ref || !v || !tmp) { free(ref); free(v); free(tmp); rtable_free(&t); return cb_fail(CB_ERR_NOMEM, "out of memory"); }
    for (int m = 0; m < d->nmodels; m++)
        for (int dv = 0; dv < d->ndevices; dv++) {
            const char *model = d->models[m], *dev = d->devices[dv];
            int nref = kind ? infer_times(d, d->reference, model, dev, ref, CAP) : train_values(d, d->reference, model, dev, 0, ref);
            double p[MAXN], adj[MAXN], deltas[MAXN];
            int sig[MAXN], idx[MAXN], k = 0;
            for (int b = 0; b < d->nbindings; b++) {
                if (!strcmp(d->bindings[b], d->reference)) continue;
                int n = kind ? infer_times(d, d->bindings[b], model, dev, v, CAP) : train_values(d, d->bindings[b], model, dev, 0, v);
                if (!n || !nref) continue;
                compare(ref, nref, v, n, &p[k], &deltas[k]);
                idx[k++] = b;
            }
            if (k && cb_bonferroni(p, (size_t)k, 0.05, adj, sig) != CB_OK) for (int i = 0; i < k; i++) { adj[i] = NAN; sig[i] = 0; }
            memcpy(tmp, ref, (size_t)nref * sizeof *tmp);
            double ref_med = median(tmp, nref);
            for (int b = 0; b < d->nbindings; b++) {
                int n = kind ? infer_times(d, d->bindings[b], model, dev, v, CAP) : train_values(d, d->bindings[b], model, dev, 0, v);
                if (!n) continue;
                int is_ref = !strcmp(d->bindings[b], d->reference);
                int slot = -1;
                for (int i = 0; i < k; i++) if (idx[i] == b) slot = i;
                double delta = slot >= 0 ? deltas[slot] : NAN, pv = slot >= 0 ? p[slot] : NAN;
                memcpy(tmp, v, (size_t)n * sizeof *tmp);
                double med = median(tmp, n);
                char b1[48], b2[48], b3[48];
                rtable_cell(&t, "%s", model); rtable_cell(&t, "%s", dev);
                rtable_cell(&t, "%s%s", d->bindings[b], is_ref ? " (reference)" : "");
                rtable_cell(&t, "%d", n); rtable_cell(&t, "%.4f", med);
                rtable_cell(&t, "%s", fmtd(b1, "%.3fx", med / ref_med));
                rtable_cell(&t, "%s", fmtd(b2, "%.4g", pv));
                rtable_cell(&t, "%s", fmtd(b3, "%.4g", slot >= 0 ? adj[slot] : NAN));
                rtable_cell(&t, "%s", slot >= 0 ? (sig[slot] ? "yes" : "no") : "–");
                if (isnan(delta)) rtable_cell(&t, "–");
                else rtable_cell(&t, "%.3f (%s)", delta, cb_cliff_magnitude(delta));
            }
        }
    free(ref); free(v); free(tmp);
    cb_status st = rtable_emit(&t, html, md, dir);
    rtable_free(&t);
    return st;
}

static void time_boxes(rdata *d, int kind, cb_out *html)
{
    enum { CAP = 4096 };
    for (int m = 0; m < d->nmodels; m++)
        for (int dv = 0; dv < d->ndevices; dv++) {
            svg_box boxes[MAXN];
            double *vals[MAXN];
            int n = 0;
            for (int b = 0; b < d->nbindings; b++) {
                double *v = malloc(CAP * sizeof *v);
                if (!v) break;
                int k = kind ? infer_times(d, d->bindings[b], d->models[m], d->devices[dv], v, CAP)
                             : train_values(d, d->bindings[b], d->models[m], d->devices[dv], 0, v);
                if (!k) { free(v); continue; }
                vals[n] = v;
                boxes[n] = (svg_box){d->bindings[b], v, k};
                n++;
            }
            if (n) {
                char id[96], title[200];
                snprintf(id, sizeof id, "%s-%s-%s", kind ? "inference-time" : "training-time", d->models[m], d->devices[dv]);
                snprintf(title, sizeof title, kind ? "%s (%s): inference time over the test set per binding, pooled over "
                         "load modes (RQ4)" : "%s (%s): training time per run and binding (RQ3)", d->models[m], d->devices[dv]);
                svg_box_plot(html, id, title, kind ? "seconds per pass" : "training time (s)",
                             boxes, n);
            }
            for (int i = 0; i < n; i++) free(vals[i]);
        }
}

static cb_status subactivity_table(rdata *d, cb_out *html, cb_out *md, const char *dir)
{
    const char *h[] = {"model", "device", "binding", "runs", "batch loading (s)", "forward incl. loss (s)",
                       "backward incl. step (s)"};
    rtable t;
    rtable_init(&t, "subactivities", 7, h);
    for (int m = 0; m < d->nmodels; m++)
        for (int dv = 0; dv < d->ndevices; dv++)
            for (int b = 0; b < d->nbindings; b++) {
                double v[3][8];
                int n[3];
                for (int k = 0; k < 3; k++) n[k] = train_values(d, d->bindings[b], d->models[m], d->devices[dv], 4 + k, v[k]);
                if (!n[0] && !n[1] && !n[2]) continue;
                char b1[48];
                rtable_cell(&t, "%s", d->models[m]); rtable_cell(&t, "%s", d->devices[dv]);
                rtable_cell(&t, "%s", d->bindings[b]); rtable_cell(&t, "%d", n[1]);
                for (int k = 0; k < 3; k++) rtable_cell(&t, "%s", fmtd(b1, "%.4f", median(v[k], n[k])));
            }
    cb_status st = rtable_emit(&t, html, md, dir);
    rtable_free(&t);
    return st;
}

/* Table 3: what each manifest declares, and what the runs of this study did. */
static cb_status features_table(rdata *d, cb_out *html, cb_out *md, const char *dir)
{
    const char *h[] = {"binding", "framework", "language", "version", "declares training of", "declares load modes",
                       "devices", "observed training", "observed load modes", "check"};
    rtable t;
    rtable_init(&t, "supported_features", 10, h);
    sqlite3_stmt *q;
    int rc;
    if (sqlite3_prepare_v2(cb_store_db(d->store), "SELECT name, framework, language, version, manifest FROM binding"
                           " WHERE study_id=? ORDER BY name", -1, &q, NULL) != SQLITE_OK) {
        rtable_free(&t);
        return db_error(d, "binding");
    }
    sqlite3_bind_int64(q, 1, d->id);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *name = col_text(q, 0), *man = col_text(q, 4);
        cb_json mj;
        cb_buf trains = {0}, modes = {0}, devices = {0}, otrain = {0}, omodes = {0}, check = {0};
        int declared_param = 0, declared_ser = 0, ntrain = 0;
        if (cb_json_parse(man, strlen(man), "manifest", &mj) == CB_OK) {
            const cb_json *tr = cb_json_get(&mj, "train"), *lo = cb_json_get(&mj, "loads"), *dvs = cb_json_get(&mj, "devices");
            for (int i = 0; tr && i < tr->count; i++) cb_buf_printf(&trains, "%s%s", i ? ", " : "", json_str(&tr->items[i]));
            for (int i = 0; lo && i < lo->count; i++) {
                const char *f = json_str(&lo->items[i]);
                if (!strcmp(f, "pt") || !strcmp(f, "safetensors")) declared_param = 1; else declared_ser = 1;
            }
            for (int i = 0; dvs && i < dvs->count; i++) cb_buf_printf(&devices, "%s%s", i ? ", " : "", json_str(&dvs->items[i]));
            ntrain = tr ? tr->count : 0;
            cb_json_free(&mj);
        }
        cb_buf_printf(&modes, "%s%s%s", declared_param ? "parameters" : "", declared_param && declared_ser ? ", " : "",
                      declared_ser ? "serialization" : "");
        int ok_runs = 0, bad_runs = 0, ok_param = 0, ok_ser = 0;
        for (int i = 0; i < d->ntr; i++) if (!strcmp(d->tr[i].binding, name)) { if (d->tr[i].complete) ok_runs++; else bad_runs++; }
        for (int i = 0; i < d->nin; i++)
            if (!strcmp(d->in[i].binding, name) && !strcmp(d->in[i].status, "ok")) {
                if (!strcmp(d->in[i].mode, "parameters")) ok_param = 1; else ok_ser = 1;
            }
        if (ok_runs || bad_runs) cb_buf_printf(&otrain, "%d runs complete, %d failed", ok_runs, bad_runs);
        else cb_buf_printf(&otrain, "none");
        cb_buf_printf(&omodes, "%s%s%s", ok_param ? "parameters" : "", ok_param && ok_ser ? ", " : "", ok_ser ? "serialization" : "");
        if (!ok_param && !ok_ser) cb_buf_printf(&omodes, "none");
        if (ntrain && !ok_runs) cb_buf_printf(&check, "declares training, no run completed; ");
        if (declared_param && !ok_param) cb_buf_printf(&check, "declares parameters, no evaluation succeeded; ");
        if (declared_ser && !ok_ser) cb_buf_printf(&check, "declares serialization, no evaluation succeeded; ");
        if ((ok_param && !declared_param) || (ok_ser && !declared_ser)) cb_buf_printf(&check, "did more than it declares; ");
        rtable_cell(&t, "%s", name); rtable_cell(&t, "%s", col_text(q, 1)); rtable_cell(&t, "%s", col_text(q, 2));
        rtable_cell(&t, "%s", col_text(q, 3));
        rtable_cell(&t, "%s", trains.data ? trains.data : "none"); rtable_cell(&t, "%s", modes.data ? modes.data : "");
        rtable_cell(&t, "%s", devices.data ? devices.data : ""); rtable_cell(&t, "%s", otrain.data);
        rtable_cell(&t, "%s", omodes.data); rtable_cell(&t, "%s", check.data ? check.data : "consistent");
        cb_buf_free(&trains); cb_buf_free(&modes); cb_buf_free(&devices); cb_buf_free(&otrain); cb_buf_free(&omodes);
        cb_buf_free(&check);
    }
    cb_status st = query_end(d, q, rc, "binding");
    if (st != CB_OK) { rtable_free(&t); return st; }
    st = rtable_emit(&t, html, md, dir);
    rtable_free(&t);
    return st;
}

/* Why a binding could not take part in an evaluation, from its stored manifest. */
static void unsupported_reason(rdata *d, const infer *x, char *why, size_t cap)
{
    snprintf(why, cap, "unsupported (no reason recorded)");
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(cb_store_db(d->store), "SELECT manifest FROM binding WHERE study_id=? AND name=?", -1, &q,
                           NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(q, 1, d->id);
    sqlite3_bind_text(q, 2, x->binding, -1, SQLITE_STATIC);
    cb_json m;
    if (sqlite3_step(q) == SQLITE_ROW && cb_json_parse(col_text(q, 0), strlen(col_text(q, 0)), "manifest", &m) == CB_OK) {
        const char *keys[3] = {"loads", "infer", "devices"}, *want[3] = {x->format, x->model, x->device};
        const char *what[3] = {"the formats it loads", "the models it evaluates", "its devices"};
        for (int k = 0; k < 3; k++) {
            const cb_json *l = cb_json_get(&m, keys[k]);
            int found = 0;
            for (int i = 0; l && l->type == CB_JSON_ARR && i < l->count; i++) found |= !strcmp(json_str(&l->items[i]), want[k]);
            if (!found) { snprintf(why, cap, "its manifest does not list %s among %s", want[k], what[k]); break; }
        }
        cb_json_free(&m);
    }
    sqlite3_finalize(q);
}

/* Every measurement that gave no result, with the reason the harness stored. */
static cb_status failures_table(rdata *d, cb_out *html, cb_out *md, const char *dir)
{
    const char *h[] = {"measurement", "binding", "model", "device", "run", "trained by", "format", "status", "reason"};
    rtable t;
    rtable_init(&t, "failures", 9, h);
    for (int i = 0; i < d->ntr; i++) {
        const trun *x = &d->tr[i];
        if (x->complete) continue;
        rtable_cell(&t, "training"); rtable_cell(&t, "%s", x->binding); rtable_cell(&t, "%s", x->model);
        rtable_cell(&t, "%s", x->device); rtable_cell(&t, "%d", x->run); rtable_cell(&t, "–"); rtable_cell(&t, "–");
        rtable_cell(&t, "%s", x->status); rtable_cell(&t, "%s", x->error ? x->error : "no reason recorded");
    }
    for (int i = 0; i < d->nin; i++) {
        const infer *x = &d->in[i];
        if (!strcmp(x->status, "ok")) continue;
        char why[200];
        if (!x->error && !strcmp(x->status, "unsupported")) unsupported_reason(d, x, why, sizeof why);
        rtable_cell(&t, "evaluation"); rtable_cell(&t, "%s", x->binding); rtable_cell(&t, "%s", x->model);
        rtable_cell(&t, "%s", x->device); rtable_cell(&t, "%d", x->run); rtable_cell(&t, "%s", x->trainer);
        rtable_cell(&t, "%s", x->format); rtable_cell(&t, "%s", x->status);
        rtable_cell(&t, "%s", x->error ? x->error : !strcmp(x->status, "unsupported") ? why : "no reason recorded");
    }
    cb_status st = rtable_emit(&t, html, md, dir);
    rtable_free(&t);
    return st;
}

/* The first screen: which data, which machine, which threads and versions. */
/* One "name (framework, language): version" item of the tool versions, as an
 * HTML list item or a Markdown one: the same fields, other delimiters. */
static void binding_item(cb_out *o, int html, sqlite3_stmt *q)
{
    if (html) cb_out_lit(o, "<li><b>");
    else cb_out_lit(o, "- ");
    cb_out_text(o, col_text(q, 0));
    if (html) cb_out_lit(o, "</b> (");
    else cb_out_lit(o, " (");
    cb_out_text(o, col_text(q, 1));
    cb_out_lit(o, ", ");
    cb_out_text(o, col_text(q, 2));
    cb_out_lit(o, "): ");
    cb_out_text(o, col_text(q, 3));
    if (html) cb_out_lit(o, "</li>\n");
    else cb_out_lit(o, "\n");
}

static cb_status header(rdata *d, cb_out *html, cb_out *md)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(cb_store_db(d->store), "SELECT profile, created, machine, status, finished, data, wall_s,"
                           " config FROM study WHERE id=?", -1, &q, NULL) != SQLITE_OK)
        return db_error(d, "study");
    sqlite3_bind_int64(q, 1, d->id);
    cb_status st = study_row(d, q);
    if (st != CB_OK) return st;
    const char *data = col_text(q, 5), *cfg = col_text(q, 7);
    char status[400]; /* a study stored as running whose process is gone shows as interrupted */
    cb_store_study_status(d->store, d->id, col_text(q, 3), status, sizeof status);
    cb_json dj = {0}, cj = {0};
    int have_data = cb_json_parse(data, strlen(data), "data", &dj) == CB_OK && dj.type == CB_JSON_ARR;
    int have_cfg = cb_json_parse(cfg, strlen(cfg), "config", &cj) == CB_OK;
    const cb_json *threads = have_cfg ? cb_json_get(&cj, "threads") : NULL;
    const int nthreads = threads && threads->type == CB_JSON_NUM ? (int)threads->num : 0;
    cb_out_markf(html, "<section id=\"summary\"><h1>crossbind study report</h1>\n<p class=\"status\">Study %lld, profile "
                 "<b>", (long long)d->id);
    cb_out_text(html, col_text(q, 0));
    cb_out_lit(html, "</b>, status <b>");
    cb_out_text(html, status);
    cb_out_lit(html, "</b>; started ");
    cb_out_text(html, col_text(q, 1));
    if (sqlite3_column_type(q, 4) != SQLITE_NULL) { cb_out_lit(html, ", finished "); cb_out_text(html, col_text(q, 4)); }
    if (!isnan(col_num(q, 6))) cb_out_markf(html, "; study time %.1f min", col_num(q, 6) / 60);
    cb_out_lit(html, ".</p>\n<h3>Data sets</h3><ul id=\"datasets\">\n");
    cb_out_markf(md, "# crossbind study report\n\nStudy %lld, profile ", (long long)d->id);
    cb_out_text(md, col_text(q, 0));
    cb_out_lit(md, ", status ");
    cb_out_text(md, status);
    cb_out_lit(md, ", started ");
    cb_out_text(md, col_text(q, 1));
    cb_out_lit(md, ".\n\n## Data sets\n\n");
    for (int i = 0; have_data && i < dj.count; i++) {
        const cb_json *e = &dj.items[i], *si = cb_json_get(e, "stand_in");
        const char *nm = json_str(cb_json_get(e, "name")), *p = json_str(cb_json_get(e, "path"));
        const char *f = cb_json_get(e, "format") ? json_str(cb_json_get(e, "format")) : "?";
        int stand_in = si && (si->type == CB_JSON_NUM || si->type == CB_JSON_BOOL) && si->num != 0;
        cb_out_lit(html, "<li>");
        cb_out_text(html, f);
        cb_out_lit(html, " format: ");
        if (stand_in) cb_out_lit(html, "<b class=\"stand-in\">STAND-IN</b> ");
        cb_out_text(html, nm);
        cb_out_lit(html, " <code>");
        cb_out_text(html, p);
        cb_out_lit(html, "</code></li>\n");
        /* The path as escaped text, not a code span: a backtick in it would end the span. */
        cb_out_lit(md, "- ");
        cb_out_text(md, f);
        cb_out_lit(md, " format: ");
        if (stand_in) cb_out_lit(md, "STAND-IN: ");
        cb_out_text(md, nm);
        cb_out_lit(md, " (");
        cb_out_text(md, p);
        cb_out_lit(md, ")\n");
    }
    cb_out_lit(html, "</ul>\n<h3>Machine and threads</h3><p id=\"machine\">");
    cb_out_text(html, col_text(q, 2));
    cb_out_markf(html, "; every binding ran with %d threads (crossbind: OpenMP and BLAS together).</p>\n", nthreads);
    cb_out_lit(md, "\n## Machine and threads\n\n");
    cb_out_text(md, col_text(q, 2));
    cb_out_markf(md, "; every binding ran with %d threads.\n\n## Tool versions\n\n", nthreads);
    sqlite3_finalize(q);
    cb_json_free(&dj);
    cb_json_free(&cj);
    cb_out_lit(html, "<h3>Tool versions</h3><ul id=\"versions\">\n");
    if (sqlite3_prepare_v2(cb_store_db(d->store), "SELECT name, framework, language, version FROM binding WHERE"
                           " study_id=? ORDER BY name", -1, &q, NULL) != SQLITE_OK)
        return db_error(d, "binding");
    sqlite3_bind_int64(q, 1, d->id);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        binding_item(html, 1, q);
        binding_item(md, 0, q);
    }
    if ((st = query_end(d, q, rc, "binding")) != CB_OK) return st;
    cb_out_lit(html, "<li>report written by crossbind ");
    cb_out_text(html, CB_VERSION);
    cb_out_lit(html, "</li></ul></section>\n");
    cb_out_lit(md, "\n");
    return CB_OK;
}

/* A literal (a macro, not a variable): markup comes from the source only (out.h). */
#define STYLE \
    "<style>body{font-family:sans-serif;max-width:1200px;margin:1em auto;padding:0 1em;color:#222}" \
    "table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px;" \
    "text-align:left}th{background:#f0f0f0}figure.chart{display:inline-block;margin:.5em 1em 1em 0;vertical-align:top}" \
    "figcaption{font-size:13px;font-weight:bold;max-width:560px}.stand-in{color:#b00}code{font-size:12px}" \
    "#summary{border-bottom:2px solid #444;padding-bottom:.5em}</style>"

cb_status cb_report_write(cb_store *store, int64_t study_id, const char *dir)
{
    char tables[1100];
    snprintf(tables, sizeof tables, "%s/tables", dir);
    cb_status made = cb_mkdirs(tables);
    if (made != CB_OK) return made;
    rdata d = {.store = store, .id = study_id};
    cb_status st = load(&d);
    cb_out *html = cb_out_new(CB_OUT_HTML), *md = cb_out_new(CB_OUT_MD);
    if (st == CB_OK) {
        /* The page needs no script, so it allows none: whatever got past the
         * escaping could still not run. */
        cb_out_lit(html, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<meta http-equiv=\"Content-Security-Policy\" content=\"" CB_PAGE_CSP "\">"
                   "<title>crossbind study report</title>" STYLE "</head><body>\n");
        st = header(&d, html, md);
    }
    if (st == CB_OK) {
        section(html, md, "rq1-curves", "RQ1: training-accuracy curves",
                "Per model, each binding's best run by final test accuracy; the training accuracy is measured on the "
                "full training subset in evaluation mode after every epoch.");
        curves(&d, html);
        cb_out_lit(html, "<h3>DTW distance between bindings' curves (same run index, divided by the length)</h3>\n");
        cb_out_lit(md, "### DTW distance between bindings' training-accuracy curves\n\n");
        st = dtw_table(&d, html, md, dir);
    }
    if (st == CB_OK) {
        section(html, md, "rq1-final", "RQ1: final models",
                "Mean over runs; p: two-sided Mann-Whitney U of the runs' test accuracies against the reference "
                "binding's; Cliff's delta of the reference against the binding.");
        st = final_table(&d, html, md, dir);
    }
    if (st == CB_OK) {
        section(html, md, "rq2", "RQ2: cross-binding inference (reproduced / failed / unsupported)",
                "The reference binding's trained models, loaded by every binding in every load mode it supports. "
                "Reproduced: every run's model gives the reference's count of correct test samples in every timed pass.");
        st = reproduction(&d, html, md, dir);
    }
    if (st == CB_OK) {
        section(html, md, "rq3", "RQ3: training time",
                "Training time excludes the per-epoch evaluation. Reference binding against each other binding: "
                "two-sided Mann-Whitney U, Bonferroni-corrected within each model and device.");
        time_boxes(&d, 0, html);
        st = time_table(&d, 0, html, md, dir);
    }
    if (st == CB_OK) {
        section(html, md, "rq4", "RQ4: inference time",
                "Mean of the timed passes over the test set, pooled over load modes; tests as for training time.");
        time_boxes(&d, 1, html);
        st = time_table(&d, 1, html, md, dir);
    }
    if (st == CB_OK) {
        section(html, md, "subactivities", "Subactivity times (median per run)", NULL);
        st = subactivity_table(&d, html, md, dir);
    }
    if (st == CB_OK) {
        section(html, md, "features", "Supported features per binding (declared by the manifests, observed in the runs)",
                NULL);
        st = features_table(&d, html, md, dir);
    }
    if (st == CB_OK) {
        section(html, md, "failures", "Failed and unsupported measurements",
                "Every training run and evaluation that gave no result, with the reason the study stored (an "
                "unsupported evaluation's reason is read from the binding's manifest).");
        st = failures_table(&d, html, md, dir);
    }
    cb_out_lit(html, "</body></html>\n");
    char path[1100];
    if (st == CB_OK) {
        snprintf(path, sizeof path, "%s/index.html", dir);
        st = cb_out_write(html, path);
    }
    if (st == CB_OK) {
        snprintf(path, sizeof path, "%s/report.md", dir);
        st = cb_out_write(md, path);
    }
    cb_out_free(html);
    cb_out_free(md);
    rdata_free(&d);
    return st;
}
