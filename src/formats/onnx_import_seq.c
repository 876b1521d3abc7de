/* ONNX import of the sequence operators: embeddings (Gather of an
 * initializer), recurrent layers (LSTM, GRU) and the reshuffling around
 * them. crossbind's recurrent layers are batch first while opset-13 ONNX's
 * are time major, so exporters wrap them as
 *     Transpose [1,0,2] -> LSTM|GRU -> Squeeze(1) -> Transpose [1,0,2]
 * and take the last step with Gather(axis 1, -1) or Squeeze(Y_h, 0). The
 * importer follows such chains by marking values with their layout relative
 * to a graph node (imp_layout) instead of moving data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/formats.h"
#include "onnx_import_internal.h"

/* Binds output k of n to `node` with `layout` (an empty output name is skipped). */
static cb_status bind(importer *im, const Onnx__NodeProto *n, size_t k, int node, imp_layout layout)
{
    if (k >= n->n_output || !n->output[k][0]) return CB_OK;
    value *v = imp_define(im, n->output[k]);
    if (!v) return CB_ERR_FORMAT;
    v->node = node;
    v->layout = layout;
    return CB_OK;
}

static value *computed(importer *im, const Onnx__NodeProto *n, size_t i)
{
    value *v = i < n->n_input && n->input[i][0] ? imp_lookup(im, n->input[i]) : NULL;
    return v && v->node >= 0 ? v : NULL;
}

int imp_axes(importer *im, const Onnx__NodeProto *n, int64_t *axes, int max)
{
    int k = imp_attr_ints(n, "axes", axes, max, 0, 0);
    if (k != 0 || n->n_input < 2) return k;
    const cb_tensor *t;
    if (imp_constant(im, n, 1, &t) != CB_OK || !t || t->dtype != CB_I64 || cb_tensor_numel(t) > max) return -1;
    for (int64_t i = 0; i < cb_tensor_numel(t); i++) axes[i] = ((const int64_t *)t->data)[i];
    return (int)cb_tensor_numel(t);
}

cb_status imp_transpose(importer *im, const Onnx__NodeProto *n)
{
    value *v = computed(im, n, 0);
    int64_t perm[8];
    int np = imp_attr_ints(n, "perm", perm, 8, 0, 0);
    if (!v) return imp_unsupported(im, n, "expects a computed tensor");
    if (v->layout == IMP_NHWC && np == 4 && perm[0] == 0 && perm[1] == 3 && perm[2] == 1 && perm[3] == 2)
        return bind(im, n, 0, v->node, IMP_PLAIN); /* an image in TensorFlow's layout, to crossbind's */
    if (v->layout == IMP_PLAIN && np == 4 && perm[0] == 0 && perm[1] == 2 && perm[2] == 3 && perm[3] == 1 &&
        im->m->graph.nodes[v->node].ndim == 3)
        return bind(im, n, 0, v->node, IMP_NHWC); /* to TensorFlow's: marked, not moved (onnx_import_nhwc.c) */
    if (np != 3 || perm[0] != 1 || perm[1] != 0 || perm[2] != 2)
        return imp_unsupported(im, n, "only perm [1,0,2] (batch first <-> time major), and between [N,C,H,W] and "
                               "[N,H,W,C] ([0,2,3,1] and back [0,3,1,2]), are implemented");
    if (v->layout == IMP_TIME_MAJOR) return bind(im, n, 0, v->node, IMP_PLAIN);
    if (v->layout == IMP_PLAIN && im->m->graph.nodes[v->node].ndim == 2)
        return bind(im, n, 0, v->node, IMP_TIME_MAJOR);
    return imp_unsupported(im, n, "only sequences [N,T,F] and their time-major form can be transposed");
}

static cb_status plain_squeeze(importer *im, const Onnx__NodeProto *n, value *v, int squeeze);

cb_status imp_squeeze(importer *im, const Onnx__NodeProto *n)
{
    value *v = computed(im, n, 0);
    int64_t axes[8];
    int na = imp_axes(im, n, axes, 8);
    if (!v) return imp_unsupported(im, n, "expects a computed tensor");
    if (na == 1 && v->layout == IMP_RNN_Y && (axes[0] == 1 || axes[0] == -3))
        return bind(im, n, 0, v->node, IMP_TIME_MAJOR);
    if (na == 1 && v->layout == IMP_RNN_Y_LAST && (axes[0] == 0 || axes[0] == -3)) {
        int id = cb_graph_last_step(&im->m->graph, v->node);
        return id < 0 ? CB_ERR_SHAPE : bind(im, n, 0, id, IMP_PLAIN);
    }
    if (v->layout == IMP_PLAIN) return plain_squeeze(im, n, v, 1);
    return imp_unsupported(im, n, "only size-1 axes of a tensor other than the batch, or the direction axis of a "
                           "recurrent layer's Y or Y_h, can be squeezed");
}

/* Squeeze (remove) or Unsqueeze (insert) size-1 axes of a plain tensor,
 * the batch axis kept: a view with new dims. */
static cb_status plain_squeeze(importer *im, const Onnx__NodeProto *n, value *v, int squeeze)
{
    int64_t axes[CB_MAX_DIMS];
    int na = imp_axes(im, n, axes, CB_MAX_DIMS);
    const cb_node *x = &im->m->graph.nodes[v->node];
    if (na < 0) return imp_unsupported(im, n, "axes must be constant int64 values");
    if (na == 0) return imp_unsupported(im, n, squeeze ? "without axes (every size-1 axis, the batch's too when it is "
                                        "1) is not implemented: give the axes" : "axes are required");
    const int rank = x->ndim + 1 + (squeeze ? 0 : na); /* with the batch; of the output for Unsqueeze */
    if (rank > CB_MAX_DIMS + 1 || (squeeze && na > x->ndim)) return imp_unsupported(im, n, "too many axes");
    char mark[CB_MAX_DIMS + 1] = {0};
    for (int k = 0; k < na; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
        if (a < 0 || a >= rank || mark[a]) return imp_unsupported(im, n, "an axis is out of range or given twice");
        if (a == 0) return imp_unsupported(im, n, "the batch axis (0) cannot be squeezed or unsqueezed");
        if (squeeze && x->dims[a - 1] != 1) return imp_unsupported(im, n, "a squeezed axis is not of size 1");
        mark[a] = 1;
    }
    int64_t dims[CB_MAX_DIMS];
    int nd = 0;
    for (int a = 1, src = 0; a < rank; a++) {
        if (squeeze) {
            if (!mark[a]) dims[nd++] = x->dims[a - 1];
        } else {
            dims[nd++] = mark[a] ? 1 : x->dims[src++];
        }
    }
    if (nd < 1) return imp_unsupported(im, n, "a tensor of the batch only ([N]) is not implemented");
    int id = cb_graph_reshape(&im->m->graph, v->node, nd, dims);
    return id < 0 ? CB_ERR_SHAPE : bind(im, n, 0, id, IMP_PLAIN);
}

/* Exporters build the zero initial state of a recurrent layer from the
 * input's shape: Shape -> Gather(batch) -> Unsqueeze -> Concat ->
 * ConstantOfShape(0). Such values are tracked symbolically; the layer
 * accepts the zeros, nothing else may read them. */
cb_status imp_shape_op(importer *im, const Onnx__NodeProto *n)
{
    const char *t = n->op_type;
    value *x = computed(im, n, 0);
    if (strcmp(t, "Shape") == 0) {
        if (!x || x->layout != IMP_PLAIN) return imp_unsupported(im, n, "only the shape of a computed tensor");
        int64_t b, e, rank = im->m->graph.nodes[x->node].ndim + 1;
        imp_shape_range(n, rank, &b, &e);
        if (b != 0 || e != rank) return imp_unsupported(im, n, "start and end other than the whole shape");
        return bind(im, n, 0, x->node, IMP_SHAPE_EXPR);
    }
    if (strcmp(t, "Unsqueeze") == 0) {
        if (x && x->layout == IMP_PLAIN) return plain_squeeze(im, n, x, 0);
        if (x && x->layout == IMP_CHANNEL) return imp_channel_unsqueeze(im, n, x);
        if (!x || x->layout != IMP_SHAPE_EXPR) return imp_unsupported(im, n, "only shape expressions are unsqueezed");
        return bind(im, n, 0, x->node, IMP_SHAPE_EXPR);
    }
    if (strcmp(t, "ConstantOfShape") == 0) {
        const Onnx__AttributeProto *a = imp_attr(n, "value");
        cb_tensor v = {0};
        int zero = 1;
        if (a && a->t) {
            cb_status s = cb_onnx_tensor_to_cb(a->t, im->what, &v);
            if (s != CB_OK) return s;
            for (int64_t k = 0; k < cb_tensor_numel(&v); k++)
                for (size_t b = 0; b < cb_dtype_size(v.dtype); b++) zero &= ((const unsigned char *)v.data)[k * cb_dtype_size(v.dtype) + b] == 0;
            cb_tensor_free(&v);
        }
        if (!x || x->layout != IMP_SHAPE_EXPR || !zero)
            return imp_unsupported(im, n, "only zeros over a shape expression (an initial state) are implemented");
        return bind(im, n, 0, x->node, IMP_ZEROS);
    }
    /* Concat: shape expressions and constants, at least one expression */
    int node = -1;
    for (size_t i = 0; i < n->n_input; i++) {
        value *v = imp_lookup(im, n->input[i]);
        if (!v || (v->node >= 0 && v->layout != IMP_SHAPE_EXPR))
            return imp_unsupported(im, n, "only shape expressions and constants are concatenated");
        if (v->node >= 0) node = v->node;
    }
    if (node < 0) return imp_unsupported(im, n, "concatenating constants only is not implemented");
    return bind(im, n, 0, node, IMP_SHAPE_EXPR);
}

cb_status imp_gather(importer *im, const Onnx__NodeProto *n)
{
    if (n->n_input != 2) return imp_unsupported(im, n, "needs data and indices");
    value *data = imp_lookup(im, n->input[0]);
    if (data && data->node >= 0 && data->layout == IMP_SHAPE_EXPR) {
        value *idx = imp_lookup(im, n->input[1]);
        if (!idx || idx->node >= 0) return imp_unsupported(im, n, "a shape expression needs a constant index");
        return bind(im, n, 0, data->node, IMP_SHAPE_EXPR);
    }
    int64_t axis = imp_attr_int(n, "axis", 0);
    cb_graph *g = &im->m->graph;
    if (data && data->node < 0) { /* an embedding: rows of a table by token id */
        int ids, w;
        cb_status s = imp_activation(im, n, 1, &ids);
        if (s != CB_OK) return s;
        const cb_tensor *t = &data->constant;
        if (axis != 0 || t->dtype != CB_F32 || t->ndim != 2)
            return imp_unsupported(im, n, "an embedding needs a 2-D float table gathered along axis 0");
        if ((s = imp_param(im, n->input[0], 2, t->shape, t->data, &w)) != CB_OK) return s;
        int id = cb_graph_embedding_with(g, n->name && n->name[0] ? n->name : n->output[0], ids, w);
        return id < 0 ? CB_ERR_SHAPE : bind(im, n, 0, id, IMP_PLAIN);
    }
    int x, handled;
    cb_status s = imp_activation(im, n, 0, &x);
    if (s != CB_OK || (s = imp_channel_gather(im, n, data, &handled)) != CB_OK || handled) return s;
    const cb_tensor *idx;
    if ((s = imp_constant(im, n, 1, &idx)) != CB_OK) return s;
    const cb_node *xn = &g->nodes[x];
    int64_t steps = xn->ndim == 2 ? xn->dims[0] : 0, at = 0;
    if (idx && idx->dtype == CB_I64 && idx->ndim == 0) at = ((const int64_t *)idx->data)[0];
    if ((axis == 1 || axis == -2) && steps && idx && idx->dtype == CB_I64 && idx->ndim == 0 &&
        (at == -1 || at == steps - 1)) {
        int id = cb_graph_last_step(g, x);
        return id < 0 ? CB_ERR_SHAPE : bind(im, n, 0, id, IMP_PLAIN);
    }
    return imp_unsupported(im, n, "only embeddings, the last time step (axis 1, scalar index -1 or T-1) and one "
                           "channel of [N,C,H,W] (axis 1, an index of one value) are implemented");
}

/* A constant input that must be absent or all zeros (initial states). */
static cb_status zero_or_absent(importer *im, const Onnx__NodeProto *n, size_t i, const char *what)
{
    value *v = i < n->n_input && n->input[i][0] ? imp_lookup(im, n->input[i]) : NULL;
    if (v && v->node >= 0 && v->layout == IMP_ZEROS) return CB_OK;
    const cb_tensor *t;
    cb_status s = imp_constant(im, n, i, &t);
    if (s != CB_OK) return s;
    if (!t) return CB_OK;
    for (int64_t k = 0; t->dtype == CB_F32 && k < cb_tensor_numel(t); k++)
        if (((const float *)t->data)[k] != 0.0f) return imp_unsupported(im, n, what);
    return t->dtype == CB_F32 ? CB_OK : imp_unsupported(im, n, what);
}

/* Copies a [1, G*H, cols] ONNX block tensor into PyTorch's gate order. */
static void gates_from_onnx(const float *src, int gates, size_t block, float *dst)
{
    /* PyTorch block k comes from ONNX block map[k]: LSTM i,f,g,o <- i,o,f,c;
     * GRU r,z,n <- z,r,h. */
    static const int lstm[4] = {0, 2, 3, 1}, gru[3] = {1, 0, 2};
    const int *map = gates == 4 ? lstm : gru;
    for (int k = 0; k < gates; k++) memcpy(dst + (size_t)k * block, src + (size_t)map[k] * block, block * sizeof *dst);
}

static cb_status check_attrs(importer *im, const Onnx__NodeProto *n, int lstm)
{
    char buf[32];
    if (strcmp(imp_attr_str(n, "direction", "forward", buf, sizeof buf), "forward") != 0)
        return imp_unsupported(im, n, "only direction 'forward' is implemented");
    if (imp_attr(n, "clip")) return imp_unsupported(im, n, "clip is not implemented");
    if (lstm && imp_attr_int(n, "input_forget", 0)) return imp_unsupported(im, n, "input_forget is not implemented");
    const Onnx__AttributeProto *a = imp_attr(n, "activations");
    static const char *const dflt[3] = {"Sigmoid", "Tanh", "Tanh"};
    if (a) {
        if (a->n_strings != (size_t)(lstm ? 3 : 2)) return imp_unsupported(im, n, "only the default activations are implemented");
        for (size_t k = 0; k < a->n_strings; k++)
            if (a->strings[k].len != strlen(dflt[k]) || memcmp(a->strings[k].data, dflt[k], a->strings[k].len))
                return imp_unsupported(im, n, "only the default activations are implemented");
    }
    if (imp_attr(n, "activation_alpha") || imp_attr(n, "activation_beta"))
        return imp_unsupported(im, n, "activation parameters are not implemented");
    return CB_OK;
}

cb_status imp_recurrent(importer *im, const Onnx__NodeProto *n)
{
    const int lstm = n->op_type[0] == 'L', gates = lstm ? 4 : 3;
    cb_graph *g = &im->m->graph;
    value *xv = computed(im, n, 0);
    if (imp_attr_int(n, "layout", 0) != 0) return imp_unsupported(im, n, "only layout 0 (time major) is implemented");
    if (!xv || xv->layout != IMP_TIME_MAJOR)
        return imp_unsupported(im, n, "X must be a batch-first sequence transposed to time major");
    cb_status s = check_attrs(im, n, lstm);
    if (s != CB_OK) return s;
    const cb_tensor *w, *r, *b;
    if ((s = imp_constant(im, n, 1, &w)) != CB_OK || (s = imp_constant(im, n, 2, &r)) != CB_OK ||
        (s = imp_constant(im, n, 3, &b)) != CB_OK)
        return s;
    if (n->n_input > 4 && n->input[4][0]) return imp_unsupported(im, n, "sequence_lens is not implemented");
    if ((s = zero_or_absent(im, n, 5, "initial_h must be absent or zero")) != CB_OK) return s;
    if (lstm && (s = zero_or_absent(im, n, 6, "initial_c must be absent or zero")) != CB_OK) return s;
    if (lstm && n->n_input > 7 && n->input[7][0]) return imp_unsupported(im, n, "peepholes are not implemented");
    const int64_t d = g->nodes[xv->node].dims[1];
    const int64_t h = r && r->ndim == 3 ? r->shape[2] : 0;
    if (!w || !r || w->dtype != CB_F32 || r->dtype != CB_F32 || w->ndim != 3 || w->shape[0] != 1 ||
        w->shape[1] != gates * h || w->shape[2] != d || r->shape[0] != 1 || r->shape[1] != gates * h || h < 1 ||
        (b && (b->dtype != CB_F32 || cb_tensor_numel(b) != 2 * gates * h)))
        return imp_unsupported(im, n, "W [1,G*H,D], R [1,G*H,H] and B [1,2*G*H] must be float initializers that fit X");
    if (imp_attr_int(n, "hidden_size", h) != h) return imp_unsupported(im, n, "hidden_size disagrees with R");
    const char *base = n->name && n->name[0] ? n->name : n->output[0];
    static const char *const suffix[4] = {"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"};
    const int64_t dims[4][2] = {{gates * h, d}, {gates * h, h}, {gates * h, 0}, {gates * h, 0}};
    float *buf = calloc((size_t)(gates * h * (d > h ? d : h)), sizeof *buf);
    if (!buf) return cb_fail(CB_ERR_NOMEM, "out of memory importing %s", im->what);
    int p[4];
    for (int k = 0; s == CB_OK && k < 4; k++) {
        const float *src = k == 0 ? w->data : k == 1 ? r->data : b ? (const float *)b->data + (k - 2) * gates * h : NULL;
        if (src) gates_from_onnx(src, gates, (size_t)(k == 0 ? h * d : k == 1 ? h * h : h), buf);
        else memset(buf, 0, (size_t)(gates * h) * sizeof *buf);
        char name[CB_MAX_NAME + 32];
        snprintf(name, sizeof name, "%.90s.%s", base, suffix[k]);
        s = imp_param(im, name, k < 2 ? 2 : 1, dims[k], buf, &p[k]);
    }
    free(buf);
    if (s != CB_OK) return s;
    int reset_before = !lstm && !imp_attr_int(n, "linear_before_reset", 0);
    int id = cb_graph_recurrent_with(g, lstm ? CB_OP_LSTM : CB_OP_GRU, base, xv->node, p, reset_before);
    if (id < 0) return CB_ERR_SHAPE;
    if ((s = bind(im, n, 0, id, IMP_RNN_Y)) != CB_OK || (s = bind(im, n, 1, id, IMP_RNN_Y_LAST)) != CB_OK) return s;
    return bind(im, n, 2, id, IMP_UNAVAILABLE);
}
