/* The experiment matrix and its execution (protocol sections 3 and 4).
 *
 * Tasks, in order: for each model, every training run (binding x run x
 * device: RQ1, RQ3), then every evaluation of the trained models of the
 * reference binding and of every other framework's default binding by the
 * bindings that evaluate them (evaluates_models_of), in every format each
 * loads (RQ2, RQ4).
 * A task already complete in the store is skipped; a failed one is tried
 * again. Runners are child processes with the common command line of
 * runners/README.md; whatever they print or fail to print is checked
 * before anything is stored. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "../core/file.h"
#include "../core/json.h"
#include "../core/sha256.h"
#include "../core/clock.h"
#include "crossbind/data.h"
#include "crossbind/formats.h"
#include "crossbind/rng.h"
#include "crossbind/model.h"
#include "lock.h"
#include "paths.h"
#include "proc.h"
#include "study.h"
#include "validate.h"

typedef enum { TASK_TRAIN, TASK_EVAL } task_kind;

typedef struct {
    task_kind kind;
    const cb_runner *binding;
    int model;                /* index into the configuration */
    int run;                  /* 1-based */
    const char *device;
    const cb_runner *trainer; /* TASK_EVAL: who trained the model */
    const char *format;       /* TASK_EVAL */
} task;

typedef struct {
    const cb_study_config *c;
    const cb_runners *runners;
    cb_store *store;
    const cb_study_options *opt;
    int64_t id;
    task *tasks;
    int ntasks, cap;
    double *done_s;           /* per task: seconds it took this time, or -1 */
    double t_start;
    int failures;
    int64_t n_train[CB_MAX_LIST], n_test[CB_MAX_LIST], classes[CB_MAX_LIST]; /* per model, -1 until known */
    char unavailable[CB_MAX_LIST][1000];  /* per configured binding: why it cannot run ("" if it can) */
    const cb_runner *init_source[CB_MAX_LIST]; /* "init": "shared": per model, the binding whose initial weights all start from */
} study;

/* A runner's answer that breaks the protocol (runners/README.md): kept
 * apart from a runner that failed, and never stored as a result. */
#define MALFORMED "malformed output"
/* A runner's exit status for "this binding cannot evaluate this file" (runners/README.md). */
#define RUNNER_EXIT_UNSUPPORTED 3

static void utc_now(char *out, size_t cap)
{
    time_t t = time(NULL);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
}


static void fmt_duration(double s, char *out, size_t cap)
{
    if (s < 0 || !isfinite(s)) snprintf(out, cap, "?");
    else if (s < 60) snprintf(out, cap, "%.0fs", s);
    else if (s < 3600) snprintf(out, cap, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(out, cap, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

/* The task's directory relative to the work directory (rel) and in full
 * (out); names that could leave the work directory are refused. */
static cb_status task_dir(const study *s, const cb_runner *trainer, int model, int run, const char *device, char *out,
                          size_t cap, char *rel, size_t rel_cap)
{
    snprintf(rel, rel_cap, "train/%s/%s/run%d-%s", trainer->name, s->c->models[model], run, device);
    return cb_work_path(s->opt->work_dir, rel, out, cap);
}

static int eval_batch(const study *s, int model) { return !strcmp(s->c->data_format[model], "imdb") ? 256 : 128; }

static const cb_data_source *data_of(const study *s, int model)
{
    for (int f = 0; f < 3; f++) if (!strcmp(s->c->data[f].format, s->c->data_format[model])) return &s->c->data[f];
    return &s->c->data[0];
}

/* What a runner must report for a model, known from the data and the model
 * themselves: set sizes (after the limits), outputs per sample. */
static cb_status expect_of(study *s, int m, int train, double wall_s, cb_runner_expect *ex)
{
    const cb_study_config *c = s->c;
    for (int split = 0; split < 1 + train; split++) {
        int64_t *n = split ? &s->n_train[m] : &s->n_test[m];
        if (*n >= 0) continue;
        cb_dataset d;
        cb_status st = cb_dataset_load(c->data_format[m], data_of(s, m)->path, split,
                                       split ? c->limit_train[m] : c->limit_test[m], &d);
        if (st != CB_OK)
            return cb_fail(st, "the harness cannot read the %s set to check the runner's answer: %s",
                           split ? "training" : "test", cb_last_error());
        *n = d.n;
        cb_dataset_free(&d);
    }
    if (s->classes[m] < 0) {
        cb_model *model;
        cb_status st = cb_model_create(c->models[m], &model);
        if (st != CB_OK) return st;
        s->classes[m] = model->classes;
        cb_model_free(model);
    }
    *ex = (cb_runner_expect){.total = s->n_test[m], .n_train = s->n_train[m], .classes = s->classes[m],
                             .repeat = c->repeat, .epochs = c->epochs[m], .wall_s = wall_s};
    return CB_OK;
}

/* ---- the runner's answers ---- */

/* The last line of a file (an error message's usual place, and where a
 * runner prints its answer), trimmed. Only the file's last `cap` bytes
 * are read, so a runner's huge output costs nothing; *whole (may be NULL)
 * says whether the line fitted. */
static void last_line(const char *path, char *out, size_t cap, int *whole)
{
    out[0] = 0;
    if (whole) *whole = 1;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    long from = size > (long)cap - 1 ? size - ((long)cap - 1) : 0;
    size_t len = size >= 0 && fseek(f, from, SEEK_SET) == 0 ? fread(out, 1, cap - 1, f) : 0;
    fclose(f);
    while (len && (out[len - 1] == '\n' || out[len - 1] == '\r' || out[len - 1] == ' ')) len--;
    size_t start = len;
    while (start && out[start - 1] != '\n') start--;
    if (whole) *whole = start > 0 || from == 0;
    memmove(out, out + start, len - start);
    out[len - start] = 0;
    for (char *p = out; *p; p++) if ((unsigned char)*p < 32) *p = ' ';
}

static void describe_failure(const cb_proc_result *r, const char *stderr_path, double timeout_s, char *out, size_t cap)
{
    char tail[400];
    last_line(stderr_path, tail, sizeof tail, NULL);
    if (r->timed_out) snprintf(out, cap, "timed out after %g s (killed)%s%s", timeout_s, tail[0] ? ": " : "", tail);
    else if (r->signal == SIGXFSZ)
        snprintf(out, cap, "the runner wrote a file past the %llu GiB limit (killed by SIGXFSZ)%s%s",
                 CB_PROC_FILE_LIMIT >> 30, tail[0] ? ": " : "", tail);
    else if (r->signal) snprintf(out, cap, "the runner crashed (signal %d)%s%s", r->signal, tail[0] ? ": " : "", tail);
    else snprintf(out, cap, "the runner failed (exit status %d)%s%s", r->exit_code, tail[0] ? ": " : "",
                  tail[0] ? tail : "");
}

static double num(const cb_json *o, const char *key)
{
    const cb_json *v = o ? cb_json_get(o, key) : NULL;
    return v && v->type == CB_JSON_NUM ? v->num : NAN;
}

/* ---- training ---- */

/* The study's shared initial weights of one model and run ("init": "shared"). */
typedef struct {
    char path[1100], sha256[65];
    char source[CB_NAME], device[CB_NAME];
    int64_t bytes;
} init_rec;

static cb_status store_train_init(study *s, const task *t, const char *status, const char *error, const cb_json *run,
                                  double wall, const char *dir, const init_rec *init);

static cb_status store_train(study *s, const task *t, const char *status, const char *error, const cb_json *run,
                             double wall, const char *dir)
{
    return store_train_init(s, t, status, error, run, wall, dir, NULL);
}

/* A training run's row and epochs, and with `init` the shared initial
 * weights it provided, in one transaction. */
static cb_status store_train_init(study *s, const task *t, const char *status, const char *error, const cb_json *run,
                                  double wall, const char *dir, const init_rec *init)
{
    const cb_study_config *c = s->c;
    const char *model = c->models[t->model];
    char when[32];
    utc_now(when, sizeof when);
    cb_status st = cb_store_begin(s->store);
    if (st != CB_OK) return st;
    st = cb_store_exec(s->store, "DELETE FROM epoch WHERE study_id=? AND binding=? AND model=? AND run=? AND device=?",
                       "ittit", s->id, t->binding->name, model, (int64_t)t->run, t->device);
    const cb_json *sub = run ? cb_json_get(run, "subactivities_s") : NULL;
    const cb_json *epochs = run ? cb_json_get(run, "epochs") : NULL;
    int nep = epochs && epochs->type == CB_JSON_ARR ? epochs->count : 0;
    if (st == CB_OK)
        st = cb_store_exec(s->store,
                           "INSERT OR REPLACE INTO train_run(study_id, binding, model, run, device, seed, status, error,"
                           " epochs, n_train, n_test, training_time_s, eval_time_s, total_time_s, test_accuracy,"
                           " test_correct, f1_macro, auc_macro, load_s, forward_s, backward_s, wall_s, dir, finished)"
                           " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           "ittitittidddddddddddddtt", s->id, t->binding->name, model, (int64_t)t->run, t->device,
                           (int64_t)cb_protocol_seeds[t->run - 1], status, error, (int64_t)nep,
                           num(run, "n_train"), num(run, "n_test"), num(run, "training_time_s"),
                           num(run, "eval_time_s"), num(run, "total_time_s"), num(run, "test_accuracy"),
                           num(run, "test_correct"), num(run, "f1_macro"), num(run, "auc_macro"),
                           num(sub, "load"), num(sub, "forward"), num(sub, "backward"), wall, dir, when);
    for (int e = 0; st == CB_OK && e < nep; e++) {
        const cb_json *ep = &epochs->items[e];
        st = cb_store_exec(s->store,
                           "INSERT INTO epoch(study_id, binding, model, run, device, epoch, train_acc, test_acc,"
                           " train_loss, test_loss, train_time_s, eval_time_s) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
                           "ittitidddddd", s->id, t->binding->name, model, (int64_t)t->run, t->device,
                           (int64_t)(isnan(num(ep, "epoch")) ? e + 1 : num(ep, "epoch")), num(ep, "train_acc"),
                           num(ep, "test_acc"), num(ep, "train_loss"), num(ep, "test_loss"), num(ep, "train_time_s"),
                           num(ep, "eval_time_s"));
    }
    if (st == CB_OK && init)
        st = cb_store_exec(s->store, "INSERT INTO init_weights(study_id, model, run, source, device, path, sha256, bytes,"
                           " created) VALUES(?,?,?,?,?,?,?,?,?)", "itittttit", s->id, model, (int64_t)t->run,
                           init->source, init->device, init->path, init->sha256, init->bytes, when);
    if (st == CB_OK) st = cb_store_commit(s->store);
    if (st != CB_OK) cb_store_rollback(s->store);
    return st;
}

/* The stored shared initial weights of (model, run); *have = 0 when none yet. */
static cb_status init_lookup(study *s, int model, int run, init_rec *rec, int *have)
{
    *have = 0;
    memset(rec, 0, sizeof *rec);
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(cb_store_db(s->store), "SELECT path, sha256, source, device, bytes FROM init_weights WHERE"
                           " study_id=? AND model=? AND run=?", -1, &q, NULL) != SQLITE_OK)
        return cb_fail(CB_ERR_IO, "%s: reading the table init_weights: %s", cb_store_path(s->store),
                       sqlite3_errmsg(cb_store_db(s->store)));
    sqlite3_bind_int64(q, 1, s->id);
    sqlite3_bind_text(q, 2, s->c->models[model], -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 3, run);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        const unsigned char *v[4];
        for (int i = 0; i < 4; i++) v[i] = sqlite3_column_text(q, i);
        snprintf(rec->path, sizeof rec->path, "%s", v[0] ? (const char *)v[0] : "");
        snprintf(rec->sha256, sizeof rec->sha256, "%s", v[1] ? (const char *)v[1] : "");
        snprintf(rec->source, sizeof rec->source, "%s", v[2] ? (const char *)v[2] : "");
        snprintf(rec->device, sizeof rec->device, "%s", v[3] ? (const char *)v[3] : "");
        rec->bytes = sqlite3_column_int64(q, 4);
        *have = 1;
    }
    cb_status st = rc == SQLITE_ROW || rc == SQLITE_DONE ? CB_OK
                   : cb_fail(CB_ERR_IO, "%s: reading the table init_weights: %s", cb_store_path(s->store),
                             sqlite3_errmsg(cb_store_db(s->store)));
    sqlite3_finalize(q);
    return st;
}

/* Initial weights are at most this large (VGG-16's are 60 MB). */
#define INIT_MAX_BYTES ((size_t)1 << 31)

/* 0 when the stored shared initial weights are still the file they were;
 * otherwise why not, in `why`. */
static int init_check(const init_rec *rec, char *why, size_t cap)
{
    unsigned char *data = NULL;
    size_t len = 0;
    if (cb_read_file(rec->path, INIT_MAX_BYTES, &data, &len) != CB_OK) {
        snprintf(why, cap, "the study's shared initial weights cannot be read (%s); restore the file or give the "
                 "study a new --store", cb_last_error());
        return -1;
    }
    char hex[65];
    cb_sha256_hex(data, len, hex);
    free(data);
    if (strcmp(hex, rec->sha256)) {
        snprintf(why, cap, "the study's shared initial weights %s changed since they were stored (SHA-256 %.12s..., "
                 "stored %.12s...); restore the file or give the study a new --store", rec->path, hex, rec->sha256);
        return -1;
    }
    return 0;
}

/* After the shared-init source's run: its OUT/init.safetensors must hold
 * exactly the model's parameters under PyTorch's names and shapes (loaded
 * strictly, by name); it is copied to WORK/init/<model>/run<I>.safetensors
 * with its digest. 0 on success, else why not. */
static int init_take(study *s, const task *t, const char *dir, init_rec *rec, char *why, size_t cap)
{
    const char *model = s->c->models[t->model];
    char src[1100], rel[200];
    snprintf(src, sizeof src, "%s/init.safetensors", dir);
    if (access(src, R_OK) != 0) {
        snprintf(why, cap, "the run wrote no init.safetensors, which \"init\": \"shared\" needs from %s (the binding "
                 "whose initial weights every binding of %s starts from)", t->binding->name, model);
        return -1;
    }
    cb_model *m = NULL;
    cb_load_info info;
    memset(&info, 0, sizeof info);
    if (cb_model_load_ex(model, src, 0, 1, &m, &info) != CB_OK || info.serialized || info.match != CB_MATCH_BY_NAME ||
        info.kind != CB_FILE_SAFETENSORS) {
        snprintf(why, cap, "its init.safetensors is not %s's parameters under PyTorch's names and shapes: %s", model,
                 m ? "they match by order only, not by name" : cb_last_error());
        cb_model_free(m);
        return -1;
    }
    cb_model_free(m);
    unsigned char *data = NULL;
    size_t len = 0;
    if (cb_read_file(src, INIT_MAX_BYTES, &data, &len) != CB_OK) {
        snprintf(why, cap, "reading its init.safetensors: %s", cb_last_error());
        return -1;
    }
    memset(rec, 0, sizeof *rec);
    cb_sha256_hex(data, len, rec->sha256);
    rec->bytes = (int64_t)len;
    snprintf(rec->source, sizeof rec->source, "%s", t->binding->name);
    snprintf(rec->device, sizeof rec->device, "%s", t->device);
    snprintf(rel, sizeof rel, "init/%s/run%d.safetensors", model, t->run);
    char parent[1100];
    cb_status st = cb_work_path(s->opt->work_dir, rel, rec->path, sizeof rec->path);
    if (st == CB_OK) {
        snprintf(parent, sizeof parent, "%s", rec->path);
        *strrchr(parent, '/') = 0;
        st = cb_mkdirs(parent);
    }
    if (st == CB_OK) st = cb_write_file_atomic(rec->path, data, len);
    free(data);
    if (st != CB_OK) {
        snprintf(why, cap, "keeping its init.safetensors as the shared initial weights: %s", cb_last_error());
        return -1;
    }
    return 0;
}

static cb_status do_train(study *s, const task *t, int *ok)
{
    const cb_study_config *c = s->c;
    int m = t->model;
    char dir[1024], rel[300], out_path[1100], err_path[1100], buf[8][32];
    *ok = 0;
    /* "init": "shared": the stored file, or this run makes it (its binding is the source). */
    init_rec init;
    int have_init = 0, make_init = 0;
    if (c->init_shared) {
        cb_status ist = init_lookup(s, m, t->run, &init, &have_init);
        if (ist != CB_OK) return ist;
        char why[1400] = "";
        if (have_init) init_check(&init, why, sizeof why);
        else if (t->binding == s->init_source[m]) make_init = 1;
        else if (s->init_source[m])
            snprintf(why, sizeof why, "no shared initial weights for %s run %d yet: they come from %s's training of "
                     "that run (it trains first), which has not completed (see its row)", c->models[m], t->run,
                     s->init_source[m]->name);
        else snprintf(why, sizeof why, "no binding that can run here trains %s, so it has no shared initial weights",
                      c->models[m]);
        if (why[0]) {
            task_dir(s, t->binding, m, t->run, t->device, dir, sizeof dir, rel, sizeof rel);
            if (!s->opt->quiet) fprintf(stderr, "[study]   failed: %s\n", why);
            return store_train(s, t, "failed", why, NULL, 0, dir);
        }
    }
    cb_status made = task_dir(s, t->binding, m, t->run, t->device, dir, sizeof dir, rel, sizeof rel);
    /* A half-written earlier attempt goes first: nothing of it may pass for this run's answer. */
    if (made == CB_OK) made = cb_remove_tree(s->opt->work_dir, rel);
    if (made != CB_OK) {
        char e[700];
        snprintf(e, sizeof e, "%s", cb_last_error());
        if (!s->opt->quiet) fprintf(stderr, "[study]   failed: %s\n", e);
        return store_train(s, t, "failed", e, NULL, 0, dir);
    }
    made = cb_mkdirs(dir);
    if (made != CB_OK) return made;
    snprintf(out_path, sizeof out_path, "%s/runner.stdout", dir);
    snprintf(err_path, sizeof err_path, "%s/runner.stderr", dir);
    char *argv[48];
    int n = 0;
    for (int i = 0; i < t->binding->ncommand; i++) argv[n++] = t->binding->command[i];
    argv[n++] = "train";
    argv[n++] = (char *)c->models[m];
    snprintf(buf[0], 32, "%d", t->run);
    snprintf(buf[1], 32, "%d", c->epochs[m]);
    snprintf(buf[2], 32, "%d", c->threads);
    argv[n++] = "--run"; argv[n++] = buf[0];
    argv[n++] = "--epochs"; argv[n++] = buf[1];
    argv[n++] = "--threads"; argv[n++] = buf[2];
    argv[n++] = "--data"; argv[n++] = (char *)data_of(s, m)->path;
    argv[n++] = "--out"; argv[n++] = dir;
    argv[n++] = "--quiet";
    if (c->limit_train[m]) { snprintf(buf[3], 32, "%ld", c->limit_train[m]); argv[n++] = "--limit-train"; argv[n++] = buf[3]; }
    if (c->limit_test[m]) { snprintf(buf[4], 32, "%ld", c->limit_test[m]); argv[n++] = "--limit-test"; argv[n++] = buf[4]; }
    if (c->subactivities) argv[n++] = "--subactivities";
    if (!strcmp(c->optimizer, "momentum") && strcmp(c->data_format[m], "imdb")) {
        /* The original's momentum variant: LeNets lr 0.05 momentum 0.9; VGG-16 lr 0.1, momentum 0.9, decay 1e-4. */
        argv[n++] = "--momentum"; argv[n++] = "0.9";
        if (!strcmp(c->models[m], "vgg16")) { argv[n++] = "--lr"; argv[n++] = "0.1"; argv[n++] = "--weight-decay"; argv[n++] = "1e-4"; }
    }
    if (strcmp(t->device, "cpu")) { argv[n++] = "--device"; argv[n++] = (char *)t->device; }
    if (have_init) { argv[n++] = "--init"; argv[n++] = init.path; }
    argv[n] = NULL;

    cb_proc_result r;
    cb_status st = cb_proc_run(argv, out_path, err_path, c->timeout_s, &r);
    char error[1400] = "";
    int malformed = 0;
    if (st != CB_OK) snprintf(error, sizeof error, "%s", cb_last_error());
    if (r.interrupted) return CB_OK; /* nothing stored: the task is redone on resume */
    char run_path[1100];
    snprintf(run_path, sizeof run_path, "%s/run.json", dir);
    cb_json run = {0};
    int have_run = 0;
    if (access(run_path, F_OK) == 0) {
        unsigned char *text = NULL;
        size_t len;
        cb_status ps = cb_read_file(run_path, 1 << 24, &text, &len);
        if (ps == CB_OK) ps = cb_json_parse((const char *)text, len, run_path, &run);
        free(text);
        if (ps == CB_OK && run.type == CB_JSON_OBJ) have_run = 1;
        else {
            if (ps == CB_OK) cb_json_free(&run);
            if (!error[0]) {
                snprintf(error, sizeof error, MALFORMED " from the runner: run.json: %s",
                         ps == CB_OK ? "not a JSON object" : cb_last_error());
                malformed = 1;
            }
        }
    }
    const cb_json *stv = have_run ? cb_json_get(&run, "status") : NULL;
    int complete = have_run && stv && stv->type == CB_JSON_STR && !strcmp(stv->str, "complete");
    if (!error[0] && !(r.exited && r.exit_code == 0)) describe_failure(&r, err_path, c->timeout_s, error, sizeof error);
    if (!error[0] && !have_run) snprintf(error, sizeof error, "the runner wrote no run.json");
    if (!error[0] && !complete) snprintf(error, sizeof error, "the runner's run.json is not complete");
    if (!error[0]) {
        cb_runner_expect ex;
        char why[600];
        if (expect_of(s, m, 1, r.wall_s, &ex) != CB_OK) snprintf(error, sizeof error, "%s", cb_last_error());
        else if (cb_validate_run(&run, &ex, why, sizeof why)) {
            snprintf(error, sizeof error, MALFORMED " from the runner: run.json: %s", why);
            malformed = 1;
        }
    }
    if (!error[0]) {
        char native[1100];
        snprintf(native, sizeof native, "%s/final.%s", dir, t->binding->native);
        if (access(native, R_OK) != 0) snprintf(error, sizeof error, "the runner saved no final.%s", t->binding->native);
    }
    if (!error[0] && make_init && init_take(s, t, dir, &init, error, sizeof error) == 0 && !s->opt->quiet)
        fprintf(stderr, "[study]   shared initial weights of %s run %d: %s (SHA-256 %s)\n", c->models[m], t->run,
                init.path, init.sha256);
    *ok = !error[0];
    /* A failed run keeps the epochs it measured; a malformed answer keeps nothing. */
    st = store_train_init(s, t, *ok ? "complete" : malformed ? MALFORMED : "failed", *ok ? NULL : error,
                          have_run && !malformed ? &run : NULL, r.wall_s, dir, *ok && make_init ? &init : NULL);
    if (have_run) cb_json_free(&run);
    if (!*ok && !s->opt->quiet) fprintf(stderr, "[study]   failed: %s (log: %s)\n", error, err_path);
    return st;
}

/* ---- evaluation ---- */

static cb_status store_eval(study *s, const task *t, const char *status, const char *error, const cb_json *res,
                            int64_t ref_correct, double agreement, double max_diff, double wall)
{
    const char *model = s->c->models[t->model];
    char when[32];
    utc_now(when, sizeof when);
    const cb_json *times = res ? cb_json_get(res, "times_s") : NULL;
    const cb_json *counts = res ? cb_json_get(res, "correct_per_pass") : NULL;
    int np = times && times->type == CB_JSON_ARR ? times->count : 0;
    int stable = -1;
    if (counts && counts->type == CB_JSON_ARR && counts->count > 0) {
        stable = 1;
        for (int i = 1; i < counts->count; i++) stable &= counts->items[i].num == counts->items[0].num;
    }
    cb_status st = cb_store_begin(s->store);
    if (st != CB_OK) return st;
    st = cb_store_exec(s->store, "DELETE FROM inference_pass WHERE study_id=? AND trainer=? AND binding=? AND model=?"
                       " AND run=? AND device=? AND format=?", "itttitt", s->id, t->trainer->name, t->binding->name,
                       model, (int64_t)t->run, t->device, t->format);
    if (st == CB_OK)
        st = cb_store_exec(s->store,
                           "INSERT OR REPLACE INTO inference(study_id, trainer, binding, model, run, device, format,"
                           " load_mode, status, error, correct, total, reference_correct, accuracy, f1_macro, auc_macro,"
                           " mean_time_s, stable, label_agreement, max_abs_logit_diff, wall_s, finished)"
                           " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           "itttitttttdddddddddddt", s->id, t->trainer->name, t->binding->name, model, (int64_t)t->run,
                           t->device, t->format, cb_format_load_mode(t->format), status, error, num(res, "correct"),
                           num(res, "total"), ref_correct < 0 ? NAN : (double)ref_correct, num(res, "accuracy"),
                           num(res, "f1_macro"), num(res, "auc_macro"), num(res, "mean_time_s"),
                           stable < 0 ? NAN : (double)stable, agreement, max_diff, wall, when);
    for (int p = 0; st == CB_OK && p < np; p++) {
        double c = counts && counts->type == CB_JSON_ARR && p < counts->count ? counts->items[p].num : NAN;
        st = cb_store_exec(s->store,
                           "INSERT INTO inference_pass(study_id, trainer, binding, model, run, device, format, pass,"
                           " time_s, correct) VALUES(?,?,?,?,?,?,?,?,?,?)", "itttittidd", s->id, t->trainer->name,
                           t->binding->name, model, (int64_t)t->run, t->device, t->format, (int64_t)(p + 1),
                           times->items[p].num, c);
    }
    if (st == CB_OK) st = cb_store_commit(s->store);
    if (st != CB_OK) cb_store_rollback(s->store);
    return st;
}

/* Rows of [N, K] outputs; labels by argmax, or p >= 0.5 for one output. */
static int compare_logits(const char *ref_path, const char *path, double *agreement, double *max_diff)
{
    cb_tensor a = {0}, b = {0};
    int ok = cb_npy_read(ref_path, &a) == CB_OK && cb_npy_read(path, &b) == CB_OK && a.dtype == CB_F32 &&
             b.dtype == CB_F32 && a.ndim == 2 && b.ndim == 2 && a.shape[0] == b.shape[0] && a.shape[1] == b.shape[1];
    if (ok) {
        int64_t n = a.shape[0], k = a.shape[1], same = 0;
        const float *x = a.data, *y = b.data;
        double worst = 0;
        for (int64_t i = 0; i < n; i++) {
            int la = 0, lb = 0;
            if (k == 1) { la = x[i] >= 0.5f; lb = y[i] >= 0.5f; }
            else for (int64_t j = 1; j < k; j++) { if (x[i * k + j] > x[i * k + la]) la = (int)j; if (y[i * k + j] > y[i * k + lb]) lb = (int)j; }
            same += la == lb;
            for (int64_t j = 0; j < k; j++) {
                double d = fabs((double)x[i * k + j] - (double)y[i * k + j]);
                if (d > worst || isnan(d)) worst = isnan(d) ? INFINITY : d;
            }
        }
        *agreement = n ? (double)same / (double)n : NAN;
        *max_diff = worst;
    }
    cb_tensor_free(&a);
    cb_tensor_free(&b);
    return ok;
}

static cb_status do_eval(study *s, const task *t, int *ok)
{
    const cb_study_config *c = s->c;
    int m = t->model;
    const char *model = c->models[m];
    char dir[1024], rel[300];
    *ok = 0;
    if (task_dir(s, t->trainer, m, t->run, t->device, dir, sizeof dir, rel, sizeof rel) != CB_OK) {
        char e[700];
        snprintf(e, sizeof e, "%s", cb_last_error());
        return store_eval(s, t, "error", e, NULL, -1, NAN, NAN, 0);
    }
    /* The reference: the trainer's own final test count. */
    sqlite3_stmt *q;
    int64_t ref_correct = -1;
    if (sqlite3_prepare_v2(cb_store_db(s->store), "SELECT test_correct FROM train_run WHERE study_id=? AND binding=?"
                           " AND model=? AND run=? AND device=? AND status='complete'", -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(q, 1, s->id);
        sqlite3_bind_text(q, 2, t->trainer->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 3, model, -1, SQLITE_STATIC);
        sqlite3_bind_int(q, 4, t->run);
        sqlite3_bind_text(q, 5, t->device, -1, SQLITE_STATIC);
        if (sqlite3_step(q) == SQLITE_ROW) ref_correct = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
    }
    if (ref_correct < 0) {
        char e[300];
        snprintf(e, sizeof e, "no trained model: %s's training of %s run %d failed", t->trainer->name, model, t->run);
        return store_eval(s, t, "error", e, NULL, -1, NAN, NAN, 0);
    }
    char weights[1100], logits[1200], out_path[1200], err_path[1200], buf[4][32];
    snprintf(weights, sizeof weights, "%s/final.%s", dir, t->format);
    snprintf(logits, sizeof logits, "%s/eval-%s-%s.npy", dir, t->binding->name, t->format);
    snprintf(out_path, sizeof out_path, "%s/eval-%s-%s.stdout", dir, t->binding->name, t->format);
    snprintf(err_path, sizeof err_path, "%s/eval-%s-%s.stderr", dir, t->binding->name, t->format);
    unlink(logits);
    char *argv[48];
    int n = 0;
    for (int i = 0; i < t->binding->ncommand; i++) argv[n++] = t->binding->command[i];
    argv[n++] = "eval";
    argv[n++] = (char *)model;
    snprintf(buf[0], 32, "%d", eval_batch(s, m));
    snprintf(buf[1], 32, "%d", c->repeat);
    snprintf(buf[2], 32, "%d", c->threads);
    argv[n++] = "--weights"; argv[n++] = weights;
    argv[n++] = "--data"; argv[n++] = (char *)data_of(s, m)->path;
    argv[n++] = "--batch"; argv[n++] = buf[0];
    argv[n++] = "--repeat"; argv[n++] = buf[1];
    argv[n++] = "--threads"; argv[n++] = buf[2];
    argv[n++] = "--logits"; argv[n++] = logits;
    argv[n++] = "--json";
    if (c->limit_test[m]) { snprintf(buf[3], 32, "%ld", c->limit_test[m]); argv[n++] = "--limit-test"; argv[n++] = buf[3]; }
    if (strcmp(t->device, "cpu")) { argv[n++] = "--device"; argv[n++] = (char *)t->device; }
    argv[n] = NULL;
    cb_proc_result r;
    cb_status st = cb_proc_run(argv, out_path, err_path, c->timeout_s, &r);
    if (r.interrupted) return CB_OK;
    char error[800] = "";
    if (st != CB_OK) snprintf(error, sizeof error, "%s", cb_last_error());
    else if (r.exited && r.exit_code == RUNNER_EXIT_UNSUPPORTED) {
        /* The binding cannot evaluate this file (an operator or layer it
         * lacks): a fact about the binding, stored as unsupported with its
         * words, not a failed measurement. */
        char why[600] = "";
        last_line(err_path, why, sizeof why, NULL);
        snprintf(error, sizeof error, "the binding cannot evaluate this file: %s", why[0] ? why : "(no message)");
        *ok = 1; /* measured what there is to measure: not a failure */
        return store_eval(s, t, "unsupported", error, NULL, ref_correct, NAN, NAN, r.wall_s);
    }
    else if (!(r.exited && r.exit_code == 0)) describe_failure(&r, err_path, c->timeout_s, error, sizeof error);
    cb_json res = {0};
    int have = 0, malformed = 0;
    int64_t nonfinite = 0;
    cb_runner_expect ex;
    if (!error[0] && expect_of(s, m, 0, r.wall_s, &ex) != CB_OK) snprintf(error, sizeof error, "%s", cb_last_error());
    if (!error[0]) {
        /* The answer is the last line; a line longer than this is no answer. */
        enum { LINE_MAX_BYTES = 1 << 20 };
        char *line = malloc(LINE_MAX_BYTES), why[600] = "";
        int whole = 1;
        if (!line) return cb_fail(CB_ERR_NOMEM, "out of memory");
        last_line(out_path, line, LINE_MAX_BYTES, &whole);
        if (!line[0]) snprintf(why, sizeof why, "it printed nothing on stdout (one JSON line expected)");
        else if (!whole) snprintf(why, sizeof why, "its last line of output is over %d bytes", LINE_MAX_BYTES - 1);
        else if (cb_json_parse(line, strlen(line), out_path, &res) != CB_OK)
            snprintf(why, sizeof why, "its last line is not a valid JSON answer (%s): '%.120s'", cb_last_error(), line);
        else {
            have = 1;
            if (cb_validate_eval(&res, &ex, why, sizeof why) == 0)
                cb_validate_logits(logits, &ex, &nonfinite, why, sizeof why);
        }
        free(line);
        if (why[0]) {
            snprintf(error, sizeof error, MALFORMED " from the runner: %s", why);
            malformed = 1;
            if (have) cb_json_free(&res);
            have = 0;
        }
    }
    double agreement = NAN, max_diff = NAN;
    if (!error[0]) {
        char ref_logits[1200];
        snprintf(ref_logits, sizeof ref_logits, "%s/eval-%s-%s.npy", dir, t->trainer->name, t->trainer->native);
        if (access(ref_logits, R_OK) == 0) compare_logits(ref_logits, logits, &agreement, &max_diff);
    }
    *ok = !error[0];
    /* Non-finite outputs are what the model computed: stored as measured, with a notice. */
    char notice[200] = "";
    if (*ok && nonfinite) {
        snprintf(notice, sizeof notice, "non-finite outputs: %lld of %lld logits are NaN or infinite",
                 (long long)nonfinite, (long long)(ex.total * ex.classes));
        if (!s->opt->quiet) fprintf(stderr, "[study]   notice: %s (%s)\n", notice, logits);
    }
    st = store_eval(s, t, *ok ? "ok" : malformed ? MALFORMED : "error", *ok ? (notice[0] ? notice : NULL) : error,
                    have ? &res : NULL, ref_correct, agreement, max_diff, r.wall_s);
    if (have) cb_json_free(&res);
    if (!*ok && !s->opt->quiet) fprintf(stderr, "[study]   failed: %s (log: %s)\n", error, err_path);
    return st;
}

/* ---- planning ---- */

static int add_task(study *s, task t)
{
    if (s->ntasks == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        task *g = realloc(s->tasks, (size_t)cap * sizeof *g);
        if (!g) return -1;
        s->tasks = g;
        s->cap = cap;
    }
    s->tasks[s->ntasks++] = t;
    return 0;
}

static int runner_device(const cb_runner *r, const char *device) { return cb_runner_has(r->devices, r->ndevices, device); }

/* Cells a binding cannot serve are stored as 'unsupported' at once (no
 * runner runs), so that the matrix and Table 3 show them. */
static int trains_on(const cb_runner *r, const char *model, const char *device)
{
    return !r->declared_unavailable && cb_runner_has(r->train, r->ntrain, model) && runner_device(r, device);
}

/* Why a binding cannot run at all (NULL when it can). */
static const char *unavailable(const study *s, const cb_runner *r);

/* Whether a task cannot run here: its binding is not installed, or (an
 * evaluation) the binding that would have trained its model is not. The
 * reason goes to `why` when given. */
static int task_unavailable(const study *s, const task *t, char *why, size_t cap)
{
    const char *own = unavailable(s, t->binding);
    const char *trainer = t->kind == TASK_EVAL ? unavailable(s, t->trainer) : NULL;
    if (why && own) snprintf(why, cap, "%s", own);
    else if (why && trainer) snprintf(why, cap, "no trained model: its trainer %s is %s", t->trainer->name, trainer);
    return own || trainer;
}

/* "init": "shared": per model, the binding whose own initial weights of
 * each run every binding starts from: the reference binding when it can
 * run here and trains the model, else the first binding of the study that
 * can and does. */
static void choose_init_sources(study *s)
{
    const cb_study_config *c = s->c;
    const cb_runner *ref = cb_runners_find(s->runners, c->reference);
    for (int m = 0; m < c->nmodels; m++) {
        s->init_source[m] = NULL;
        for (int b = -1; b < c->nbindings && !s->init_source[m]; b++) {
            const cb_runner *r = b < 0 ? ref : cb_runners_find(s->runners, c->bindings[b]);
            if (unavailable(s, r)) continue;
            for (int d = 0; d < c->ndevices; d++)
                if (trains_on(r, c->models[m], c->devices[d])) { s->init_source[m] = r; break; }
        }
    }
}

/* Whose trained models a binding evaluates (RQ2). The reference binding's
 * models are loaded by every binding of the study. Each other framework's
 * default binding's models are loaded by the bindings of its framework (the
 * paper's RQ2 within that framework) and by the bindings alone in their
 * framework in this study (crossbind, ONNX Runtime), whose comparisons are
 * across frameworks anyway; the other frameworks' bindings already load the
 * reference's models, and loading every framework's models in every binding
 * would multiply the evaluations without a question they answer. */
static int alone_in_framework(const cb_study_config *c, const cb_runners *runners, const cb_runner *r)
{
    for (int b = 0; b < c->nbindings; b++) {
        const cb_runner *o = cb_runners_find(runners, c->bindings[b]);
        if (o != r && !strcmp(o->framework, r->framework)) return 0;
    }
    return 1;
}

static int evaluates_models_of(const study *s, const cb_runner *trainer, const cb_runner *r)
{
    if (!strcmp(trainer->name, s->c->reference)) return 1;
    return !strcmp(trainer->framework, r->framework) || alone_in_framework(s->c, s->runners, r);
}

/* The bindings whose trained models are evaluated: the reference, then the
 * default binding of every other framework of the study that trains. */
static int trainers(const study *s, const cb_runner **out)
{
    const cb_study_config *c = s->c;
    const cb_runner *ref = cb_runners_find(s->runners, c->reference);
    int n = 0;
    out[n++] = ref;
    for (int b = 0; b < c->nbindings; b++) {
        if (c->default_of[b] != b) continue;
        const cb_runner *r = cb_runners_find(s->runners, c->bindings[b]);
        if (r == ref || !strcmp(r->framework, ref->framework) || r->declared_unavailable || !r->ntrain) continue;
        out[n++] = r;
    }
    return n;
}

/* The evaluations of one trainer's models of model m on one device: its own
 * native evaluation first (the logit reference), then every binding that
 * evaluates its models, in every format the trainer writes. A binding that
 * cannot load the format or run the model is stored as 'unsupported' at once. */
static cb_status plan_evals(study *s, const cb_runner *tr, int m, const char *device)
{
    const cb_study_config *c = s->c;
    if (!cb_runner_has(tr->train, tr->ntrain, c->models[m]) || !runner_device(tr, device)) return CB_OK;
    for (int run = 1; run <= c->runs[m]; run++) {
        if (add_task(s, (task){TASK_EVAL, tr, m, run, device, tr, tr->native})) return cb_fail(CB_ERR_NOMEM, "out of memory");
        for (int b = 0; b < c->nbindings; b++) {
            const cb_runner *r = cb_runners_find(s->runners, c->bindings[b]);
            if (r->declared_unavailable || !evaluates_models_of(s, tr, r)) continue; /* never run, listed by the report */
            for (int f = 0; f < tr->nwrites; f++) {
                const char *fmt = tr->writes[f];
                if (r == tr && !strcmp(fmt, tr->native)) continue;
                task t = {TASK_EVAL, r, m, run, device, tr, fmt};
                if (cb_runner_has(r->loads, r->nloads, fmt) && cb_runner_has(r->infer, r->ninfer, c->models[m]) &&
                    runner_device(r, device)) {
                    if (add_task(s, t)) return cb_fail(CB_ERR_NOMEM, "out of memory");
                    continue;
                }
                int stored;
                cb_status st = cb_store_exists(s->store, &stored, "SELECT 1 FROM inference WHERE study_id=? AND trainer=?"
                                               " AND binding=? AND model=? AND run=? AND device=? AND format=?", "itttitt",
                                               s->id, tr->name, r->name, c->models[m], (int64_t)run, device, fmt);
                if (st == CB_OK && !stored) st = store_eval(s, &t, "unsupported", NULL, NULL, -1, NAN, NAN, 0);
                if (st != CB_OK) return st;
            }
        }
    }
    return CB_OK;
}

/* Cells a binding cannot serve are stored as 'unsupported' at once (no
 * runner runs), so that the matrix and Table 3 show them. With shared
 * initial weights, a model's source binding trains first. */
static cb_status plan(study *s)
{
    const cb_study_config *c = s->c;
    const cb_runner *tr[CB_MAX_LIST + 1];
    int ntr = trainers(s, tr);
    for (int m = 0; m < c->nmodels; m++)
        for (int d = 0; d < c->ndevices; d++) {
            const cb_runner *first = c->init_shared ? s->init_source[m] : NULL;
            for (int b = -1; b < c->nbindings; b++) {
                const cb_runner *r = b < 0 ? first : cb_runners_find(s->runners, c->bindings[b]);
                if (!r || (b >= 0 && r == first) || !trains_on(r, c->models[m], c->devices[d])) continue;
                for (int run = 1; run <= c->runs[m]; run++)
                    if (add_task(s, (task){TASK_TRAIN, r, m, run, c->devices[d], NULL, NULL})) return cb_fail(CB_ERR_NOMEM, "out of memory");
            }
            for (int k = 0; k < ntr; k++) {
                cb_status st = plan_evals(s, tr[k], m, c->devices[d]);
                if (st != CB_OK) return st;
            }
        }
    return CB_OK;
}

static cb_status task_done(study *s, const task *t, int *done)
{
    const char *model = s->c->models[t->model];
    if (t->kind == TASK_TRAIN)
        return cb_store_exists(s->store, done, "SELECT 1 FROM train_run WHERE study_id=? AND binding=? AND model=? AND run=?"
                               " AND device=? AND status='complete'", "ittit", s->id, t->binding->name, model,
                               (int64_t)t->run, t->device);
    return cb_store_exists(s->store, done, "SELECT 1 FROM inference WHERE study_id=? AND trainer=? AND binding=? AND model=?"
                           " AND run=? AND device=? AND format=? AND status='ok'", "itttitt", s->id, t->trainer->name,
                           t->binding->name, model, (int64_t)t->run, t->device, t->format);
}

/* Seconds left: each pending task is estimated by the mean time of tasks
 * of the same kind, model and binding finished in this invocation, else of
 * the same kind and model, else of any task. */
static double estimate_left(const study *s, int from)
{
    double left = 0, all_sum = 0;
    int all_n = 0;
    for (int i = 0; i < s->ntasks; i++) if (s->done_s[i] >= 0) { all_sum += s->done_s[i]; all_n++; }
    if (!all_n) return NAN;
    for (int i = from; i < s->ntasks; i++) {
        if (s->done_s[i] >= 0) continue;
        const task *t = &s->tasks[i];
        if (task_unavailable(s, t, NULL, 0)) continue; /* stored at once, without running */
        double exact = 0, near = 0;
        int ne = 0, nn = 0;
        for (int j = 0; j < s->ntasks; j++) {
            if (s->done_s[j] < 0) continue;
            const task *u = &s->tasks[j];
            if (u->kind != t->kind || u->model != t->model) continue;
            near += s->done_s[j]; nn++;
            if (u->binding == t->binding) { exact += s->done_s[j]; ne++; }
        }
        left += ne ? exact / ne : nn ? near / nn : all_sum / all_n;
    }
    return left;
}

/* ---- the study ---- */

/* Each binding's versions, as its version command prints them. The command
 * runs on every invocation: it is also the check that the binding's
 * environment is there (a resumed study may find it installed since). */
static cb_status record_binding(study *s, const cb_runner *r, const char *version)
{
    /* Kept once known, unless the manifest changed since. */
    int known;
    cb_status st = cb_store_exists(s->store, &known, "SELECT 1 FROM binding WHERE study_id=? AND name=? AND version"
                                   " IS NOT NULL AND version NOT LIKE 'unknown%' AND manifest IS ?", "itt", s->id,
                                   r->name, r->manifest);
    if (st != CB_OK || known) return st;
    return cb_store_exec(s->store, "INSERT OR REPLACE INTO binding(study_id, name, framework, language,"
                                   " version, manifest) VALUES(?,?,?,?,?,?)", "itttt" "t", s->id, r->name,
                                   r->framework, r->language, version, r->manifest);
}

static cb_status record_bindings(study *s)
{
    for (int b = 0; b < s->c->nbindings; b++) {
        const cb_runner *r = cb_runners_find(s->runners, s->c->bindings[b]);
        char version[600];
        s->unavailable[b][0] = 0;
        if (r->declared_unavailable) {
            snprintf(version, sizeof version, "not installable on this machine");
            snprintf(s->unavailable[b], sizeof s->unavailable[b], "cannot be installed on this machine: %s", r->reason);
        } else if (!cb_runner_version(r, s->opt->work_dir, version, sizeof version)) {
            char hint[320];
            cb_runner_install_hint(r, hint, sizeof hint);
            snprintf(s->unavailable[b], sizeof s->unavailable[b], "unavailable: %s; %s", version, hint);
            if (!s->opt->quiet)
                fprintf(stderr, "[study] binding %s is %s (its measurements are recorded as unavailable)\n", r->name,
                        s->unavailable[b]);
        }
        cb_status st = record_binding(s, r, version);
        if (st != CB_OK) return st;
    }
    /* Bindings that cannot be installed on this kind of machine
     * (unavailable.json), of the frameworks the study compares: listed in
     * the report with their reason, never run. */
    for (int i = 0; i < s->runners->count; i++) {
        const cb_runner *r = &s->runners->items[i];
        int listed = 0, same_framework = 0;
        for (int b = 0; b < s->c->nbindings; b++) {
            const cb_runner *o = cb_runners_find(s->runners, s->c->bindings[b]);
            listed |= o == r;
            same_framework |= !o->declared_unavailable && !strcmp(o->framework, r->framework);
        }
        if (!r->declared_unavailable || listed || !same_framework) continue;
        if (!s->opt->quiet)
            fprintf(stderr, "[study] binding %s (%s) cannot be installed on this machine: %s; the report lists it\n",
                    r->name, r->framework, r->reason);
        cb_status st = record_binding(s, r, "not installable on this machine");
        if (st != CB_OK) return st;
    }
    return CB_OK;
}

/* Why a binding cannot run at all (NULL when it can). */
static const char *unavailable(const study *s, const cb_runner *r)
{
    for (int b = 0; b < s->c->nbindings; b++)
        if (!strcmp(s->c->bindings[b], r->name)) return s->unavailable[b][0] ? s->unavailable[b] : NULL;
    return NULL;
}

/* Makes the package stand-ins the configuration names when they are missing
 * (crossbind data cifar-stand-in / imdb-stand-in + imdb-prepare). */
static cb_status prepare_data(study *s)
{
    const cb_study_config *c = s->c;
    for (int f = 1; f < 3; f++) {
        const cb_data_source *d = &c->data[f];
        int used = 0;
        for (int m = 0; m < c->nmodels; m++) used |= !strcmp(c->data_format[m], d->format);
        if (!used) continue;
        char probe[700];
        snprintf(probe, sizeof probe, f == 1 ? "%s/test_batch.bin" : "%s/vocab.txt", d->path);
        if (access(probe, R_OK) == 0) continue;
        if (strcmp(d->path, cb_dataset_default_dir(d->format)))
            return cb_fail(CB_ERR_NOT_FOUND, "%s: no %s data there (%s is missing)", d->path, d->format, probe);
        if (!s->opt->quiet) fprintf(stderr, "[study] making the %s stand-in in %s from packages\n", d->format, d->path);
        char out[1100], err[1100];
        snprintf(out, sizeof out, "%s/data-%s.stdout", s->opt->work_dir, d->format);
        snprintf(err, sizeof err, "%s/data-%s.stderr", s->opt->work_dir, d->format);
        char *self = (char *)s->opt->self;
        char *cifar[] = {self, "data", "cifar-stand-in", "--out", (char *)d->path, NULL};
        char *acl[] = {self, "data", "imdb-stand-in", "--out", "data/imdb-stand-in", NULL};
        char *prep[] = {self, "data", "imdb-prepare", "--from", "data/imdb-stand-in", "--out", (char *)d->path, NULL};
        char **steps[2] = {f == 1 ? cifar : acl, f == 1 ? NULL : prep};
        for (int k = 0; k < 2 && steps[k]; k++) {
            cb_proc_result r;
            cb_status st = cb_proc_run(steps[k], out, err, 1800, &r);
            if (st != CB_OK) return st;
            if (!(r.exited && r.exit_code == 0)) {
                char why[600];
                describe_failure(&r, err, 1800, why, sizeof why);
                return cb_fail(CB_ERR_IO, "making the %s stand-in failed: %s", d->format, why);
            }
        }
    }
    return CB_OK;
}

cb_status cb_study_run(const cb_study_config *c, const cb_runners *runners, cb_store *store,
                       const cb_study_options *opt, cb_study_outcome *outcome)
{
    study s = {.c = c, .runners = runners, .store = store, .opt = opt, .t_start = cb_now()};
    for (int m = 0; m < CB_MAX_LIST; m++) s.n_train[m] = s.n_test[m] = s.classes[m] = -1;
    *outcome = (cb_study_outcome){0};
    cb_status made = cb_mkdirs(opt->work_dir);
    if (made != CB_OK) return made;
    char machine[600], hw[500];
    cb_machine_describe(hw, sizeof hw);
    snprintf(machine, sizeof machine, "%s; study threads %d", hw, c->threads);
    int created;
    cb_status st = cb_store_study(store, c->profile, c->canonical, machine, &s.id, &created);
    if (st != CB_OK) return st;
    outcome->study_id = s.id;
    cb_lock_set_study(opt->lock, s.id);
    if (!opt->quiet)
        fprintf(stderr, "[study] %s study %lld (profile %s) in this store\n", created ? "new" : "resuming",
                (long long)s.id, c->profile);
    if ((st = prepare_data(&s)) != CB_OK) return st;
    cb_buf data = {0};
    cb_buf_printf(&data, "[");
    for (int f = 0, k = 0; f < 3; f++) {
        cb_data_source d = c->data[f];
        int used = 0;
        for (int m = 0; m < c->nmodels; m++) used |= !strcmp(c->data_format[m], d.format);
        if (!used) continue;
        cb_data_describe(&d);
        cb_buf_printf(&data, "%s{\"format\": \"%s\", \"path\": ", k++ ? ", " : "", d.format);
        cb_buf_json_string(&data, d.path);
        cb_buf_printf(&data, ", \"name\": ");
        cb_buf_json_string(&data, d.name);
        cb_buf_printf(&data, ", \"stand_in\": %s}", d.stand_in ? "true" : "false");
    }
    cb_buf_printf(&data, "]");
    st = cb_buf_ok(&data) ? cb_store_exec(store, "UPDATE study SET data=?, status='running' WHERE id=?", "ti", data.data, s.id)
                          : cb_fail(CB_ERR_NOMEM, "out of memory");
    cb_buf_free(&data);
    if (st == CB_OK) st = record_bindings(&s);
    if (st == CB_OK) choose_init_sources(&s);
    if (st == CB_OK) st = plan(&s);
    if (st != CB_OK) { free(s.tasks); return st; }
    s.done_s = malloc((size_t)(s.ntasks ? s.ntasks : 1) * sizeof *s.done_s);
    if (!s.done_s) { free(s.tasks); return cb_fail(CB_ERR_NOMEM, "out of memory"); }
    int pending = 0;
    for (int i = 0; i < s.ntasks && st == CB_OK; i++) {
        int done = 0;
        s.done_s[i] = -1;
        st = task_done(&s, &s.tasks[i], &done);
        pending += !done;
    }
    if (!opt->quiet)
        fprintf(stderr, "[study] %d measurements planned, %d already in the store, %d to do\n", s.ntasks,
                s.ntasks - pending, pending);
    int todo_index = 0;
    for (int i = 0; i < s.ntasks && st == CB_OK; i++) {
        const task *t = &s.tasks[i];
        int done = 0;
        if ((st = task_done(&s, t, &done)) != CB_OK) break;
        if (done) continue;
        if (cb_proc_interrupted()) break;
        todo_index++;
        if (!opt->quiet) {
            char el[32], left[32];
            fmt_duration(cb_now() - s.t_start, el, sizeof el);
            fmt_duration(estimate_left(&s, i), left, sizeof left);
            if (t->kind == TASK_TRAIN)
                fprintf(stderr, "[study %d/%d, %s elapsed, about %s left] train %s %s run %d (%s)\n", todo_index,
                        pending, el, left, t->binding->name, c->models[t->model], t->run, t->device);
            else
                fprintf(stderr, "[study %d/%d, %s elapsed, about %s left] infer %s %s run %d from %s (%s, %s)\n",
                        todo_index, pending, el, left, t->binding->name, c->models[t->model], t->run,
                        t->format, cb_format_load_mode(t->format), t->device);
        }
        double t0 = cb_now();
        int ok = 0;
        char why[1200];
        if (task_unavailable(&s, t, why, sizeof why)) {
            st = t->kind == TASK_TRAIN ? store_train(&s, t, "unavailable", why, NULL, 0, NULL)
                                       : store_eval(&s, t, "unavailable", why, NULL, -1, NAN, NAN, 0);
            if (st == CB_OK) outcome->unavailable++;
            continue; /* no time of its own: it would pull the estimate of what is left towards zero */
        }
        st = t->kind == TASK_TRAIN ? do_train(&s, t, &ok) : do_eval(&s, t, &ok);
        if (cb_proc_interrupted()) break;
        s.done_s[i] = cb_now() - t0;
        if (st == CB_OK && !ok) s.failures++;
    }
    int interrupted = cb_proc_interrupted();
    double wall = cb_now() - s.t_start;
    if (st == CB_OK) {
        char when[32];
        utc_now(when, sizeof when);
        int complete = !interrupted;
        st = cb_store_exec(store, "UPDATE study SET status=?, finished=?, wall_s=coalesce(wall_s, 0) + ? WHERE id=?",
                           "ttdi", complete ? "complete" : "interrupted", complete ? when : NULL, wall, s.id);
    } else {
        /* The store may be full: try to say so, keep what is there. */
        cb_status keep = st;
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", cb_last_error());
        cb_store_exec(store, "UPDATE study SET status='stopped', wall_s=coalesce(wall_s, 0) + ? WHERE id=?", "di",
                      wall, s.id);
        st = cb_fail(keep, "%s", msg);
    }
    outcome->failures = s.failures;
    free(s.tasks);
    free(s.done_s);
    if (st == CB_OK && interrupted) return cb_fail(CB_ERR_IO, "interrupted");
    return st;
}
