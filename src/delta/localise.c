/* Localisation of a diverging pair: capture and bisection (localise.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/file.h"
#include "crossbind/crossbind.h"
#include "crossbind/formats.h"
#include "crossbind/onnx.h"
#include "delta_util.h"
#include "localise.h"
#include "onnx_edit.h"

/* One intermediate value of one input. */
typedef struct layer_value {
    char name[256], op[64];
    float *data; /* owned */
    int64_t n;
} layer_value;

typedef struct capture_set {
    layer_value *v;
    int n;
} capture_set;

static void capture_free(capture_set *c)
{
    for (int i = 0; i < c->n; i++) free(c->v[i].data);
    free(c->v);
    memset(c, 0, sizeof *c);
}

static layer_value *capture_add(capture_set *c, const char *name, const char *op, int64_t n)
{
    layer_value *v = realloc(c->v, (size_t)(c->n + 1) * sizeof *v);
    if (!v) return NULL;
    c->v = v;
    v = &c->v[c->n];
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", name);
    snprintf(v->op, sizeof v->op, "%s", op);
    if (!(v->data = malloc((size_t)(n ? n : 1) * sizeof(float)))) return NULL;
    v->n = n;
    c->n++;
    return v;
}

static const layer_value *capture_find(const capture_set *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->v[i].name, name)) return &c->v[i];
    return NULL;
}

/* The float values an ONNX file computes, in crossbind's (topological)
 * order: crossbind's import names each node's ONNX value, and every one
 * of them is a float tensor (integer shape arithmetic is folded away). */
static cb_status onnx_float_values(const char *file, char ***names, int *n)
{
    cb_model *m;
    *names = NULL, *n = 0;
    cb_status s = cb_onnx_load(file, 0, &m);
    if (s != CB_OK) return s;
    if (!(*names = calloc((size_t)m->n_onnx_values + 1, sizeof **names))) s = cb_fail(CB_ERR_NOMEM, "out of memory");
    for (int i = 0; s == CB_OK && i < m->n_onnx_values; i++) {
        const cb_node *nd = &m->graph.nodes[i];
        if (!m->onnx_values[i] || nd->op == CB_OP_INPUT || !nd->batched) continue;
        if (!((*names)[(*n)++] = strdup(m->onnx_values[i]))) s = cb_fail(CB_ERR_NOMEM, "out of memory");
    }
    cb_model_free(m);
    return s;
}

static void free_names(char **names, int n)
{
    for (int i = 0; names && i < n; i++) free(names[i]);
    free(names);
}

/* crossbind: every node with an ONNX value name, captured by cb_exec_capture
 * (values a fusion never materialises are left out, not recomputed). */
static cb_status capture_crossbind(const delta_variant *v, const char *file, const cb_tensor *x, capture_set *out)
{
    cb_model *m = NULL;
    cb_exec *ex = NULL;
    cb_status s = cb_set_threads(v->threads);
    if (s == CB_OK) s = cb_onnx_load(file, 0, &m);
    cb_tensor own = {0}; /* the input in the graph's layout, for a file that takes [N,H,W,C] */
    if (s == CB_OK && m->input_nhwc[0]) {
        own = *x;
        if (!(own.data = malloc((size_t)cb_tensor_numel(x) * sizeof(float)))) s = cb_fail(CB_ERR_NOMEM, "out of memory");
        else memcpy(own.data, x->data, (size_t)cb_tensor_numel(x) * sizeof(float));
        if (s == CB_OK) s = cb_tensor_nhwc_to_nchw(&own);
        x = &own;
    }
    if (s == CB_OK && cb_tensor_numel(x) != cb_node_numel(&m->graph.nodes[m->input]))
        s = cb_fail(CB_ERR_SHAPE, "%s: the input does not fit the model", file);
    if (s == CB_OK) s = cb_exec_create(&m->graph, 1, 0, (cb_kernels)cb_level_parse(v->level), &ex);
    for (int i = 0; s == CB_OK && i < m->n_onnx_values; i++)
        if (m->onnx_values[i] && m->graph.nodes[i].batched && m->graph.nodes[i].op != CB_OP_INPUT)
            s = cb_exec_capture(ex, i);
    if (s == CB_OK) {
        memcpy(cb_exec_value(ex, m->input), x->data, (size_t)cb_tensor_numel(x) * sizeof(float));
        s = cb_exec_forward(ex, 1);
    }
    for (int i = 0; s == CB_OK && i < m->n_onnx_values; i++) {
        const cb_node *nd = &m->graph.nodes[i];
        int by;
        if (!m->onnx_values[i] || !nd->batched || nd->op == CB_OP_INPUT || !cb_exec_materialised(ex, i, &by)) continue;
        layer_value *lv = capture_add(out, m->onnx_values[i], cb_op_name(nd->op), cb_node_numel(nd));
        if (!lv) s = cb_fail(CB_ERR_NOMEM, "out of memory capturing %s", file);
        else s = cb_exec_read(ex, i, 0, 1, lv->data);
    }
    cb_exec_free(ex);
    cb_model_free(m);
    cb_tensor_free(&own);
    return s;
}

/* A runner's DIR/capture/index.json: [{"name" or "module", "type"?, "file"}]. */
static cb_status read_runner_capture(const char *dir, capture_set *out)
{
    char path[2600];
    unsigned char *text;
    size_t len;
    cb_json idx;
    delta_path(path, sizeof path, "%s/capture/index.json", dir);
    cb_status s = cb_read_file(path, 1 << 26, &text, &len);
    if (s != CB_OK) return s;
    s = cb_json_parse_capped((char *)text, len, path, 1 << 20, &idx);
    free(text);
    if (s != CB_OK) return s;
    if (idx.type != CB_JSON_ARR) s = cb_fail(CB_ERR_FORMAT, "%s is not a list", path);
    for (int i = 0; s == CB_OK && i < idx.count; i++) {
        const cb_json *e = &idx.items[i], *name = cb_json_get(e, "name"), *file = cb_json_get(e, "file");
        const cb_json *op = cb_json_get(e, "type");
        if (!name) name = cb_json_get(e, "module");
        if (!name || name->type != CB_JSON_STR || !file || file->type != CB_JSON_STR || strchr(file->str, '/')) {
            s = cb_fail(CB_ERR_FORMAT, "%s: entry %d lacks a name or a plain file name", path, i);
            break;
        }
        cb_tensor t = {0};
        char unique[256];
        snprintf(unique, sizeof unique, "%s", name->str);
        for (int k = 2; capture_find(out, unique); k++) /* a module called twice (ResNet's shared ReLU) */
            snprintf(unique, sizeof unique, "%.200s#%d", name->str, k);
        delta_path(path, sizeof path, "%s/capture/%s", dir, file->str);
        if ((s = cb_npy_read(path, &t)) != CB_OK) break;
        if (t.dtype == CB_F32) {
            layer_value *lv = capture_add(out, unique, op && op->type == CB_JSON_STR ? op->str : "", cb_tensor_numel(&t));
            if (!lv) s = cb_fail(CB_ERR_NOMEM, "out of memory");
            else memcpy(lv->data, t.data, (size_t)lv->n * sizeof(float));
        }
        cb_tensor_free(&t);
    }
    cb_json_free(&idx);
    return s;
}

/* A runner with every float value of its file as a graph output (ONNX
 * Runtime) or with its hooks (PyTorch). */
static cb_status capture_runner(const delta_env *e, const delta_variant *v, const char *dir, const char *one_input,
                                char **names, int n_names, capture_set *out)
{
    char file[2400] = "", own[2400];
    cb_status s = cb_mkdirs(dir);
    const char *src = delta_variant_file(e, v, own);
    snprintf(file, sizeof file, "%s", src);
    if (s == CB_OK && (v->runtime == DELTA_ONNXRUNTIME || v->runtime == DELTA_TVM || v->runtime == DELTA_ONNX2TF)) {
        delta_onnx g;
        delta_path(file, sizeof file, "%s/instrumented.onnx", dir);
        s = delta_onnx_open(src, &g);
        if (s == CB_OK) s = delta_onnx_write_outputs(&g, file, (const char *const *)names, n_names, 1);
        delta_onnx_close(&g);
    }
    if (s == CB_OK) s = delta_runner_call(e, v, file, one_input, dir, 1, 0, 1, NULL);
    if (s == CB_OK) s = read_runner_capture(dir, out);
    return s;
}

static cb_status capture_variant(const delta_env *e, const delta_variant *v, const char *dir, const char *one_input,
                                 const cb_tensor *x, char **names, int n_names, capture_set *out)
{
    char file[2400];
    if (v->runtime == DELTA_CROSSBIND) return capture_crossbind(v, delta_variant_file(e, v, file), x, out);
    return capture_runner(e, v, dir, one_input, names, n_names, out);
}

typedef struct diff_stats { double mean, std, max, rel; } diff_stats;

static diff_stats diff(const float *a, const float *b, int64_t n)
{
    double sum = 0, sq = 0, mx = 0, amax = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > mx || d != d) mx = d;
        if (fabs(a[i]) > amax) amax = fabs(a[i]);
        sum += d, sq += d * d;
    }
    diff_stats s = {.mean = sum / (double)n, .max = mx};
    s.std = sqrt(fmax(0, sq / (double)n - s.mean * s.mean));
    s.rel = amax > 0 ? mx / amax : (mx > 0 ? INFINITY : 0);
    return s;
}

static void json_stats(cb_buf *o, const char *key, diff_stats d)
{
    cb_buf_printf(o, ", \"%s\": {\"mean\": ", key);
    cb_buf_json_number(o, d.mean);
    cb_buf_printf(o, ", \"std\": ");
    cb_buf_json_number(o, d.std);
    cb_buf_printf(o, ", \"max\": ");
    cb_buf_json_number(o, d.max);
    cb_buf_printf(o, ", \"relative_max\": ");
    cb_buf_json_number(o, d.rel);
    cb_buf_printf(o, "}");
}

/* The weights a layer reads in each file, compared (files differ only for
 * the user's file variants: the others share the experiment's export). */
static int weights_diff(const delta_onnx *ga, const delta_onnx *gb, const char *value, diff_stats *out)
{
    int na = delta_onnx_producer(ga, value), nb = delta_onnx_producer(gb, value);
    if (na < 0 || nb < 0 || !ga->nodes[na].n_inits) return 0;
    double sum = 0, sq = 0, mx = 0, amax = 0, count = 0;
    int used = 0;
    for (int k = 0; k < ga->nodes[na].n_inits; k++) {
        cb_tensor ta = {0}, tb = {0};
        if (delta_onnx_initializer(ga, ga->nodes[na].inits[k], &ta) == CB_OK &&
            delta_onnx_initializer(gb, ga->nodes[na].inits[k], &tb) == CB_OK && cb_tensor_numel(&ta) == cb_tensor_numel(&tb)) {
            diff_stats d = diff(ta.data, tb.data, cb_tensor_numel(&ta));
            double n = (double)cb_tensor_numel(&ta);
            sum += d.mean * n, sq += (d.std * d.std + d.mean * d.mean) * n, count += n;
            if (d.max > mx) mx = d.max;
            for (int64_t i = 0; i < cb_tensor_numel(&ta); i++)
                if (fabs(((float *)ta.data)[i]) > amax) amax = fabs(((float *)ta.data)[i]);
            used = 1;
        }
        cb_tensor_free(&ta);
        cb_tensor_free(&tb);
    }
    if (!used) return 0;
    out->mean = sum / count;
    out->std = sqrt(fmax(0, sq / count - out->mean * out->mean));
    out->max = mx;
    out->rel = amax > 0 ? mx / amax : 0;
    return 1;
}

static void json_first(cb_buf *o, int index, const layer_value *l, const delta_onnx *g)
{
    int p = g && g->mp ? delta_onnx_producer(g, l->name) : -1;
    cb_buf_printf(o, "\"first\": {\"index\": %d, \"value\": ", index);
    cb_buf_json_string(o, l->name);
    cb_buf_printf(o, ", \"onnx_node\": ");
    cb_buf_json_string(o, p >= 0 ? g->nodes[p].name : l->name);
    cb_buf_printf(o, ", \"op\": ");
    cb_buf_json_string(o, p >= 0 ? g->nodes[p].op : l->op);
    cb_buf_printf(o, "}");
}

/* Runtimes that give an ONNX file's values by their names: crossbind by
 * node, ONNX Runtime, TVM and onnx2tf through a copy of the file with every
 * value as a graph output. */
static int onnx_values(const delta_variant *v)
{
    return v->runtime == DELTA_CROSSBIND || v->runtime == DELTA_ONNXRUNTIME || v->runtime == DELTA_TVM ||
           v->runtime == DELTA_ONNX2TF;
}

/* Sides whose intermediate values share names: ONNX values, PyTorch's
 * module paths, Keras' layer names, onnx2torch's modules; TFLite exposes none. */
static int family(const delta_variant *v)
{
    return onnx_values(v) ? 0 : 1 + (int)v->runtime;
}

/* The module path in a node name that torch.onnx.export scoped: each
 * component is a child's name, prefixed by its parent's component where
 * the parent is a container ("/features/features.1/conv/conv.0/conv.0.0/Conv"
 * is module "features.1.conv.0.0"). 0 when the name has no module. */
static int torch_module_of(const char *node, char *out, size_t cap)
{
    char prev[256] = "";
    size_t last = 0; /* where the last component starts in out */
    out[0] = 0;
    if (*node != '/') return 0;
    for (const char *c = node, *end; (end = strchr(c + 1, '/')); c = end) { /* the final component is the op */
        size_t n = (size_t)(end - c - 1), pl = strlen(prev), len = strlen(out), at;
        if (n == 0 || n >= sizeof prev) return 0;
        if (pl && n > pl && !strncmp(c + 1, prev, pl) && c[1 + pl] == '.') {
            at = last; /* a container's child: its name replaces the container's component */
        } else if (len) {
            if (len + 1 >= cap) return 0;
            out[len] = '.';
            at = last = len + 1;
        } else {
            at = last = 0;
        }
        if (at + n + 1 > cap) return 0;
        memcpy(out + at, c + 1, n);
        out[at + n] = 0;
        memcpy(prev, c + 1, n);
        prev[n] = 0;
    }
    return out[0] != 0;
}

/* PyTorch's module for an ONNX value. In torch.onnx's export, through the
 * node's scope name (torch_module_of); that export folds a BatchNorm2d into
 * the convolution before it, so that convolution's value pairs with the
 * batch norm's output where the batch norm has no node of its own. In
 * crossbind's export (the study's models, built with PyTorch's module
 * names), module M's output is the value "M.out". */
static const layer_value *torch_partner(const delta_onnx *g, const char *value, const capture_set *pt)
{
    int p = delta_onnx_producer(g, value);
    char module[512];
    if (p < 0) return NULL;
    int scoped = torch_module_of(g->nodes[p].name, module, sizeof module);
    size_t len = strlen(value);
    if (!scoped) {
        if (len <= 4 || strcmp(value + len - 4, ".out") || len - 4 >= sizeof module) return NULL;
        memcpy(module, value, len - 4);
        module[len - 4] = 0;
    }
    for (int i = 0; i < pt->n; i++) {
        if (strcmp(pt->v[i].name, module)) continue;
        if (scoped && !strcmp(pt->v[i].op, "Conv2d") && i + 1 < pt->n && !strcmp(pt->v[i + 1].op, "BatchNorm2d")) {
            int own = 0;
            char other[512];
            for (int k = 0; k < g->n && !own; k++)
                own = torch_module_of(g->nodes[k].name, other, sizeof other) && !strcmp(other, pt->v[i + 1].name);
            if (!own) return &pt->v[i + 1];
        }
        return &pt->v[i];
    }
    return NULL;
}

static cb_status by_capture(const delta_env *e, const delta_variant *a, const delta_variant *b, const char *dir,
                            const char *one_input, const cb_tensor *x, cb_buf *o)
{
    int onnx_a = onnx_values(a), onnx_b = onnx_values(b);
    /* PyTorch against its own export: modules paired with ONNX values by scope */
    int torch_onnx = a->source == DELTA_SRC_PYTORCH && b->source == DELTA_SRC_PYTORCH && !a->file[0] && !b->file[0] &&
                     ((onnx_a && b->runtime == DELTA_PYTORCH) || (onnx_b && a->runtime == DELTA_PYTORCH));
    if ((family(a) != family(b) && !torch_onnx) || a->runtime == DELTA_TFLITE || b->runtime == DELTA_TFLITE) {
        cb_buf_printf(o, "{\"available\": false, \"reason\": ");
        cb_buf_json_string(o, a->runtime == DELTA_TFLITE || b->runtime == DELTA_TFLITE
                                  ? "the TFLite runner exposes no intermediate values"
                                  : "the two sides name their layers differently (a framework's layers against an "
                                    "ONNX file of another source, or two frameworks)");
        cb_buf_printf(o, "}");
        return CB_OK;
    }
    char **names = NULL, sub[2400], fa[2400], fb[2400];
    int n_names = 0;
    capture_set ca = {0}, cb = {0};
    delta_onnx ga = {0}, gb = {0};
    const delta_variant *on = onnx_a ? a : b;
    cb_status s = onnx_a || onnx_b ? onnx_float_values(delta_variant_file(e, on, fa), &names, &n_names) : CB_OK;
    delta_path(sub, sizeof sub, "%s/capture-a", dir);
    if (s == CB_OK) s = capture_variant(e, a, sub, one_input, x, names, n_names, &ca);
    delta_path(sub, sizeof sub, "%s/capture-b", dir);
    if (s == CB_OK) s = capture_variant(e, b, sub, one_input, x, names, n_names, &cb);
    if (s == CB_OK && onnx_a) s = delta_onnx_open(delta_variant_file(e, a, fa), &ga);
    if (s == CB_OK && onnx_b) s = delta_onnx_open(delta_variant_file(e, b, fb), &gb);
    if (s != CB_OK) {
        cb_buf_printf(o, "{\"available\": false, \"reason\": ");
        cb_buf_json_string(o, cb_last_error());
        cb_buf_printf(o, "}");
    } else {
        /* the layers in the order of the side that leads: the ONNX one where there is one */
        const capture_set *lead = onnx_a || !onnx_b ? &ca : &cb, *other = lead == &ca ? &cb : &ca;
        const delta_onnx *g = onnx_a ? &ga : onnx_b ? &gb : NULL;
        int first = -1, matched = 0;
        cb_buf_printf(o, "{\"available\": true, \"method\": \"capture\", \"pairing\": \"%s\", \"layers\": [",
                      !torch_onnx ? "by name"
                      : e->c->study ? "PyTorch modules to the ONNX values crossbind's export names MODULE.out"
                                    : "PyTorch modules to ONNX values by scope (batch norms folded into convolutions)");
        for (int i = 0; i < lead->n; i++) {
            const layer_value *ll = &lead->v[i];
            const layer_value *lo = torch_onnx ? torch_partner(g, ll->name, other) : capture_find(other, ll->name);
            if (!lo || lo->n != ll->n) continue; /* only in one, or another shape: not the same layer */
            const layer_value *la = lead == &ca ? ll : lo, *lb = lead == &ca ? lo : ll;
            diff_stats d = diff(la->data, lb->data, la->n), w;
            cb_buf_printf(o, "%s{\"value\": ", matched ? ", " : "");
            cb_buf_json_string(o, ll->name);
            cb_buf_printf(o, ", \"op\": ");
            cb_buf_json_string(o, ll->op);
            if (torch_onnx) {
                cb_buf_printf(o, ", \"module\": ");
                cb_buf_json_string(o, lo->name);
                cb_buf_printf(o, ", \"module_type\": ");
                cb_buf_json_string(o, lo->op);
            }
            json_stats(o, "activation", d);
            if (onnx_a && onnx_b && weights_diff(&ga, &gb, ll->name, &w)) json_stats(o, "weights", w);
            cb_buf_printf(o, "}");
            if (first < 0 && !(d.rel <= e->c->tolerance)) first = i;
            matched++;
        }
        cb_buf_printf(o, "], \"matched\": %d, \"only_a\": %d, \"only_b\": %d, ", matched, ca.n - matched, cb.n - matched);
        if (first >= 0) json_first(o, first, &lead->v[first], g);
        else cb_buf_printf(o, "\"first\": null");
        cb_buf_printf(o, "}");
    }
    delta_onnx_close(&ga);
    delta_onnx_close(&gb);
    capture_free(&ca);
    capture_free(&cb);
    free_names(names, n_names);
    return CB_OK;
}

/* One probe of the bisection: both sides run their file cut at `value`. */
static cb_status probe(const delta_env *e, const delta_variant *a, const delta_variant *b, const char *dir,
                       const char *one_input, const cb_tensor *x, const char *value, int step, double *rel)
{
    const delta_variant *side[2] = {a, b};
    float *out[2] = {NULL, NULL};
    int64_t n[2] = {0, 0};
    cb_status s = CB_OK;
    for (int k = 0; s == CB_OK && k < 2; k++) {
        char cut[2700], sub[2600];
        delta_onnx g;
        delta_path(sub, sizeof sub, "%s/bisect-%d-%c", dir, step, "ab"[k]);
        delta_path(cut, sizeof cut, "%s/cut.onnx", sub);
        delta_variant v = *side[k];
        char own[2400];
        if ((s = cb_mkdirs(sub)) != CB_OK || (s = delta_onnx_open(delta_variant_file(e, side[k], own), &g)) != CB_OK) break;
        s = delta_onnx_write_outputs(&g, cut, &value, 1, 0);
        delta_onnx_close(&g);
        snprintf(v.file, sizeof v.file, "%s", cut);
        if (s == CB_OK && v.runtime == DELTA_CROSSBIND) {
            capture_set c = {0};
            char *one = (char *)value;
            s = capture_crossbind(&v, cut, x, &c);
            const layer_value *l = s == CB_OK ? capture_find(&c, one) : NULL;
            if (s == CB_OK && !l) s = cb_fail(CB_ERR_NOT_FOUND, "crossbind computes no value %s", value);
            if (s == CB_OK) out[k] = l->data, n[k] = l->n, ((layer_value *)l)->data = NULL;
            capture_free(&c);
        } else if (s == CB_OK) {
            cb_tensor t = {0};
            char path[2700];
            s = delta_runner_call(e, &v, cut, one_input, sub, 1, 0, 0, NULL);
            delta_path(path, sizeof path, "%s/outputs.npy", sub);
            if (s == CB_OK) s = cb_npy_read(path, &t);
            if (s == CB_OK && t.dtype != CB_F32) s = cb_fail(CB_ERR_FORMAT, "%s is not float32", path);
            if (s == CB_OK) out[k] = t.data, n[k] = cb_tensor_numel(&t), t.data = NULL;
            cb_tensor_free(&t);
        }
    }
    if (s == CB_OK && n[0] != n[1]) s = cb_fail(CB_ERR_SHAPE, "the two sides compute %s with different sizes", value);
    if (s == CB_OK) *rel = diff(out[0], out[1], n[0]).rel;
    free(out[0]);
    free(out[1]);
    return s;
}

static cb_status by_bisection(const delta_env *e, const delta_variant *a, const delta_variant *b, const char *dir,
                              const char *one_input, const cb_tensor *x, cb_buf *o)
{
    if (!delta_runs_onnx(a) || !delta_runs_onnx(b)) {
        cb_buf_printf(o, "{\"available\": false, \"reason\": \"only ONNX files are cut into sub-models; this pair "
                         "runs a framework's own model\"}");
        return CB_OK;
    }
    char **names = NULL, fa[2400];
    int n = 0, probes = 0;
    double rel_last = 0, rel = 0;
    cb_status s = onnx_float_values(delta_variant_file(e, a, fa), &names, &n);
    if (s == CB_OK && n < 1) s = cb_fail(CB_ERR_FORMAT, "the model computes no value");
    if (s == CB_OK) s = probe(e, a, b, dir, one_input, x, names[n - 1], probes++, &rel_last);
    int lo = 0, hi = n - 1; /* invariant: names[hi] diverges */
    if (s == CB_OK && !(rel_last > e->c->tolerance)) {
        cb_buf_printf(o, "{\"available\": true, \"method\": \"bisection\", \"probes\": %d, \"first\": null, "
                         "\"note\": \"the last value does not exceed the tolerance\"}", probes);
        free_names(names, n);
        return CB_OK;
    }
    while (s == CB_OK && lo < hi) {
        int mid = lo + (hi - lo) / 2;
        s = probe(e, a, b, dir, one_input, x, names[mid], probes++, &rel);
        if (s != CB_OK) break;
        if (rel > e->c->tolerance) hi = mid;
        else lo = mid + 1;
    }
    if (s != CB_OK) {
        cb_buf_printf(o, "{\"available\": false, \"reason\": ");
        cb_buf_json_string(o, cb_last_error());
        cb_buf_printf(o, "}");
    } else {
        delta_onnx g = {0};
        layer_value l = {0};
        snprintf(l.name, sizeof l.name, "%s", names[hi]);
        cb_buf_printf(o, "{\"available\": true, \"method\": \"bisection\", \"probes\": %d, \"values\": %d, ", probes, n);
        json_first(o, hi, &l, delta_onnx_open(delta_variant_file(e, a, fa), &g) == CB_OK ? &g : NULL);
        cb_buf_printf(o, "}");
        delta_onnx_close(&g);
    }
    free_names(names, n);
    return CB_OK;
}

cb_status delta_localise(const delta_env *e, const delta_variant *a, const delta_variant *b, int input, cb_buf *out)
{
    char dir[2500], name[420], one_input[2600];
    snprintf(name, sizeof name, "%s--%s", a->key, b->key);
    delta_safe_name(name);
    delta_path(dir, sizeof dir, "%s/localise/%s", e->work, name);
    delta_path(one_input, sizeof one_input, "%s/input.npy", dir);
    cb_tensor all = {0}, x = {0};
    cb_status s = cb_mkdirs(dir);
    if (s == CB_OK) s = cb_npy_read(delta_variant_inputs(e, a), &all);
    if (s == CB_OK && (input < 0 || input >= all.shape[0])) s = cb_fail(CB_ERR_INVALID_ARG, "no input %d", input);
    if (s == CB_OK) { /* the input as the runners read it, and crossbind's own copy as floats (token ids exact) */
        size_t row = (size_t)(cb_tensor_numel(&all) / all.shape[0]) * cb_dtype_size(all.dtype);
        cb_tensor one = all;
        one.shape[0] = 1;
        one.data = (char *)all.data + (size_t)input * row;
        s = cb_npy_write(one_input, &one);
        if (s == CB_OK) {
            x = one;
            if (!(x.data = malloc(row))) s = cb_fail(CB_ERR_NOMEM, "out of memory");
            else memcpy(x.data, one.data, row);
        }
        if (s == CB_OK) s = cb_tensor_to_f32(&x, one_input);
    }
    if (s == CB_OK) {
        cb_buf_printf(out, "{\"input\": %d, \"tolerance\": ", input);
        cb_buf_json_number(out, e->c->tolerance);
        cb_buf_printf(out, ", \"capture\": ");
        s = by_capture(e, a, b, dir, one_input, &x, out);
        if (s == CB_OK) cb_buf_printf(out, ", \"bisection\": ");
        if (s == CB_OK) s = by_bisection(e, a, b, dir, one_input, &x, out);
        cb_buf_printf(out, "}");
    }
    cb_tensor_free(&all);
    cb_tensor_free(&x);
    return s;
}
