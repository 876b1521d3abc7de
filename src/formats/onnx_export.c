/* ONNX export: a model's prediction graph as an opset-13 ModelProto (14
 * with a hard swish) with a dynamic batch axis "N". Parameters become initializers under their
 * canonical names, so an exported file also loads in parameters mode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/crossbind.h"
#include "crossbind/onnx.h"
#include "../core/json.h"
#include "onnx_util.h"

/* Every allocation of the message tree, freed together. */
typedef struct arena { void **ptrs; size_t n, cap; int failed; } arena;

static void *alloc(arena *a, size_t size)
{
    if (a->failed) return NULL;
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 256;
        void **p = realloc(a->ptrs, cap * sizeof *p);
        if (!p) { a->failed = 1; return NULL; }
        a->ptrs = p;
        a->cap = cap;
    }
    void *m = calloc(1, size ? size : 1);
    if (!m) { a->failed = 1; return NULL; }
    a->ptrs[a->n++] = m;
    return m;
}

static char *str(arena *a, const char *s)
{
    char *d = alloc(a, strlen(s) + 1);
    if (d) memcpy(d, s, strlen(s) + 1);
    return d;
}

static void arena_free(arena *a)
{
    for (size_t i = 0; i < a->n; i++) free(a->ptrs[i]);
    free(a->ptrs);
}

static Onnx__ValueInfoProto *value_info(arena *a, const char *name, const cb_node *n, int32_t elem_type)
{
    Onnx__ValueInfoProto *v = alloc(a, sizeof *v);
    Onnx__TypeProto *tp = alloc(a, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = alloc(a, sizeof *tt);
    Onnx__TensorShapeProto *sh = alloc(a, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dims = alloc(a, (size_t)(n->ndim + 1) * sizeof *dims);
    if (!v || !tp || !tt || !sh || !dims) return NULL;
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    for (int d = 0; d <= n->ndim; d++) {
        if (!(dims[d] = alloc(a, sizeof **dims))) return NULL;
        onnx__tensor_shape_proto__dimension__init(dims[d]);
        if (d == 0) {
            dims[d]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dims[d]->dim_param = str(a, "N");
        } else {
            dims[d]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dims[d]->dim_value = n->dims[d - 1];
        }
    }
    sh->n_dim = (size_t)n->ndim + 1;
    sh->dim = dims;
    tt->has_elem_type = 1;
    tt->elem_type = elem_type;
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->name = str(a, name);
    v->type = tp;
    return v;
}

static Onnx__TensorProto *tensor(arena *a, const char *name, int32_t type, int ndim, const int64_t *dims,
                                 const void *data, size_t bytes)
{
    Onnx__TensorProto *t = alloc(a, sizeof *t);
    int64_t *d = alloc(a, (size_t)(ndim ? ndim : 1) * sizeof *d);
    unsigned char *raw = alloc(a, bytes);
    if (!t || !d || !raw) return NULL;
    onnx__tensor_proto__init(t);
    if (ndim) memcpy(d, dims, (size_t)ndim * sizeof *d); /* a scalar has no dims (and may pass NULL) */
    memcpy(raw, data, bytes);
    t->n_dims = (size_t)ndim;
    t->dims = d;
    t->has_data_type = 1;
    t->data_type = type;
    t->name = str(a, name);
    t->has_raw_data = 1;
    t->raw_data.data = raw;
    t->raw_data.len = bytes;
    return t;
}

/* A named attribute of the given type, its value left for the caller. */
static Onnx__AttributeProto *new_attr(arena *a, const char *name, Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *at = alloc(a, sizeof *at);
    if (!at) return NULL;
    onnx__attribute_proto__init(at);
    at->name = str(a, name);
    at->has_type = 1;
    at->type = type;
    return at;
}

static Onnx__AttributeProto *ints_attr(arena *a, const char *name, int n, const int64_t *v)
{
    Onnx__AttributeProto *at = new_attr(a, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *ints = alloc(a, (size_t)n * sizeof *ints);
    if (!at || !ints) return NULL;
    memcpy(ints, v, (size_t)n * sizeof *ints);
    at->n_ints = (size_t)n;
    at->ints = ints;
    return at;
}

static Onnx__AttributeProto *float_attr(arena *a, const char *name, float v)
{
    Onnx__AttributeProto *at = new_attr(a, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (at) at->has_f = 1, at->f = v;
    return at;
}

static Onnx__AttributeProto *int_attr(arena *a, const char *name, int64_t v)
{
    Onnx__AttributeProto *at = new_attr(a, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (at) at->has_i = 1, at->i = v;
    return at;
}

static Onnx__AttributeProto *string_attr(arena *a, const char *name, const char *v)
{
    Onnx__AttributeProto *at = new_attr(a, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    char *copy = str(a, v);
    if (!at || !copy) return NULL;
    at->has_s = 1;
    at->s.data = (uint8_t *)copy;
    at->s.len = strlen(copy);
    return at;
}

typedef struct exporter {
    arena a;
    const cb_graph *g;
    char (*names)[CB_MAX_NAME + 8]; /* ONNX value name of each graph node */
    Onnx__NodeProto **nodes;
    size_t n_nodes;
    Onnx__TensorProto **inits;
    size_t n_inits;
    char *rnn_param;   /* parameter nodes exported in ONNX's recurrent layout instead */
} exporter;

static Onnx__NodeProto *node(exporter *e, const char *op, const char *name, int n_in, const char *const *in,
                             const char *out, int n_attr)
{
    arena *a = &e->a;
    Onnx__NodeProto *n = alloc(a, sizeof *n);
    char **ins = alloc(a, (size_t)n_in * sizeof *ins), **outs = alloc(a, sizeof *outs);
    Onnx__AttributeProto **attrs = alloc(a, (size_t)(n_attr ? n_attr : 1) * sizeof *attrs);
    if (!n || !ins || !outs || !attrs) return NULL;
    onnx__node_proto__init(n);
    for (int i = 0; i < n_in; i++) ins[i] = str(a, in[i]);
    outs[0] = str(a, out);
    n->n_input = (size_t)n_in;
    n->input = ins;
    n->n_output = 1;
    n->output = outs;
    n->op_type = str(a, op);
    n->name = str(a, name);
    n->attribute = attrs;
    e->nodes[e->n_nodes++] = n;
    return n;
}

/* An initializer holding int64 values. */
static const char *int64_init(exporter *e, const char *name, int ndim, const int64_t *dims, const int64_t *v)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= dims[d];
    Onnx__TensorProto *tp = tensor(&e->a, name, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, ndim, dims, v,
                                   (size_t)n * sizeof *v);
    if (!tp) return NULL;
    e->inits[e->n_inits++] = tp;
    return tp->name;
}

/* A scalar float initializer (Clip's bounds). */
static const char *float_init(exporter *e, const char *name, float v)
{
    Onnx__TensorProto *tp = tensor(&e->a, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL, &v, sizeof v);
    if (!tp) return NULL;
    e->inits[e->n_inits++] = tp;
    return tp->name;
}

/* Keras' hard sigmoid and hard swish (keras_order) as the chain they came
 * from, so that a file exported again computes them with the same
 * roundings: Add(x, 3), Clip(0, 6), Mul by the scale, and for hard swish
 * Mul(x, that). */
static cb_status export_hard_keras(exporter *e, const cb_node *gn, const char *x, const char *out)
{
    char three[CB_MAX_NAME + 16], zero[CB_MAX_NAME + 16], six[CB_MAX_NAME + 16], scale[CB_MAX_NAME + 16];
    char plus3[CB_MAX_NAME + 16], relu6[CB_MAX_NAME + 16], hsig[CB_MAX_NAME + 16];
    snprintf(three, sizeof three, "%s.three", gn->name);
    snprintf(zero, sizeof zero, "%s.zero", gn->name);
    snprintf(six, sizeof six, "%s.six", gn->name);
    snprintf(scale, sizeof scale, "%s.scale", gn->name);
    snprintf(plus3, sizeof plus3, "%s.plus3", gn->name);
    snprintf(relu6, sizeof relu6, "%s.relu6", gn->name);
    snprintf(hsig, sizeof hsig, "%s.hsig", gn->name);
    const int swish = gn->op == CB_OP_HARDSWISH;
    if (!float_init(e, three, 3.0f) || !float_init(e, zero, 0.0f) || !float_init(e, six, 6.0f) ||
        !float_init(e, scale, gn->alpha))
        return cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
    const char *add_in[2] = {x, three}, *clip_in[3] = {plus3, zero, six}, *mul_in[2] = {relu6, scale},
               *swish_in[2] = {x, hsig};
    if (!node(e, "Add", plus3, 2, add_in, plus3, 0) || !node(e, "Clip", relu6, 3, clip_in, relu6, 0) ||
        !node(e, "Mul", swish ? hsig : gn->name, 2, mul_in, swish ? hsig : out, 0) ||
        (swish && !node(e, "Mul", gn->name, 2, swish_in, out, 0)))
        return cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
    return CB_OK;
}

/* Reorders the gate blocks of a [gates*H, ...] PyTorch tensor into ONNX's
 * gate order and appends it to `dst` (PyTorch LSTM i,f,g,o -> ONNX i,o,f,c;
 * GRU r,z,n -> z,r,h). */
static const int lstm_to_onnx[4] = {0, 3, 1, 2}, gru_to_onnx[3] = {1, 0, 2};

static float *gates_to_onnx(const float *src, int gates, size_t block, float *dst)
{
    const int *map = gates == 4 ? lstm_to_onnx : gru_to_onnx;
    for (int k = 0; k < gates; k++) memcpy(dst + (size_t)k * block, src + (size_t)map[k] * block, block * sizeof *dst);
    return dst + (size_t)gates * block;
}

/* LSTM / GRU, batch first [N,T,D] -> [N,T,H]: opset 13's layers are time
 * major, so Transpose -> LSTM|GRU (Y [T,1,N,H]) -> Squeeze(1) -> Transpose,
 * the pattern PyTorch's exporter writes too. W, R and B are the PyTorch
 * parameters with their gate blocks in ONNX's order (B = [Wb, Rb]). */
static cb_status export_recurrent(exporter *e, int i, const char *x, const char *out)
{
    const cb_graph *g = e->g;
    const cb_node *gn = &g->nodes[i];
    const int gates = gn->op == CB_OP_LSTM ? 4 : 3;
    const cb_node *wi = &g->nodes[gn->in[1]], *wh = &g->nodes[gn->in[2]];
    const int64_t H = wh->dims[1], D = wi->dims[1];
    char nm[4][CB_MAX_NAME + 16], tm_x[CB_MAX_NAME + 16], y4[CB_MAX_NAME + 16], y_tm[CB_MAX_NAME + 16];
    snprintf(nm[0], sizeof nm[0], "%s.W", gn->name);
    snprintf(nm[1], sizeof nm[1], "%s.R", gn->name);
    snprintf(nm[2], sizeof nm[2], "%s.B", gn->name);
    snprintf(nm[3], sizeof nm[3], "%s.squeeze_axes", gn->name);
    snprintf(tm_x, sizeof tm_x, "%s.x_time_major", gn->name);
    snprintf(y4, sizeof y4, "%s.Y", gn->name);
    snprintf(y_tm, sizeof y_tm, "%s.y_time_major", gn->name);
    float *buf = malloc((size_t)gates * H * (size_t)(D > H ? D : H) * sizeof *buf);
    if (!buf) return cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
    int64_t wd[3] = {1, gates * H, D}, rd[3] = {1, gates * H, H}, bd[2] = {1, 2 * gates * H};
    const float *P = g->params;
    Onnx__TensorProto *t[3];
    gates_to_onnx(P + wi->param_offset, gates, (size_t)(H * D), buf);
    t[0] = tensor(&e->a, nm[0], ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, wd, buf, (size_t)(gates * H * D) * 4);
    gates_to_onnx(P + wh->param_offset, gates, (size_t)(H * H), buf);
    t[1] = tensor(&e->a, nm[1], ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 3, rd, buf, (size_t)(gates * H * H) * 4);
    float *rb = gates_to_onnx(P + g->nodes[gn->in[3]].param_offset, gates, (size_t)H, buf);
    gates_to_onnx(P + g->nodes[gn->in[4]].param_offset, gates, (size_t)H, rb);
    t[2] = tensor(&e->a, nm[2], ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, bd, buf, (size_t)(2 * gates * H) * 4);
    free(buf);
    for (int k = 0; k < 3; k++) {
        if (!t[k]) return cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
        e->inits[e->n_inits++] = t[k];
    }
    const int64_t perm[3] = {1, 0, 2}, one = 1, axis1[1] = {1};
    if (!int64_init(e, nm[3], 1, &one, axis1)) return cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
    char tname[CB_MAX_NAME + 16];
    snprintf(tname, sizeof tname, "%s.transpose_in", gn->name);
    Onnx__NodeProto *n = node(e, "Transpose", tname, 1, &x, tm_x, 1);
    if (n) n->attribute[n->n_attribute++] = ints_attr(&e->a, "perm", 3, perm);
    const char *rin[4] = {tm_x, nm[0], nm[1], nm[2]};
    n = node(e, gates == 4 ? "LSTM" : "GRU", gn->name, 4, rin, y4, 2);
    if (n) n->attribute[n->n_attribute++] = int_attr(&e->a, "hidden_size", H);
    if (n && gates == 3) n->attribute[n->n_attribute++] = int_attr(&e->a, "linear_before_reset", !gn->reset_before);
    const char *sin[2] = {y4, nm[3]};
    snprintf(tname, sizeof tname, "%s.squeeze", gn->name);
    n = node(e, "Squeeze", tname, 2, sin, y_tm, 0);
    snprintf(tname, sizeof tname, "%s.transpose_out", gn->name);
    const char *yt = y_tm;
    if ((n = node(e, "Transpose", tname, 1, &yt, out, 1))) n->attribute[n->n_attribute++] = ints_attr(&e->a, "perm", 3, perm);
    return n && !e->a.failed ? CB_OK : cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
}

static void window_attrs(exporter *e, Onnx__NodeProto *n, const cb_node *gn)
{
    int64_t k[2] = {gn->kh, gn->kw}, s[2] = {gn->sh, gn->sw}, p[4] = {gn->ph, gn->pw, gn->ph, gn->pw};
    if (gn->exclude_pad) /* its own, possibly asymmetric, padding */
        for (int a = 0; a < 4; a++) p[a] = gn->pads[a];
    n->attribute[n->n_attribute++] = ints_attr(&e->a, "kernel_shape", 2, k);
    n->attribute[n->n_attribute++] = ints_attr(&e->a, "strides", 2, s);
    n->attribute[n->n_attribute++] = ints_attr(&e->a, "pads", 4, p);
}

static cb_status export_node(exporter *e, int i)
{
    const cb_graph *g = e->g;
    const cb_node *gn = &g->nodes[i];
    const char *in[CB_MAX_INPUTS];
    for (int k = 0; k < gn->n_in; k++) in[k] = e->names[gn->in[k]];
    const char *out = e->names[i];
    Onnx__NodeProto *n = NULL;
    switch (gn->op) {
    case CB_OP_PARAM: {
        if (e->rnn_param[i]) return CB_OK;
        Onnx__TensorProto *tp = tensor(&e->a, gn->name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, gn->ndim, gn->dims,
                                       g->params + gn->param_offset, (size_t)cb_node_numel(gn) * sizeof(float));
        if (!tp) return cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
        e->inits[e->n_inits++] = tp;
        return CB_OK;
    }
    case CB_OP_INPUT: return CB_OK;
    case CB_OP_CONV2D:
        if ((n = node(e, "Conv", gn->name, gn->n_in, in, out, 5))) {
            window_attrs(e, n, gn);
            if (gn->groups > 1) n->attribute[n->n_attribute++] = int_attr(&e->a, "group", gn->groups);
            if (gn->dh > 1 || gn->dw > 1) {
                const int64_t d[2] = {gn->dh > 1 ? gn->dh : 1, gn->dw > 1 ? gn->dw : 1};
                n->attribute[n->n_attribute++] = ints_attr(&e->a, "dilations", 2, d);
            }
        }
        break;
    case CB_OP_MAXPOOL2D:
        if ((n = node(e, "MaxPool", gn->name, 1, in, out, 3))) window_attrs(e, n, gn);
        break;
    case CB_OP_AVGPOOL2D:
        if ((n = node(e, "AveragePool", gn->name, 1, in, out, 4))) {
            window_attrs(e, n, gn);
            n->attribute[n->n_attribute++] = int_attr(&e->a, "count_include_pad", !gn->exclude_pad);
        }
        break;
    case CB_OP_LINEAR:
        if ((n = node(e, "Gemm", gn->name, gn->n_in, in, out, 1)))
            n->attribute[n->n_attribute++] = int_attr(&e->a, "transB", 1);
        break;
    case CB_OP_BATCHNORM2D: /* inference semantics: the running statistics */
        if ((n = node(e, "BatchNormalization", gn->name, 5, in, out, 2))) {
            n->attribute[n->n_attribute++] = float_attr(&e->a, "epsilon", gn->eps);
            /* ONNX keeps the share of the old running value: 1 - PyTorch's momentum. */
            n->attribute[n->n_attribute++] = float_attr(&e->a, "momentum", 1.0f - gn->momentum);
        }
        break;
    case CB_OP_DROPOUT: n = node(e, "Identity", gn->name, 1, in, out, 0); break; /* inference: identity */
    case CB_OP_TANH: n = node(e, "Tanh", gn->name, 1, in, out, 0); break;
    case CB_OP_RELU: n = node(e, "Relu", gn->name, 1, in, out, 0); break;
    case CB_OP_SIGMOID: n = node(e, "Sigmoid", gn->name, 1, in, out, 0); break;
    case CB_OP_FLATTEN:
        if (gn->ndim == 1) {
            if ((n = node(e, "Flatten", gn->name, 1, in, out, 1)))
                n->attribute[n->n_attribute++] = int_attr(&e->a, "axis", 1);
        } else {
            char shape_name[CB_MAX_NAME + 16];
            snprintf(shape_name, sizeof shape_name, "%s.shape", gn->name);
            int64_t shape[CB_MAX_DIMS + 1] = {-1}, len = gn->ndim + 1;
            for (int d = 0; d < gn->ndim; d++) shape[d + 1] = gn->dims[d];
            Onnx__TensorProto *tp = tensor(&e->a, shape_name, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, &len, shape,
                                           (size_t)len * sizeof(int64_t));
            if (!tp) return cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
            e->inits[e->n_inits++] = tp;
            const char *rin[2] = {in[0], shape_name};
            n = node(e, "Reshape", gn->name, 2, rin, out, 0);
        }
        break;
    case CB_OP_EMBEDDING: { /* Gather rows of the table by the (int64) ids */
        const char *gin[2] = {in[1], in[0]};
        n = node(e, "Gather", gn->name, 2, gin, out, 0);
        break;
    }
    case CB_OP_LSTM:
    case CB_OP_GRU: return export_recurrent(e, i, in[0], out);
    case CB_OP_ADD: n = node(e, "Add", gn->name, 2, in, out, 0); break;
    case CB_OP_MUL: n = node(e, "Mul", gn->name, 2, in, out, 0); break; /* a gate [N,C,1,1] broadcasts */
    case CB_OP_HARDSWISH:
        if (gn->keras_order) return export_hard_keras(e, gn, in[0], out);
        n = node(e, "HardSwish", gn->name, 1, in, out, 0);
        break;
    case CB_OP_HARDSIGMOID:
        if (gn->keras_order) return export_hard_keras(e, gn, in[0], out);
        if ((n = node(e, "HardSigmoid", gn->name, 1, in, out, 2))) {
            n->attribute[n->n_attribute++] = float_attr(&e->a, "alpha", gn->alpha);
            n->attribute[n->n_attribute++] = float_attr(&e->a, "beta", gn->beta);
        }
        break;
    case CB_OP_GLOBAL_AVGPOOL: n = node(e, "GlobalAveragePool", gn->name, 1, in, out, 0); break;
    case CB_OP_PAD: { /* opset 11 on: pads [N,C,H,W begins, then ends] and the value as inputs */
        char pn[CB_MAX_NAME + 8], vn[CB_MAX_NAME + 8];
        snprintf(pn, sizeof pn, "%s.pads", gn->name);
        snprintf(vn, sizeof vn, "%s.value", gn->name);
        const int64_t pads[8] = {0, 0, gn->pads[0], gn->pads[1], 0, 0, gn->pads[2], gn->pads[3]}, eight = 8;
        if (!int64_init(e, pn, 1, &eight, pads) || !float_init(e, vn, gn->lo))
            return cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
        const char *pin[3] = {in[0], pn, vn};
        static const char *const modes[] = {[CB_PAD_CONSTANT] = "constant", [CB_PAD_REFLECT] = "reflect",
                                            [CB_PAD_EDGE] = "edge"};
        if ((n = node(e, "Pad", gn->name, 3, pin, out, 1)) && gn->pad_mode != CB_PAD_CONSTANT)
            n->attribute[n->n_attribute++] = string_attr(&e->a, "mode", modes[gn->pad_mode]);
        break;
    }
    case CB_OP_SOFTMAX:
        if ((n = node(e, "Softmax", gn->name, 1, in, out, 1)))
            n->attribute[n->n_attribute++] = int_attr(&e->a, "axis", gn->axis + 1);
        break;
    case CB_OP_CONCAT:
        if ((n = node(e, "Concat", gn->name, gn->n_in, in, out, 1))) n->attribute[n->n_attribute++] = int_attr(&e->a, "axis", 1);
        break;
    case CB_OP_CLIP: { /* opset 11 and later: the bounds as inputs */
        char lo[CB_MAX_NAME + 8], hi[CB_MAX_NAME + 8];
        snprintf(lo, sizeof lo, "%s.min", gn->name);
        snprintf(hi, sizeof hi, "%s.max", gn->name);
        if (!float_init(e, lo, gn->lo) || !float_init(e, hi, gn->hi))
            return cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
        const char *cin[3] = {in[0], lo, hi};
        n = node(e, "Clip", gn->name, 3, cin, out, 0);
        break;
    }
    case CB_OP_LAST_STEP: { /* Gather(axis 1) of index -1: [N,T,H] -> [N,H] */
        char idx[CB_MAX_NAME + 16];
        snprintf(idx, sizeof idx, "%s.index", gn->name);
        const int64_t last = -1;
        if (!int64_init(e, idx, 0, NULL, &last)) return cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
        const char *gin[2] = {in[0], idx};
        if ((n = node(e, "Gather", gn->name, 2, gin, out, 1))) n->attribute[n->n_attribute++] = int_attr(&e->a, "axis", 1);
        break;
    }
    default:
        return cb_fail(CB_ERR_UNSUPPORTED, "ONNX export: op of node '%s' has no ONNX mapping", gn->name);
    }
    return n && !e->a.failed ? CB_OK : cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
}

/* Token ids: an input read by an embedding is int64 in ONNX (Gather's
 * indices), as PyTorch exports it. */
static int feeds_embedding(const cb_graph *g, int input)
{
    for (int i = 0; i < g->count; i++)
        if (g->nodes[i].op == CB_OP_EMBEDDING && g->nodes[i].in[0] == input) return 1;
    return 0;
}

/* Opset 13, or 14 where the graph has a hard swish written as ONNX's
 * HardSwish (which arrives at 14; the other ops read the same at both;
 * Keras' is written as its chain, export_hard_keras). */
static int64_t export_opset(const cb_graph *g)
{
    for (int i = 0; i < g->count; i++)
        if (g->nodes[i].op == CB_OP_HARDSWISH && !g->nodes[i].keras_order) return 14;
    return 13;
}

cb_status cb_onnx_export(const cb_model *m, const char *path)
{
    const cb_graph *g = &m->graph;
    exporter e = {.g = g};
    e.names = calloc((size_t)g->count, sizeof *e.names);
    /* + a Transpose per [N,H,W,C] input; up to four per Keras hard swish (export_hard_keras) */
    e.nodes = alloc(&e.a, (size_t)(4 * g->count + CB_MAX_IO) * sizeof *e.nodes);
    /* Reshape shapes add one initializer per node, recurrent layers four. */
    e.inits = alloc(&e.a, (size_t)g->count * 5 * sizeof *e.inits);
    e.rnn_param = alloc(&e.a, (size_t)g->count);
    cb_status s = e.names && e.rnn_param && !e.a.failed ? CB_OK : cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
    /* Prediction nodes only: those the outputs depend on. */
    char *need = calloc((size_t)g->count, 1);
    if (!need) s = cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
    for (int k = 0; s == CB_OK && k < m->n_outputs; k++) need[m->outputs[k]] = 1;
    for (int i = g->count - 1; s == CB_OK && i >= 0; i--)
        if (need[i])
            for (int k = 0; k < g->nodes[i].n_in; k++) need[g->nodes[i].in[k]] = 1;
    for (int i = 0; s == CB_OK && i < g->count; i++) {
        if (g->nodes[i].op == CB_OP_LSTM || g->nodes[i].op == CB_OP_GRU)
            for (int k = 1; k < 5; k++) e.rnn_param[g->nodes[i].in[k]] = 1;
    }
    for (int i = 0; s == CB_OK && i < g->count; i++) {
        const cb_node *gn = &g->nodes[i];
        int nhwc = 0;
        for (int k = 0; k < m->n_inputs; k++) nhwc |= m->inputs[k] == i && m->input_nhwc[k] && gn->ndim == 3;
        if (nhwc) { /* the file's input keeps its [N,H,W,C]; the graph reads it transposed */
            static const int64_t perm[4] = {0, 3, 1, 2};
            snprintf(e.names[i], sizeof e.names[i], "%.100s.nchw", gn->name);
            const char *in[1] = {gn->name};
            Onnx__NodeProto *t = node(&e, "Transpose", e.names[i], 1, in, e.names[i], 1);
            if (t) t->attribute[t->n_attribute++] = ints_attr(&e.a, "perm", 4, perm);
            if (!t || e.a.failed) s = cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
        }
        else if (gn->op == CB_OP_PARAM || gn->op == CB_OP_INPUT) snprintf(e.names[i], sizeof e.names[i], "%s", gn->name);
        else if (i == m->outputs[0] && m->n_outputs == 1) snprintf(e.names[i], sizeof e.names[i], "output");
        else snprintf(e.names[i], sizeof e.names[i], "%s.out", gn->name);
        if (need[i]) s = export_node(&e, i);
    }
    Onnx__ModelProto mp;
    Onnx__GraphProto gp;
    Onnx__OperatorSetIdProto opset;
    Onnx__OperatorSetIdProto *opsets[1] = {&opset};
    onnx__model_proto__init(&mp);
    onnx__graph_proto__init(&gp);
    onnx__operator_set_id_proto__init(&opset);
    if (s == CB_OK) {
        opset.domain = str(&e.a, "");
        opset.has_version = 1;
        opset.version = export_opset(g);
        mp.has_ir_version = 1;
        mp.ir_version = 7;
        mp.n_opset_import = 1;
        mp.opset_import = opsets;
        mp.producer_name = str(&e.a, "crossbind");
        mp.producer_version = str(&e.a, CB_VERSION);
        mp.graph = &gp;
        gp.name = str(&e.a, m->name);
        gp.n_node = e.n_nodes;
        gp.node = e.nodes;
        gp.n_initializer = e.n_inits;
        gp.initializer = e.inits;
        gp.input = alloc(&e.a, (size_t)m->n_inputs * sizeof *gp.input);
        gp.output = alloc(&e.a, (size_t)m->n_outputs * sizeof *gp.output);
        for (int k = 0; gp.input && k < m->n_inputs; k++) {
            cb_node in = g->nodes[m->inputs[k]];
            if (m->input_nhwc[k] && in.ndim == 3) { /* [C,H,W] -> the file's [H,W,C] */
                int64_t c = in.dims[0];
                in.dims[0] = in.dims[1], in.dims[1] = in.dims[2], in.dims[2] = c;
            }
            gp.input[gp.n_input++] = value_info(&e.a, in.name, &in,
                                                 feeds_embedding(g, m->inputs[k]) ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64
                                                                                  : ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
        }
        for (int k = 0; gp.output && k < m->n_outputs; k++)
            gp.output[gp.n_output++] = value_info(&e.a, e.names[m->outputs[k]], &g->nodes[m->outputs[k]],
                                                  ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
        if (e.a.failed) s = cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
    }
    if (s == CB_OK) {
        size_t len = onnx__model_proto__get_packed_size(&mp);
        unsigned char *buf = malloc(len ? len : 1);
        if (!buf) s = cb_fail(CB_ERR_NOMEM, "out of memory exporting ONNX");
        else {
            onnx__model_proto__pack(&mp, buf);
            s = cb_write_file_atomic(path, buf, len);
            free(buf);
        }
    }
    free(need);
    free(e.names);
    arena_free(&e.a);
    return s;
}
