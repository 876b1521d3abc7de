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
#include "../study/study.h"
#include "out.h"
#include "report.h"
#include "svg.h"
#include "table.h"

#define MAXN 16
#define MAXB 32

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

/* A binding as the store records it: b[i] for i < nbindings is the
 * configuration's i-th binding; after them, bindings the store lists that
 * the configuration does not (unavailable.json directories). */
typedef struct {
    char name[32], framework[64], language[32], library[512], reason[512];
    int recorded;   /* it has a row in the table binding */
    int runnable;   /* a manifest, not unavailable.json */
    int flagged;    /* "framework_default": true */
    int trains;
    char *version;  /* as recorded (owned), or NULL */
} rbind;

/* A row of a comparison: binding x against binding y (-1: none; x is the
 * section's default or alone in its framework). */
typedef struct { int x, y; } cmp_row;

typedef struct {
    cb_store *store;
    int64_t id;
    char models[MAXN][32]; int nmodels;
    char bindings[MAXN][32]; int nbindings;
    char devices[4][16]; int ndevices;
    char reference[32];
    int runs[MAXN];
    int init_shared;
    char def_fw[MAXN][64], def_b[MAXN][32]; int ndef;   /* the configuration's "defaults" */
    rbind b[MAXB]; int nb;
    int def[MAXN], why[MAXN];   /* per configured binding: its framework default's index and how it was chosen */
    int section[MAXN];          /* per configured binding: its framework's section, -1 when it cannot run */
    char sec_fw[MAXN][64]; int sec_member[MAXN][MAXN], sec_n[MAXN], nsec;
    cmp_row pairs[MAXN * MAXN]; int npairs;  /* across frameworks: alone in its framework (or a default) x another framework's default */
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
    const cb_json *init = cb_json_get(&c, "init"), *defs = cb_json_get(&c, "defaults");
    d->init_shared = init && init->type == CB_JSON_STR && !strcmp(init->str, "shared");
    for (int k = 0; defs && defs->type == CB_JSON_OBJ && k < defs->count && d->ndef < MAXN; k++)
        if (defs->items[k].type == CB_JSON_STR) {
            snprintf(d->def_fw[d->ndef], sizeof d->def_fw[0], "%s", defs->keys[k]);
            snprintf(d->def_b[d->ndef++], sizeof d->def_b[0], "%s", defs->items[k].str);
        }
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
    for (int i = 0; i < d->nb; i++) free(d->b[i].version);
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

/* The bindings of the study as the store records them: framework,
 * language, and from the stored manifest whether it can run (a manifest,
 * not unavailable.json), its "framework_default" flag, its "library" text
 * and whether it trains. */
static cb_status load_bindings(rdata *d)
{
    for (int i = 0; i < d->nbindings; i++) {
        rbind *r = &d->b[i];
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "%s", d->bindings[i]);
        snprintf(r->framework, sizeof r->framework, "(not recorded)");
        r->runnable = 1;
    }
    d->nb = d->nbindings;
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(cb_store_db(d->store), "SELECT name, framework, language, manifest, version FROM binding WHERE"
                           " study_id=? ORDER BY name", -1, &q, NULL) != SQLITE_OK)
        return db_error(d, "binding");
    sqlite3_bind_int64(q, 1, d->id);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *name = col_text(q, 0), *man = col_text(q, 3);
        int i = 0;
        while (i < d->nb && strncmp(d->b[i].name, name, sizeof d->b[i].name - 1)) i++;
        if (i == d->nb) {
            if (d->nb == MAXB) continue;
            memset(&d->b[d->nb], 0, sizeof d->b[0]);
            snprintf(d->b[d->nb++].name, sizeof d->b[0].name, "%s", name);
        }
        rbind *r = &d->b[i];
        r->recorded = 1;
        r->runnable = 1;
        snprintf(r->framework, sizeof r->framework, "%s", col_text(q, 1));
        snprintf(r->language, sizeof r->language, "%s", col_text(q, 2));
        free(r->version);
        if (!(r->version = strdup(col_text(q, 4)))) { sqlite3_finalize(q); return cb_fail(CB_ERR_NOMEM, "out of memory"); }
        cb_json m;
        if (cb_json_parse(man, strlen(man), "manifest", &m) == CB_OK) {
            if (m.type == CB_JSON_OBJ) {
                const cb_json *fd = cb_json_get(&m, "framework_default"), *tr = cb_json_get(&m, "train");
                r->runnable = cb_json_get(&m, "command") != NULL;
                r->flagged = fd && fd->type == CB_JSON_BOOL && fd->num != 0;
                r->trains = tr && tr->type == CB_JSON_ARR && tr->count > 0;
                snprintf(r->library, sizeof r->library, "%s", json_str(cb_json_get(&m, "library")));
                if (!r->runnable) snprintf(r->reason, sizeof r->reason, "%s", json_str(cb_json_get(&m, "reason")));
            }
            cb_json_free(&m);
        }
    }
    return query_end(d, q, rc, "binding");
}

/* Each framework's default binding (as the harness chose it), one section
 * per framework in the order of the study's bindings, and the pairs
 * compared across frameworks: every binding alone in its framework against
 * every other framework's default (a pair of two lone bindings once), and
 * the defaults of two frameworks with several bindings against each other. */
static void organise(rdata *d)
{
    cb_fw_member m[MAXN];
    cb_fw_override ov[MAXN];
    for (int i = 0; i < d->nbindings; i++)
        m[i] = (cb_fw_member){d->b[i].name, d->b[i].framework, d->b[i].runnable, d->b[i].flagged, d->b[i].trains};
    for (int k = 0; k < d->ndef; k++) ov[k] = (cb_fw_override){d->def_fw[k], d->def_b[k]};
    cb_framework_defaults(m, d->nbindings, ov, d->ndef, d->def, d->why);
    d->nsec = 0;
    for (int i = 0; i < d->nbindings; i++) {
        d->section[i] = -1;
        if (!d->b[i].runnable || d->def[i] < 0) continue;
        int k = 0;
        while (k < d->nsec && strcmp(d->sec_fw[k], d->b[i].framework)) k++;
        if (k == d->nsec) {
            memcpy(d->sec_fw[k], d->b[i].framework, sizeof d->sec_fw[k]); /* both 64 bytes, NUL-terminated */
            d->sec_n[d->nsec++] = 0;
        }
        d->section[i] = k;
        d->sec_member[k][d->sec_n[k]++] = i;
    }
    d->npairs = 0;
    for (int a = 0; a < d->nbindings; a++) {
        if (d->section[a] < 0 || d->sec_n[d->section[a]] != 1) continue;
        for (int k = 0; k < d->nsec; k++) {
            int def = d->def[d->sec_member[k][0]];
            if (k == d->section[a] || def < 0 || (d->sec_n[k] == 1 && def < a)) continue;
            d->pairs[d->npairs++] = (cmp_row){a, def};
        }
    }
    /* The default bindings of two frameworks that both have several
     * bindings (PyTorch/Python and TensorFlow/Python): the later framework's
     * against the earlier's, the comparison the published study could not
     * make from one initial state. */
    for (int k2 = 0; k2 < d->nsec; k2++)
        for (int k1 = 0; k1 < k2; k1++) {
            if (d->sec_n[k1] < 2 || d->sec_n[k2] < 2) continue;
            int d1 = d->def[d->sec_member[k1][0]], d2 = d->def[d->sec_member[k2][0]];
            if (d1 >= 0 && d2 >= 0) d->pairs[d->npairs++] = (cmp_row){d2, d1};
        }
}

/* The rows of section g: a framework's default first, then each other
 * binding of it against the default; across frameworks (g == nsec), the pairs. */
static int group_rows(const rdata *d, int g, cmp_row *rows)
{
    int n = 0;
    if (g == d->nsec) {
        memcpy(rows, d->pairs, (size_t)d->npairs * sizeof *rows);
        return d->npairs;
    }
    int def = d->def[d->sec_member[g][0]];
    rows[n++] = (cmp_row){def, -1};
    for (int j = 0; j < d->sec_n[g]; j++)
        if (d->sec_member[g][j] != def) rows[n++] = (cmp_row){d->sec_member[g][j], def};
    return n;
}

/* The bindings a section shows in its figures, in the study's order. */
static int group_bindings(const rdata *d, int g, int *out)
{
    if (g < d->nsec) {
        memcpy(out, d->sec_member[g], (size_t)d->sec_n[g] * sizeof *out);
        return d->sec_n[g];
    }
    int n = 0;
    for (int i = 0; i < d->nbindings; i++)
        for (int p = 0; p < d->npairs; p++)
            if (d->pairs[p].x == i || d->pairs[p].y == i) { out[n++] = i; break; }
    return n;
}

static const char *group_label(const rdata *d, int g) { return g < d->nsec ? d->sec_fw[g] : "across frameworks"; }

static void group_id(const rdata *d, int g, char *out, size_t cap)
{
    if (g < d->nsec) snprintf(out, cap, "fw%d", g + 1);
    else snprintf(out, cap, "cross");
}

static void curves(rdata *d, int g, cb_out *html)
{
    int members[MAXN], nm = group_bindings(d, g, members);
    char gid[16];
    group_id(d, g, gid, sizeof gid);
    for (int m = 0; m < d->nmodels; m++)
        for (int dv = 0; dv < d->ndevices; dv++) {
            svg_line lines[MAXN];
            char names[MAXN][64];
            int n = 0;
            for (int k = 0; k < nm; k++) {
                const char *b = d->bindings[members[k]];
                const trun *best = NULL;
                for (int i = 0; i < d->ntr; i++) {
                    const trun *t = &d->tr[i];
                    if (!t->complete || t->nep == 0 || strcmp(t->binding, b) || strcmp(t->model, d->models[m]) ||
                        strcmp(t->device, d->devices[dv]))
                        continue;
                    if (!best || t->acc > best->acc) best = t;
                }
                if (!best) continue;
                snprintf(names[n], sizeof names[n], "%s (run %d)", b, best->run);
                lines[n] = (svg_line){names[n], best->epoch, best->train_acc, best->nep};
                n++;
            }
            if (!n) continue;
            char id[128], title[200];
            snprintf(id, sizeof id, "%s-curves-%s-%s", gid, d->models[m], d->devices[dv]);
            snprintf(title, sizeof title, "%s (%s, %s): training accuracy per epoch, best run of each binding",
                     d->models[m], d->devices[dv], group_label(d, g));
            svg_line_chart(html, id, title, "epoch", "training accuracy", lines, n, 0, 1);
        }
}

/* RQ2: a binding x load mode x device cell of one model is reproduced when
 * every run's model gives the reference's count in every timed pass. */
static const char *cell_status(const rdata *d, const char *trainer, const char *binding, const char *mode,
                               const char *device, const char *model, int runs, char *why, size_t cap)
{
    int ok = 0, bad = 0, unsup = 0, any = 0;
    char first[100] = "";
    for (int i = 0; i < d->nin; i++) {
        const infer *x = &d->in[i];
        if (strcmp(x->trainer, trainer) || strcmp(x->binding, binding) || strcmp(x->mode, mode) ||
            strcmp(x->device, device) || strcmp(x->model, model))
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

/* RQ2: one trainer's models loaded by the given bindings (members, indices
 * of the configuration's bindings): the heat map and its table, then every
 * evaluation. Rows go to table group tg; gid names the figure and tables. */
static cb_status reproduction(rdata *d, int tg, const char *gid, const char *trainer, const int *members, int nm,
                              rtable *rep, rtable *inf, cb_out *html, cb_out *md)
{
    const char *modes[2] = {"parameters", "serialization"};
    int nrows = nm * 2 * d->ndevices;
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
    rtable_group(rep, tg);
    int r = 0;
    for (int k = 0; k < nm; k++)
        for (int mo = 0; mo < 2; mo++)
            for (int dv = 0; dv < d->ndevices; dv++, r++) {
                const char *b = d->bindings[members[k]];
                snprintf(rows[r], sizeof rows[r], "%s / %s / %s", b, modes[mo], d->devices[dv]);
                rowp[r] = rows[r];
                rtable_cell(rep, "%s", group_label(d, tg));
                rtable_cell(rep, "%s", trainer);
                rtable_cell(rep, "%s", b);
                rtable_cell(rep, "%s", modes[mo]);
                rtable_cell(rep, "%s", d->devices[dv]);
                for (int m = 0; m < d->nmodels; m++) {
                    int c = r * d->nmodels + m;
                    status[c] = cell_status(d, trainer, b, modes[mo], d->devices[dv], d->models[m], d->runs[m], why[c], sizeof why[c]);
                    whyp[c] = why[c][0] ? why[c] : NULL;
                    rtable_cell(rep, "%s", status[c] ? status[c] : why[c][0] ? why[c] : "not measured");
                }
            }
    char id[96], title[300];
    snprintf(id, sizeof id, "%s-reproduction", gid);
    snprintf(title, sizeof title, "%s: reproduction of %s's models' accuracy (RQ2), binding x load mode x device "
             "against model", group_label(d, tg), trainer);
    if (nrows) svg_heat_map(html, id, title, rowp, nrows, cols, d->nmodels, status, whyp);
    rtable_emit_group(rep, tg, 1, html, md, gid);
    /* Per evaluation: counts, label agreement and logit differences. */
    rtable_group(inf, tg);
    int shown = 0;
    for (int i = 0; i < d->nin; i++) {
        const infer *x = &d->in[i];
        int mine = 0;
        for (int k = 0; k < nm; k++) mine |= !strcmp(x->binding, d->bindings[members[k]]);
        if (!mine || strcmp(x->trainer, trainer)) continue;
        char b1[48], b2[48], b3[48];
        shown++;
        rtable_cell(inf, "%s", group_label(d, tg));
        rtable_cell(inf, "%s", x->trainer);
        rtable_cell(inf, "%s", x->model); rtable_cell(inf, "%s", x->binding); rtable_cell(inf, "%s", x->format);
        rtable_cell(inf, "%s", x->mode); rtable_cell(inf, "%s", x->device); rtable_cell(inf, "%d", x->run);
        rtable_cell(inf, "%s", x->status);
        if (strcmp(x->status, "ok")) { for (int k = 0; k < 6; k++) rtable_cell(inf, "–"); continue; }
        rtable_cell(inf, "%ld", x->correct); rtable_cell(inf, "%ld", x->ref); rtable_cell(inf, "%s", x->stable == 1 ? "yes" : "no");
        rtable_cell(inf, "%s", fmtd(b1, "%.4f", x->agree)); rtable_cell(inf, "%s", fmtd(b2, "%.3g", x->diff));
        rtable_cell(inf, "%s", fmtd(b3, "%.4f", x->time));
    }
    if (shown) {
        cb_out_lit(html, "<details><summary>Every evaluation</summary>\n");
        rtable_emit_group(inf, tg, 1, html, md, gid);
        cb_out_lit(html, "</details>\n");
    }
    free(rows); free(rowp); free(status); free(why); free(whyp);
    return CB_OK;
}

/* The DTW distances of x's and y's curves of the same run index (divided by the length). */
static int dtw_values(const rdata *d, const char *a, const char *b, const char *model, const char *device, double *vals,
                      int cap)
{
    int n = 0;
    for (int i = 0; i < d->ntr; i++) {
        const trun *x = &d->tr[i];
        if (!x->complete || x->nep == 0 || strcmp(x->binding, a) || strcmp(x->model, model) || strcmp(x->device, device))
            continue;
        for (int j = 0; j < d->ntr && n < cap; j++) {
            const trun *y = &d->tr[j];
            if (!y->complete || y->nep == 0 || strcmp(y->binding, b) || strcmp(y->model, x->model) ||
                strcmp(y->device, x->device) || y->run != x->run)
                continue;
            double dist;
            if (cb_dtw(x->train_acc, (size_t)x->nep, y->train_acc, (size_t)y->nep, -1, &dist) == CB_OK)
                vals[n++] = dist / x->nep;
        }
    }
    return n;
}

static int dtw_rows(rdata *d, int g, rtable *t)
{
    cmp_row rows[MAXN * MAXN];
    int nr = group_rows(d, g, rows), added = 0;
    rtable_group(t, g);
    for (int m = 0; m < d->nmodels; m++)
        for (int dv = 0; dv < d->ndevices; dv++)
            for (int k = 0; k < nr; k++) {
                if (rows[k].y < 0) continue;
                const char *a = d->bindings[rows[k].x], *b = d->bindings[rows[k].y];
                double vals[8];
                int n = dtw_values(d, a, b, d->models[m], d->devices[dv], vals, 8);
                if (!n) continue;
                double mx = 0;
                for (int i = 0; i < n; i++) if (vals[i] > mx) mx = vals[i];
                rtable_cell(t, "%s", group_label(d, g));
                rtable_cell(t, "%s", d->models[m]); rtable_cell(t, "%s", d->devices[dv]);
                rtable_cell(t, "%s", a); rtable_cell(t, "%s", b);
                rtable_cell(t, "%d", n); rtable_cell(t, "%.3f", mean(vals, n)); rtable_cell(t, "%.3f", mx);
                added++;
            }
    return added;
}

/* Final test accuracy, F1 and AUC; p and Cliff's delta of each binding's
 * runs against those of the binding it is compared with. */
static int final_rows(rdata *d, int g, rtable *t)
{
    cmp_row rows[MAXN * MAXN];
    int nr = group_rows(d, g, rows), added = 0;
    rtable_group(t, g);
    for (int m = 0; m < d->nmodels; m++)
        for (int dv = 0; dv < d->ndevices; dv++) {
            const char *model = d->models[m], *dev = d->devices[dv];
            /* The largest difference of mean accuracies among a framework's bindings. */
            double lo = INFINITY, hi = -INFINITY;
            for (int k = 0; k < nr; k++) {
                double v[8];
                int n = train_values(d, d->bindings[rows[k].x], model, dev, 1, v);
                if (n) { double mu = mean(v, n); if (mu < lo) lo = mu; if (mu > hi) hi = mu; }
            }
            for (int k = 0; k < nr; k++) {
                const char *b = d->bindings[rows[k].x];
                double acc[8], f1[8], auc[8], ref[8];
                int n = train_values(d, b, model, dev, 1, acc);
                if (!n) continue;
                int nf = train_values(d, b, model, dev, 2, f1);
                int na = train_values(d, b, model, dev, 3, auc);
                double p = NAN, delta = NAN, diff = g < d->nsec && d->sec_n[g] > 1 ? hi - lo : NAN;
                if (rows[k].y >= 0) {
                    int nref = train_values(d, d->bindings[rows[k].y], model, dev, 1, ref);
                    if (g == d->nsec && !nref) continue; /* across frameworks, a pair needs both */
                    compare(ref, nref, acc, n, &p, &delta);
                    if (g == d->nsec && nref) diff = fabs(mean(acc, n) - mean(ref, nref));
                }
                char b1[48], b2[48];
                rtable_cell(t, "%s", group_label(d, g));
                rtable_cell(t, "%s", model); rtable_cell(t, "%s", dev); rtable_cell(t, "%s", b);
                if (rows[k].y >= 0) rtable_cell(t, "%s", d->bindings[rows[k].y]);
                else rtable_cell(t, "%s", d->sec_n[g] > 1 ? "– (the default)" : "– (alone in its framework)");
                rtable_cell(t, "%d", n); rtable_cell(t, "%.4f", mean(acc, n));
                rtable_cell(t, "%s", fmtd(b1, "%.4f", mean(f1, nf))); rtable_cell(t, "%s", fmtd(b2, "%.4f", mean(auc, na)));
                rtable_cell(t, "%s", fmtd(b1, "%.4f", diff));
                rtable_cell(t, "%s", fmtd(b2, "%.4g", p));
                if (isnan(delta)) rtable_cell(t, "–");
                else rtable_cell(t, "%.3f (%s)", delta, cb_cliff_magnitude(delta));
                added++;
            }
        }
    return added;
}

static int time_values(const rdata *d, int kind, const char *b, const char *model, const char *dev, double *v, int cap)
{
    return kind ? infer_times(d, b, model, dev, v, cap) : train_values(d, b, model, dev, 0, v);
}

/* RQ3/RQ4 (kind 0: training time, 1: inference): each binding against the
 * one it is compared with, Bonferroni within the section x model x device. */
static cb_status time_rows(rdata *d, int kind, int g, rtable *t, int *added)
{
    enum { CAP = 4096 };
    cmp_row rows[MAXN * MAXN];
    int nr = group_rows(d, g, rows);
    *added = 0;
    double *ref = malloc(CAP * sizeof *ref), *v = malloc(CAP * sizeof *v), *tmp = malloc(CAP * sizeof *tmp);
    double *p = malloc((size_t)nr * sizeof *p + 1), *adj = malloc((size_t)nr * sizeof *adj + 1);
    double *deltas = malloc((size_t)nr * sizeof *deltas + 1);
    int *sig = malloc((size_t)nr * sizeof *sig + 1), *slot = malloc((size_t)nr * sizeof *slot + 1);
    if (!ref || !v || !tmp || !p || !adj || !deltas || !sig || !slot) {
        free(ref); free(v); free(tmp); free(p); free(adj); free(deltas); free(sig); free(slot);
        return cb_fail(CB_ERR_NOMEM, "out of memory");
    }
    rtable_group(t, g);
    for (int m = 0; m < d->nmodels; m++)
        for (int dv = 0; dv < d->ndevices; dv++) {
            const char *model = d->models[m], *dev = d->devices[dv];
            int k = 0;
            for (int r = 0; r < nr; r++) {
                slot[r] = -1;
                if (rows[r].y < 0) continue;
                int n = time_values(d, kind, d->bindings[rows[r].x], model, dev, v, CAP);
                int nref = time_values(d, kind, d->bindings[rows[r].y], model, dev, ref, CAP);
                if (!n || !nref) continue;
                compare(ref, nref, v, n, &p[k], &deltas[k]);
                slot[r] = k++;
            }
            if (k && cb_bonferroni(p, (size_t)k, 0.05, adj, sig) != CB_OK)
                for (int i = 0; i < k; i++) { adj[i] = NAN; sig[i] = 0; }
            for (int r = 0; r < nr; r++) {
                int n = time_values(d, kind, d->bindings[rows[r].x], model, dev, v, CAP);
                if (!n) continue;
                memcpy(tmp, v, (size_t)n * sizeof *tmp);
                double med = median(tmp, n), ref_med = NAN;
                if (rows[r].y >= 0) {
                    int nref = time_values(d, kind, d->bindings[rows[r].y], model, dev, ref, CAP);
                    if (g == d->nsec && !nref) continue; /* across frameworks, a pair needs both */
                    ref_med = median(ref, nref);
                }
                int s = slot[r];
                char b1[48], b2[48], b3[48];
                rtable_cell(t, "%s", group_label(d, g));
                rtable_cell(t, "%s", model); rtable_cell(t, "%s", dev); rtable_cell(t, "%s", d->bindings[rows[r].x]);
                if (rows[r].y >= 0) rtable_cell(t, "%s", d->bindings[rows[r].y]);
                else rtable_cell(t, "%s", d->sec_n[g] > 1 ? "– (the default)" : "– (alone in its framework)");
                rtable_cell(t, "%d", n); rtable_cell(t, "%.4f", med);
                rtable_cell(t, "%s", fmtd(b1, "%.3fx", med / ref_med));
                rtable_cell(t, "%s", fmtd(b2, "%.4g", s >= 0 ? p[s] : NAN));
                rtable_cell(t, "%s", fmtd(b3, "%.4g", s >= 0 ? adj[s] : NAN));
                rtable_cell(t, "%s", s >= 0 ? (sig[s] ? "yes" : "no") : "–");
                if (s < 0 || isnan(deltas[s])) rtable_cell(t, "–");
                else rtable_cell(t, "%.3f (%s)", deltas[s], cb_cliff_magnitude(deltas[s]));
                (*added)++;
            }
        }
    free(ref); free(v); free(tmp); free(p); free(adj); free(deltas); free(sig); free(slot);
    return CB_OK;
}

static void time_boxes(rdata *d, int kind, int g, cb_out *html)
{
    enum { CAP = 4096 };
    int members[MAXN], nm = group_bindings(d, g, members);
    char gid[16];
    group_id(d, g, gid, sizeof gid);
    for (int m = 0; m < d->nmodels; m++)
        for (int dv = 0; dv < d->ndevices; dv++) {
            svg_box boxes[MAXN];
            double *vals[MAXN];
            int n = 0;
            for (int b = 0; b < nm; b++) {
                double *v = malloc(CAP * sizeof *v);
                if (!v) break;
                int k = time_values(d, kind, d->bindings[members[b]], d->models[m], d->devices[dv], v, CAP);
                if (!k) { free(v); continue; }
                vals[n] = v;
                boxes[n] = (svg_box){d->bindings[members[b]], v, k};
                n++;
            }
            if (n) {
                char id[128], title[300];
                snprintf(id, sizeof id, "%s-%s-%s-%s", gid, kind ? "inference-time" : "training-time", d->models[m],
                         d->devices[dv]);
                snprintf(title, sizeof title, kind ? "%s (%s, %s): inference time over the test set per binding, pooled "
                         "over load modes (RQ4)" : "%s (%s, %s): training time per run and binding (RQ3)", d->models[m],
                         d->devices[dv], group_label(d, g));
                svg_box_plot(html, id, title, kind ? "seconds per pass" : "training time (s)", boxes, n);
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

static void subsection(cb_out *html, cb_out *md, const char *title, const char *text)
{
    cb_out_lit(html, "<h3>");
    cb_out_text(html, title);
    cb_out_lit(html, "</h3>\n");
    cb_out_lit(md, "### ");
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

static void note(cb_out *html, cb_out *md, const char *text)
{
    cb_out_lit(html, "<p class=\"none\">");
    cb_out_text(html, text);
    cb_out_lit(html, "</p>\n");
    cb_out_text(md, text);
    cb_out_lit(md, "\n\n");
}

/* The report's grouped tables: every section adds its rows, the CSV files hold them all. */
typedef struct { rtable dtw, fin, rep, inf, train, infer; } rtabs;

static void rtabs_init(rtabs *T, const rdata *d)
{
    const char *h_dtw[] = {"section", "model", "device", "binding", "compared with", "run pairs", "DTW mean", "DTW max"};
    const char *h_fin[] = {"section", "model", "device", "binding", "compared with", "runs", "test accuracy", "macro F1",
                           "AUC", "largest accuracy difference", "p (MWU)", "Cliff's delta (compared with vs binding)"};
    const char *h_rep[MAXN + 5] = {"section", "trained by", "binding", "load mode", "device"};
    for (int m = 0; m < d->nmodels; m++) h_rep[5 + m] = d->models[m];
    const char *h_inf[] = {"section", "trained by", "model", "binding", "format", "load mode", "device", "run", "status", "correct",
                           "reference", "stable", "label agreement", "max |logit diff|", "mean time (s)"};
    const char *h_time[] = {"section", "model", "device", "binding", "compared with", "n", "median (s)",
                            "ratio to compared", "p (MWU)", "p (Bonferroni)", "significant (alpha 0.05)",
                            "Cliff's delta (compared with vs binding)"};
    rtable_init(&T->dtw, "dtw", 8, h_dtw);
    rtable_init(&T->fin, "final_models", 12, h_fin);
    rtable_init(&T->rep, "reproduction", 5 + d->nmodels, h_rep);
    rtable_init(&T->inf, "inference", 15, h_inf);
    rtable_init(&T->train, "training_time", 12, h_time);
    rtable_init(&T->infer, "inference_time", 12, h_time);
}

static cb_status rtabs_write(rtabs *T, const char *dir)
{
    rtable *all[6] = {&T->dtw, &T->fin, &T->rep, &T->inf, &T->train, &T->infer};
    cb_status st = CB_OK;
    for (int i = 0; i < 6 && st == CB_OK; i++) st = rtable_write_csv(all[i], dir);
    return st;
}

static void rtabs_free(rtabs *T)
{
    rtable *all[6] = {&T->dtw, &T->fin, &T->rep, &T->inf, &T->train, &T->infer};
    for (int i = 0; i < 6; i++) rtable_free(all[i]);
}

/* The rows of section g of a table, or a line saying there are none. */
static void emit_or_note(rdata *d, rtable *t, int g, cb_out *html, cb_out *md, const char *none)
{
    char gid[16];
    group_id(d, g, gid, sizeof gid);
    if (!rtable_emit_group(t, g, 1, html, md, gid)) note(html, md, none);
}

/* 1 when every measurement of a binding is stored as unavailable (its environment is missing). */
static int env_missing(const rdata *d, const char *b)
{
    int unav = 0, other = 0;
    for (int i = 0; i < d->ntr; i++)
        if (!strcmp(d->tr[i].binding, b)) { if (!strcmp(d->tr[i].status, "unavailable")) unav++; else other++; }
    for (int i = 0; i < d->nin; i++)
        if (!strcmp(d->in[i].binding, b) && strcmp(d->in[i].status, "unsupported")) {
            if (!strcmp(d->in[i].status, "unavailable")) unav++; else other++;
        }
    return unav && !other;
}

static const char *default_how(int why)
{
    return why == CB_DEFAULT_CONFIG ? "chosen by the configuration's \"defaults\""
           : why == CB_DEFAULT_MANIFEST ? "its manifest says \"framework_default\": true"
                                        : "the first binding of the framework in the study that trains: no manifest of "
                                          "the study flags one";
}

/* A binding's part in the study, in words. */
static void role_of(const rdata *d, int i, char *out, size_t cap)
{
    const rbind *r = &d->b[i];
    if (!r->runnable) snprintf(out, cap, "cannot be installed on this machine: %s", r->reason[0] ? r->reason : "no reason given");
    else if (i >= d->nbindings) snprintf(out, cap, "recorded, not in the study's configuration");
    else if (d->section[i] < 0) snprintf(out, cap, "not compared");
    else if (d->sec_n[d->section[i]] == 1) snprintf(out, cap, "alone in its framework in this study: compared across frameworks");
    else if (d->def[i] == i) snprintf(out, cap, "default of %s (%s)", r->framework, default_how(d->why[i]));
    else snprintf(out, cap, "compared with %s, the default of %s", d->bindings[d->def[i]], r->framework);
    if (i < d->nbindings && !strcmp(r->name, d->reference)) {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "; trains the reference models (RQ2)");
    }
    if (i < d->nbindings && r->runnable && env_missing(d, r->name)) {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "; its environment is missing here (see the failures for the install command)");
    }
}

static cb_status bindings_table(rdata *d, cb_out *html, cb_out *md, const char *dir)
{
    const char *h[] = {"binding", "framework", "language", "role", "library", "versions"};
    rtable t;
    rtable_init(&t, "bindings", 6, h);
    for (int i = 0; i < d->nb; i++) {
        const rbind *r = &d->b[i];
        char role[1200];
        role_of(d, i, role, sizeof role);
        rtable_cell(&t, "%s", r->name); rtable_cell(&t, "%s", r->framework); rtable_cell(&t, "%s", r->language);
        rtable_cell(&t, "%s", role); rtable_cell(&t, "%s", r->library[0] ? r->library : "–");
        rtable_cell(&t, "%s", r->version ? r->version : "not recorded");
    }
    cb_status st = rtable_emit(&t, html, md, dir);
    rtable_free(&t);
    return st;
}

/* "init": "shared": the file each model and run started from. */
static cb_status init_table(rdata *d, cb_out *html, cb_out *md, const char *dir)
{
    const char *h[] = {"model", "run", "source binding", "device", "file", "SHA-256", "bytes"};
    rtable t;
    rtable_init(&t, "initial_weights", 7, h);
    cb_status st = CB_OK;
    if (cb_store_schema(d->store) >= 2) {
        sqlite3_stmt *q;
        if (sqlite3_prepare_v2(cb_store_db(d->store), "SELECT model, run, source, device, path, sha256, bytes FROM"
                               " init_weights WHERE study_id=? ORDER BY model, run", -1, &q, NULL) != SQLITE_OK) {
            rtable_free(&t);
            return db_error(d, "init_weights");
        }
        sqlite3_bind_int64(q, 1, d->id);
        int rc;
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            rtable_cell(&t, "%s", col_text(q, 0)); rtable_cell(&t, "%d", sqlite3_column_int(q, 1));
            for (int c = 2; c < 6; c++) rtable_cell(&t, "%s", col_text(q, c));
            rtable_cell(&t, "%lld", (long long)sqlite3_column_int64(q, 6));
        }
        st = query_end(d, q, rc, "init_weights");
    }
    if (st == CB_OK) st = rtable_emit(&t, html, md, dir);
    rtable_free(&t);
    return st;
}

static void list_names(const rdata *d, const int *idx, int n, char *out, size_t cap)
{
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        size_t k = strlen(out);
        snprintf(out + k, cap - k, "%s%s", i ? ", " : "", d->bindings[idx[i]]);
    }
}

/* Whose models a framework section's RQ2 shows: the study's reference
 * binding when it belongs to the framework, else the framework's default
 * binding (the harness evaluates each framework default's models by its
 * framework's bindings: src/study/study.c, evaluates_models_of). */
static const char *section_trainer(const rdata *d, int g)
{
    for (int j = 0; j < d->sec_n[g]; j++)
        if (!strcmp(d->bindings[d->sec_member[g][j]], d->reference)) return d->reference;
    return d->bindings[d->def[d->sec_member[g][0]]];
}

/* RQ2 across frameworks: each framework's trainer's models loaded by the
 * bindings of other frameworks (crossbind and ONNX Runtime load every
 * trainer's; the other frameworks' bindings the reference's). One heat map
 * per trainer whose models another framework's binding evaluated. */
static cb_status cross_reproduction(rdata *d, rtabs *T, cb_out *html, cb_out *md)
{
    int shown = 0;
    for (int g = 0; g < d->nsec; g++) {
        const char *trainer = section_trainer(d, g);
        int members[MAXN], nm = 0;
        for (int i = 0; i < d->nbindings; i++) {
            if (d->section[i] < 0 || d->section[i] == g) continue;
            for (int k = 0; k < d->nin; k++)
                if (!strcmp(d->in[k].trainer, trainer) && !strcmp(d->in[k].binding, d->bindings[i])) { members[nm++] = i; break; }
        }
        if (!nm) continue;
        if (!shown++)
            subsection(html, md, "RQ2: inference of another framework's models (reproduced / failed / unsupported)",
                       "Each framework's trained models, loaded by the bindings of the other frameworks: the parameters "
                       "through crossbind's canonical safetensors (PyTorch's names and layouts, mapped by each binding), "
                       "the serialization through converted files (ONNX).");
        char gid[64], head[160];
        snprintf(gid, sizeof gid, "cross-%s", trainer);
        snprintf(head, sizeof head, "%s's models (%s)", trainer, d->sec_fw[g]);
        cb_out_lit(html, "<h4>");
        cb_out_text(html, head);
        cb_out_lit(html, "</h4>\n");
        cb_out_lit(md, "#### ");
        cb_out_text(md, head);
        cb_out_lit(md, "\n\n");
        cb_status st = reproduction(d, d->nsec + 1 + g, gid, trainer, members, nm, &T->rep, &T->inf, html, md);
        if (st != CB_OK) return st;
    }
    return CB_OK;
}

/* One framework's section: its bindings against its default binding, RQ1 to RQ4. */
static cb_status framework_section(rdata *d, int g, rtabs *T, cb_out *html, cb_out *md)
{
    char id[16], title[200], text[4096], names[1200];
    group_id(d, g, id, sizeof id);
    int n = d->sec_n[g], def = d->def[d->sec_member[g][0]];
    snprintf(title, sizeof title, "Framework %s", d->sec_fw[g]);
    if (n == 1)
        snprintf(text, sizeof text, "%s is the only binding of %s in this study: its measurements are shown here, and "
                 "it is compared with the other frameworks' default bindings under \"Across frameworks\".",
                 d->bindings[def], d->sec_fw[g]);
    else {
        int others[MAXN], k = 0;
        for (int j = 0; j < n; j++) if (d->sec_member[g][j] != def) others[k++] = d->sec_member[g][j];
        list_names(d, others, k, names, sizeof names);
        snprintf(text, sizeof text, "Default binding: %s (%s). Each other binding of %s (%s) is compared with it: the "
                 "DTW distance of the training-accuracy curves of the same run index, the final test accuracy "
                 "(two-sided Mann-Whitney U, Cliff's delta), and the training and inference times (Mann-Whitney U with "
                 "Bonferroni's correction within %s x model x device, Cliff's delta).", d->bindings[def],
                 default_how(d->why[def]), d->sec_fw[g], names, d->sec_fw[g]);
    }
    section(html, md, id, title, text);
    for (int i = 0; i < d->nb; i++) {
        const rbind *r = &d->b[i];
        if (strcmp(r->framework, d->sec_fw[g])) continue;
        if (!r->runnable) snprintf(text, sizeof text, "Not run: %s (%s) cannot be installed on this machine: %s", r->name,
                                   r->language, r->reason[0] ? r->reason : "no reason given");
        else if (i < d->nbindings && env_missing(d, r->name))
            snprintf(text, sizeof text, "Not run: %s's environment is missing here; the failures table gives the "
                     "command that installs it.", r->name);
        else continue;
        note(html, md, text);
    }
    subsection(html, md, "RQ1: training", "Curves: each binding's best run by final test accuracy; the training "
               "accuracy is measured on the full training subset in evaluation mode after every epoch.");
    curves(d, g, html);
    if (n > 1) {
        cb_out_lit(html, "<h4>DTW distance of each binding's curves to the default binding's (same run index, divided by "
                   "the length)</h4>\n");
        cb_out_lit(md, "#### DTW distance to the default binding's curves\n\n");
        dtw_rows(d, g, &T->dtw);
        emit_or_note(d, &T->dtw, g, html, md, "No pair of complete runs of the same index yet.");
    }
    cb_out_lit(html, "<h4>Final models (mean over runs)</h4>\n");
    cb_out_lit(md, "#### Final models (mean over runs)\n\n");
    final_rows(d, g, &T->fin);
    emit_or_note(d, &T->fin, g, html, md, "No complete training run of these bindings.");
    const char *trainer = section_trainer(d, g);
    snprintf(text, sizeof text, "%s's trained models (%s), loaded by every binding of %s in every load mode it "
             "supports. Reproduced: every run's model gives the count of correct test samples of its trainer's own "
             "evaluation in every timed pass.", trainer, !strcmp(trainer, d->reference) ? "the study's reference models"
             : "the framework's default binding", d->sec_fw[g]);
    subsection(html, md, "RQ2: cross-binding inference (reproduced / failed / unsupported)", text);
    cb_status st = reproduction(d, g, id, trainer, d->sec_member[g], d->sec_n[g], &T->rep, &T->inf, html, md);
    if (st != CB_OK) return st;
    int added;
    subsection(html, md, "RQ3: training time", "Training time excludes the per-epoch evaluation.");
    time_boxes(d, 0, g, html);
    if ((st = time_rows(d, 0, g, &T->train, &added)) != CB_OK) return st;
    emit_or_note(d, &T->train, g, html, md, "No complete training run of these bindings.");
    subsection(html, md, "RQ4: inference time", "Mean of the timed passes over the test set, pooled over load modes.");
    time_boxes(d, 1, g, html);
    if ((st = time_rows(d, 1, g, &T->infer, &added)) != CB_OK) return st;
    emit_or_note(d, &T->infer, g, html, md, "No successful evaluation by these bindings.");
    return CB_OK;
}

/* Bindings alone in their framework, and the defaults of frameworks with several bindings, against the other frameworks' defaults. */
static cb_status cross_section(rdata *d, rtabs *T, cb_out *html, cb_out *md)
{
    int g = d->nsec;
    char text[4096], lone[1200], defs[1200];
    int li[MAXN], di[MAXN], nl = 0, nd = 0;
    for (int i = 0; i < d->nbindings; i++) {
        int in_x = 0, in_y = 0;
        for (int p = 0; p < d->npairs; p++) { in_x |= d->pairs[p].x == i; in_y |= d->pairs[p].y == i; }
        if (in_x) li[nl++] = i;
        if (in_y) di[nd++] = i;
    }
    list_names(d, li, nl, lone, sizeof lone);
    list_names(d, di, nd, defs, sizeof defs);
    if (d->npairs)
        snprintf(text, sizeof text, "Every binding alone in its framework in this study, and the default binding of "
                 "each framework with several (%s), against each other framework's default binding (%s): DTW of the training-accuracy curves, final test accuracy (Mann-Whitney "
                 "U, Cliff's delta), training and inference time (Mann-Whitney U with Bonferroni's correction within "
                 "model x device over this section's comparisons). These compare frameworks, not bindings of one "
                 "framework.", lone, defs);
    else
        snprintf(text, sizeof text, "No comparisons: no binding of this study is alone in its framework beside another "
                 "framework.");
    section(html, md, "cross", "Across frameworks", text);
    if (!d->npairs) return CB_OK;
    subsection(html, md, "RQ1: training", NULL);
    curves(d, g, html);
    cb_out_lit(html, "<h4>DTW distance between the bindings' curves (same run index, divided by the length)</h4>\n");
    cb_out_lit(md, "#### DTW distance between the bindings' curves\n\n");
    dtw_rows(d, g, &T->dtw);
    emit_or_note(d, &T->dtw, g, html, md, "No pair of complete runs of the same index.");
    cb_out_lit(html, "<h4>Final models (mean over runs)</h4>\n");
    cb_out_lit(md, "#### Final models (mean over runs)\n\n");
    final_rows(d, g, &T->fin);
    emit_or_note(d, &T->fin, g, html, md, "No complete training run of these bindings.");
    int added;
    cb_status st = cross_reproduction(d, T, html, md);
    if (st != CB_OK) return st;
    subsection(html, md, "RQ3: training time", NULL);
    time_boxes(d, 0, g, html);
    if ((st = time_rows(d, 0, g, &T->train, &added)) != CB_OK) return st;
    emit_or_note(d, &T->train, g, html, md, "No complete training run of these bindings.");
    subsection(html, md, "RQ4: inference time", NULL);
    time_boxes(d, 1, g, html);
    if ((st = time_rows(d, 1, g, &T->infer, &added)) != CB_OK) return st;
    emit_or_note(d, &T->infer, g, html, md, "No successful evaluation by these bindings.");
    return CB_OK;
}

/* Table 3: what each manifest declares, and what the runs of this study
 * did; a binding that cannot be installed here is listed with its reason. */
static cb_status features_table(rdata *d, cb_out *html, cb_out *md, const char *dir)
{
    const char *h[] = {"binding", "framework", "language", "library", "version", "declares training of",
                       "declares load modes", "devices", "observed training", "observed load modes", "check"};
    rtable t;
    rtable_init(&t, "supported_features", 11, h);
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
        int declared_param = 0, declared_ser = 0, ntrain = 0, runnable = 1;
        char library[512] = "", reason[512] = "";
        if (cb_json_parse(man, strlen(man), "manifest", &mj) == CB_OK) {
            const cb_json *tr = cb_json_get(&mj, "train"), *lo = cb_json_get(&mj, "loads"), *dvs = cb_json_get(&mj, "devices");
            for (int i = 0; tr && i < tr->count; i++) cb_buf_printf(&trains, "%s%s", i ? ", " : "", json_str(&tr->items[i]));
            for (int i = 0; lo && i < lo->count; i++) {
                const char *f = json_str(&lo->items[i]);
                const char *mode = cb_format_load_mode(f);
                if (mode && !strcmp(mode, "parameters")) declared_param = 1; else declared_ser = 1;
            }
            for (int i = 0; dvs && i < dvs->count; i++) cb_buf_printf(&devices, "%s%s", i ? ", " : "", json_str(&dvs->items[i]));
            ntrain = tr ? tr->count : 0;
            if (mj.type == CB_JSON_OBJ) {
                runnable = cb_json_get(&mj, "command") != NULL;
                snprintf(library, sizeof library, "%s", json_str(cb_json_get(&mj, "library")));
                snprintf(reason, sizeof reason, "%s", json_str(cb_json_get(&mj, "reason")));
            }
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
        if (!runnable) cb_buf_printf(&check, "cannot be installed on this machine: %s", reason[0] ? reason : "no reason given");
        else {
            if (env_missing(d, name)) cb_buf_printf(&check, "its environment is missing here; ");
            if (ntrain && !ok_runs) cb_buf_printf(&check, "declares training, no run completed; ");
            if (declared_param && !ok_param) cb_buf_printf(&check, "declares parameters, no evaluation succeeded; ");
            if (declared_ser && !ok_ser) cb_buf_printf(&check, "declares serialization, no evaluation succeeded; ");
            if ((ok_param && !declared_param) || (ok_ser && !declared_ser)) cb_buf_printf(&check, "did more than it declares; ");
        }
        rtable_cell(&t, "%s", name); rtable_cell(&t, "%s", col_text(q, 1)); rtable_cell(&t, "%s", col_text(q, 2));
        rtable_cell(&t, "%s", library[0] ? library : "–");
        rtable_cell(&t, "%s", col_text(q, 3));
        if (runnable) {
            rtable_cell(&t, "%s", trains.data ? trains.data : "none"); rtable_cell(&t, "%s", modes.data ? modes.data : "");
            rtable_cell(&t, "%s", devices.data ? devices.data : "");
        } else
            for (int k = 0; k < 3; k++) rtable_cell(&t, "–");
        rtable_cell(&t, "%s", otrain.data);
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

/* Every measurement that gave no result, with the reason the harness stored.
 * Evaluations the manifests rule out (a format or model a binding does not
 * load) are many and say one thing per binding and format, so they are
 * grouped in a second table; a runtime refusal or failure keeps its row. */
static int declared_unsupported(const infer *x) { return !x->error && !strcmp(x->status, "unsupported"); }

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
        if (!strcmp(x->status, "ok") || declared_unsupported(x)) continue;
        rtable_cell(&t, "evaluation"); rtable_cell(&t, "%s", x->binding); rtable_cell(&t, "%s", x->model);
        rtable_cell(&t, "%s", x->device); rtable_cell(&t, "%d", x->run); rtable_cell(&t, "%s", x->trainer);
        rtable_cell(&t, "%s", x->format); rtable_cell(&t, "%s", x->status);
        rtable_cell(&t, "%s", x->error ? x->error : "no reason recorded");
    }
    cb_status st = rtable_emit(&t, html, md, dir);
    rtable_free(&t);
    return st;
}

/* Whether `model` is one of the space-separated names in `list`. */
static int in_word_list(const char *list, const char *model)
{
    size_t n = strlen(model);
    for (const char *p = list; (p = strstr(p, model)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0)) return 1;
    return 0;
}

/* The evaluations the manifests rule out, one row per binding, trainer,
 * format, device and reason, with the models and the number of evaluations.
 * Each evaluation's reason is read from its manifest once. */
static cb_status declared_unsupported_table(rdata *d, cb_out *html, cb_out *md, const char *dir)
{
    enum { WHY = 200 };
    char (*why)[WHY] = calloc(d->nin ? (size_t)d->nin : 1, WHY);
    char *done = calloc(d->nin ? (size_t)d->nin : 1, 1);
    if (!why || !done) {
        free(why);
        free(done);
        return cb_fail(CB_ERR_NOMEM, "report: out of memory");
    }
    for (int i = 0; i < d->nin; i++)
        if (declared_unsupported(&d->in[i])) unsupported_reason(d, &d->in[i], why[i], WHY);
    const char *h[] = {"binding", "trained by", "format", "device", "reason", "models", "evaluations"};
    rtable t;
    rtable_init(&t, "declared_unsupported", 7, h);
    for (int i = 0; i < d->nin; i++) {
        const infer *x = &d->in[i];
        if (done[i] || !declared_unsupported(x)) continue;
        char models[MAXN * (CB_NAME + 1)] = "";
        int count = 0;
        for (int j = i; j < d->nin; j++) {
            const infer *y = &d->in[j];
            if (done[j] || !declared_unsupported(y) || strcmp(y->binding, x->binding) || strcmp(y->trainer, x->trainer) ||
                strcmp(y->format, x->format) || strcmp(y->device, x->device) || strcmp(why[j], why[i]))
                continue;
            done[j] = 1;
            count++;
            if (!in_word_list(models, y->model) && strlen(models) + strlen(y->model) + 2 <= sizeof models)
                snprintf(models + strlen(models), sizeof models - strlen(models), "%s%s", *models ? " " : "", y->model);
        }
        rtable_cell(&t, "%s", x->binding); rtable_cell(&t, "%s", x->trainer); rtable_cell(&t, "%s", x->format);
        rtable_cell(&t, "%s", x->device); rtable_cell(&t, "%s", why[i]); rtable_cell(&t, "%s", models);
        rtable_cell(&t, "%d", count);
    }
    free(why);
    free(done);
    subsection(html, md, "Evaluations the manifests rule out",
               "A binding asked for a format or model its manifest does not list: planned, stored as unsupported, "
               "not run. Each one is also a row of tables/inference.csv.");
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
    cb_out_markf(md, "; every binding ran with %d threads.\n\n", nthreads);
    /* Which initial weights the trainings started from. */
    static const char shared_text[] = "shared: every binding's training of a model and run started from one file of "
                                      "initial weights (listed under Initial weights)";
    static const char own_text[] = "own: each binding initialised its models its own way from the run's seed, as the "
                                   "published study did";
    cb_out_lit(html, "<p id=\"init\">Initial weights: ");
    cb_out_text(html, d->init_shared ? shared_text : own_text);
    cb_out_lit(html, ".</p>\n");
    cb_out_lit(md, "Initial weights: ");
    cb_out_text(md, d->init_shared ? shared_text : own_text);
    cb_out_lit(md, ".\n\n## Tool versions\n\n");
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
    if (st == CB_OK) st = load_bindings(&d);
    if (st == CB_OK) organise(&d);
    cb_out *html = cb_out_new(CB_OUT_HTML), *md = cb_out_new(CB_OUT_MD);
    rtabs T;
    rtabs_init(&T, &d);
    if (st == CB_OK) {
        /* The page needs no script, so it allows none: whatever got past the
         * escaping could still not run. */
        cb_out_lit(html, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<meta http-equiv=\"Content-Security-Policy\" content=\"" CB_PAGE_CSP "\">"
                   "<title>crossbind study report</title>" STYLE "</head><body>\n");
        st = header(&d, html, md);
    }
    if (st == CB_OK) {
        section(html, md, "bindings", "Bindings and frameworks",
                "The study compares bindings of one framework, as the published study does: each framework has a "
                "default binding, and every other binding of it is compared with that one. A binding alone in its "
                "framework is compared with each framework's default binding under \"Across frameworks\".");
        st = bindings_table(&d, html, md, dir);
    }
    if (st == CB_OK && d.init_shared) {
        section(html, md, "initial-weights", "Initial weights (shared)",
                "Every binding's training of a model and run started from this one file (passed with --init): the "
                "initial weights of the source binding's own run, under PyTorch's parameter names and layouts.");
        st = init_table(&d, html, md, dir);
    }
    for (int g = 0; st == CB_OK && g < d.nsec; g++) st = framework_section(&d, g, &T, html, md);
    if (st == CB_OK) st = cross_section(&d, &T, html, md);
    if (st == CB_OK) st = rtabs_write(&T, dir);
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
                "Every training run and evaluation that gave no result, with the reason the study stored: first "
                "each failure and each evaluation a binding refused when it ran, then, grouped, the evaluations "
                "its manifest rules out (planned, stored as unsupported, not run).");
        st = failures_table(&d, html, md, dir);
        if (st == CB_OK) st = declared_unsupported_table(&d, html, md, dir);
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
    rtabs_free(&T);
    cb_out_free(html);
    cb_out_free(md);
    rdata_free(&d);
    return st;
}
