/* crossbind delta's run (experiment.h): everything measured is stored
 * before the next step starts, so an interrupted run loses at most the
 * variant or localisation in progress, and the next run continues. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/clock.h"
#include "../core/file.h"
#include "../core/json.h"
#include "../study/lock.h"
#include "../study/proc.h"
#include "analysis.h"
#include "delta_util.h"
#include "experiment.h"
#include "localise.h"
#include "store.h"

void delta_analysis_free(delta_analysis *a)
{
    for (int i = 0; i < DELTA_MAX_VARIANTS; i++) delta_result_free(&a->res[i]);
    for (int i = 0; i < a->n_pairs; i++) {
        delta_pair_free(&a->pairs[i].pair);
        free(a->pairs[i].localisation);
    }
    free(a->pairs);
    delta_inputs_free(&a->inputs);
}

double delta_accuracy(const delta_analysis *a, const delta_result *r)
{
    int right = 0, n = r->n_inputs < a->inputs.n ? r->n_inputs : a->inputs.n;
    for (int i = 0; i < n; i++) {
        int top;
        if (delta_topk(r->outputs + (size_t)i * (size_t)r->classes, r->classes, 1, &top) == CB_OK)
            right += top == a->inputs.labels[i];
    }
    return n ? (double)right / n : NAN;
}

/* The experiment's identity: what every stored measurement depends on. */
static cb_status fingerprint(const delta_config *c, const delta_analysis *a, char *out, size_t cap)
{
    size_t k = (size_t)snprintf(out, cap, "model=%s weights=%s inputs=%s reps=%d warmup=%d", c->model[0] ? c->model : "-",
                                c->model[0] ? a->weights_sha : "-", a->inputs.file_sha256, c->reps, c->warmup);
    if (c->keras && k < cap)
        k += (size_t)snprintf(out + k, cap - k, " keras=%.16s keras_inputs=%.16s", a->keras_sha, a->inputs.keras_file_sha256);
    for (int i = 0; i < c->n_variants && k < cap; i++) {
        char sha[65];
        if (!c->variants[i].file[0]) continue;
        cb_status s = delta_sha256_file(c->variants[i].file, sha);
        if (s != CB_OK) return s;
        k += (size_t)snprintf(out + k, cap - k, " %s=%.16s", c->variants[i].label, sha);
    }
    return k < cap ? CB_OK : cb_fail(CB_ERR_INVALID_ARG, "the configuration names too many files");
}

static double median_time(const delta_result *r)
{
    double m, lo, hi;
    if (!r->times || !r->n_inputs || !r->reps) return NAN;
    delta_median_range(r->times, r->n_inputs * r->reps, &m, &lo, &hi);
    return m;
}

static void say_eta(double elapsed, int done, int todo)
{
    if (done <= 0 || todo <= 0) return;
    double eta = elapsed / done * todo;
    fprintf(stderr, " (ETA %dm%02ds)", (int)(eta / 60), (int)eta % 60);
}

static cb_status run_variants(const delta_env *e, delta_store *st, delta_analysis *a)
{
    const delta_config *c = e->c;
    int todo = 0, done = 0;
    for (int i = 0; i < c->n_variants; i++) {
        int found;
        cb_status s = delta_store_get_result(st, c->variants[i].key, &a->res[i], &found);
        if (s != CB_OK) return s;
        /* kept: what was measured; run again: what failed or lacked its
         * runner's environment (installed since, perhaps) */
        if (found && !strcmp(a->res[i].status, "ok")) {
            fprintf(stderr, "[delta] %2d/%d %s: stored (%s)\n", i + 1, c->n_variants, c->variants[i].key, a->res[i].status);
            continue;
        }
        delta_result_free(&a->res[i]);
        a->res[i].key[0] = 0; /* to run */
        todo++;
    }
    double t0 = cb_now();
    for (int i = 0; i < c->n_variants; i++) {
        if (a->res[i].key[0]) continue;
        if (cb_proc_interrupted()) return cb_fail(CB_ERR_IO, "interrupted: the variants measured so far are stored");
        fprintf(stderr, "[delta] %2d/%d %s: running %d inputs x %d repetitions...\n", i + 1, c->n_variants,
                c->variants[i].key, a->inputs.n, c->reps);
        cb_status s = delta_run_variant(e, &c->variants[i], &a->res[i]);
        if (s != CB_OK) return s;
        if (cb_proc_interrupted()) return cb_fail(CB_ERR_IO, "interrupted: the variants measured so far are stored");
        if ((s = delta_store_put_result(st, &a->res[i])) != CB_OK) return s;
        done++;
        fprintf(stderr, "[delta] %2d/%d %s: %s", i + 1, c->n_variants, c->variants[i].key, a->res[i].status);
        if (!strcmp(a->res[i].status, "ok"))
            fprintf(stderr, ", median %.3f ms, first call %.3f ms", 1e3 * median_time(&a->res[i]), 1e3 * a->res[i].first_call_s);
        else fprintf(stderr, ": %s", a->res[i].error ? a->res[i].error : "");
        say_eta(cb_now() - t0, done, todo - done);
        fprintf(stderr, "\n");
    }
    return CB_OK;
}

/* The input to localise, and whether the pair diverges at all. */
static int pick_input(const delta_result *ra, const delta_pair *p, double tol, int *input)
{
    int worst = 0;
    double worst_rel = -1;
    for (int i = 0; i < p->n; i++) {
        if (p->in[i].top1_a != p->in[i].top1_b) {
            *input = i;
            return 1;
        }
        double amax = 0;
        for (int k = 0; k < ra->classes; k++) amax = fmax(amax, fabs(ra->outputs[(size_t)i * (size_t)ra->classes + (size_t)k]));
        double rel = amax > 0 ? p->in[i].max_abs / amax : p->in[i].max_abs;
        if (rel > worst_rel || rel != rel) worst_rel = rel, worst = i;
    }
    *input = worst;
    return !(worst_rel <= tol);
}

static cb_status compare_axes(const delta_config *c, delta_analysis *a)
{
    for (int x = 0; x < c->n_axes; x++) {
        const delta_axis *ax = &c->axes[x];
        int first = a->n_pairs;
        for (int i = 0; i < ax->n; i++)
            for (int j = i + 1; j < ax->n; j++) {
                const delta_result *ra = &a->res[ax->members[i]], *rb = &a->res[ax->members[j]];
                if (strcmp(ra->status, "ok") || strcmp(rb->status, "ok")) continue;
                delta_axis_pair *q = realloc(a->pairs, (size_t)(a->n_pairs + 1) * sizeof *q);
                if (!q) return cb_fail(CB_ERR_NOMEM, "out of memory");
                a->pairs = q;
                q = &a->pairs[a->n_pairs];
                memset(q, 0, sizeof *q);
                cb_status s = delta_compare(ra, rb, c->k, c->p, &q->pair);
                if (s != CB_OK) return s;
                a->n_pairs++;
                q->axis = x;
                q->pair.a = ax->members[i], q->pair.b = ax->members[j];
                q->diverges = pick_input(ra, &q->pair, c->tolerance, &q->input);
            }
        /* Bonferroni over the pairs of one axis (the family of its comparisons) */
        int n = a->n_pairs - first;
        for (int i = 0; i < n; i++) {
            delta_pair *p = &a->pairs[first + i].pair;
            p->p_adj = isnan(p->p_time) ? NAN : fmin(1.0, p->p_time * n);
            p->significant = p->p_adj < 0.05;
        }
    }
    return CB_OK;
}

/* Whether a stored localisation was made with this tolerance. */
static int same_tolerance(const char *json, double tolerance)
{
    cb_json j;
    if (cb_json_parse(json, strlen(json), "a stored localisation", &j) != CB_OK) return 0;
    const cb_json *t = cb_json_get(&j, "tolerance");
    int same = t && t->type == CB_JSON_NUM && t->num == tolerance;
    cb_json_free(&j);
    return same;
}

static cb_status localise_pairs(const delta_env *e, delta_store *st, delta_analysis *a, int allowed)
{
    const delta_config *c = e->c;
    for (int i = 0; i < a->n_pairs; i++) {
        delta_axis_pair *q = &a->pairs[i];
        if (!q->diverges) continue;
        const delta_variant *va = &c->variants[q->pair.a], *vb = &c->variants[q->pair.b];
        int found;
        cb_status s = delta_store_get_localisation(st, va->key, vb->key, &q->localisation, &found);
        if (s != CB_OK) return s;
        if (found && !same_tolerance(q->localisation, c->tolerance)) { /* made for another tolerance: again */
            free(q->localisation);
            q->localisation = NULL;
            found = 0;
        }
        if (found || !allowed) continue;
        if (cb_proc_interrupted()) return cb_fail(CB_ERR_IO, "interrupted: the localisations so far are stored");
        fprintf(stderr, "[delta] localising %s vs %s on input %d...\n", va->key, vb->key, q->input);
        cb_buf b = {0};
        if ((s = delta_localise(e, va, vb, q->input, &b)) == CB_OK && !cb_buf_ok(&b)) s = cb_fail(CB_ERR_NOMEM, "out of memory");
        if (s == CB_OK) s = delta_store_put_localisation(st, va->key, vb->key, b.data);
        if (s != CB_OK) {
            cb_buf_free(&b);
            return s;
        }
        q->localisation = b.data;
    }
    return CB_OK;
}

static cb_status experiment(delta_env *e, const delta_options *o, delta_analysis *a)
{
    const delta_config *c = e->c;
    char fp[2048];
    delta_store *st = NULL;
    cb_status s = c->study ? delta_prepare_study(e, &a->inputs, a->weights_sha, a->model_sha, a->pipeline, sizeof a->pipeline)
                           : delta_prepare_inputs(e, &a->inputs, a->pipeline, sizeof a->pipeline);
    if (s == CB_OK && c->model[0] && !c->study) s = delta_prepare_model(e, a->weights_sha, a->model_sha);
    if (s == CB_OK && c->keras) s = delta_prepare_keras(e, &a->inputs, a->keras_sha);
    if (s == CB_OK) s = fingerprint(c, a, fp, sizeof fp);
    if (s == CB_OK) s = delta_store_open(o->store, fp, &st);
    if (s == CB_OK) s = delta_store_put_inputs(st, a->inputs.n, (const char *const *)a->inputs.names,
                                               (const char *const *)a->inputs.sha256,
                                               (const char *const *)a->inputs.keras_sha256, a->inputs.labels);
    if (s == CB_OK) s = delta_store_put_file(st, "inputs.npy", e->inputs, a->inputs.file_sha256);
    if (s == CB_OK && c->model[0]) s = delta_store_put_file(st, "model.onnx", e->model_onnx, a->model_sha);
    if (s == CB_OK && c->model[0]) s = delta_store_put_file(st, "weights.pt", e->weights, a->weights_sha);
    if (s == CB_OK && c->keras) s = delta_store_put_file(st, "keras/model.h5", e->keras_dir, a->keras_sha);
    if (s == CB_OK && c->keras) s = delta_store_put_file(st, "inputs-keras.npy", e->keras_inputs, a->inputs.keras_file_sha256);
    if (s == CB_OK) s = run_variants(e, st, a);
    if (s == CB_OK) s = compare_axes(c, a);
    if (s == CB_OK) s = localise_pairs(e, st, a, o->localise);
    delta_store_close(st);
    return s;
}

cb_status delta_experiment(const delta_config *c, const cb_runners *runners, const delta_options *o)
{
    if (strlen(o->work) > 1024) return cb_fail(CB_ERR_INVALID_ARG, "the work directory's path is over 1024 bytes");
    delta_env e = {.c = c, .runners = runners, .timeout_s = o->timeout_s};
    snprintf(e.work, sizeof e.work, "%s", o->work);
    cb_status s = cb_mkdirs(e.work);
    if (s != CB_OK) return s;
    char lock_path[4200];
    cb_lock *lock = NULL;
    snprintf(lock_path, sizeof lock_path, "%s.lock", o->store);
    if ((s = cb_lock_acquire(lock_path, "the delta store", 0, 0, &lock)) != CB_OK) return s;
    delta_analysis *a = calloc(1, sizeof *a);
    if (!a) {
        cb_lock_release(lock);
        return cb_fail(CB_ERR_NOMEM, "out of memory");
    }
    a->c = c;
    cb_machine_describe(a->machine, sizeof a->machine);
    double t0 = cb_now();
    s = experiment(&e, o, a);
    a->wall_s = cb_now() - t0;
    if (s == CB_OK && o->json) s = delta_write_summary(a, o->json);
    if (s == CB_OK && o->report) s = delta_write_report(a, o->report);
    if (s == CB_OK) {
        int ok = 0;
        for (int i = 0; i < c->n_variants; i++) ok += !strcmp(a->res[i].status, "ok");
        fprintf(stderr, "[delta] %d of %d variants measured, %d pairs compared in %.1f s%s%s%s%s\n", ok, c->n_variants,
                a->n_pairs, a->wall_s, o->json ? "; summary " : "", o->json ? o->json : "", o->report ? "; report " : "",
                o->report ? o->report : "");
    }
    delta_analysis_free(a);
    free(a);
    cb_lock_release(lock);
    return s;
}
