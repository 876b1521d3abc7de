/* Running one variant: crossbind in this process (its executor at the
 * variant's level), every other runtime through its runner's `delta`
 * command (runners/README.md) as a child process. Either way the timing
 * discipline is one: the first call's latency on its own, then `warmup`
 * untimed passes, then `reps` timed passes of each input at batch 1, the
 * clock around the forward call only (the input copied in before it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/clock.h"
#include "../core/file.h"
#include "../core/json.h"
#include "../core/sha256.h"
#include "../study/proc.h"
#include "crossbind/crossbind.h"
#include "crossbind/formats.h"
#include "crossbind/onnx.h"
#include "delta_util.h"
#include "variant.h"

const char *delta_variant_file(const delta_env *e, const delta_variant *v, char *buf)
{
    if (v->file[0]) return v->file;
    if (v->source == DELTA_SRC_PYTORCH) return v->runtime == DELTA_PYTORCH ? e->weights : e->model_onnx;
    const char *name = v->runtime == DELTA_KERAS ? "model.h5" : v->runtime != DELTA_TFLITE ? "model.onnx"
                     : !strcmp(v->level, "int8") ? "model-int8.tflite" : "model-float.tflite";
    delta_path(buf, 2400, "%s/%s", e->keras_dir, name);
    return buf;
}

const char *delta_variant_inputs(const delta_env *e, const delta_variant *v)
{
    return v->source == DELTA_SRC_KERAS ? e->keras_inputs : e->inputs;
}

const cb_runner *delta_runner_of(const delta_env *e, const delta_variant *v)
{
    if (v->runtime == DELTA_CROSSBIND) return NULL;
    if (v->runtime == DELTA_ONNXRUNTIME) return cb_runners_find(e->runners, "onnxruntime-node");
    if (v->runtime == DELTA_KERAS) return cb_runners_find(e->runners, "tensorflow-python");
    if (v->runtime == DELTA_TFLITE) return cb_runners_find(e->runners, "tensorflow-lite");
    if (v->runtime == DELTA_TVM) return cb_runners_find(e->runners, "tvm");
    if (v->runtime == DELTA_ONNX2TORCH) return cb_runners_find(e->runners, "pytorch-python");
    if (v->runtime == DELTA_ONNX2TF) return cb_runners_find(e->runners, "tensorflow-python");
    /* torch 2.7.1 is the PyPI environment of pytorch-python, 1.13.1 Debian's python3-torch */
    return cb_runners_find(e->runners, !strcmp(v->version, "1.13.1") ? "pytorch" : "pytorch-python");
}

/* The per-input hashes and the whole output's, from r->outputs. */
static cb_status hash_outputs(delta_result *r)
{
    size_t row = (size_t)r->classes * sizeof(float);
    if (!(r->input_sha256 = calloc((size_t)r->n_inputs, sizeof *r->input_sha256)))
        return cb_fail(CB_ERR_NOMEM, "out of memory");
    for (int i = 0; i < r->n_inputs; i++)
        cb_sha256_hex((const char *)r->outputs + (size_t)i * row, row, r->input_sha256[i]);
    cb_sha256_hex(r->outputs, row * (size_t)r->n_inputs, r->outputs_sha256);
    return CB_OK;
}

static cb_status fail_variant(delta_result *r, const char *status, const char *msg)
{
    snprintf(r->status, sizeof r->status, "%s", status);
    free(r->error);
    r->error = strdup(msg);
    return r->error ? CB_OK : cb_fail(CB_ERR_NOMEM, "out of memory");
}

/* ---- crossbind, in this process ---- */

static cb_status crossbind_passes(const delta_env *e, const delta_variant *v, cb_tensor *x, delta_result *r,
                                  cb_buf *man)
{
    const delta_config *c = e->c;
    char buf[2400];
    const char *file = delta_variant_file(e, v, buf);
    cb_model *m = NULL;
    cb_exec *ex = NULL;
    cb_status s = cb_set_threads(v->threads);
    if (s == CB_OK) s = cb_onnx_load(file, 0, &m);
    if (s == CB_OK && m->input_nhwc[0]) s = cb_tensor_nhwc_to_nchw(x); /* a tf2onnx file: [N,H,W,C] inputs */
    const cb_node *in = s == CB_OK ? &m->graph.nodes[m->input] : NULL;
    int64_t per = x->ndim > 1 ? cb_tensor_numel(x) / x->shape[0] : 0;
    if (s == CB_OK && (m->n_inputs != 1 || per != cb_node_numel(in)))
        s = cb_fail(CB_ERR_SHAPE, "%s takes %d input(s) of %lld values per sample; the inputs have %lld", file,
                    m->n_inputs, (long long)cb_node_numel(in), (long long)per);
    if (s == CB_OK) s = cb_exec_create(&m->graph, 1, 0, (cb_kernels)cb_level_parse(v->level), &ex);
    if (s == CB_OK) cb_exec_freeze_params(ex);
    if (s == CB_OK) {
        r->n_inputs = (int)x->shape[0];
        r->classes = (int)cb_node_numel(&m->graph.nodes[m->outputs[0]]);
        r->reps = c->reps;
        r->outputs = malloc((size_t)r->n_inputs * (size_t)r->classes * sizeof(float));
        r->times = malloc((size_t)r->n_inputs * (size_t)r->reps * sizeof(double));
        if (!r->outputs || !r->times) s = cb_fail(CB_ERR_NOMEM, "out of memory for the outputs");
    }
    const float *xs = x->data;
    float *slot = s == CB_OK ? cb_exec_value(ex, m->input) : NULL;
    size_t bytes = (size_t)per * sizeof(float);
    for (int pass = -1; s == CB_OK && pass < c->warmup; pass++) { /* -1: the first call */
        memcpy(slot, xs, bytes);
        double t0 = cb_now();
        s = cb_exec_forward(ex, 1);
        if (pass < 0) r->first_call_s = cb_now() - t0;
    }
    for (int i = 0; s == CB_OK && i < r->n_inputs; i++)
        for (int k = 0; s == CB_OK && k < r->reps; k++) {
            memcpy(slot, xs + (size_t)i * (size_t)per, bytes);
            double t0 = cb_now();
            s = cb_exec_forward(ex, 1);
            r->times[(size_t)i * (size_t)r->reps + (size_t)k] = cb_now() - t0;
            if (s == CB_OK && k == 0) s = cb_exec_read(ex, m->outputs[0], 0, 1, r->outputs + (size_t)i * (size_t)r->classes);
        }
    if (s == CB_OK) {
        char hash[65];
        cb_exec_plan_sha256(ex, hash);
        cb_buf_printf(man, ", \"version\": \"crossbind %s\", \"plan_sha256\": \"%s\", \"blas\": ", CB_VERSION, hash);
        cb_buf_json_string(man, cb_blas_name());
        cb_buf_printf(man, ", \"convolutions\": ");
        cb_buf_json_string(man, cb_conv_backend());
    }
    cb_exec_free(ex);
    cb_model_free(m);
    return s;
}

/* ---- other runtimes, through their runners ---- */

static void add_arg(char **argv, int *n, const char *a) { argv[(*n)++] = (char *)a; }

/* Reads DIR/outputs.npy and DIR/times.json as the runner protocol writes them. */
static cb_status read_runner_output(const char *dir, const delta_config *c, delta_result *r, cb_buf *man)
{
    char path[2400];
    cb_tensor o = {0};
    delta_path(path, sizeof path, "%s/outputs.npy", dir);
    cb_status s = cb_npy_read(path, &o);
    if (s == CB_OK && (o.dtype != CB_F32 || o.ndim != 2))
        s = cb_fail(CB_ERR_FORMAT, "%s: the runner's outputs are not a float32 [N, classes] array", path);
    if (s != CB_OK) {
        cb_tensor_free(&o);
        return s;
    }
    r->n_inputs = (int)o.shape[0];
    r->classes = (int)o.shape[1];
    r->outputs = o.data;
    o.data = NULL;
    unsigned char *text = NULL;
    size_t len = 0;
    cb_json t = {0};
    delta_path(path, sizeof path, "%s/times.json", dir);
    if ((s = cb_read_file(path, 1 << 24, &text, &len)) == CB_OK) s = cb_json_parse_capped((char *)text, len, path, 1 << 20, &t);
    free(text);
    if (s != CB_OK) return s;
    const cb_json *per = cb_json_get(&t, "per_input_s"), *first = cb_json_get(&t, "first_call_s");
    if (!per || per->type != CB_JSON_ARR || per->count != r->n_inputs || !first || first->type != CB_JSON_NUM)
        s = cb_fail(CB_ERR_FORMAT, "%s: needs first_call_s and per_input_s with one list per input", path);
    r->reps = c->reps;
    r->first_call_s = s == CB_OK ? first->num : 0;
    if (s == CB_OK && !(r->times = malloc((size_t)r->n_inputs * (size_t)r->reps * sizeof(double))))
        s = cb_fail(CB_ERR_NOMEM, "out of memory");
    for (int i = 0; s == CB_OK && i < r->n_inputs; i++) {
        const cb_json *l = &per->items[i];
        if (l->type != CB_JSON_ARR || l->count != r->reps) {
            s = cb_fail(CB_ERR_FORMAT, "%s: input %d has %d times, not %d", path, i, l->count, r->reps);
            break;
        }
        for (int k = 0; k < r->reps; k++) {
            if (l->items[k].type != CB_JSON_NUM || !(l->items[k].num >= 0)) {
                s = cb_fail(CB_ERR_FORMAT, "%s: a time is not a non-negative number", path);
                break;
            }
            r->times[(size_t)i * (size_t)r->reps + (size_t)k] = l->items[k].num;
        }
    }
    /* the runner's own account of itself goes into the manifest as it said it:
     * versions and settings (strings, numbers) and TVM's record of the passes it ran */
    static const char *const keys[] = {"framework", "version", "torchvision", "python", "opt_level", "execution_provider",
                                       "device", "target", "compile_s", "conversion", "onnx2torch", "onnx2tf", "convert_s",
                                       "input_layout", "onnx2tf_options", "capture_skipped", "quantised",
                                       "tensorflow", "passes", NULL};
    for (int k = 0; s == CB_OK && keys[k]; k++) {
        const cb_json *v = cb_json_get(&t, keys[k]);
        if (!v) continue;
        if (v->type == CB_JSON_STR) {
            cb_buf_printf(man, ", \"runner_%s\": ", keys[k]);
            cb_buf_json_string(man, v->str);
        } else if (v->type == CB_JSON_NUM || v->type == CB_JSON_BOOL) {
            cb_buf_printf(man, ", \"runner_%s\": ", keys[k]);
            if (v->type == CB_JSON_BOOL) cb_buf_printf(man, v->num ? "true" : "false");
            else cb_buf_json_number(man, v->num);
        } else if (v->type == CB_JSON_ARR) { /* a list of names */
            cb_buf_printf(man, ", \"runner_%s\": [", keys[k]);
            for (int i = 0, n = 0; i < v->count; i++)
                if (v->items[i].type == CB_JSON_STR) {
                    cb_buf_printf(man, n++ ? ", " : "");
                    cb_buf_json_string(man, v->items[i].str);
                }
            cb_buf_printf(man, "]");
        }
    }
    cb_json_free(&t);
    return s;
}

cb_status delta_runner_call(const delta_env *e, const delta_variant *v, const char *file, const char *inputs,
                           const char *dir, int reps, int warmup, int capture, cb_buf *man)
{
    const delta_config *c = e->c;
    const cb_runner *rn = delta_runner_of(e, v);
    char threads[16], nreps[16], nwarm[16], version[512], out[2400], err[2400];
    if (!rn) return cb_fail(CB_ERR_NOT_FOUND, "the runner of %s is not among the runners crossbind found", v->key);
    if (cb_mkdirs(dir) != CB_OK) return CB_ERR_IO;
    if (!cb_runner_version(rn, dir, version, sizeof version)) {
        char hint[400];
        cb_runner_install_hint(rn, hint, sizeof hint);
        return cb_fail(CB_ERR_NOT_FOUND, "%s: %s; %s", rn->name, version, hint);
    }
    if (man) {
        cb_buf_printf(man, ", \"runner\": ");
        cb_buf_json_string(man, rn->name);
        cb_buf_printf(man, ", \"runner_versions\": ");
        cb_buf_json_string(man, version);
    }
    snprintf(threads, sizeof threads, "%d", v->threads);
    snprintf(nreps, sizeof nreps, "%d", reps);
    snprintf(nwarm, sizeof nwarm, "%d", warmup);
    char *argv[40];
    int n = 0;
    for (int i = 0; i < rn->ncommand; i++) add_arg(argv, &n, rn->command[i]);
    add_arg(argv, &n, "delta");
    if (v->runtime == DELTA_PYTORCH) {
        add_arg(argv, &n, "--model"), add_arg(argv, &n, c->model);
        add_arg(argv, &n, "--weights"), add_arg(argv, &n, e->weights);
    } else if (v->runtime == DELTA_ONNX2TORCH || v->runtime == DELTA_ONNX2TF) {
        add_arg(argv, &n, "--onnx"), add_arg(argv, &n, file);
    } else {
        add_arg(argv, &n, "--model"), add_arg(argv, &n, file);
        if (v->runtime == DELTA_ONNXRUNTIME) add_arg(argv, &n, "--opt-level"), add_arg(argv, &n, v->level);
        if (v->runtime == DELTA_TVM) add_arg(argv, &n, "--opt-level"), add_arg(argv, &n, v->level + 1); /* "O2": 2 */
    }
    add_arg(argv, &n, "--inputs"), add_arg(argv, &n, inputs);
    add_arg(argv, &n, "--out"), add_arg(argv, &n, dir);
    add_arg(argv, &n, "--threads"), add_arg(argv, &n, threads);
    add_arg(argv, &n, "--reps"), add_arg(argv, &n, nreps);
    add_arg(argv, &n, "--warmup"), add_arg(argv, &n, nwarm);
    if (capture) add_arg(argv, &n, "--capture");
    if (v->device[0]) add_arg(argv, &n, "--device"), add_arg(argv, &n, v->device); /* a device its manifest declares */
    argv[n] = NULL;
    delta_path(out, sizeof out, "%s/stdout.txt", dir);
    delta_path(err, sizeof err, "%s/stderr.txt", dir);
    cb_proc_result pr;
    cb_status s = cb_proc_run(argv, out, err, e->timeout_s, &pr);
    if (s != CB_OK) return s;
    if (pr.interrupted) return cb_fail(CB_ERR_IO, "interrupted");
    if (pr.exited && pr.exit_code == 0) return CB_OK;
    char tail[600] = "";
    delta_last_error_line(err, tail, sizeof tail);
    return cb_fail(CB_ERR_IO, "%s %s (see %s)%s%s", rn->name,
                   pr.timed_out ? "ran past its time limit" : pr.exited ? "failed" : "was killed by a signal", err,
                   tail[0] ? ": " : "", tail);
}

void delta_variant_dir(const delta_env *e, const delta_variant *v, const char *sub, char *out, size_t cap)
{
    char name[sizeof v->key];
    snprintf(name, sizeof name, "%s", v->key);
    delta_safe_name(name);
    snprintf(out, cap, "%s/%s/%s", e->work, sub, name);
}

static cb_status runner_passes(const delta_env *e, const delta_variant *v, delta_result *r, cb_buf *man)
{
    char dir[2300], buf[2400];
    delta_variant_dir(e, v, "variants", dir, sizeof dir);
    cb_status s = delta_runner_call(e, v, delta_variant_file(e, v, buf), delta_variant_inputs(e, v), dir, e->c->reps,
                                    e->c->warmup, 0, man);
    if (s == CB_ERR_NOT_FOUND) return fail_variant(r, "unavailable", cb_last_error());
    if (s == CB_OK) s = read_runner_output(dir, e->c, r, man);
    if (s != CB_OK && !strcmp(cb_last_error(), "interrupted")) return s;
    return s == CB_OK ? CB_OK : fail_variant(r, "failed", cb_last_error());
}

/* The conversion path of a variant, for people. */
static void conversion(const delta_env *e, const delta_variant *v, char *out, size_t cap)
{
    const char *rt = delta_runtime_name(v->runtime), *model = e->c->model;
    if (v->file[0]) snprintf(out, cap, "the user's ONNX file, loaded by %s", rt);
    else if (e->c->study && v->runtime == DELTA_PYTORCH)
        snprintf(out, cap, "native: the study's %s in PyTorch %s with the trained weights", model, v->version);
    else if (e->c->study) snprintf(out, cap, "trained weights -> ONNX (%s) -> %s", e->export_note, rt);
    else if (v->runtime == DELTA_PYTORCH)
        snprintf(out, cap, "native: torchvision's %s in PyTorch %s, eager mode", model, v->version);
    else if (v->runtime == DELTA_ONNX2TORCH && v->source == DELTA_SRC_KERAS)
        snprintf(out, cap, "Keras -> ONNX (tf2onnx, %s) -> onnx2torch -> PyTorch 2.7.1", e->keras_note);
    else if (v->runtime == DELTA_ONNX2TORCH)
        snprintf(out, cap, "PyTorch -> ONNX (%s) -> onnx2torch -> PyTorch 2.7.1", e->export_note);
    else if (v->runtime == DELTA_ONNX2TF && v->source == DELTA_SRC_KERAS)
        snprintf(out, cap, "Keras -> ONNX (tf2onnx, %s) -> onnx2tf -> TensorFlow 2.18.1", e->keras_note);
    else if (v->runtime == DELTA_ONNX2TF)
        snprintf(out, cap, "PyTorch -> ONNX (%s) -> onnx2tf -> TensorFlow 2.18.1", e->export_note);
    else if (v->source == DELTA_SRC_PYTORCH) snprintf(out, cap, "PyTorch -> ONNX (%s) -> %s", e->export_note, rt);
    else if (v->runtime == DELTA_KERAS) snprintf(out, cap, "native: tf.keras.applications' %s in TensorFlow (%s)", model, e->keras_note);
    else if (v->runtime == DELTA_TFLITE)
        snprintf(out, cap, "Keras -> TFLite (TFLiteConverter%s) -> LiteRT", !strcmp(v->level, "int8")
                 ? ", Optimize.DEFAULT: dynamic-range int8 weights" : ", no optimisation: float32");
    else snprintf(out, cap, "Keras -> ONNX (tf2onnx, %s) -> %s", e->keras_note, rt);
}

/* What the variant runs and how, as the manifest's leading fields. */
static void manifest_head(const delta_env *e, const delta_variant *v, cb_buf *man, const char *file_sha)
{
    const delta_config *c = e->c;
    char conv[1200], buf[2400];
    int int8 = v->runtime == DELTA_TFLITE && !strcmp(v->level, "int8");
    cb_buf_printf(man, "{\"key\": ");
    cb_buf_json_string(man, v->key);
    cb_buf_printf(man, ", \"source\": \"%s\", \"runtime\": \"%s\", \"level\": ",
                  v->source == DELTA_SRC_KERAS ? "keras" : v->file[0] ? "file" : "pytorch", delta_runtime_name(v->runtime));
    cb_buf_json_string(man, v->level);
    cb_buf_printf(man, ", \"threads\": %d, \"device\": \"%s\", \"repeat\": %s, \"quantisation\": \"%s\", "
                       "\"conversion\": ", v->threads, v->device[0] ? v->device : "cpu", v->repeat ? "true" : "false",
                  int8 ? "dynamic-range int8 weights (TFLite Optimize.DEFAULT), float activations"
                       : "none (float32 weights and activations)");
    conversion(e, v, conv, sizeof conv);
    cb_buf_json_string(man, conv);
    cb_buf_printf(man, ", \"preprocessing\": \"%s\", \"file\": ",
                  v->source == DELTA_SRC_KERAS ? delta_keras_norm(c->model) : c->study ? "study" : "torchvision");
    cb_buf_json_string(man, delta_variant_file(e, v, buf));
    cb_buf_printf(man, ", \"file_sha256\": \"%s\"", file_sha);
    cb_buf_printf(man, ", \"reps\": %d, \"warmup\": %d, \"batch\": 1", c->reps, c->warmup);
}

/* Why the variant's device is out of its runtime's reach ("" when it is
 * not): crossbind's only backend is the CPU's, and a runner offers the
 * devices its manifest declares. */
static void device_missing(const delta_env *e, const delta_variant *v, char *why, size_t cap)
{
    why[0] = 0;
    if (!v->device[0]) return;
    if (v->runtime == DELTA_CROSSBIND) {
        snprintf(why, cap, "crossbind has no %s backend: its one backend is the CPU's", v->device);
        return;
    }
    const cb_runner *rn = delta_runner_of(e, v);
    char declared[4 * (CB_NAME + 2)] = "";
    for (int i = 0; rn && i < rn->ndevices; i++) {
        if (!strcmp(rn->devices[i], v->device)) return;
        snprintf(declared + strlen(declared), sizeof declared - strlen(declared), "%s%s", i ? ", " : "", rn->devices[i]);
    }
    snprintf(why, cap, "%s declares no %s device in its manifest (devices: %s)", rn ? rn->name : "its runner",
             v->device, declared[0] ? declared : "none");
}

cb_status delta_run_variant(const delta_env *e, const delta_variant *v, delta_result *r)
{
    char missing[300];
    device_missing(e, v, missing, sizeof missing);
    memset(r, 0, sizeof *r);
    snprintf(r->key, sizeof r->key, "%s", v->key);
    snprintf(r->status, sizeof r->status, "ok");
    cb_buf man = {0};
    char file_sha[65] = "", buf[2400];
    cb_status s = CB_OK;
    if (delta_sha256_file(delta_variant_file(e, v, buf), file_sha) != CB_OK) {
        manifest_head(e, v, &man, "");
        s = fail_variant(r, "failed", cb_last_error());
    } else {
        manifest_head(e, v, &man, file_sha);
        if (missing[0]) {
            s = fail_variant(r, "unavailable", missing);
        } else if (v->runtime == DELTA_CROSSBIND) {
            cb_tensor x = {0};
            const char *inputs = delta_variant_inputs(e, v);
            s = cb_npy_read(inputs, &x);
            if (s == CB_OK && x.ndim < 2) s = cb_fail(CB_ERR_FORMAT, "%s: inputs must be [N, ...]", inputs);
            if (s == CB_OK) s = cb_tensor_to_f32(&x, inputs); /* token ids: the executor's embedding reads floats */
            if (s == CB_OK) s = crossbind_passes(e, v, &x, r, &man);
            cb_tensor_free(&x);
            if (s == CB_ERR_NOMEM) return s;
            if (s != CB_OK) s = fail_variant(r, "failed", cb_last_error());
        } else {
            s = runner_passes(e, v, r, &man);
        }
    }
    cb_buf_printf(&man, "}");
    if (!cb_buf_ok(&man)) s = cb_fail(CB_ERR_NOMEM, "out of memory");
    r->manifest = man.data;
    if (s == CB_OK && !strcmp(r->status, "ok")) {
        if (r->n_inputs < 1 || r->classes < 1) s = fail_variant(r, "failed", "the variant produced no outputs");
        else s = hash_outputs(r);
    }
    return s;
}
