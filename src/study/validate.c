/* What a runner reports, checked against what the harness knows.
 *
 * The checks are tables: one row per key with its type, its range and,
 * for lists, its length, then a few rows of consistency between keys
 * (accuracy is correct / total; the last pass is the count reported).
 * The protocol page runners/README.md states the same rules. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "crossbind/formats.h"
#include "validate.h"

/* A bound taken from what the harness expects. */
typedef enum { B_ZERO, B_ONE, B_INF, B_TOTAL, B_NTRAIN, B_WALL, B_REPEAT, B_EPOCHS, B_INDEX } bound;

typedef enum {
    V_INT,     /* an integral number in [lo, hi] */
    V_NUM,     /* a finite number in [lo, hi] */
    V_INTS,    /* a list of `len` V_INT */
    V_NUMS,    /* a list of `len` V_NUM */
    V_OBJS,    /* a list of `len` objects, each checked by `sub` */
    V_OBJ,     /* an object checked by `sub` */
} vtype;

enum {
    REQUIRED = 1,
    NULLABLE = 2, /* null: undefined for this data (a metric with one class present, a diverged loss) */
    ABOVE_LO = 4, /* lo itself excluded: a time of 0 s was not measured */
};

typedef struct rule {
    const char *key;
    vtype type;
    int flags;
    bound lo, hi, len;
    const struct rule *sub;
} rule;

/* Times: a runner's clock runs inside its process's lifetime, and what it
 * prints is rounded; this much slack covers the rounding. */
#define WALL_SLACK_S 0.01

static double bound_value(bound b, const cb_runner_expect *ex, int index)
{
    switch (b) {
    case B_ZERO: return 0;
    case B_ONE: return 1;
    case B_INF: return INFINITY;
    case B_TOTAL: return (double)ex->total;
    case B_NTRAIN: return (double)ex->n_train;
    case B_WALL: return ex->wall_s + WALL_SLACK_S;
    case B_REPEAT: return ex->repeat;
    case B_EPOCHS: return ex->epochs;
    case B_INDEX: return index + 1;
    }
    return NAN;
}

static const char *bound_name(bound b)
{
    switch (b) {
    case B_TOTAL: return " (the test set's size)";
    case B_NTRAIN: return " (the training set's size)";
    case B_WALL: return " (the runner's lifetime)";
    case B_INDEX: return " (its place in the list)";
    default: return "";
    }
}

/* A short rendering of a JSON value for a message. */
static void show(const cb_json *v, char *out, size_t cap)
{
    switch (v->type) {
    case CB_JSON_NULL: snprintf(out, cap, "null"); break;
    case CB_JSON_BOOL: snprintf(out, cap, "%s", v->num ? "true" : "false"); break;
    case CB_JSON_NUM: snprintf(out, cap, "%.9g", v->num); break;
    case CB_JSON_STR: snprintf(out, cap, "the string \"%.40s%s\"", v->str, strlen(v->str) > 40 ? "..." : ""); break;
    case CB_JSON_ARR: snprintf(out, cap, "a list of %d", v->count); break;
    case CB_JSON_OBJ: snprintf(out, cap, "an object"); break;
    }
}

static int check_rules(const cb_json *o, const rule *rules, const char *where, const cb_runner_expect *ex,
                       int index, char *why, size_t cap);

/* One value against its rule; `name` is its full key ("epochs[2].test_acc"). */
static int check_value(const cb_json *v, const rule *r, const char *name, const cb_runner_expect *ex, int index,
                       char *why, size_t cap)
{
    char got[80];
    show(v, got, sizeof got);
    if (v->type == CB_JSON_NULL && (r->flags & NULLABLE)) return 0;
    if (r->type == V_INT || r->type == V_NUM) {
        double lo = bound_value(r->lo, ex, index), hi = bound_value(r->hi, ex, index);
        int ok = v->type == CB_JSON_NUM && isfinite(v->num) && v->num >= lo && v->num <= hi &&
                 !((r->flags & ABOVE_LO) && v->num == lo) && (r->type == V_NUM || v->num == floor(v->num));
        if (ok) return 0;
        const char *what = r->type == V_INT ? "an integer" : "a finite number";
        if (lo == hi)
            snprintf(why, cap, "\"%s\" is %s: expected %s equal to %.9g%s", name, got, what, lo, bound_name(r->lo));
        else
            snprintf(why, cap, "\"%s\" is %s: expected %s in %s%.9g, %.9g]%s%s", name, got, what,
                     r->flags & ABOVE_LO ? "(" : "[", lo, hi, bound_name(r->hi), r->flags & NULLABLE ? " or null" : "");
        return -1;
    }
    if (r->type == V_OBJ) {
        if (v->type != CB_JSON_OBJ) { snprintf(why, cap, "\"%s\" is %s: expected an object", name, got); return -1; }
        return check_rules(v, r->sub, name, ex, index, why, cap);
    }
    /* A list: its length, then each item. */
    int len = (int)bound_value(r->len, ex, index);
    if (v->type != CB_JSON_ARR || v->count != len) {
        snprintf(why, cap, "\"%s\" is %s: expected a list of %d", name, got, len);
        return -1;
    }
    rule item = *r;
    item.type = r->type == V_INTS ? V_INT : r->type == V_NUMS ? V_NUM : V_OBJ;
    for (int i = 0; i < v->count; i++) {
        char sub[160];
        snprintf(sub, sizeof sub, "%s[%d]", name, i);
        if (check_value(&v->items[i], &item, sub, ex, i, why, cap)) return -1;
    }
    return 0;
}

static int check_rules(const cb_json *o, const rule *rules, const char *where, const cb_runner_expect *ex,
                       int index, char *why, size_t cap)
{
    for (const rule *r = rules; r->key; r++) {
        char name[160];
        snprintf(name, sizeof name, "%s%s%s", where, where[0] ? "." : "", r->key);
        const cb_json *v = cb_json_get(o, r->key);
        if (!v) {
            if (!(r->flags & REQUIRED)) continue;
            snprintf(why, cap, "no \"%s\"", name);
            return -1;
        }
        if (check_value(v, r, name, ex, index, why, cap)) return -1;
    }
    return 0;
}

/* ---- consistency between keys ---- */

static double num_of(const cb_json *o, const char *key)
{
    const cb_json *v = cb_json_get(o, key);
    return v && v->type == CB_JSON_NUM ? v->num : NAN;
}

/* A ratio printed with 9 or more significant digits. */
static int same_ratio(double ratio, double count, double total)
{
    return total > 0 ? fabs(ratio - count / total) <= 1e-6 : 1;
}

typedef int (*consistency)(const cb_json *o, const cb_runner_expect *ex, char *why, size_t cap);

static int eval_accuracy(const cb_json *o, const cb_runner_expect *ex, char *why, size_t cap)
{
    (void)ex;
    double acc = num_of(o, "accuracy"), c = num_of(o, "correct"), t = num_of(o, "total");
    if (isnan(acc) || same_ratio(acc, c, t)) return 0;
    snprintf(why, cap, "\"accuracy\" is %.9g but \"correct\" / \"total\" is %.9g / %.9g", acc, c, t);
    return -1;
}

/* The logits and `correct` come from the last timed pass: its count must be
 * `correct`. Earlier passes may differ (that is what "stable" measures). */
static int eval_last_pass(const cb_json *o, const cb_runner_expect *ex, char *why, size_t cap)
{
    (void)ex;
    const cb_json *p = cb_json_get(o, "correct_per_pass");
    double c = num_of(o, "correct"), last = p->items[p->count - 1].num;
    if (last == c) return 0;
    snprintf(why, cap, "\"correct_per_pass\"[%d] (the last pass) is %.9g but \"correct\" is %.9g", p->count - 1,
             last, c);
    return -1;
}

static int eval_times(const cb_json *o, const cb_runner_expect *ex, char *why, size_t cap)
{
    const cb_json *t = cb_json_get(o, "times_s");
    double sum = 0;
    for (int i = 0; i < t->count; i++) sum += t->items[i].num;
    if (sum > ex->wall_s + WALL_SLACK_S) {
        snprintf(why, cap, "\"times_s\" add up to %.6g s, longer than the runner ran (%.6g s)", sum, ex->wall_s);
        return -1;
    }
    double mean = num_of(o, "mean_time_s");
    if (!isnan(mean) && fabs(mean - sum / t->count) > 1e-6 + 1e-4 * (sum / t->count)) {
        snprintf(why, cap, "\"mean_time_s\" is %.9g but \"times_s\" average %.9g", mean, sum / t->count);
        return -1;
    }
    return 0;
}

static int run_accuracy(const cb_json *o, const cb_runner_expect *ex, char *why, size_t cap)
{
    (void)ex;
    double acc = num_of(o, "test_accuracy"), c = num_of(o, "test_correct"), t = num_of(o, "n_test");
    if (same_ratio(acc, c, t)) return 0;
    snprintf(why, cap, "\"test_accuracy\" is %.9g but \"test_correct\" / \"n_test\" is %.9g / %.9g", acc, c, t);
    return -1;
}

static int run_times(const cb_json *o, const cb_runner_expect *ex, char *why, size_t cap)
{
    const cb_json *e = cb_json_get(o, "epochs");
    double sum = 0;
    for (int i = 0; i < e->count; i++) sum += num_of(&e->items[i], "train_time_s");
    double train = num_of(o, "training_time_s"), total = num_of(o, "total_time_s");
    if (sum > ex->wall_s + WALL_SLACK_S) {
        snprintf(why, cap, "the epochs' \"train_time_s\" add up to %.6g s, longer than the runner ran (%.6g s)", sum,
                 ex->wall_s);
        return -1;
    }
    if (!isnan(total) && train > total + WALL_SLACK_S) {
        snprintf(why, cap, "\"training_time_s\" (%.9g) is longer than \"total_time_s\" (%.9g)", train, total);
        return -1;
    }
    return 0;
}

/* ---- the tables ---- */

static const rule eval_rules[] = {
    {"total", V_INT, REQUIRED, B_TOTAL, B_TOTAL, 0, NULL},
    {"correct", V_INT, REQUIRED, B_ZERO, B_TOTAL, 0, NULL},
    {"correct_per_pass", V_INTS, REQUIRED, B_ZERO, B_TOTAL, B_REPEAT, NULL},
    {"times_s", V_NUMS, REQUIRED | ABOVE_LO, B_ZERO, B_WALL, B_REPEAT, NULL},
    {"mean_time_s", V_NUM, ABOVE_LO, B_ZERO, B_WALL, 0, NULL},
    {"accuracy", V_NUM, NULLABLE, B_ZERO, B_ONE, 0, NULL},
    {"f1_macro", V_NUM, NULLABLE, B_ZERO, B_ONE, 0, NULL},
    {"auc_macro", V_NUM, NULLABLE, B_ZERO, B_ONE, 0, NULL},
    {"loss", V_NUM, NULLABLE, B_ZERO, B_INF, 0, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL},
};
static const consistency eval_checks[] = {eval_accuracy, eval_last_pass, eval_times, NULL};

static const rule epoch_rules[] = {
    {"epoch", V_INT, REQUIRED, B_INDEX, B_INDEX, 0, NULL},
    {"train_acc", V_NUM, REQUIRED, B_ZERO, B_ONE, 0, NULL},
    {"test_acc", V_NUM, REQUIRED, B_ZERO, B_ONE, 0, NULL},
    {"train_loss", V_NUM, NULLABLE, B_ZERO, B_INF, 0, NULL},
    {"test_loss", V_NUM, NULLABLE, B_ZERO, B_INF, 0, NULL},
    {"train_time_s", V_NUM, REQUIRED | ABOVE_LO, B_ZERO, B_WALL, 0, NULL},
    {"eval_time_s", V_NUM, 0, B_ZERO, B_WALL, 0, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL},
};
static const rule subactivity_rules[] = {
    {"load", V_NUM, REQUIRED, B_ZERO, B_WALL, 0, NULL},
    {"forward", V_NUM, REQUIRED, B_ZERO, B_WALL, 0, NULL},
    {"backward", V_NUM, REQUIRED, B_ZERO, B_WALL, 0, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL},
};
static const rule run_rules[] = {
    {"n_train", V_INT, REQUIRED, B_NTRAIN, B_NTRAIN, 0, NULL},
    {"n_test", V_INT, REQUIRED, B_TOTAL, B_TOTAL, 0, NULL},
    {"epochs", V_OBJS, REQUIRED, 0, 0, B_EPOCHS, epoch_rules},
    {"test_correct", V_INT, REQUIRED, B_ZERO, B_TOTAL, 0, NULL},
    {"test_accuracy", V_NUM, REQUIRED, B_ZERO, B_ONE, 0, NULL},
    {"f1_macro", V_NUM, NULLABLE, B_ZERO, B_ONE, 0, NULL},
    {"auc_macro", V_NUM, NULLABLE, B_ZERO, B_ONE, 0, NULL},
    {"training_time_s", V_NUM, REQUIRED | ABOVE_LO, B_ZERO, B_WALL, 0, NULL},
    {"eval_time_s", V_NUM, 0, B_ZERO, B_WALL, 0, NULL},
    {"total_time_s", V_NUM, ABOVE_LO, B_ZERO, B_WALL, 0, NULL},
    {"subactivities_s", V_OBJ, 0, 0, 0, 0, subactivity_rules},
    {NULL, 0, 0, 0, 0, 0, NULL},
};
static const consistency run_checks[] = {run_accuracy, run_times, NULL};

static int validate(const cb_json *o, const rule *rules, const consistency *checks, const cb_runner_expect *ex,
                    char *why, size_t cap)
{
    if (o->type != CB_JSON_OBJ) { snprintf(why, cap, "not a JSON object"); return -1; }
    if (check_rules(o, rules, "", ex, 0, why, cap)) return -1;
    for (const consistency *c = checks; *c; c++)
        if ((*c)(o, ex, why, cap)) return -1;
    return 0;
}

int cb_validate_eval(const cb_json *res, const cb_runner_expect *ex, char *why, size_t cap)
{
    return validate(res, eval_rules, eval_checks, ex, why, cap);
}

int cb_validate_run(const cb_json *run, const cb_runner_expect *ex, char *why, size_t cap)
{
    return validate(run, run_rules, run_checks, ex, why, cap);
}

/* A .npy header is at most 64 KiB in format 1 and, in practice, in 2 and 3. */
#define NPY_HEADER_MAX (64 * 1024 + 16)

int cb_validate_logits(const char *path, const cb_runner_expect *ex, int64_t *nonfinite, char *why, size_t cap)
{
    *nonfinite = 0;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, cap, "the runner wrote no logits file (%s)", path);
        return -1;
    }
    /* Sizes first, so that a runner's huge file is never read in. */
    double want = (double)ex->total * (double)ex->classes * 4.0;
    if ((double)st.st_size > want + NPY_HEADER_MAX || (double)st.st_size < want) {
        snprintf(why, cap, "the logits file %s has %lld bytes; float32 [%lld, %lld] needs %.0f plus a header", path,
                 (long long)st.st_size, (long long)ex->total, (long long)ex->classes, want);
        return -1;
    }
    cb_tensor t = {0};
    if (cb_npy_read(path, &t) != CB_OK) {
        snprintf(why, cap, "the logits file is not a readable .npy: %s", cb_last_error());
        return -1;
    }
    int ok = t.dtype == CB_F32 && t.ndim == 2 && t.shape[0] == ex->total && t.shape[1] == ex->classes;
    if (!ok) {
        char shape[96] = "";
        for (int i = 0, k = 0; i < t.ndim && k < (int)sizeof shape - 24; i++)
            k += snprintf(shape + k, sizeof shape - (size_t)k, "%s%lld", i ? ", " : "", (long long)t.shape[i]);
        snprintf(why, cap, "the logits file holds %s [%s]; expected float32 [%lld, %lld]",
                 t.dtype == CB_F32 ? "float32" : "another type than float32", shape, (long long)ex->total,
                 (long long)ex->classes);
    } else {
        const float *x = t.data;
        for (int64_t i = 0; i < t.shape[0] * t.shape[1]; i++) *nonfinite += !isfinite(x[i]);
    }
    cb_tensor_free(&t);
    return ok ? 0 : -1;
}

int cb_valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > CB_NAME_MAX || s[0] == '.' || s[0] == '-') return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-'))
            return 0;
    }
    return 1;
}
