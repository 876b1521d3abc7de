/* crossbind bench: the measurement loop. Each measurement is a worker
 * process of its binding (runners/README.md, "Benchmark worker"), so that its
 * peak memory (getrusage) and its start-up are its own; the rounds alternate
 * the bindings' order so that a slow phase of the machine does not fall on
 * one binding only. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../core/file.h"
#include "../core/json.h"
#include "../study/paths.h"
#include "../study/proc.h"
#include "../core/clock.h"
#include "bench.h"
#include "crossbind/crossbind.h"
#include "crossbind/onnx.h"

extern void openblas_set_num_threads(int n) __attribute__((weak));

/* ---- the machine's ceiling ---- */

double cb_bench_sgemm_gflops(int threads)
{
    const int n = 2048;
    float *a = malloc((size_t)n * n * 4), *b = malloc((size_t)n * n * 4), *c = malloc((size_t)n * n * 4);
    if (!a || !b || !c) { free(a), free(b), free(c); return NAN; }
    for (size_t i = 0; i < (size_t)n * n; i++) a[i] = b[i] = (float)(i % 7) * 0.1f, c[i] = 0;
    if (openblas_set_num_threads) openblas_set_num_threads(threads);
    for (int w = 0; w < 2; w++) /* warm-up: the pages, and the threads out of their sleep */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = cb_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        double t = cb_now() - t0;
        if (t < best) best = t;
    }
    if (openblas_set_num_threads) openblas_set_num_threads(1);
    free(a), free(b), free(c);
    return 2.0 * n * n * (double)n / best / 1e9;
}

/* ---- model files: the same initial weights for every binding ---- */

static cb_status write_models(const cb_bench_config *c, cb_bench_results *r)
{
    char dir[700];
    snprintf(dir, sizeof dir, "%s/models", c->work_dir);
    cb_status st = cb_mkdirs(dir);
    for (int i = 0; st == CB_OK && i < c->nmodels; i++) {
        cb_model *m;
        char path[800];
        if (cb_bench_onnx_model(c, i)) { /* torchvision's file or the user's, read back for its FLOPs */
            snprintf(path, sizeof path, "%s/%s.onnx", dir, c->models[i]);
            if (c->onnx[i][0]) { /* read where the user named it, then copied: what every worker reads */
                st = cb_onnx_load(c->onnx[i], 0, &m);
                if (st == CB_OK) {
                    st = cb_copy_file(c->onnx[i], path);
                    if (st != CB_OK) cb_model_free(m);
                }
            } else {
                st = cb_bench_imagenet_export(c, r->all, c->models[i], path, &r->interrupted);
                if (st == CB_OK) st = cb_onnx_load(path, 0, &m);
            }
            if (st != CB_OK) break;
            r->flops[i] = cb_graph_forward_flops(&m->graph);
            r->flops_done[i] = cb_graph_forward_flops_done(&m->graph);
            r->conv_flops[i] = 0;
            for (int k = 0; k < m->graph.count; k++)
                if (m->graph.nodes[k].op == CB_OP_CONV2D) r->conv_flops[i] += cb_node_forward_flops(&m->graph, k);
            cb_model_free(m);
            continue;
        }
        st = cb_model_create(c->models[i], &m);
        if (st != CB_OK) break;
        cb_model_init(m, cb_protocol_seeds[0]);
        r->flops[i] = cb_graph_forward_flops(&m->graph);
        r->flops_done[i] = cb_graph_forward_flops_done(&m->graph);
        r->conv_flops[i] = 0;
        for (int k = 0; k < m->graph.count; k++)
            if (m->graph.nodes[k].op == CB_OP_CONV2D) r->conv_flops[i] += cb_node_forward_flops(&m->graph, k);
        cb_tensor_list params = {0};
        const char *meta[] = {"model", c->models[i], "format", "crossbind-weights/1", NULL};
        st = cb_graph_params_to_list(&m->graph, &params);
        snprintf(path, sizeof path, "%s/%s.safetensors", dir, c->models[i]);
        if (st == CB_OK) st = cb_safetensors_write(path, &params, meta);
        snprintf(path, sizeof path, "%s/%s.onnx", dir, c->models[i]);
        if (st == CB_OK) st = cb_onnx_export(m, path);
        cb_tensor_list_free(&params);
        cb_model_free(m);
    }
    return st;
}

/* ---- the file each binding's worker is given ---- */

/* A binding that loads neither the canonical safetensors nor ONNX (a
 * SavedModel, .tflite or TF.js reader) gets the same initial weights in a
 * format it loads, converted from the safetensors by the export command of
 * a binding of its framework that writes that format (TensorFlow/Python's
 * `export`). Made once per exporter, model and format, as
 * WORK/models/by-EXPORTER/MODEL.FORMAT; any failure is the cell's error,
 * never a file from an earlier invocation. */
static cb_status export_for(cb_bench_results *r, const cb_runner *rn, const char *model, char *file, size_t cap)
{
    const cb_bench_config *c = r->c;
    for (int l = 0; l < rn->nloads; l++)
        for (int i = 0; r->all && i < r->all->count; i++) {
            const cb_runner *ex = &r->all->items[i];
            const char *fmt = rn->loads[l];
            if (!ex->nexport_cmd || strcmp(ex->framework, rn->framework) || !cb_runner_has(ex->writes, ex->nwrites, fmt))
                continue;
            char key[3 * CB_NAME + 8], sub[CB_NAME + 4];
            snprintf(sub, sizeof sub, "by-%s", ex->name);
            snprintf(key, sizeof key, "%s/%s.%s", sub, model, fmt);
            snprintf(file, cap, "%s", key);
            for (int k = 0; k < r->nexported; k++) if (!strcmp(r->exported[k], key)) return CB_OK;
            char dir[700], src[800], dst[900], out[900], err[900];
            snprintf(dir, sizeof dir, "%s/models", c->work_dir);
            snprintf(src, sizeof src, "%s/%s.safetensors", dir, model);
            snprintf(dst, sizeof dst, "%s/%s", dir, key);
            snprintf(out, sizeof out, "%s/export-%s-%s.%s.out", c->work_dir, ex->name, model, fmt);
            snprintf(err, sizeof err, "%s/export-%s-%s.%s.err", c->work_dir, ex->name, model, fmt);
            cb_status st = cb_remove_tree(dir, key);
            if (st == CB_OK) {
                char subdir[800];
                snprintf(subdir, sizeof subdir, "%s/%s", dir, sub);
                st = cb_mkdirs(subdir);
            }
            if (st != CB_OK) return st;
            char *argv[24];
            int n = 0;
            for (int k = 0; k < ex->nexport_cmd; k++) argv[n++] = ex->export_cmd[k];
            char *rest[] = {(char *)model, "--weights", src, "--format", (char *)fmt, "--out", dst};
            for (size_t k = 0; k < sizeof rest / sizeof *rest; k++) argv[n++] = rest[k];
            argv[n] = NULL;
            if (!c->quiet) fprintf(stderr, "bench: %s's %s file for %s, by %s's export\n", model, fmt, rn->name, ex->name);
            cb_proc_result pr;
            if ((st = cb_proc_run(argv, out, err, c->timeout_s, &pr)) != CB_OK) return st;
            if (pr.interrupted) { r->interrupted = 1; return cb_fail(CB_ERR_IO, "interrupted"); }
            if (pr.timed_out || !pr.exited || pr.exit_code != 0) {
                char msg[300] = "";
                unsigned char *text;
                size_t len;
                if (cb_read_file(err, 1 << 20, &text, &len) == CB_OK) {
                    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r')) len--;
                    size_t s0 = len;
                    while (s0 && text[s0 - 1] != '\n') s0--;
                    snprintf(msg, sizeof msg, "%.*s", (int)(len - s0), (const char *)text + s0);
                    free(text);
                }
                return cb_fail(CB_ERR_IO, "%s's export of %s to %s failed: %s", ex->name, model, fmt,
                               pr.timed_out ? "timed out" : msg[0] ? msg : "no message");
            }
            if (r->nexported < (int)(sizeof r->exported / sizeof r->exported[0]))
                snprintf(r->exported[r->nexported++], sizeof r->exported[0], "%s", key);
            snprintf(file, cap, "%s", key);
            return CB_OK;
        }
    return cb_fail(CB_ERR_UNSUPPORTED, "%s loads none of safetensors, onnx or a format a binding of %s exports", rn->name,
                   rn->framework);
}

static cb_status weights_for(cb_bench_results *r, const cb_runner *rn, int m, char *path, size_t cap)
{
    const char *model = r->c->models[m];
    char file[3 * CB_NAME + 8];
    cb_status st = CB_OK;
    if (cb_bench_onnx_model(r->c, m)) { /* one file only: ONNX (binding_does keeps the others out) */
        snprintf(path, cap, "%s/models/%s.onnx", r->c->work_dir, model);
        return CB_OK;
    }
    if (cb_runner_has(rn->loads, rn->nloads, "safetensors")) snprintf(file, sizeof file, "%s.safetensors", model);
    else if (cb_runner_has(rn->loads, rn->nloads, "onnx")) snprintf(file, sizeof file, "%s.onnx", model);
    else st = export_for(r, rn, model, file, sizeof file);
    snprintf(path, cap, "%s/models/%s", r->c->work_dir, file);
    return st;
}

/* ---- one worker process ---- */

static int binding_does(const cb_runner *rn, const cb_bench_config *c, int m, int kind)
{
    const char *model = c->models[m];
    if (!cb_runner_has(rn->bench, rn->nbench, cb_bench_kind_names[kind])) return 0;
    if (c->onnx[m][0]) /* a file of the user's: inference wherever ONNX loads (no manifest names it) */
        return kind != CB_BENCH_TRAIN && cb_runner_has(rn->loads, rn->nloads, "onnx");
    if (kind == CB_BENCH_TRAIN) return cb_runner_has(rn->train, rn->ntrain, model);
    if (cb_bench_imagenet_side(model) && !cb_runner_has(rn->loads, rn->nloads, "onnx")) return 0;
    return cb_runner_has(rn->infer, rn->ninfer, model);
}

/* Sets (or, with undo, restores) one "VAR=value" setting, {threads} expanded. */
static void apply_setting(const char *setting, int threads, char *saved, size_t cap, int *had, int undo)
{
    char var[CB_NAME], value[CB_NAME * 2];
    const char *eq = strchr(setting, '=');
    snprintf(var, sizeof var, "%.*s", (int)(eq - setting), setting);
    if (undo) {
        if (*had) setenv(var, saved, 1);
        else unsetenv(var);
        return;
    }
    const char *old = getenv(var);
    *had = old != NULL;
    snprintf(saved, cap, "%s", old ? old : "");
    if (!strcmp(eq + 1, "{threads}")) snprintf(value, sizeof value, "%d", threads);
    else snprintf(value, sizeof value, "%s", eq + 1);
    setenv(var, value, 1);
}

static void last_line_of(const char *path, char *out, size_t cap)
{
    unsigned char *text;
    size_t len;
    out[0] = 0;
    if (cb_read_file(path, 1 << 22, &text, &len) != CB_OK) return;
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r')) len--;
    size_t start = len;
    while (start && text[start - 1] != '\n') start--;
    snprintf(out, cap, "%.*s", (int)(len - start), (const char *)text + start);
    free(text);
}

/* The median of one round's values of a cell, kept beside them. */
static void add_round_median(cb_bench_cell *cl, const double *v, int n)
{
    if (n <= 0) return;
    const cb_series one = {(double *)v, n, n};
    cb_series_add(&cl->rounds, cb_series_quantile(&one, 0.5));
}

/* Runs one worker of cell `cl` under setting `variant` (-1: none) and adds
 * its values to `into`. Returns 0, or -1 after recording the failure. */
static int run_worker(cb_bench_results *r, cb_bench_cell *cl, int variant, cb_series *into)
{
    const int first = into->n; /* this worker's values are into->v[first..] */
    const cb_bench_config *c = r->c;
    const cb_runner *rn = r->runners[cl->binding];
    const char *model = c->models[cl->model];
    char weights[800], sbatch[16], ssamples[24], srepeat[16], sthreads[16], out[800], err[800];
    if (weights_for(r, rn, cl->model, weights, sizeof weights) != CB_OK) {
        snprintf(cl->error, sizeof cl->error, "%s", cb_last_error());
        cl->failed = 1;
        return -1;
    }
    snprintf(sbatch, sizeof sbatch, "%d", cl->sz.batch);
    snprintf(ssamples, sizeof ssamples, "%ld", cl->sz.samples);
    snprintf(srepeat, sizeof srepeat, "%d", cl->sz.repeat);
    snprintf(sthreads, sizeof sthreads, "%d", c->threads);
    snprintf(out, sizeof out, "%s/%s-%s-%s.out", c->work_dir, rn->name, model, cb_bench_kind_names[cl->kind]);
    snprintf(err, sizeof err, "%s/%s-%s-%s.err", c->work_dir, rn->name, model, cb_bench_kind_names[cl->kind]);
    char *argv[32];
    int n = 0;
    if (rn->nbench_cmd)
        for (int i = 0; i < rn->nbench_cmd; i++) argv[n++] = rn->bench_cmd[i];
    else {
        for (int i = 0; i < rn->ncommand; i++) argv[n++] = rn->command[i];
        argv[n++] = "bench";
    }
    char *rest[] = {"--model", (char *)model, "--kind", (char *)cb_bench_kind_names[cl->kind], "--weights", weights,
                    "--batch", sbatch, "--samples", ssamples, "--repeat", srepeat, "--threads", sthreads};
    for (size_t i = 0; i < sizeof rest / sizeof *rest; i++) argv[n++] = rest[i];
    argv[n] = NULL;
    char saved[256];
    int had = 0;
    if (variant >= 0) apply_setting(rn->bench_env[variant], c->threads, saved, sizeof saved, &had, 0);
    cb_proc_result pr;
    cb_status st = cb_proc_run(argv, out, err, c->timeout_s, &pr);
    if (variant >= 0) apply_setting(rn->bench_env[variant], c->threads, saved, sizeof saved, &had, 1);
    if (st != CB_OK) {
        snprintf(cl->error, sizeof cl->error, "%s", cb_last_error());
        cl->failed = 1;
        return -1;
    }
    if (pr.interrupted) { r->interrupted = 1; return -1; }
    char line[1 << 15];
    if (pr.timed_out || !pr.exited || pr.exit_code != 0) {
        char msg[300];
        last_line_of(err, msg, sizeof msg);
        if (pr.timed_out) snprintf(cl->error, sizeof cl->error, "timed out after %.0f s", c->timeout_s);
        else if (!pr.exited) snprintf(cl->error, sizeof cl->error, "killed by signal %d", pr.signal);
        else snprintf(cl->error, sizeof cl->error, "exit status %d: %s", pr.exit_code, msg[0] ? msg : "(no message)");
        cl->failed = 1;
        return -1;
    }
    last_line_of(out, line, sizeof line);
    cb_json res;
    if (cb_json_parse(line, strlen(line), "the worker's answer", &res) != CB_OK || res.type != CB_JSON_OBJ) {
        snprintf(cl->error, sizeof cl->error, "the worker's last line is not a JSON object");
        cl->failed = 1;
        return -1;
    }
    int ok = 1;
    /* Peak memory as the worker reads it from /proc/self/status (VmHWM): the
     * kernel's getrusage figure for a child also counts the pages it shared
     * with the harness before exec, which made every worker look 100 MB. */
    const cb_json *hwm = cb_json_get(&res, "vmhwm_kib");
    if (hwm && hwm->type == CB_JSON_NUM && hwm->num > cl->rss_kb) cl->rss_kb = (long)hwm->num;
    if (cl->kind == CB_BENCH_STARTUP) {
        const cb_json *t = cb_json_get(&res, "monotonic_s");
        if (t && t->type == CB_JSON_NUM && t->num > pr.start_s) cb_series_add(into, t->num - pr.start_s);
        else ok = 0;
    } else {
        const cb_json *t = cb_json_get(&res, "times_s"), *cv = cb_json_get(&res, "conv_s");
        long want = cl->kind == CB_BENCH_LATENCY ? cl->sz.samples : cl->sz.repeat;
        if (!t || t->type != CB_JSON_ARR || t->count != want) ok = 0;
        for (int i = 0; ok && i < t->count; i++)
            if (t->items[i].type != CB_JSON_NUM || !(t->items[i].num >= 0)) ok = 0;
        for (int i = 0; ok && i < t->count; i++) cb_series_add(into, t->items[i].num);
        /* conv_s: one value per unit; sgemm_gflops: one per worker, paired
         * with each of its units' (NAN where the worker gave none). */
        const cb_json *fd = cb_json_get(&res, "flops_done");
        if (fd && fd->type == CB_JSON_NUM && fd->num > 0 && into == &cl->times) cl->flops_done = fd->num;
        const cb_json *sg = cb_json_get(&res, "sgemm_gflops");
        const double ceiling = sg && sg->type == CB_JSON_NUM && sg->num > 0 ? sg->num : NAN;
        if (ok && cv && cv->type == CB_JSON_ARR && into == &cl->times)
            for (int i = 0; i < cv->count; i++)
                if (cv->items[i].type == CB_JSON_NUM) {
                    cb_series_add(&cl->conv, cv->items[i].num);
                    cb_series_add(&cl->conv_sgemm, ceiling);
                }
        /* What the worker reports about itself, for the page. */
        cb_buf info = {0};
        for (int i = 0; i < res.count; i++)
            if (strcmp(res.keys[i], "times_s") && strcmp(res.keys[i], "conv_s") && strcmp(res.keys[i], "vmhwm_kib") &&
                strcmp(res.keys[i], "sgemm_gflops") && strcmp(res.keys[i], "flops_done") &&
                (res.items[i].type == CB_JSON_STR || res.items[i].type == CB_JSON_NUM)) {
                if (res.items[i].type == CB_JSON_STR) cb_buf_printf(&info, "%s%s %s", info.len ? ", " : "", res.keys[i], res.items[i].str);
                else cb_buf_printf(&info, "%s%s %g", info.len ? ", " : "", res.keys[i], res.items[i].num);
            }
        /* Kept for the setting the values belong to (the probes' until one is chosen). */
        char *dst = variant >= 0 && into != &cl->times ? cl->probe_info[variant] : cl->info;
        if (info.data) snprintf(dst, sizeof cl->info, "%s", info.data);
        cb_buf_free(&info);
    }
    cb_json_free(&res);
    if (!ok) {
        snprintf(cl->error, sizeof cl->error, "the worker's answer lacks %s",
                 cl->kind == CB_BENCH_STARTUP ? "a valid monotonic_s" : "the expected times_s");
        cl->failed = 1;
        return -1;
    }
    if (into == &cl->times) add_round_median(cl, into->v + first, into->n - first);
    return 0;
}

/* ---- the loop ---- */

/* Round 1 tries every setting a binding offers (bench_env) and keeps the
 * fastest by median; latency and start-up use inference's choice. */
static void measure(cb_bench_results *r, cb_bench_cell *cl, int round)
{
    const cb_runner *rn = r->runners[cl->binding];
    if (cl->failed) return;
    if (round > 1 || rn->nbench_env == 0 || cl->chosen >= 0) {
        run_worker(r, cl, cl->chosen, &cl->times);
        return;
    }
    double best = INFINITY;
    for (int v = 0; v < rn->nbench_env && !r->interrupted; v++) {
        if (run_worker(r, cl, v, &cl->probe[v]) != 0) return;
        double med = cb_series_quantile(&cl->probe[v], 0.5);
        if (med < best) best = med, cl->chosen = v;
    }
    if (r->interrupted || cl->chosen < 0) return;
    for (int i = 0; i < cl->probe[cl->chosen].n; i++) cb_series_add(&cl->times, cl->probe[cl->chosen].v[i]);
    add_round_median(cl, cl->probe[cl->chosen].v, cl->probe[cl->chosen].n);
    snprintf(cl->info, sizeof cl->info, "%s", cl->probe_info[cl->chosen]);
    cb_bench_cell *lat = cb_bench_find(r, cl->model, CB_BENCH_LATENCY, cl->binding);
    cb_bench_cell *up = cb_bench_find(r, cl->model, CB_BENCH_STARTUP, cl->binding);
    if (cl->kind == CB_BENCH_INFER) {
        if (lat) lat->chosen = cl->chosen;
        if (up) up->chosen = cl->chosen;
    }
}

static void utc_date(char *out, size_t cap)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, cap, "%Y-%m-%d %H:%M UTC", &tm);
}

/* Without --bindings: crossbind first (the ratios of the tables are its),
 * then each framework's default binding, then every other binding with a
 * benchmark worker whose environment is installed here; the ones left out
 * are named. An explicitly listed binding that is not installed is refused
 * with its install command. */
static cb_status choose_bindings(cb_bench_config *c, const cb_runners *runners, char (*versions)[600])
{
    const int chosen_by_user = c->nbindings > 0;
    if (!chosen_by_user) {
        const cb_runner *self = cb_runners_find(runners, "crossbind");
        if (self) strcpy(c->bindings[c->nbindings++], self->name);
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < runners->count; i++) {
                const cb_runner *rn = &runners->items[i];
                if (rn == self || rn->declared_unavailable || !rn->nbench || rn->framework_default != !pass) continue;
                if (c->nbindings == (int)(sizeof c->bindings / sizeof c->bindings[0])) {
                    fprintf(stderr, "bench: binding %s left out: at most %d bindings at once (--bindings chooses)\n",
                            rn->name, c->nbindings);
                    continue;
                }
                strcpy(c->bindings[c->nbindings++], rn->name);
            }
    }
    int kept = 0;
    for (int b = 0; b < c->nbindings; b++) {
        const cb_runner *rn = cb_runners_find(runners, c->bindings[b]);
        if (!rn) return cb_fail(CB_ERR_NOT_FOUND, "no runner manifest for binding '%s'", c->bindings[b]);
        if (rn->declared_unavailable)
            return cb_fail(CB_ERR_UNSUPPORTED, "binding '%s' cannot be installed on this machine (%s/unavailable.json): %s",
                           c->bindings[b], rn->dir, rn->reason);
        if (!rn->nbench)
            return cb_fail(CB_ERR_UNSUPPORTED, "binding '%s' has no benchmark worker (its manifest lists no \"bench\")",
                           c->bindings[b]);
        if (!cb_runner_version(rn, c->work_dir, versions[kept], sizeof versions[kept])) {
            char hint[320];
            cb_runner_install_hint(rn, hint, sizeof hint);
            if (chosen_by_user)
                return cb_fail(CB_ERR_UNSUPPORTED, "binding '%s' is not installed here: %s; %s", rn->name, versions[kept], hint);
            fprintf(stderr, "bench: binding %s left out: not installed here (%s); %s\n", rn->name, versions[kept], hint);
            continue;
        }
        if (kept != b) memcpy(c->bindings[kept], c->bindings[b], sizeof c->bindings[b]);
        kept++;
    }
    c->nbindings = kept;
    if (!kept) return cb_fail(CB_ERR_NOT_FOUND, "no binding with a benchmark worker is installed here");
    return CB_OK;
}

cb_status cb_bench_run(cb_bench_config *c, const cb_runners *runners, int *failures)
{
    *failures = 0;
    cb_bench_results r = {.c = c, .all = runners};
    cb_status st = cb_mkdirs(c->work_dir);
    if (st == CB_OK) st = cb_mkdirs(c->out_dir);
    if (st == CB_OK) st = choose_bindings(c, runners, r.versions);
    if (st != CB_OK) return st;
    for (int b = 0; b < c->nbindings; b++) r.runners[b] = cb_runners_find(runners, c->bindings[b]);
    cb_machine_describe(r.machine, sizeof r.machine);
    utc_date(r.date, sizeof r.date);
    r.cells = calloc((size_t)c->nmodels * CB_BENCH_KINDS * (size_t)c->nbindings, sizeof *r.cells);
    if (!r.cells) return cb_fail(CB_ERR_NOMEM, "out of memory");
    for (int m = 0; m < c->nmodels; m++)
        for (int k = 0; k < CB_BENCH_KINDS; k++)
            for (int b = 0; b < c->nbindings; b++)
                if (c->kinds[k] && binding_does(r.runners[b], c, m, k))
                    r.cells[r.ncells++] = (cb_bench_cell){.model = m, .kind = k, .binding = b, .chosen = -1,
                                                          .sz = cb_bench_sizes_of(c, m, k)};
    if (!r.ncells) {
        free(r.cells);
        return cb_fail(CB_ERR_INVALID_ARG, "nothing to measure: no binding here measures these models at these kinds "
                                           "(ImageNet CNNs and --onnx files: inference, latency and start-up only)");
    }
    /* The model files first: one a binding cannot have (an export that
     * fails, a file of the user's crossbind cannot import) is refused
     * before minutes of measuring. */
    st = write_models(c, &r);
    if (st != CB_OK) {
        free(r.cells);
        return st;
    }
    if (!c->quiet) fprintf(stderr, "bench: %s; %d threads\nbench: measuring SGEMM (2048^3)\n", r.machine, c->threads);
    /* The FMA peak first: OpenBLAS's threads keep spinning for a while after
     * an SGEMM and would take the cores from it (19 instead of 488 GFLOP/s
     * at 2 threads, measured after it). */
    r.fma[0] = cb_bench_fma_gflops(1);
    r.fma[1] = cb_bench_fma_gflops(c->threads);
    if (!c->quiet) fprintf(stderr, "bench: FMA peak %.1f GFLOP/s at 1 thread, %.1f at %d\n", r.fma[0], r.fma[1], c->threads);
    r.sgemm[0][0] = cb_bench_sgemm_gflops(1);
    r.sgemm[0][1] = cb_bench_sgemm_gflops(c->threads);
    cb_set_threads(c->threads);
    if (!c->quiet) fprintf(stderr, "bench: SGEMM %.1f GFLOP/s at 1 thread, %.1f at %d\n", r.sgemm[0][0], r.sgemm[0][1], c->threads);
    const double t0 = cb_now();
    int done = 0;
    for (int round = 1; st == CB_OK && round <= c->rounds && !r.interrupted; round++) {
        for (int m = 0; m < c->nmodels && !r.interrupted; m++)
            for (int k = 0; k < CB_BENCH_KINDS && !r.interrupted; k++)
                for (int i = 0; i < c->nbindings && !r.interrupted; i++) {
                    int b = round % 2 ? i : c->nbindings - 1 - i; /* alternate the order */
                    cb_bench_cell *cl = cb_bench_find(&r, m, k, b);
                    if (!cl || cl->failed) continue;
                    if (!c->quiet)
                        fprintf(stderr, "[round %d/%d, %.0f s] %s %s %s\n", round, c->rounds, cb_now() - t0,
                                c->models[m], cb_bench_kind_names[k], c->bindings[b]);
                    measure(&r, cl, round);
                    if (cl->failed && !c->quiet) fprintf(stderr, "  failed: %s\n", cl->error);
                    done++;
                    cb_status w = cb_bench_write(&r); /* nothing measured is lost */
                    if (w != CB_OK) st = w;
                }
        if (!r.interrupted) r.rounds_done = round;
    }
    if (st == CB_OK && !r.interrupted) {
        r.sgemm[1][0] = cb_bench_sgemm_gflops(1);
        r.sgemm[1][1] = cb_bench_sgemm_gflops(c->threads);
        st = cb_bench_write(&r);
    }
    for (int i = 0; i < r.ncells; i++) {
        *failures += r.cells[i].failed;
        free(r.cells[i].times.v), free(r.cells[i].rounds.v), free(r.cells[i].conv.v), free(r.cells[i].conv_sgemm.v);
        for (int v = 0; v < 4; v++) free(r.cells[i].probe[v].v);
    }
    free(r.cells);
    return st; /* interrupted: CB_OK, and cb_proc_interrupted() says so */
}
