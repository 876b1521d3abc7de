/* crossbind delta's configuration: a JSON object, every key optional,
 *   {"model": "mobilenet_v2", "seed": 1, "weights": "resnet.pth",
 *    "images": "DIR", "inputs_npy": "X.npy", "max_images": 8,
 *    "resize": 256, "crop": 224, "reps": 10, "warmup": 2, "k": 5, "p": 0.9,
 *    "tolerance": 1e-3, "opset": 13, "mode": "vary-one" | "product",
 *    "base": {"runtime": "pytorch", "version": "2.7.1", "threads": 2,
 *             "levels": {"crossbind": "fast", "onnxruntime": "all"}},
 *    "axes": {"runtime": [...], "crossbind.level": [...], "onnxruntime.level": [...],
 *             "threads": [1, 2], "pytorch.version": ["2.7.1", "1.13.1"]},
 *    "files": [{"name": "planted", "file": "b.onnx", "runtime": "crossbind", "level": "fast"}],
 *    "keras": {"runtimes": ["keras", "onnxruntime", "crossbind", "tflite"], "quantisation": true,
 *              "weights": "keras-model.h5"},
 *    "repeat": true}
 * "vary-one" (the default) changes one axis of the base at a time and
 * freezes the rest, each axis giving one group of variants compared among
 * themselves; "product" runs every combination as one group. A config
 * without "model" compares only its "files" (any two ONNX models of one
 * task). Unknown keys and values are refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/file.h"
#include "../core/json.h"
#include "crossbind/model.h"
#include "delta.h"

static const char *const runtimes[] = {"crossbind", "onnxruntime", "pytorch", "keras", "tflite", "tvm", "onnx2torch",
                                       "onnx2tf", NULL}; /* in delta_runtime's order */
static const char *const torch_runtimes[] = {"crossbind", "onnxruntime", "pytorch", "tvm", "onnx2torch", "onnx2tf", NULL};
static const char *const keras_runtimes[] = {"keras", "onnxruntime", "crossbind", "tflite", "tvm", "onnx2tf", "onnx2torch",
                                             NULL};
static const char *const tvm_levels[] = {"O0", "O1", "O2", "O3", "O4", NULL};
static const char *const cb_levels[] = {"reference", "fast", "fused", "fastmath", NULL};
static const char *const ort_levels[] = {"disabled", "basic", "extended", "all", NULL};
static const char *const torch_versions[] = {"2.7.1", "1.13.1", NULL};
static const char *const devices[] = {"cpu", "cuda", NULL};
static const char *const models[] = {"mobilenet_v2", "resnet18", "resnet50", "resnet101", "inception_v3",
                                     "mobilenet_v3_small", "mobilenet_v3_large", "efficientnet_b0",
                                     /* the study's, with trained weights: */
                                     "lenet1", "lenet5", "vgg16", "lstm", "gru", "gru-rb", NULL};

/* DeltaNN's axes at the size of a first look: MobileNetV2 on the stand-in
 * photographs, through PyTorch (both versions), ONNX Runtime at every
 * graph level, crossbind at every level, TVM at DeltaNN's opt_levels 0, 2
 * and 4, back into PyTorch by onnx2torch and into TensorFlow by onnx2tf, 1
 * and 2 threads; and Keras' MobileNetV2 natively, through tf2onnx into ONNX
 * Runtime, crossbind, TVM, TensorFlow again (onnx2tf) and PyTorch
 * (onnx2torch), and through TFLite (float, and int8 as its own group). */
static const char quick_profile[] =
    "{\"model\": \"mobilenet_v2\", \"seed\": 1, \"max_images\": 8, \"reps\": 10, \"warmup\": 2,"
    " \"axes\": {\"runtime\": [\"pytorch\", \"onnxruntime\", \"crossbind\", \"tvm\", \"onnx2torch\", \"onnx2tf\"],"
    "  \"crossbind.level\": [\"reference\", \"fast\", \"fused\", \"fastmath\"],"
    "  \"onnxruntime.level\": [\"disabled\", \"basic\", \"extended\", \"all\"],"
    "  \"tvm.level\": [\"O0\", \"O2\", \"O4\"],"
    "  \"threads\": [1, 2], \"pytorch.version\": [\"2.7.1\", \"1.13.1\"]},"
    " \"keras\": {\"runtimes\": [\"keras\", \"onnxruntime\", \"crossbind\", \"tflite\", \"tvm\", \"onnx2tf\", \"onnx2torch\"],"
    "  \"quantisation\": true},"
    " \"repeat\": true}";

const char *delta_runtime_name(delta_runtime r) { return runtimes[r]; }

/* The models tf.keras.applications builds as torchvision does
 * (runners/tensorflow/cb_keras_apps.py's MODELS), each with the image
 * normalisation of its preprocess_input: 'caffe' for the ResNets, the
 * pixels themselves for MobileNetV3 and EfficientNet (they scale inside),
 * 'tf' for the others. */
static const struct { const char *model, *norm; } keras_models[] = {
    {"mobilenet_v2", "tf"},         {"resnet50", "caffe"},           {"resnet101", "caffe"},
    {"inception_v3", "tf"},         {"mobilenet_v3_small", "pixels"}, {"mobilenet_v3_large", "pixels"},
    {"efficientnet_b0", "pixels"},
};
#define N_KERAS_MODELS (sizeof keras_models / sizeof keras_models[0])

static int keras_model(const char *model)
{
    for (size_t i = 0; i < N_KERAS_MODELS; i++)
        if (!strcmp(keras_models[i].model, model)) return (int)i;
    return -1;
}

/* read_keras refuses a model not in the table before anything asks this. */
const char *delta_keras_norm(const char *model)
{
    const int k = keras_model(model);
    return k >= 0 ? keras_models[k].norm : "?";
}

static int index_of(const char *const *list, const char *s)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], s)) return i;
    return -1;
}

static const char *const *levels_of(delta_runtime r)
{
    return r == DELTA_CROSSBIND ? cb_levels : r == DELTA_ONNXRUNTIME ? ort_levels : r == DELTA_TVM ? tvm_levels : NULL;
}

void delta_variant_key(delta_variant *v)
{
    char head[112];
    if (v->runtime == DELTA_PYTORCH) snprintf(head, sizeof head, "pytorch-%s", v->version);
    else if (v->runtime == DELTA_KERAS) snprintf(head, sizeof head, "keras");
    else snprintf(head, sizeof head, "%s@%s", runtimes[v->runtime], v->level);
    snprintf(v->key, sizeof v->key, "%s%s%s/t%d%s%s%s", v->label[0] ? v->label : "", v->label[0] ? ":" : "", head,
             v->threads, v->device[0] ? "/" : "", v->device, v->repeat ? "#2" : ""); /* the CPU is unnamed */
}

/* The variant's index, added when new (the same variant named by two axes is run once). */
static int add_variant(delta_config *c, delta_variant v)
{
    delta_variant_key(&v);
    for (int i = 0; i < c->n_variants; i++)
        if (!strcmp(c->variants[i].key, v.key)) return i;
    if (c->n_variants == DELTA_MAX_VARIANTS) {
        cb_fail(CB_ERR_INVALID_ARG, "the configuration names more than %d variants", DELTA_MAX_VARIANTS);
        return -1;
    }
    c->variants[c->n_variants] = v;
    return c->n_variants++;
}

static delta_axis *add_axis(delta_config *c, const char *name)
{
    if (c->n_axes == DELTA_MAX_AXES) return NULL;
    delta_axis *a = &c->axes[c->n_axes++];
    memset(a, 0, sizeof *a);
    snprintf(a->name, sizeof a->name, "%s", name);
    return a;
}

static cb_status join(delta_config *c, delta_axis *a, delta_variant v)
{
    int i = add_variant(c, v);
    if (i < 0) return CB_ERR_INVALID_ARG;
    for (int k = 0; k < a->n; k++)
        if (a->members[k] == i) return CB_OK;
    a->members[a->n++] = i;
    return CB_OK;
}

static cb_status get_int(const cb_json *o, const char *key, long lo, long hi, long *out)
{
    const cb_json *v = cb_json_get(o, key);
    if (!v) return CB_OK;
    if (v->type != CB_JSON_NUM || v->num != (double)(long)v->num || v->num < lo || v->num > hi)
        return cb_fail(CB_ERR_INVALID_ARG, "\"%s\" must be an integer in [%ld, %ld]", key, lo, hi);
    *out = (long)v->num;
    return CB_OK;
}

static cb_status get_num(const cb_json *o, const char *key, double lo, double hi, double *out)
{
    const cb_json *v = cb_json_get(o, key);
    if (!v) return CB_OK;
    if (v->type != CB_JSON_NUM || !(v->num > lo && v->num < hi))
        return cb_fail(CB_ERR_INVALID_ARG, "\"%s\" must be a number in (%g, %g)", key, lo, hi);
    *out = v->num;
    return CB_OK;
}

static cb_status get_str(const cb_json *o, const char *key, const char *const *allowed, char *out, size_t cap)
{
    const cb_json *v = cb_json_get(o, key);
    if (!v) return CB_OK;
    if (v->type != CB_JSON_STR || !v->str[0] || strlen(v->str) >= cap)
        return cb_fail(CB_ERR_INVALID_ARG, "\"%s\" must be a non-empty string", key);
    if (allowed && index_of(allowed, v->str) < 0)
        return cb_fail(CB_ERR_INVALID_ARG, "unknown %s \"%s\"", key, v->str);
    snprintf(out, cap, "%s", v->str);
    return CB_OK;
}

static cb_status check_keys(const cb_json *o, const char *what, const char *const *known)
{
    if (!o || o->type != CB_JSON_OBJ) return cb_fail(CB_ERR_INVALID_ARG, "%s must be a JSON object", what);
    for (int i = 0; i < o->count; i++)
        if (index_of(known, o->keys[i]) < 0) return cb_fail(CB_ERR_INVALID_ARG, "%s: unknown key \"%s\"", what, o->keys[i]);
    return CB_OK;
}

/* The strings of an axis, each one of `allowed`. */
static cb_status axis_strings(const cb_json *axes, const char *key, const char *const *allowed, const char **out, int *n)
{
    const cb_json *v = cb_json_get(axes, key);
    *n = 0;
    if (!v) return CB_OK;
    if (v->type != CB_JSON_ARR || v->count < 1 || v->count > 8)
        return cb_fail(CB_ERR_INVALID_ARG, "axis \"%s\" must be a list of 1 to 8 values", key);
    for (int i = 0; i < v->count; i++) {
        if (v->items[i].type != CB_JSON_STR || index_of(allowed, v->items[i].str) < 0)
            return cb_fail(CB_ERR_INVALID_ARG, "axis \"%s\": unknown value (known: see docs/delta.md)", key);
        out[(*n)++] = allowed[index_of(allowed, v->items[i].str)];
    }
    return CB_OK;
}

typedef struct {
    const char *runtime[8], *cb_level[8], *ort_level[8], *tvm_level[8], *version[8], *device[8]; /* at most 8 */
    int n_runtime, n_cb_level, n_ort_level, n_tvm_level, n_version, threads[8], n_threads, n_device;
} axes_spec;

static cb_status read_axes(const cb_json *axes, axes_spec *a)
{
    static const char *const keys[] = {"runtime", "crossbind.level", "onnxruntime.level", "tvm.level", "threads",
                                       "pytorch.version", "device", NULL};
    memset(a, 0, sizeof *a);
    if (!axes) return CB_OK;
    cb_status s = check_keys(axes, "\"axes\"", keys);
    if (s == CB_OK) s = axis_strings(axes, "runtime", torch_runtimes, a->runtime, &a->n_runtime);
    if (s == CB_OK) s = axis_strings(axes, "crossbind.level", cb_levels, a->cb_level, &a->n_cb_level);
    if (s == CB_OK) s = axis_strings(axes, "onnxruntime.level", ort_levels, a->ort_level, &a->n_ort_level);
    if (s == CB_OK) s = axis_strings(axes, "tvm.level", tvm_levels, a->tvm_level, &a->n_tvm_level);
    if (s == CB_OK) s = axis_strings(axes, "pytorch.version", torch_versions, a->version, &a->n_version);
    if (s == CB_OK) s = axis_strings(axes, "device", devices, a->device, &a->n_device);
    const cb_json *t = cb_json_get(axes, "threads");
    if (s == CB_OK && t) {
        if (t->type != CB_JSON_ARR || t->count < 1 || t->count > 8)
            return cb_fail(CB_ERR_INVALID_ARG, "axis \"threads\" must be a list of 1 to 8 counts");
        for (int i = 0; i < t->count; i++) {
            if (t->items[i].type != CB_JSON_NUM || t->items[i].num < 1 || t->items[i].num > 256 ||
                t->items[i].num != (int)t->items[i].num)
                return cb_fail(CB_ERR_INVALID_ARG, "axis \"threads\": counts are integers in [1, 256]");
            a->threads[a->n_threads++] = (int)t->items[i].num;
        }
    }
    return s;
}

typedef struct {
    delta_runtime runtime;
    char version[32];
    int threads;
    char level[DELTA_N_RUNTIMES][32]; /* per runtime */
} base_spec;

static cb_status read_base(const cb_json *b, base_spec *out)
{
    static const char *const keys[] = {"runtime", "version", "threads", "levels", NULL};
    static const char *const level_keys[] = {"crossbind", "onnxruntime", "tvm", NULL};
    /* TVM's PassContext defaults to opt_level 2 */
    *out = (base_spec){.runtime = DELTA_PYTORCH, .version = "2.7.1", .threads = 2,
                       .level = {"fast", "all", "eager", "default", "float", "O2", "eager", "default"}};
    if (!b) return CB_OK;
    char rt[32] = "pytorch";
    long threads = 2;
    cb_status s = check_keys(b, "\"base\"", keys);
    if (s == CB_OK) s = get_str(b, "runtime", torch_runtimes, rt, sizeof rt);
    if (s == CB_OK) s = get_str(b, "version", torch_versions, out->version, sizeof out->version);
    if (s == CB_OK) s = get_int(b, "threads", 1, 256, &threads);
    const cb_json *lv = cb_json_get(b, "levels");
    if (s == CB_OK && lv) {
        s = check_keys(lv, "\"base\".\"levels\"", level_keys);
        if (s == CB_OK) s = get_str(lv, "crossbind", cb_levels, out->level[0], sizeof out->level[0]);
        if (s == CB_OK) s = get_str(lv, "onnxruntime", ort_levels, out->level[1], sizeof out->level[1]);
        if (s == CB_OK) s = get_str(lv, "tvm", tvm_levels, out->level[DELTA_TVM], sizeof out->level[DELTA_TVM]);
    }
    out->runtime = (delta_runtime)index_of(runtimes, rt);
    out->threads = (int)threads;
    return s;
}

static delta_variant make(const base_spec *b, delta_runtime r, const char *level, const char *version, int threads)
{
    delta_variant v = {.runtime = r, .threads = threads};
    snprintf(v.level, sizeof v.level, "%s", level ? level : b->level[r]);
    if (r == DELTA_PYTORCH) snprintf(v.version, sizeof v.version, "%s", version ? version : b->version);
    return v;
}

/* The variant on a device of the "device" axis (NULL or "cpu": the CPU, which keys leave unnamed). */
static delta_variant on_device(delta_variant v, const char *device)
{
    if (device && strcmp(device, "cpu")) snprintf(v.device, sizeof v.device, "%s", device);
    return v;
}

static cb_status vary_one(delta_config *c, const base_spec *b, const axes_spec *a)
{
    delta_variant base = make(b, b->runtime, NULL, NULL, b->threads);
    if ((c->base = add_variant(c, base)) < 0) return CB_ERR_INVALID_ARG;
    cb_status s = CB_OK;
    delta_axis *x;
    if (a->n_runtime && (x = add_axis(c, "conversion")))
        for (int i = 0; s == CB_OK && i < a->n_runtime; i++)
            s = join(c, x, make(b, (delta_runtime)index_of(runtimes, a->runtime[i]), NULL, NULL, b->threads));
    if (a->n_cb_level && (x = add_axis(c, "crossbind level")))
        for (int i = 0; s == CB_OK && i < a->n_cb_level; i++)
            s = join(c, x, make(b, DELTA_CROSSBIND, a->cb_level[i], NULL, b->threads));
    if (a->n_ort_level && (x = add_axis(c, "ONNX Runtime level")))
        for (int i = 0; s == CB_OK && i < a->n_ort_level; i++)
            s = join(c, x, make(b, DELTA_ONNXRUNTIME, a->ort_level[i], NULL, b->threads));
    if (a->n_tvm_level && (x = add_axis(c, "TVM opt_level")))
        for (int i = 0; s == CB_OK && i < a->n_tvm_level; i++)
            s = join(c, x, make(b, DELTA_TVM, a->tvm_level[i], NULL, b->threads));
    if (a->n_threads && (x = add_axis(c, "threads")))
        for (int i = 0; s == CB_OK && i < a->n_threads; i++)
            s = join(c, x, make(b, b->runtime, NULL, NULL, a->threads[i]));
    if (a->n_version && (x = add_axis(c, "PyTorch version")))
        for (int i = 0; s == CB_OK && i < a->n_version; i++)
            s = join(c, x, make(b, DELTA_PYTORCH, "eager", a->version[i], b->threads));
    if (a->n_device && (x = add_axis(c, "device")))
        for (int i = 0; s == CB_OK && i < a->n_device; i++)
            s = join(c, x, on_device(make(b, b->runtime, NULL, NULL, b->threads), a->device[i]));
    return s;
}

static cb_status product(delta_config *c, const base_spec *b, const axes_spec *a)
{
    delta_axis *x = add_axis(c, "product");
    const char *rts[8] = {runtimes[b->runtime]};
    int nr = a->n_runtime ? a->n_runtime : 1, nt = a->n_threads ? a->n_threads : 1;
    if (a->n_runtime) memcpy(rts, a->runtime, sizeof rts);
    cb_status s = CB_OK;
    c->base = -1;
    for (int r = 0; s == CB_OK && r < nr; r++) {
        delta_runtime rt = (delta_runtime)index_of(runtimes, rts[r]);
        const char *const *lv = rt == DELTA_CROSSBIND ? a->cb_level : rt == DELTA_ONNXRUNTIME ? a->ort_level
                              : rt == DELTA_TVM ? a->tvm_level : rt == DELTA_PYTORCH ? a->version : NULL;
        int nl = rt == DELTA_CROSSBIND ? a->n_cb_level : rt == DELTA_ONNXRUNTIME ? a->n_ort_level
               : rt == DELTA_TVM ? a->n_tvm_level : rt == DELTA_PYTORCH ? a->n_version : 0;
        for (int l = 0; s == CB_OK && l < (nl ? nl : 1); l++)
            for (int t = 0; s == CB_OK && t < nt; t++)
                for (int d = 0; s == CB_OK && d < (a->n_device ? a->n_device : 1); d++) {
                    int th = a->n_threads ? a->threads[t] : b->threads;
                    const char *val = nl ? lv[l] : NULL;
                    delta_variant v = rt == DELTA_PYTORCH ? make(b, rt, "eager", val, th) : make(b, rt, val, NULL, th);
                    s = join(c, x, on_device(v, a->n_device ? a->device[d] : NULL));
                }
    }
    delta_variant base = make(b, b->runtime, NULL, NULL, b->threads);
    if (s == CB_OK && (c->base = add_variant(c, base)) < 0) s = CB_ERR_INVALID_ARG;
    return s;
}

/* "keras": {"runtimes": [...], "quantisation": true}: Keras' model in its
 * conversions, and the TFLite quantisation as a group of its own, so that
 * the quantised file is never one of the float conversions. */
static cb_status read_keras(delta_config *c, const cb_json *k, const base_spec *b)
{
    static const char *const keys[] = {"runtimes", "quantisation", "weights", NULL};
    if (!k) return CB_OK;
    if (!c->model[0]) return cb_fail(CB_ERR_INVALID_ARG, "\"keras\" needs \"model\"");
    if (keras_model(c->model) < 0) {
        char known[256] = "";
        for (size_t i = 0, len = 0; i < N_KERAS_MODELS && len < sizeof known; i++)
            len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "", keras_models[i].model);
        return cb_fail(CB_ERR_INVALID_ARG, "\"keras\" has no %s (Keras' models here: %s)", c->model, known);
    }
    if (c->inputs_npy[0]) return cb_fail(CB_ERR_INVALID_ARG, "\"keras\" needs images (Keras preprocesses its own way), not \"inputs_npy\"");
    cb_status s = check_keys(k, "\"keras\"", keys);
    if (s == CB_OK) s = get_str(k, "weights", NULL, c->keras_weights, sizeof c->keras_weights);
    const char *rts[8];
    int n = 0;
    if (s == CB_OK) s = axis_strings(k, "runtimes", keras_runtimes, rts, &n);
    if (s != CB_OK) return s;
    if (!n) /* default: all of them */
        for (; keras_runtimes[n]; n++) rts[n] = keras_runtimes[n];
    const cb_json *q = cb_json_get(k, "quantisation");
    if (q && q->type != CB_JSON_BOOL) return cb_fail(CB_ERR_INVALID_ARG, "\"keras\".\"quantisation\" must be true or false");
    c->keras = 1;
    delta_axis *x = add_axis(c, "Keras conversion");
    for (int i = 0; s == CB_OK && i < n; i++) {
        delta_runtime r = (delta_runtime)index_of(runtimes, rts[i]);
        delta_variant v = {.runtime = r, .source = DELTA_SRC_KERAS, .threads = b->threads};
        snprintf(v.label, sizeof v.label, "keras");
        snprintf(v.level, sizeof v.level, "%s", b->level[r]);
        s = join(c, x, v);
    }
    if (s == CB_OK && (!q || q->num)) {
        x = add_axis(c, "TFLite quantisation");
        static const char *const lv[3][2] = {{"keras", "default"}, {"tflite", "float"}, {"tflite", "int8"}};
        for (int i = 0; s == CB_OK && x && i < 3; i++) {
            delta_variant v = {.runtime = (delta_runtime)index_of(runtimes, lv[i][0]), .source = DELTA_SRC_KERAS,
                               .threads = b->threads};
            snprintf(v.label, sizeof v.label, "keras");
            snprintf(v.level, sizeof v.level, "%s", lv[i][1]);
            s = join(c, x, v);
        }
    }
    return s;
}

static cb_status read_files(delta_config *c, const cb_json *files, const base_spec *b)
{
    static const char *const keys[] = {"name", "file", "runtime", "level", "threads", NULL};
    if (!files) return CB_OK;
    if (files->type != CB_JSON_ARR || files->count < 1 || files->count > 16)
        return cb_fail(CB_ERR_INVALID_ARG, "\"files\" must be a list of 1 to 16 variants");
    delta_axis *x = add_axis(c, "files");
    for (int i = 0; i < files->count; i++) {
        const cb_json *f = &files->items[i];
        char rt[32] = "crossbind";
        long threads = b->threads;
        delta_variant v = {0};
        cb_status s = check_keys(f, "a \"files\" entry", keys);
        if (s == CB_OK) s = get_str(f, "file", NULL, v.file, sizeof v.file);
        if (s == CB_OK) s = get_str(f, "runtime", runtimes, rt, sizeof rt);
        if (s == CB_OK) s = get_int(f, "threads", 1, 256, &threads);
        if (s != CB_OK) return s;
        if (!v.file[0]) return cb_fail(CB_ERR_INVALID_ARG, "a \"files\" entry needs \"file\"");
        v.runtime = (delta_runtime)index_of(runtimes, rt);
        if (!delta_runs_onnx(&v))
            return cb_fail(CB_ERR_INVALID_ARG, "\"files\": an ONNX file runs in crossbind, onnxruntime, tvm, "
                           "onnx2torch or onnx2tf, not %s", rt);
        snprintf(v.level, sizeof v.level, "%s", b->level[v.runtime]);
        if ((s = get_str(f, "level", levels_of(v.runtime), v.level, sizeof v.level)) != CB_OK) return s;
        snprintf(v.label, sizeof v.label, "file%d", i + 1);
        if ((s = get_str(f, "name", NULL, v.label, sizeof v.label)) != CB_OK) return s;
        for (const char *p = v.label; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
                return cb_fail(CB_ERR_INVALID_ARG, "\"files\": a name is letters, digits, '-' and '_'");
        v.threads = (int)threads;
        if ((s = join(c, x, v)) != CB_OK) return s;
    }
    if (c->base < 0) c->base = x->members[0];
    return CB_OK;
}

static cb_status parse(delta_config *c, const cb_json *cfg)
{
    static const char *const keys[] = {"model", "seed", "weights", "images", "inputs_npy", "max_images", "resize",
                                       "crop", "reps", "warmup", "k", "p", "tolerance", "opset", "mode", "base",
                                       "axes", "files", "keras", "repeat", "data", NULL};
    static const char *const modes[] = {"vary-one", "product", NULL};
    long max_images = 16, resize = 256, crop = 0, reps = 10, warmup = 2, k = 5, opset = 13;
    cb_status s = check_keys(cfg, "the configuration", keys);
    if (s == CB_OK) s = get_str(cfg, "model", models, c->model, sizeof c->model);
    if (s == CB_OK) s = get_int(cfg, "seed", 0, 1L << 31, &c->seed);
    if (s == CB_OK) s = get_str(cfg, "weights", NULL, c->weights, sizeof c->weights);
    if (s == CB_OK) s = get_str(cfg, "images", NULL, c->images, sizeof c->images);
    if (s == CB_OK) s = get_str(cfg, "inputs_npy", NULL, c->inputs_npy, sizeof c->inputs_npy);
    if (s == CB_OK) s = get_str(cfg, "data", NULL, c->data, sizeof c->data);
    if (s == CB_OK) s = get_int(cfg, "max_images", 1, 100000, &max_images);
    if (s == CB_OK) s = get_int(cfg, "resize", 8, 4096, &resize);
    if (s == CB_OK) s = get_int(cfg, "crop", 8, 4096, &crop);
    if (s == CB_OK) s = get_int(cfg, "reps", 10, 10000, &reps); /* the protocol's least */
    if (s == CB_OK) s = get_int(cfg, "warmup", 0, 1000, &warmup);
    if (s == CB_OK) s = get_int(cfg, "k", 1, 1000, &k);
    if (s == CB_OK) s = get_int(cfg, "opset", 11, 17, &opset);
    c->p = 0.9;
    c->tolerance = 1e-3;
    if (s == CB_OK) s = get_num(cfg, "p", 0, 1, &c->p);
    if (s == CB_OK) s = get_num(cfg, "tolerance", 0, 1e6, &c->tolerance);
    snprintf(c->mode, sizeof c->mode, "vary-one");
    if (s == CB_OK) s = get_str(cfg, "mode", modes, c->mode, sizeof c->mode);
    const cb_json *rep = cb_json_get(cfg, "repeat");
    if (s == CB_OK && rep && rep->type != CB_JSON_BOOL) s = cb_fail(CB_ERR_INVALID_ARG, "\"repeat\" must be true or false");
    if (s != CB_OK) return s;
    if (c->images[0] && c->inputs_npy[0]) return cb_fail(CB_ERR_INVALID_ARG, "give \"images\" or \"inputs_npy\", not both");
    if (c->weights[0] && !c->model[0]) return cb_fail(CB_ERR_INVALID_ARG, "\"weights\" needs \"model\"");
    c->study = c->model[0] && cb_model_data_format(c->model) != NULL;
    if (c->study && !c->weights[0])
        return cb_fail(CB_ERR_INVALID_ARG, "%s is one of the study's models: give its trained parameters as \"weights\" "
                       "(crossbind train %s --out FILE, or a study's run)", c->model, c->model);
    if (c->study && (c->images[0] || c->inputs_npy[0] || cb_json_get(cfg, "keras")))
        return cb_fail(CB_ERR_INVALID_ARG, "%s reads its own data set's test split (\"data\": a directory), not images, "
                       "a tensor or Keras", c->model);
    if (c->data[0] && !c->study)
        return cb_fail(CB_ERR_INVALID_ARG, "\"data\" is for the study's models (lenet1, lenet5, vgg16, lstm, gru, gru-rb)");
    c->max_images = (int)max_images, c->resize = (int)resize, c->reps = (int)reps, c->warmup = (int)warmup;
    c->k = (int)k, c->opset = (int)opset;
    c->crop = crop ? (int)crop : !strcmp(c->model, "inception_v3") ? 299 : 224;
    snprintf(c->norm, sizeof c->norm, "torchvision");
    base_spec b;
    axes_spec a;
    if ((s = read_base(cb_json_get(cfg, "base"), &b)) != CB_OK || (s = read_axes(cb_json_get(cfg, "axes"), &a)) != CB_OK)
        return s;
    c->base = -1;
    if (c->model[0]) s = !strcmp(c->mode, "product") ? product(c, &b, &a) : vary_one(c, &b, &a);
    else if (cb_json_get(cfg, "axes")) return cb_fail(CB_ERR_INVALID_ARG, "\"axes\" vary a \"model\"; this configuration has none");
    if (s == CB_OK) s = read_keras(c, cb_json_get(cfg, "keras"), &b);
    if (s == CB_OK) s = read_files(c, cb_json_get(cfg, "files"), &b);
    if (s != CB_OK) return s;
    if (c->base < 0) return cb_fail(CB_ERR_INVALID_ARG, "the configuration names no \"model\" and no \"files\"");
    if (rep && rep->num) {
        delta_variant again = c->variants[c->base];
        again.repeat = 1;
        delta_axis *x = add_axis(c, "repeat");
        if (!x) return cb_fail(CB_ERR_INVALID_ARG, "too many axes");
        x->members[x->n++] = c->base;
        if ((s = join(c, x, again)) != CB_OK) return s;
    }
    return CB_OK;
}

cb_status delta_config_load(const char *path, const char *profile, delta_config *c)
{
    memset(c, 0, sizeof *c);
    unsigned char *text = NULL;
    size_t len = 0;
    cb_status s;
    if (profile) {
        if (strcmp(profile, "quick")) return cb_fail(CB_ERR_INVALID_ARG, "unknown profile \"%s\" (known: quick)", profile);
        snprintf(c->profile, sizeof c->profile, "%s", profile);
        if (!(text = (unsigned char *)strdup(quick_profile))) return cb_fail(CB_ERR_NOMEM, "out of memory");
        len = strlen(quick_profile);
    } else if ((s = cb_read_file(path, 1 << 20, &text, &len)) != CB_OK) {
        return s;
    }
    cb_json cfg;
    s = cb_json_parse_capped((const char *)text, len, profile ? "the quick profile" : path, 10000, &cfg);
    if (s == CB_OK) {
        s = parse(c, &cfg);
        cb_json_free(&cfg);
    }
    free(text);
    return s;
}
