/* What every variant of an experiment shares, made once in its work
 * directory: the inputs (the image pipeline's tensor, or the user's .npy)
 * and the model (torchvision's, exported to ONNX with its weights saved as
 * a state dict, by the pytorch-python runner). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/file.h"
#include "../core/json.h"
#include "../core/sha256.h"
#include "../study/proc.h"
#include "crossbind/formats.h"
#include "crossbind/data.h"
#include "crossbind/image.h"
#include "crossbind/model.h"
#include "crossbind/onnx.h"
#include "delta_util.h"
#include "prepare.h"

void delta_inputs_free(delta_inputs *in)
{
    for (int i = 0; i < in->n; i++) {
        free(in->names[i]), free(in->sha256[i]);
        if (in->keras_sha256) free(in->keras_sha256[i]);
    }
    free(in->names);
    free(in->sha256);
    free(in->keras_sha256);
    free(in->labels);
    memset(in, 0, sizeof *in);
}

static cb_status inputs_alloc(delta_inputs *in, int n)
{
    in->names = calloc((size_t)n, sizeof *in->names);
    in->sha256 = calloc((size_t)n, sizeof *in->sha256);
    return in->names && in->sha256 ? CB_OK : cb_fail(CB_ERR_NOMEM, "out of memory");
}

/* Per input, the SHA-256 of its float32 values. */
static cb_status hash_rows(const cb_tensor *t, int n, char **sha)
{
    size_t row = (size_t)(cb_tensor_numel(t) / t->shape[0]) * cb_dtype_size(t->dtype);
    for (int i = 0; i < n; i++) {
        char hex[65];
        cb_sha256_hex((const char *)t->data + (size_t)i * row, row, hex);
        if (!(sha[i] = strdup(hex))) return cb_fail(CB_ERR_NOMEM, "out of memory");
    }
    return CB_OK;
}

/* The images through the pipeline with one normalisation and layout into
 * `out`; names are set when in->names is still empty. */
static cb_status images_to_npy(const delta_config *c, cb_image_norm norm, cb_image_layout layout, const char *out,
                               delta_inputs *in, char **sha, char *pipeline, size_t cap)
{
    cb_image_list l = {0};
    cb_status s = c->images[0] ? cb_image_list_dir(c->images, &l) : cb_image_stand_in(&l);
    if (s == CB_OK && l.n == 0) s = cb_fail(CB_ERR_NOT_FOUND, "%s holds no JPEG or PNG image", c->images);
    int n = s == CB_OK ? (l.n < c->max_images ? l.n : c->max_images) : 0;
    cb_image_prep p;
    cb_image_prep_default(&p);
    p.resize = c->resize, p.crop = c->crop, p.norm = norm, p.layout = layout;
    cb_tensor t = {.dtype = CB_F32, .ndim = 4, .shape = {n, 3, c->crop, c->crop}};
    if (layout == CB_LAYOUT_HWC) t.shape[1] = c->crop, t.shape[3] = 3;
    size_t per = (size_t)3 * (size_t)c->crop * (size_t)c->crop;
    int named = in->names != NULL;
    if (s == CB_OK && !(t.data = malloc((size_t)n * per * sizeof(float)))) s = cb_fail(CB_ERR_NOMEM, "out of memory for the inputs");
    if (s == CB_OK && !named) s = inputs_alloc(in, n);
    for (int i = 0; s == CB_OK && i < n; i++) {
        s = cb_image_process_file(l.paths[i], &p, (float *)t.data + (size_t)i * per, NULL);
        if (named) continue;
        in->n = i + 1;
        if (s == CB_OK && !(in->names[i] = strdup(l.paths[i]))) s = cb_fail(CB_ERR_NOMEM, "out of memory");
    }
    if (!sha) sha = in->sha256; /* the first tensor made: the inputs' own hashes */
    if (s == CB_OK) s = hash_rows(&t, n, sha);
    if (s == CB_OK) s = cb_npy_write(out, &t);
    snprintf(pipeline, cap, "decode (%s), resize shorter side %d (antialiased bilinear), centre crop %d, %s "
             "normalisation, %s float32", cb_image_decoders(), c->resize, c->crop, cb_image_norm_name(norm),
             layout == CB_LAYOUT_HWC ? "NHWC" : "NCHW");
    cb_tensor_free(&t);
    cb_image_list_free(&l);
    return s;
}

static cb_status npy_inputs(const delta_config *c, const char *out, delta_inputs *in, char *pipeline, size_t cap)
{
    cb_tensor t = {0};
    cb_status s = cb_npy_read(c->inputs_npy, &t);
    if (s == CB_OK && ((t.dtype != CB_F32 && t.dtype != CB_I64) || t.ndim < 2 || t.shape[0] < 1))
        s = cb_fail(CB_ERR_FORMAT, "%s: inputs must be float32 (or int64 token ids) [N, ...] with N >= 1", c->inputs_npy);
    if (s == CB_OK && t.shape[0] > c->max_images) t.shape[0] = c->max_images;
    if (s == CB_OK) s = inputs_alloc(in, (int)t.shape[0]);
    for (int i = 0; s == CB_OK && i < t.shape[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "inputs[%d]", i);
        in->n = i + 1;
        if (!(in->names[i] = strdup(name))) s = cb_fail(CB_ERR_NOMEM, "out of memory");
    }
    if (s == CB_OK) s = hash_rows(&t, in->n, in->sha256);
    if (s == CB_OK) s = cb_npy_write(out, &t);
    snprintf(pipeline, cap, "the user's tensor %s, as given", c->inputs_npy);
    cb_tensor_free(&t);
    return s;
}

cb_status delta_prepare_inputs(delta_env *e, delta_inputs *in, char *pipeline, size_t cap)
{
    delta_path(e->inputs, sizeof e->inputs, "%s/inputs.npy", e->work);
    memset(in, 0, sizeof *in);
    cb_status s = e->c->inputs_npy[0] ? npy_inputs(e->c, e->inputs, in, pipeline, cap)
                                      : images_to_npy(e->c, CB_NORM_TORCHVISION, CB_LAYOUT_CHW, e->inputs, in, NULL,
                                                      pipeline, cap);
    if (s == CB_OK) s = delta_sha256_file(e->inputs, in->file_sha256);
    return s;
}

/* export.json records what made model.onnx and weights.pt: they are made
 * again only when it differs or a file is gone. */
static int export_current(const char *record, const char *want)
{
    unsigned char *text;
    size_t len;
    if (cb_read_file(record, 1 << 16, &text, &len) != CB_OK) return 0;
    int same = len == strlen(want) && !memcmp(text, want, len);
    free(text);
    return same;
}

cb_status delta_prepare_model(delta_env *e, char *weights_sha, char *model_sha)
{
    const delta_config *c = e->c;
    char record[2200], want[6000], user_sha[65] = "seeded";
    delta_path(e->model_onnx, sizeof e->model_onnx, "%s/model.onnx", e->work);
    delta_path(e->weights, sizeof e->weights, "%s/weights.pt", e->work);
    delta_path(record, sizeof record, "%s/export.json", e->work);
    cb_status s = c->weights[0] ? delta_sha256_file(c->weights, user_sha) : CB_OK;
    if (s != CB_OK) return s;
    snprintf(want, sizeof want, "{\"model\": \"%s\", \"seed\": %ld, \"weights_sha256\": \"%s\", \"opset\": %d}\n",
             c->model, c->seed, user_sha, c->opset);
    if (!export_current(record, want) || delta_sha256_file(e->model_onnx, model_sha) != CB_OK ||
        delta_sha256_file(e->weights, weights_sha) != CB_OK) {
        const cb_runner *rn = cb_runners_find(e->runners, "pytorch-python");
        char version[512], seed[32], opset[16], out[2200], err[2200];
        if (!rn) return cb_fail(CB_ERR_NOT_FOUND, "the model is exported by the pytorch-python runner, which is missing");
        if (!cb_runner_version(rn, e->work, version, sizeof version)) {
            char hint[400];
            cb_runner_install_hint(rn, hint, sizeof hint);
            return cb_fail(CB_ERR_NOT_FOUND, "exporting %s needs torchvision in pytorch-python: %s; %s", c->model,
                           version, hint);
        }
        snprintf(seed, sizeof seed, "%ld", c->seed);
        snprintf(opset, sizeof opset, "%d", c->opset);
        char *argv[32];
        int n = 0;
        for (int i = 0; i < rn->ncommand; i++) argv[n++] = rn->command[i];
        argv[n++] = "imagenet-export", argv[n++] = (char *)c->model;
        if (c->weights[0]) argv[n++] = "--weights-in", argv[n++] = (char *)c->weights;
        else argv[n++] = "--seed", argv[n++] = seed;
        argv[n++] = "--opset", argv[n++] = opset;
        argv[n++] = "--out", argv[n++] = e->model_onnx;
        argv[n++] = "--weights-out", argv[n++] = e->weights;
        argv[n] = NULL;
        delta_path(out, sizeof out, "%s/export.stdout.txt", e->work);
        delta_path(err, sizeof err, "%s/export.stderr.txt", e->work);
        fprintf(stderr, "[delta] exporting %s (%s) to ONNX opset %d with pytorch-python\n", c->model,
                c->weights[0] ? c->weights : "seeded random weights", c->opset);
        cb_proc_result pr;
        if ((s = cb_proc_run(argv, out, err, e->timeout_s, &pr)) != CB_OK) return s;
        if (!pr.exited || pr.exit_code) {
            char tail[600];
            delta_last_error_line(err, tail, sizeof tail);
            return cb_fail(CB_ERR_IO, "exporting %s failed (see %s): %s", c->model, err, tail);
        }
        if ((s = delta_sha256_file(e->model_onnx, model_sha)) != CB_OK ||
            (s = delta_sha256_file(e->weights, weights_sha)) != CB_OK)
            return s;
        if ((s = cb_write_file_atomic(record, want, strlen(want))) != CB_OK) return s;
    }
    snprintf(e->export_note, sizeof e->export_note, "torch.onnx.export opset %d by the pytorch-python runner", c->opset);
    return CB_OK;
}

cb_status delta_prepare_keras(delta_env *e, delta_inputs *in, char *model_sha)
{
    const delta_config *c = e->c;
    char record[2300], want[512], onnx_sha[65], pipeline[1024], user_sha[65] = "seeded";
    delta_path(e->keras_dir, sizeof e->keras_dir, "%s/keras", e->work);
    delta_path(e->keras_inputs, sizeof e->keras_inputs, "%s/inputs-keras.npy", e->work);
    delta_path(record, sizeof record, "%s/crossbind-export.json", e->keras_dir);
    char h5[2400], onnx[2400];
    delta_path(h5, sizeof h5, "%s/model.h5", e->keras_dir);
    delta_path(onnx, sizeof onnx, "%s/model.onnx", e->keras_dir);
    cb_status s = c->keras_weights[0] ? delta_sha256_file(c->keras_weights, user_sha) : CB_OK;
    if (s != CB_OK) return s;
    snprintf(want, sizeof want, "{\"model\": \"%s\", \"seed\": %ld, \"weights_sha256\": \"%s\", \"opset\": %d}\n",
             c->model, c->seed, user_sha, c->opset);
    if (!export_current(record, want) || delta_sha256_file(h5, model_sha) != CB_OK || delta_sha256_file(onnx, onnx_sha) != CB_OK) {
        const cb_runner *rn = cb_runners_find(e->runners, "tensorflow-python");
        char version[512], seed[32], opset[16], out[2300], err[2300];
        if (!rn) return cb_fail(CB_ERR_NOT_FOUND, "Keras' model is exported by the tensorflow-python runner, which is missing");
        if (!cb_runner_version(rn, e->work, version, sizeof version)) {
            char hint[400];
            cb_runner_install_hint(rn, hint, sizeof hint);
            return cb_fail(CB_ERR_NOT_FOUND, "exporting Keras' %s needs tensorflow-python: %s; %s", c->model, version, hint);
        }
        snprintf(seed, sizeof seed, "%ld", c->seed);
        snprintf(opset, sizeof opset, "%d", c->opset);
        char *argv[32];
        int n = 0;
        for (int i = 0; i < rn->ncommand; i++) argv[n++] = rn->command[i];
        argv[n++] = "keras-export", argv[n++] = (char *)c->model;
        if (c->keras_weights[0]) argv[n++] = "--weights-in", argv[n++] = (char *)c->keras_weights;
        else argv[n++] = "--seed", argv[n++] = seed;
        argv[n++] = "--opset", argv[n++] = opset, argv[n++] = "--out-dir", argv[n++] = e->keras_dir;
        argv[n] = NULL;
        if ((s = cb_mkdirs(e->keras_dir)) != CB_OK) return s;
        delta_path(out, sizeof out, "%s/export.stdout.txt", e->work);
        delta_path(err, sizeof err, "%s/export-keras.stderr.txt", e->work);
        fprintf(stderr, "[delta] exporting Keras' %s (%s) to .h5, ONNX (tf2onnx, opset %d) and TFLite "
                        "with tensorflow-python\n", c->model, c->keras_weights[0] ? c->keras_weights : "seeded random weights",
                c->opset);
        cb_proc_result pr;
        if ((s = cb_proc_run(argv, out, err, e->timeout_s, &pr)) != CB_OK) return s;
        if (!pr.exited || pr.exit_code) {
            char tail[600];
            delta_last_error_line(err, tail, sizeof tail);
            return cb_fail(CB_ERR_IO, "exporting Keras' %s failed (see %s): %s", c->model, err, tail);
        }
        if ((s = delta_sha256_file(h5, model_sha)) != CB_OK) return s;
        if ((s = cb_write_file_atomic(record, want, strlen(want))) != CB_OK) return s;
    }
    if (c->keras_weights[0])
        snprintf(e->keras_note, sizeof e->keras_note, "tf.keras.applications with the user's weights (SHA-256 %.16s...), "
                 "exported by the tensorflow-python runner (its export.json names the versions); ONNX opset %d", user_sha,
                 c->opset);
    else
        snprintf(e->keras_note, sizeof e->keras_note, "tf.keras.applications, seed %ld, exported by the tensorflow-python "
                 "runner (its export.json names the versions); ONNX opset %d", c->seed, c->opset);
    cb_image_norm norm;
    if ((s = cb_image_norm_parse(delta_keras_norm(c->model), &norm)) != CB_OK) return s;
    if (!(in->keras_sha256 = calloc((size_t)in->n, sizeof *in->keras_sha256))) return cb_fail(CB_ERR_NOMEM, "out of memory");
    s = images_to_npy(c, norm, CB_LAYOUT_HWC, e->keras_inputs, in, in->keras_sha256, pipeline, sizeof pipeline);
    if (s == CB_OK) s = delta_sha256_file(e->keras_inputs, in->keras_file_sha256);
    return s;
}

/* The IMDb models' inputs as every runtime takes them: int64 token ids
 * [N, 300] (an ONNX Gather's indices, a PyTorch embedding's), from the data
 * set's [N, 1, 1, 300] ids held as floats. */
static cb_status token_ids(const cb_dataset *d, cb_tensor *t)
{
    const int64_t len = (int64_t)d->c * d->h * d->w, total = d->n * len;
    int64_t *ids = malloc((size_t)(total ? total : 1) * sizeof *ids);
    if (!ids) return cb_fail(CB_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < total; i++) ids[i] = (int64_t)d->x[i];
    *t = (cb_tensor){.dtype = CB_I64, .ndim = 2, .shape = {d->n, len}, .data = ids};
    return CB_OK;
}

cb_status delta_prepare_study(delta_env *e, delta_inputs *in, char *weights_sha, char *model_sha, char *pipeline,
                              size_t cap)
{
    const delta_config *c = e->c;
    const char *format = cb_model_data_format(c->model), *dir = c->data[0] ? c->data : cb_dataset_default_dir(format);
    cb_model *m = NULL;
    cb_load_info info;
    cb_dataset d = {0};
    memset(in, 0, sizeof *in);
    delta_path(e->model_onnx, sizeof e->model_onnx, "%s/model.onnx", e->work);
    delta_path(e->inputs, sizeof e->inputs, "%s/inputs.npy", e->work);
    snprintf(e->weights, sizeof e->weights, "%s", c->weights);
    cb_status s = delta_sha256_file(c->weights, weights_sha);
    if (s == CB_OK) s = cb_model_create(c->model, &m);
    if (s == CB_OK) s = cb_model_load_weights_ex(m, c->weights, 1, &info);
    if (s == CB_OK) s = cb_onnx_export(m, e->model_onnx);
    if (s == CB_OK) s = delta_sha256_file(e->model_onnx, model_sha);
    cb_model_free(m);
    if (s == CB_OK) s = cb_dataset_load(format, dir, 0, c->max_images, &d);
    cb_tensor t = {.dtype = CB_F32, .ndim = 4, .shape = {d.n, d.c, d.h, d.w}, .data = d.x};
    const int tokens = s == CB_OK && !strcmp(format, "imdb");
    if (tokens) s = token_ids(&d, &t);
    if (s == CB_OK) s = inputs_alloc(in, (int)d.n);
    if (s == CB_OK && !(in->labels = calloc((size_t)d.n, sizeof *in->labels))) s = cb_fail(CB_ERR_NOMEM, "out of memory");
    for (int i = 0; s == CB_OK && i < d.n; i++) {
        char name[64];
        snprintf(name, sizeof name, "test[%d]", i);
        in->n = i + 1;
        in->labels[i] = (int)d.y[i];
        if (!(in->names[i] = strdup(name))) s = cb_fail(CB_ERR_NOMEM, "out of memory");
    }
    if (s == CB_OK) s = hash_rows(&t, in->n, in->sha256);
    if (s == CB_OK) s = cb_npy_write(e->inputs, &t);
    if (s == CB_OK) s = delta_sha256_file(e->inputs, in->file_sha256);
    char what[64] = "pixels scaled to [0, 1]";
    if (tokens) snprintf(what, sizeof what, "int64 token ids [N, %lld]", (long long)t.shape[1]);
    snprintf(pipeline, cap, "the first %lld test samples of %s, %s as the study reads them", (long long)d.n, d.source,
             what);
    snprintf(e->export_note, sizeof e->export_note, "crossbind's ONNX export of %s with the given weights", c->model);
    if (t.data != d.x) free(t.data);
    cb_dataset_free(&d);
    return s;
}
