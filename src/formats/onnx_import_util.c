/* The ONNX importer's helpers (onnx_import_internal.h): values by name,
 * attributes, and the parameters made from constants. The operator mappers
 * (onnx_import.c, onnx_import_seq.c) use them; they call no mapper. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/crossbind.h"
#include "onnx_import_internal.h"

value *imp_lookup(importer *im, const char *name)
{
    int i = cb_name_index_find(&im->val_names, name);
    return i < 0 ? NULL : &im->vals[i];
}

value *imp_define(importer *im, const char *name)
{
    if (imp_lookup(im, name)) {
        cb_fail(CB_ERR_FORMAT, "%s: value '%s' is defined twice", im->what, name);
        return NULL;
    }
    if (!im->val_names.slots && cb_name_index_init(&im->val_names, 64) != CB_OK) return NULL;
    if (im->n_vals == im->cap_vals) {
        int cap = im->cap_vals ? 2 * im->cap_vals : 64;
        value *v = realloc(im->vals, (size_t)cap * sizeof *v);
        if (!v) {
            cb_fail(CB_ERR_NOMEM, "out of memory importing %s", im->what);
            return NULL;
        }
        im->vals = v;
        im->cap_vals = cap;
    }
    if (cb_name_index_add(&im->val_names, name, im->n_vals) == -2) return NULL;
    value *v = &im->vals[im->n_vals++];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->node = -1;
    return v;
}

const Onnx__AttributeProto *imp_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0) return n->attribute[i];
    return NULL;
}

int64_t imp_attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a = imp_attr(n, name);
    return a && a->has_i ? a->i : dflt;
}

float imp_attr_float(const Onnx__NodeProto *n, const char *name, float dflt)
{
    const Onnx__AttributeProto *a = imp_attr(n, name);
    return a && a->has_f ? a->f : dflt;
}

/* Integer-list attribute into out[max]; returns its length, or dflt_len
 * copies of dflt when absent; -1 when longer than max. */
int imp_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int max, int dflt_len, int64_t dflt)
{
    const Onnx__AttributeProto *a = imp_attr(n, name);
    if (!a) {
        for (int i = 0; i < dflt_len; i++) out[i] = dflt;
        return dflt_len;
    }
    if (a->n_ints > (size_t)max) return -1;
    for (size_t i = 0; i < a->n_ints; i++) out[i] = a->ints[i];
    return (int)a->n_ints;
}

const char *imp_attr_str(const Onnx__NodeProto *n, const char *name, const char *dflt, char *buf, size_t size)
{
    const Onnx__AttributeProto *a = imp_attr(n, name);
    if (!a || !a->has_s) return dflt;
    size_t k = a->s.len < size - 1 ? a->s.len : size - 1;
    memcpy(buf, a->s.data, k);
    buf[k] = 0;
    return buf;
}

cb_status imp_unsupported(importer *im, const Onnx__NodeProto *n, const char *why)
{
    return cb_fail(CB_ERR_UNSUPPORTED, "%s: node '%s' (%s): %s", im->what, n->name ? n->name : "",
                   n->op_type, why);
}

/* The activation feeding input i of node n. */
/* Input i of n as a computed value; one in TensorFlow's layout only where
 * `nhwc_ok`. */
static cb_status activation(importer *im, const Onnx__NodeProto *n, size_t i, int nhwc_ok, int *node)
{
    *node = -1;
    if (i >= n->n_input || !n->input[i][0]) return imp_unsupported(im, n, "a required input is missing");
    value *v = imp_lookup(im, n->input[i]);
    if (!v || v->node < 0) return imp_unsupported(im, n, "expects a computed tensor where the file gives a constant");
    if (v->layout != IMP_PLAIN && !(v->layout == IMP_NHWC && nhwc_ok))
        return imp_unsupported(im, n, v->layout == IMP_UNAVAILABLE ? "it reads an output crossbind does not compute "
                               "(an LSTM's Y_c)" : v->layout == IMP_CHANNEL ? "it reads one channel of a tensor "
                               "(Gather along axis 1), which is implemented only as a scale and shift (Mul, Add, Sub, "
                               "Div of scalars) concatenated with other channels of that tensor" : "it reads a time-major "
                               "or recurrent-layer output in a way not implemented (see docs/onnx-ops.md)");
    *node = v->node;
    return CB_OK;
}

cb_status imp_activation(importer *im, const Onnx__NodeProto *n, size_t i, int *node)
{
    return activation(im, n, i, im->as_stored, node);
}

int imp_reads_layout(importer *im, const Onnx__NodeProto *n, imp_layout layout)
{
    for (size_t i = 0; i < n->n_input; i++) {
        const value *v = n->input[i][0] ? imp_lookup(im, n->input[i]) : NULL;
        if (v && v->node >= 0 && v->layout == layout) return 1;
    }
    return 0;
}

cb_status imp_activation_nhwc(importer *im, const Onnx__NodeProto *n, size_t i, int *node, int *nhwc)
{
    const value *v = i < n->n_input && n->input[i][0] ? imp_lookup(im, n->input[i]) : NULL;
    *nhwc = v && v->node >= 0 && v->layout == IMP_NHWC;
    return activation(im, n, i, 1, node);
}

/* The constant feeding input i of node n (NULL when the optional input is absent). */
cb_status imp_constant(importer *im, const Onnx__NodeProto *n, size_t i, const cb_tensor **out)
{
    *out = NULL;
    if (i >= n->n_input || !n->input[i][0]) return CB_OK;
    value *v = imp_lookup(im, n->input[i]);
    if (!v || v->node >= 0)
        return imp_unsupported(im, n, "its weights must be initializers (constants), not computed or fed at run time");
    *out = &v->constant;
    return CB_OK;
}

/* A parameter node holding `data` (n floats, copied now, stored at finalize). */
cb_status imp_param(importer *im, const char *name, int ndim, const int64_t *dims, const float *data,
                       int *node)
{
    char pname[CB_MAX_NAME];
    if (strlen(name) >= CB_MAX_NAME) return cb_fail(CB_ERR_UNSUPPORTED, "%s: initializer name too long: %.60s...",
                                                    im->what, name);
    snprintf(pname, sizeof pname, "%s", name);
    /* A constant consumed twice (or an activation with the same name) gets
     * a distinct parameter name. The search for a free suffix goes on from
     * where the constant's last copy stopped: one constant feeding m nodes
     * costs m lookups, not m^2 / 2. */
    value *v = imp_lookup(im, name);
    int k = v ? v->next_copy : 0; /* 0: the name itself; k: name#k */
    for (;; k++) {
        if (k) snprintf(pname, sizeof pname, "%.100s#%d", name, k);
        if (cb_graph_find(&im->m->graph, pname) < 0) break;
    }
    if (v) v->next_copy = k + 1;
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) numel *= dims[d];
    int64_t fan_in = ndim > 1 ? numel / dims[0] : numel;
    int id = cb_graph_param(&im->m->graph, pname, ndim, dims, CB_INIT_NONE, fan_in);
    if (id < 0) return CB_ERR_INVALID_ARG;
    if (im->n_pend == im->cap_pend) {
        int cap = im->cap_pend ? 2 * im->cap_pend : 32;
        pending *p = realloc(im->pend, (size_t)cap * sizeof *p);
        if (!p) return cb_fail(CB_ERR_NOMEM, "out of memory importing %s", im->what);
        im->pend = p;
        im->cap_pend = cap;
    }
    float *copy = malloc((size_t)(numel ? numel : 1) * sizeof *copy);
    if (!copy) return cb_fail(CB_ERR_NOMEM, "out of memory importing %s", im->what);
    memcpy(copy, data, (size_t)numel * sizeof *copy);
    im->pend[im->n_pend++] = (pending){id, copy};
    *node = id;
    return CB_OK;
}

void imp_shape_range(const Onnx__NodeProto *n, int64_t rank, int64_t *begin, int64_t *end)
{
    int64_t b = imp_attr_int(n, "start", 0), e = imp_attr_int(n, "end", rank);
    if (b < 0) b += rank;
    if (e < 0) e += rank;
    *begin = b < 0 ? 0 : b > rank ? rank : b;
    *end = e < 0 ? 0 : e > rank ? rank : e;
}
