/* ONNX import: an ONNX graph onto crossbind's graph (see onnx.h).
 *
 * Values are tracked by name: an activation is a graph node, a constant (an
 * initializer or a Constant node's output) is a decoded tensor that becomes
 * a parameter when an op consumes it as weights. Nodes are taken in
 * dependency order whatever order the file lists them in, which also
 * detects cycles and references to values nothing defines. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include "crossbind/crossbind.h"
#include "crossbind/formats.h"
#include "crossbind/onnx.h"
#include "../core/file.h"
#include "onnx_util.h"
#include "onnx_import_internal.h"

/* The operators the importer maps: each with the versions of its definition
 * (the `since_version`s of the ONNX schema) in effect at opsets
 * CB_ONNX_OPSET_MIN to CB_ONNX_OPSET_MAX, every one of which was read and
 * is either implemented or refused by the code below (a later version that
 * only adds element types, such as bfloat16 or float8, changes nothing for
 * float32), and what of each operator it implements. The suite checks the
 * versions against the pinned onnx package's schema history. */
static const struct { const char *op, *versions, *notes; } op_table[] = {
    {"Add", "7 13 14", "two computed float tensors of one shape (residual connections); or a constant [N] or [1,N] "
        "added to a MatMul's [batch,N] (its bias, as TensorFlow's Dense: MatMul then BiasAdd); a float constant of "
        "one value per channel ([C,1,1], [1,C,1,1]) or a scalar added to a computed [N,C,H,W] tensor (a depthwise 1x1 "
        "convolution) or to one channel of it (see Gather); no other broadcasting"},
    {"AveragePool", "7 10 11 19 22", "2-D; kernel_shape, strides, pads (smaller than the window) or auto_pad; "
        "count_include_pad 1 (asymmetric pads as an explicit zero border) or 0 (the mean of the input elements in "
        "each window, TensorFlow's SAME); ceil_mode with explicit pads (with count_include_pad 1 only where the last "
        "window stays within the padding); no dilations (opset 19 on)"},
    {"BatchNormalization", "7 9 14 15", "inference over [N,C,H,W] with scale, B, mean and var as initializers; "
        "epsilon, momentum; no training_mode, one output"},
    {"Cast", "6 9 13 19 21 23", "of constants (shape arithmetic), folded at import: to float, double, int32 or int64"},
    {"Clip", "6 11 12 13", "float32; min and max as constant scalars (opset 11 on) or attributes (before); ReLU6 is "
        "Clip(0, 6)"},
    {"Concat", "4 11 13", "computed tensors along axis 1 (the channels), or along the last axis of images in "
        "TensorFlow's [N,H,W,C] (see Transpose), all inputs in one layout; or shape expressions and constants "
        "(building an initial state's shape)"},
    {"Constant", "1 9 11 12 13 19 21 23", "the tensor `value` form (float, double, int32, int64)"},
    {"ConstantOfShape", "9 20 21 23", "value 0 over a shape expression: a zero initial state of LSTM/GRU; any value "
        "over a constant shape (folded at import)"},
    {"Conv", "1 11 22", "2-D, any group (depthwise included), any dilation; weights and bias as initializers; pads "
        "(asymmetric ones as an explicit zero border) or auto_pad"},
    {"Div", "7 13 14", "a computed [N,C,H,W] tensor, or one channel of it (see Gather), divided by a float constant, "
        "not zero, of one value per channel ([C,1,1], [1,C,1,1]) or a scalar; no other quotients"},
    {"Dropout", "7 10 12 13 22", "inference: the identity; no mask output; training_mode must be a constant false"},
    {"Flatten", "1 9 11 13 21 23", "axis 1 (or its negative equivalent): keeps the batch"},
    {"GRU", "7 14 22", "forward, one layer, time-major X (a batch-first value after Transpose [1,0,2]), layout 0; W, "
        "R, B as initializers; linear_before_reset 1 (PyTorch's GRU) or 0 (GRU-rb); default activations; no clip, "
        "sequence_lens; initial_h absent or zero; Y and Y_h outputs"},
    {"Gather", "1 11 13", "rows of a float initializer by the int64 input (an embedding), axis 1 of a [N,T,H] value "
        "at the constant index -1 or T-1 (the last time step), a constant index of a shape expression, or one channel "
        "of [N,C,H,W] (a constant index along axis 1, a scalar or of shape [1]) that only Unsqueeze(1), Mul, Add, Sub "
        "or Div of a scalar constant and a Concat of channels of the same tensor read (a per-channel input "
        "normalisation, such as torchvision's transform_input: one 1x1 convolution)"},
    {"Gemm", "7 9 11 13", "A [batch,K] computed, B and C as initializers; transB, alpha, beta; C of shape [N], [1,N] "
        "or scalar; no transA"},
    {"GlobalAveragePool", "1 22", "over [N,C,H,W]"},
    {"HardSigmoid", "6 22", "float32; alpha, beta"},
    {"HardSwish", "14 22", "float32 (MobileNetV3)"},
    {"Identity", "1 13 14 16 19 21 23", "tensors"},
    {"LSTM", "7 14 22", "forward, one layer, time-major X (a batch-first value after Transpose [1,0,2]), layout 0; W, "
        "R, B as initializers; default activations; no clip, peepholes, input_forget, sequence_lens; "
        "initial_h/initial_c absent or zero; Y and Y_h outputs (not Y_c)"},
    {"MatMul", "1 9 13", "A [batch,K] computed, B [K,N] a float constant: a linear layer (an Add of a constant after "
        "it is its bias); no batched products, no product of two computed tensors"},
    {"MaxPool", "1 8 10 11 12 22", "2-D; kernel_shape, strides, pads (asymmetric ones as a border of -infinity) or "
        "auto_pad; ceil_mode with explicit pads; no dilations or Indices output"},
    {"Mul", "7 13 14", "two computed tensors of one shape (SiLU's x * Sigmoid(x)) or [N,C,H,W] and [N,C,1,1] (a "
        "squeeze-and-excitation gate), either operand first; a computed [N,C,H,W] tensor times a float constant of "
        "one value per channel ([C,1,1], [1,C,1,1]) or a scalar, or one channel of it (see Gather) times a scalar; no "
        "other products"},
    {"Pad", "2 11 13 18 19 21 23", "constant, reflect and edge modes over the height and width of [N,C,H,W]; pads and "
        "value as inputs (opset 11 on) or attributes; the axes input (opset 18 on) as constants; negative pads crop "
        "(constant mode); no wrap mode"},
    {"ReduceMean", "1 11 13 18", "over the height and width of [N,C,H,W] (axes 2 and 3, or -2 and -1, as an attribute "
        "before opset 18 and a constant input from 18 on): global average pooling, keepdims 1 or 0; no other axes"},
    {"Relu", "6 13 14", "float32"},
    {"Reshape", "5 13 14 19 21 23", "a constant int64 shape whose first entry keeps the batch (0, -1 or the fixed "
        "batch size); allowzero only where the shape has no 0"},
    {"Shape", "1 13 15 19 21 23", "the whole shape of a computed tensor, feeding only shape expressions (initial "
        "states); of a constant (folded, with start and end from opset 15 on)"},
    {"Slice", "1 10 11 13", "of constants (shape arithmetic), folded at import: any axes and steps; of a computed "
                            "[N,C,H,W] tensor (or one in TensorFlow's [N,H,W,C], see Transpose), a crop of the height "
                            "and width with constant starts, ends and axes and steps of 1 (Keras' Cropping2D), the "
                            "batch and channels kept whole"},
    {"Sigmoid", "6 13", "float32"},
    {"Softmax", "1 11 13", "along one axis other than the batch (before opset 13: the last), of an image in "
        "TensorFlow's [N,H,W,C] too (see Transpose)"},
    {"Squeeze", "1 11 13 21 23", "given axes of size 1 other than the batch (axis 0), as an attribute (before opset "
        "13) or a constant input; axis 1 of a recurrent layer's Y [T,1,N,H], axis 0 of its Y_h [1,N,H]"},
    {"Sub", "7 13 14", "a computed [N,C,H,W] tensor and a float constant of one value per channel ([C,1,1], "
        "[1,C,1,1]) or a scalar, or one channel of it (see Gather) and a scalar; either operand first; no other "
        "differences"},
    {"Tanh", "6 13", "float32"},
    {"Transpose", "1 13 21 23", "perm [1,0,2] between batch-first and time-major sequences; perm [0,2,3,1] of "
        "[N,C,H,W] and [0,3,1,2] back (TensorFlow's image layout, as tf2onnx writes it): the tensor between is kept "
        "as [N,C,H,W] and read by elementwise operators, constants of one value per channel along the last axis, "
        "Pad, Slice, Concat along the last axis, Softmax, ReduceMean over axes 1 and 2, Flatten of [N,1,1,C]; an [N,H,W,C] graph input read so is taken as "
        "[N,C,H,W] inside and `crossbind run` reads the file's [N,H,W,C]; any perm of a constant (folded)"},
    {"Unsqueeze", "1 11 13 21 23", "new axes of size 1 other than the batch (axis 0) in a computed tensor; or of a "
        "shape expression; of a constant (folded)"},
};
#define N_OPS (sizeof op_table / sizeof op_table[0])

const char *const *cb_onnx_supported_ops(void)
{
    static const char *names[N_OPS + 1];
    for (size_t i = 0; i < N_OPS; i++) names[i] = op_table[i].op;
    return names;
}

const char *cb_onnx_op_notes(const char *op)
{
    for (size_t i = 0; i < N_OPS; i++)
        if (strcmp(op_table[i].op, op) == 0) return op_table[i].notes;
    return NULL;
}

const char *cb_onnx_op_versions(const char *op)
{
    for (size_t i = 0; i < N_OPS; i++)
        if (strcmp(op_table[i].op, op) == 0) return op_table[i].versions;
    return NULL;
}

static int is_float(const cb_tensor *t) { return t->dtype == CB_F32; }

/* ceil_mode (pooling): the output size rounds up, the last window reaching
 * past the end (ONNX's and PyTorch's rule: a window must start inside the
 * input or its leading padding). Returns the padding to add at the end of
 * an axis of `in` values, padded by pb and pe, for that last window. */
static int64_t ceil_extra(int64_t in, int64_t pb, int64_t pe, int64_t k, int64_t s, int64_t d)
{
    const int64_t span = d * (k - 1) + 1, room = in + pb + pe - span;
    if (room < 0) return 0; /* no window fits: the shape check refuses it */
    int64_t out = (room + s - 1) / s + 1;
    if ((out - 1) * s >= in + pb) out--;
    const int64_t need = (out - 1) * s + span - (in + pb + pe);
    return need > 0 ? need : 0;
}

/* The window of a Conv or pooling node over input *x. Padding that is not
 * the same on both sides of an axis (explicit pads, auto_pad SAME with an
 * odd total, ceil_mode's extra end) becomes a Pad node filled with `fill` in
 * front of the window, which then pads nothing: *x is replaced and *padded
 * set. With `pads` given, nothing is inserted: pads[] receives top, left,
 * bottom, right. ceil_counts: a pooling whose count would include
 * ceil_mode's extra end (average pooling counting its padding), refused. */
static cb_status window(importer *im, const Onnx__NodeProto *n, int *x, int kh, int kw, float fill, int ceil_counts,
                        int *padded, cb_window *w, int pads_out[4])
{
    int64_t k[4], s[4], p[8], d[4];
    int nk = imp_attr_ints(n, "kernel_shape", k, 4, 2, 0);
    if (nk == 2 && k[0] == 0) k[0] = kh, k[1] = kw;
    int ns = imp_attr_ints(n, "strides", s, 4, 2, 1), np = imp_attr_ints(n, "pads", p, 8, 4, 0),
        nd = imp_attr_ints(n, "dilations", d, 4, 2, 1);
    if (nk != 2 || ns != 2 || np != 4 || nd != 2)
        return imp_unsupported(im, n, "only 2-D windows (kernel_shape, strides, dilations of 2, pads of 4) are implemented");
    if (kh && (k[0] != kh || k[1] != kw)) return imp_unsupported(im, n, "kernel_shape disagrees with the weights");
    if (k[0] < 1 || k[1] < 1 || s[0] < 1 || s[1] < 1 || d[0] < 1 || d[1] < 1 || k[0] > 4096 || k[1] > 4096 ||
        s[0] > 4096 || s[1] > 4096 || d[0] > 4096 || d[1] > 4096)
        return imp_unsupported(im, n, "kernel, stride or dilation out of range");
    char buf[32];
    const char *ap = imp_attr_str(n, "auto_pad", "NOTSET", buf, sizeof buf);
    const cb_node *xn = &im->m->graph.nodes[*x];
    if (xn->ndim != 3) return imp_unsupported(im, n, "input must be [N,C,H,W]");
    *padded = 0;
    if (strcmp(ap, "VALID") == 0) {
        p[0] = p[1] = p[2] = p[3] = 0;
    } else if (strcmp(ap, "SAME_UPPER") == 0 || strcmp(ap, "SAME_LOWER") == 0) {
        for (int a = 0; a < 2; a++) {
            int64_t in = xn->dims[1 + a], out = (in + s[a] - 1) / s[a];
            int64_t total = (out - 1) * s[a] + d[a] * (k[a] - 1) + 1 - in; /* the dilated window's span */
            if (total < 0) total = 0;
            /* the odd one at the end (SAME_UPPER) or the beginning (SAME_LOWER) */
            p[a] = ap[5] == 'U' ? total / 2 : total - total / 2;
            p[a + 2] = total - p[a];
        }
    } else if (strcmp(ap, "NOTSET") != 0) {
        return imp_unsupported(im, n, "unknown auto_pad");
    }
    for (int a = 0; a < 4; a++)
        if (p[a] < 0 || p[a] > 4096) return imp_unsupported(im, n, "padding out of range");
    if (imp_attr_int(n, "ceil_mode", 0)) {
        if (strcmp(ap, "NOTSET") != 0) return imp_unsupported(im, n, "ceil_mode with auto_pad is not implemented");
        for (int a = 0; a < 2; a++) {
            const int64_t extra = ceil_extra(xn->dims[1 + a], p[a], p[a + 2], k[a], s[a], d[a]);
            if (extra && ceil_counts)
                return imp_unsupported(im, n, "ceil_mode with count_include_pad 1 is not implemented where the "
                                              "last window reaches past the padding");
            p[a + 2] += extra;
        }
    }
    if (pads_out) {
        for (int a = 0; a < 4; a++) pads_out[a] = (int)p[a];
    } else if (p[0] != p[2] || p[1] != p[3]) {
        const int pads[4] = {(int)p[0], (int)p[1], (int)p[2], (int)p[3]};
        if ((*x = cb_graph_pad(&im->m->graph, *x, pads, fill)) < 0) return CB_ERR_SHAPE;
        p[0] = p[1] = p[2] = p[3] = 0;
        *padded = 1;
    }
    *w = (cb_window){(int)k[0], (int)k[1], (int)s[0], (int)s[1], (int)p[0], (int)p[1], (int)d[0], (int)d[1]};
    return CB_OK;
}

static cb_status op_conv(importer *im, const Onnx__NodeProto *n, int *out)
{
    int x, wi, bi = -1;
    const cb_tensor *w, *b;
    cb_status s;
    if ((s = imp_activation(im, n, 0, &x)) != CB_OK || (s = imp_constant(im, n, 1, &w)) != CB_OK ||
        (s = imp_constant(im, n, 2, &b)) != CB_OK)
        return s;
    if (!w || !is_float(w) || w->ndim != 4) return imp_unsupported(im, n, "only 2-D convolution with float weights [OC,C,KH,KW] is implemented");
    const int64_t groups = imp_attr_int(n, "group", 1);
    if (groups < 1 || groups > (1 << 20)) return imp_unsupported(im, n, "group must be a positive count");
    cb_window win;
    int padded;
    if ((s = window(im, n, &x, (int)w->shape[2], (int)w->shape[3], 0.0f, 0, &padded, &win, NULL)) != CB_OK) return s;
    if ((s = imp_param(im, n->input[1], 4, w->shape, w->data, &wi)) != CB_OK) return s;
    if (b) {
        if (!is_float(b) || cb_tensor_numel(b) != w->shape[0]) return imp_unsupported(im, n, "bias does not match the output channels");
        int64_t bd[1] = {w->shape[0]};
        if ((s = imp_param(im, n->input[2], 1, bd, b->data, &bi)) != CB_OK) return s;
    }
    *out = cb_graph_conv2d_grouped(&im->m->graph, n->name && n->name[0] ? n->name : n->output[0], x, wi, bi, &win,
                                   (int)groups);
    return *out < 0 ? CB_ERR_SHAPE : CB_OK;
}

/* Whether input i of n is a computed tensor in the plain layout (a Concat
 * of such is the graph's; of shape expressions, imp_shape_op's). */
static int computed_plain(importer *im, const Onnx__NodeProto *n, size_t i)
{
    const value *v = i < n->n_input && n->input[i][0] ? imp_lookup(im, n->input[i]) : NULL;
    return v && v->node >= 0 && (v->layout == IMP_PLAIN || (v->layout == IMP_NHWC && im->as_stored));
}

/* Whether input i is a computed tensor in crossbind's layout or in
 * TensorFlow's image layout. */
static int computed_image_or_plain(importer *im, const Onnx__NodeProto *n, size_t i)
{
    const value *v = i < n->n_input && n->input[i][0] ? imp_lookup(im, n->input[i]) : NULL;
    return v && v->node >= 0 && (v->layout == IMP_PLAIN || v->layout == IMP_NHWC);
}

/* Concat of computed tensors: along the channels (axis 1, or -3 of 4-D;
 * of images in TensorFlow's layout, the last axis). */
static cb_status op_concat(importer *im, const Onnx__NodeProto *n, int *out, int *nhwc)
{
    int ids[CB_MAX_INPUTS * 64];
    if (n->n_input < 1 || n->n_input > sizeof ids / sizeof ids[0]) return imp_unsupported(im, n, "too many inputs");
    int64_t axis = imp_attr_int(n, "axis", 1);
    for (size_t i = 0; i < n->n_input; i++) {
        int in_nhwc;
        cb_status s = imp_activation_nhwc(im, n, i, &ids[i], &in_nhwc);
        if (s != CB_OK) return s;
        if (i > 0 && in_nhwc != *nhwc)
            return imp_unsupported(im, n, "it mixes a tensor in TensorFlow's layout [N,H,W,C] with one in crossbind's "
                                          "[N,C,H,W]; only operands in one layout are implemented");
        *nhwc = in_nhwc;
    }
    const int ndim = im->m->graph.nodes[ids[0]].ndim + 1; /* with the batch */
    if (*nhwc) { /* the file's [N,H,W,C] axis to crossbind's */
        if (axis < 0) axis += 4;
        imp_nhwc_axes(&axis, 1);
    }
    if (axis != 1 && axis != 1 - ndim)
        return imp_unsupported(im, n, *nhwc ? "only along the channels (the last axis of [N,H,W,C])"
                                            : "only along axis 1 (the channels)");
    if (n->n_input == 1) { /* a concatenation of one is that tensor */
        *out = ids[0];
        return CB_OK;
    }
    *out = cb_graph_concat(&im->m->graph, (int)n->n_input, ids);
    return *out < 0 ? imp_unsupported(im, n, "its inputs differ in a dimension other than the channels") : CB_OK;
}

/* (onnx_import_internal.h) */
cb_status imp_norm_axes(importer *im, const Onnx__NodeProto *n, int64_t *axes, int64_t na)
{
    for (int64_t k = 0; k < na; k++) {
        if (axes[k] < -4 || axes[k] > 3) return imp_unsupported(im, n, "an axis outside [N,C,H,W]");
        if (axes[k] < 0) axes[k] += 4;
        for (int64_t j = 0; j < k; j++)
            if (axes[j] == axes[k]) return imp_unsupported(im, n, "an axis named twice");
    }
    return CB_OK;
}

/* The begin and end amounts of a Pad (opset 11 on) for the 4 axes of
 * [N,C,H,W], p[0..3] then p[4..7]: the pads input for every axis, or from
 * opset 18 on for those its axes input names (the others get none). */
static cb_status pad_amounts(importer *im, const Onnx__NodeProto *n, const cb_tensor *pt, int64_t p[8])
{
    int64_t axes[4] = {0, 1, 2, 3};
    int64_t na = 4;
    const cb_tensor *at = NULL;
    cb_status s = n->n_input > 3 ? imp_constant(im, n, 3, &at) : CB_OK;
    if (s != CB_OK) return s;
    if (n->n_input > 3 && n->input[3][0]) {
        if (im->opset < 18) return imp_unsupported(im, n, "an axes input before opset 18");
        /* int32 axes arrive as int64 (cb_onnx_tensor_to_cb) */
        if (!at || at->dtype != CB_I64 || (na = cb_tensor_numel(at)) < 1 || na > 4)
            return imp_unsupported(im, n, "axes must be 1 to 4 constant integers");
        memcpy(axes, at->data, (size_t)na * sizeof *axes);
        if ((s = imp_norm_axes(im, n, axes, na)) != CB_OK) return s;
    }
    if (!pt || pt->dtype != CB_I64 || cb_tensor_numel(pt) != 2 * na)
        return imp_unsupported(im, n, "pads must be constant int64 values, two per padded axis");
    const int64_t *v = pt->data;
    for (int k = 0; k < 8; k++) p[k] = 0;
    for (int64_t k = 0; k < na; k++) p[axes[k]] = v[k], p[axes[k] + 4] = v[k + na];
    return CB_OK;
}

/* Mul of two computed tensors: of one shape, or a [N,C,H,W] tensor and a
 * [N,C,1,1] gate in either order (the gate goes second). */
static cb_status op_mul(importer *im, const Onnx__NodeProto *n, int *out)
{
    int a, b;
    cb_status s;
    if ((s = imp_activation(im, n, 0, &a)) != CB_OK || (s = imp_activation(im, n, 1, &b)) != CB_OK) return s;
    const cb_graph *g = &im->m->graph;
    if (cb_node_numel(&g->nodes[a]) < cb_node_numel(&g->nodes[b])) {
        const int t = a;
        a = b, b = t;
    }
    *out = cb_graph_mul(&im->m->graph, a, b);
    return *out < 0 ? imp_unsupported(im, n, "its inputs are neither of one shape nor [N,C,H,W] and [N,C,1,1] "
                                             "(no other broadcasting is implemented)")
                    : CB_OK;
}

/* Pad of the height and width of [N,C,H,W] (constant, reflect or edge
 * mode): pads and the value as inputs (opset 11 on) or attributes (before).
 * Negative pads crop (constant mode). */
static cb_status op_pad(importer *im, const Onnx__NodeProto *n, int *out, int *nhwc)
{
    int x;
    cb_status s = imp_activation_nhwc(im, n, 0, &x, nhwc);
    if (s != CB_OK) return s;
    char buf[32];
    const char *mode_name = imp_attr_str(n, "mode", "constant", buf, sizeof buf);
    cb_pad_mode mode;
    if (!strcmp(mode_name, "constant")) mode = CB_PAD_CONSTANT;
    else if (!strcmp(mode_name, "reflect")) mode = CB_PAD_REFLECT;
    else if (!strcmp(mode_name, "edge")) mode = CB_PAD_EDGE;
    else return imp_unsupported(im, n, "only modes constant, reflect and edge are implemented");
    int64_t p[8];
    float fill = 0.0f;
    if (im->opset >= 11) {
        const cb_tensor *pt = NULL, *vt = NULL;
        if ((s = imp_constant(im, n, 1, &pt)) != CB_OK || (s = imp_constant(im, n, 2, &vt)) != CB_OK) return s;
        if ((s = pad_amounts(im, n, pt, p)) != CB_OK) return s;
        if (vt) {
            if (!is_float(vt) || cb_tensor_numel(vt) != 1) return imp_unsupported(im, n, "the value must be a float scalar");
            fill = ((const float *)vt->data)[0];
        }
    } else {
        if (imp_attr_ints(n, "pads", p, 8, 0, 0) != 8) return imp_unsupported(im, n, "pads must hold 8 values");
        fill = imp_attr_float(n, "value", 0.0f);
    }
    if (im->m->graph.nodes[x].ndim != 3) return imp_unsupported(im, n, "only [N,C,H,W] inputs are padded");
    if (*nhwc) { /* the file's [N,H,W,C] order, begins then ends, to [N,C,H,W]'s */
        const int64_t q[8] = {p[0], p[3], p[1], p[2], p[4], p[7], p[5], p[6]};
        memcpy(p, q, sizeof q);
    }
    if (p[0] || p[1] || p[4] || p[5]) return imp_unsupported(im, n, "only the height and width are padded");
    for (int k = 0; k < 8; k++) {
        if (p[k] < -4096 || p[k] > 4096) return imp_unsupported(im, n, "pads beyond 4096 are not implemented");
        if (p[k] < 0 && mode != CB_PAD_CONSTANT)
            return imp_unsupported(im, n, "negative (cropping) pads are implemented in constant mode only");
    }
    const int pads[4] = {(int)p[2], (int)p[3], (int)p[6], (int)p[7]};
    *out = cb_graph_pad_mode(&im->m->graph, x, pads, mode, fill);
    return *out < 0 ? CB_ERR_SHAPE : CB_OK;
}

/* Softmax along one axis (opset 13 on; before, over every axis from
 * `axis` on, which is the same where that is the last axis). */
static cb_status op_softmax(importer *im, const Onnx__NodeProto *n, int *out, int *nhwc)
{
    int x;
    cb_status s = imp_activation_nhwc(im, n, 0, &x, nhwc);
    if (s != CB_OK) return s;
    const int nd = im->m->graph.nodes[x].ndim + 1; /* with the batch */
    int64_t axis = imp_attr_int(n, "axis", im->opset >= 13 ? -1 : 1);
    if (axis < 0) axis += nd;
    if (axis < 1 || axis >= nd) return imp_unsupported(im, n, "softmax over the batch axis is not implemented");
    if (im->opset < 13 && axis != nd - 1)
        return imp_unsupported(im, n, "before opset 13, only over the last axis (where both definitions agree)");
    if (*nhwc) imp_nhwc_axes(&axis, 1); /* the file's [N,H,W,C] axis to crossbind's */
    *out = cb_graph_softmax(&im->m->graph, x, (int)axis - 1);
    return *out < 0 ? CB_ERR_SHAPE : CB_OK;
}

/* Clip: the bounds as optional constant inputs (opset 11 on), or as the
 * attributes min and max (before). Either may be absent: unbounded. */
static cb_status op_clip(importer *im, const Onnx__NodeProto *n, int *out)
{
    int x;
    cb_status s = imp_activation(im, n, 0, &x);
    if (s != CB_OK) return s;
    float bound[2] = {-INFINITY, INFINITY};
    for (int k = 0; k < 2; k++) {
        const cb_tensor *t = NULL;
        if ((s = imp_constant(im, n, (size_t)k + 1, &t)) != CB_OK) return s;
        if (t && (!is_float(t) || cb_tensor_numel(t) != 1)) return imp_unsupported(im, n, "min and max must be float scalars");
        if (t) bound[k] = ((const float *)t->data)[0];
        else bound[k] = imp_attr_float(n, k ? "max" : "min", bound[k]);
    }
    if (bound[0] != bound[0] || bound[1] != bound[1] || bound[0] > bound[1])
        return imp_unsupported(im, n, "min must not exceed max (and neither may be NaN)");
    *out = cb_graph_clip(&im->m->graph, x, bound[0], bound[1]);
    return *out < 0 ? CB_ERR_SHAPE : CB_OK;
}

static cb_status op_pool(importer *im, const Onnx__NodeProto *n, cb_op op, int *out)
{
    int x;
    cb_status s = imp_activation(im, n, 0, &x);
    if (s != CB_OK) return s;
    if (n->n_output > 1 && n->output[1][0]) return imp_unsupported(im, n, "the Indices output is not implemented");
    if (imp_attr_int(n, "storage_order", 0)) return imp_unsupported(im, n, "storage_order 1 is not implemented");
    cb_window win;
    int padded, pads[4];
    /* Average pooling that leaves the padding out of its count (ONNX's
     * default, TensorFlow's SAME) is its own kind of node, which takes
     * asymmetric padding itself. */
    if (op == CB_OP_AVGPOOL2D && !imp_attr_int(n, "count_include_pad", 0)) {
        if ((s = window(im, n, &x, 0, 0, 0.0f, 0, &padded, &win, pads)) != CB_OK) return s;
        if (pads[0] || pads[1] || pads[2] || pads[3]) {
            if (pads[0] >= win.kh || pads[2] >= win.kh || pads[1] >= win.kw || pads[3] >= win.kw)
                return imp_unsupported(im, n, "padding as large as the window (a window of padding only) is not implemented");
            *out = cb_graph_avgpool2d_exclude_pad(&im->m->graph, x, &win, pads);
            return *out < 0 ? CB_ERR_SHAPE : CB_OK;
        }
    }
    /* Maximum pooling ignores padding, as a border of -infinity does. */
    else if ((s = window(im, n, &x, 0, 0, op == CB_OP_MAXPOOL2D ? -INFINITY : 0.0f, op == CB_OP_AVGPOOL2D, &padded,
                         &win, NULL)) != CB_OK)
        return s;
    *out = cb_graph_pool2d_with(&im->m->graph, op, x, &win);
    return *out < 0 ? CB_ERR_SHAPE : CB_OK;
}

/* A linear layer x W^T + b from ONNX's B ([K,N], or [N,K] with trans_b)
 * times alpha and an optional C ([N], [1,N] or a scalar) times beta. */
static cb_status make_linear(importer *im, const Onnx__NodeProto *n, const char *name, int x, const char *w_name,
                             const cb_tensor *w, int trans_b, float alpha, const char *c_name, const cb_tensor *c,
                             float beta, int *out)
{
    int wi, bi = -1;
    cb_status s;
    if (im->m->graph.nodes[x].ndim != 1) return imp_unsupported(im, n, "A must be 2-D [batch, K]");
    if (!w || !is_float(w) || w->ndim != 2) return imp_unsupported(im, n, "B must be a 2-D float initializer");
    int64_t nout = trans_b ? w->shape[0] : w->shape[1], k = trans_b ? w->shape[1] : w->shape[0];
    if (k != im->m->graph.nodes[x].dims[0]) return imp_unsupported(im, n, "B's K does not match A's columns");
    /* crossbind's linear layer keeps weights as [N,K]; alpha is folded in. */
    float *wt = malloc((size_t)(nout * k > 0 ? nout * k : 1) * sizeof *wt);
    if (!wt) return cb_fail(CB_ERR_NOMEM, "out of memory importing %s", im->what);
    const float *src = w->data;
    for (int64_t i = 0; i < nout; i++)
        for (int64_t j = 0; j < k; j++) wt[i * k + j] = alpha * (trans_b ? src[i * k + j] : src[j * nout + i]);
    int64_t wd[2] = {nout, k};
    s = imp_param(im, w_name, 2, wd, wt, &wi);
    free(wt);
    if (s != CB_OK) return s;
    if (c) {
        int64_t cn = cb_tensor_numel(c);
        if (!is_float(c) || (cn != nout && cn != 1) || c->ndim > 2 || (c->ndim == 2 && c->shape[0] != 1))
            return imp_unsupported(im, n, "C (the bias) must be a float constant of shape [N], [1,N] or a scalar");
        float *bias = malloc((size_t)(nout ? nout : 1) * sizeof *bias);
        if (!bias) return cb_fail(CB_ERR_NOMEM, "out of memory importing %s", im->what);
        for (int64_t i = 0; i < nout; i++) bias[i] = beta * ((const float *)c->data)[cn == 1 ? 0 : i];
        int64_t bd[1] = {nout};
        s = imp_param(im, c_name, 1, bd, bias, &bi);
        free(bias);
        if (s != CB_OK) return s;
    }
    *out = cb_graph_linear_with(&im->m->graph, name, x, wi, bi);
    return *out < 0 ? CB_ERR_SHAPE : CB_OK;
}

static cb_status op_gemm(importer *im, const Onnx__NodeProto *n, int *out)
{
    int x;
    const cb_tensor *w, *c;
    cb_status s;
    if ((s = imp_activation(im, n, 0, &x)) != CB_OK || (s = imp_constant(im, n, 1, &w)) != CB_OK ||
        (s = imp_constant(im, n, 2, &c)) != CB_OK)
        return s;
    if (!w) return imp_unsupported(im, n, "needs B (the weights) as its second input");
    if (imp_attr_int(n, "transA", 0)) return imp_unsupported(im, n, "transA is not implemented (the batch must be A's rows)");
    return make_linear(im, n, n->name && n->name[0] ? n->name : n->output[0], x, n->input[1], w,
                       (int)imp_attr_int(n, "transB", 0), imp_attr_float(n, "alpha", 1.0f), c ? n->input[2] : NULL, c,
                       imp_attr_float(n, "beta", 1.0f), out);
}

/* MatMul of a computed [batch, K] and a constant [K, N]: a linear layer,
 * made when a consumer reads it (imp_materialise), so that an Add of a
 * constant [N] right after it (TensorFlow's Dense: MatMul then BiasAdd)
 * becomes its bias. Checked here, so that errors name the MatMul. */
static cb_status op_matmul(importer *im, const Onnx__NodeProto *n)
{
    int x;
    const cb_tensor *w;
    value *b = n->n_input > 1 && n->input[1][0] ? imp_lookup(im, n->input[1]) : NULL;
    if (b && b->node >= 0) return imp_unsupported(im, n, "a product of two computed tensors is not implemented "
                                                  "(B must be a constant)");
    cb_status s = imp_activation(im, n, 0, &x);
    if (s == CB_OK) s = imp_constant(im, n, 1, &w);
    if (s != CB_OK) return s;
    if (im->m->graph.nodes[x].ndim != 1)
        return imp_unsupported(im, n, "only A of 2 dimensions [batch, K] is implemented (no batched products)");
    if (!w || !is_float(w) || w->ndim != 2) return imp_unsupported(im, n, "B must be a 2-D float constant [K, N]");
    if (w->shape[0] != im->m->graph.nodes[x].dims[0]) return imp_unsupported(im, n, "B's K does not match A's columns");
    value *v = imp_define(im, n->output[0]);
    if (!v) return CB_ERR_FORMAT;
    v->node = x;
    v->layout = IMP_MATMUL;
    v->matmul = n;
    return CB_OK;
}

cb_status imp_materialise(importer *im, value *v, const char *bias_name, const cb_tensor *bias)
{
    const Onnx__NodeProto *n = v->matmul;
    const cb_tensor *w;
    int id = -1;
    /* The layer's name, distinct when two readers make two layers (with and without the bias). */
    char name[CB_MAX_NAME];
    snprintf(name, sizeof name, "%.100s", n->name && n->name[0] ? n->name : n->output[0]);
    for (int k = 1; cb_graph_find(&im->m->graph, name) >= 0; k++)
        snprintf(name, sizeof name, "%.100s#%d", n->name && n->name[0] ? n->name : n->output[0], k);
    cb_status s = imp_constant(im, n, 1, &w);
    if (s == CB_OK) s = make_linear(im, n, name, v->node, n->input[1], w, 0, 1.0f, bias_name, bias, 1.0f, &id);
    if (s != CB_OK) return s;
    v->node = id;
    v->layout = IMP_PLAIN;
    return CB_OK;
}

/* Whether an operand of n is a MatMul not yet made (IMP_MATMUL). */
static int matmul_operand(importer *im, const Onnx__NodeProto *n)
{
    for (size_t i = 0; i < n->n_input; i++) {
        const value *v = n->input[i][0] ? imp_lookup(im, n->input[i]) : NULL;
        if (v && v->node >= 0 && v->layout == IMP_MATMUL) return 1;
    }
    return 0;
}

/* Add of a pending MatMul (IMP_MATMUL) and a constant, the only Add the
 * dispatch sends here: the MatMul's linear layer with the constant as its
 * bias. (Other Adds of a constant are per-channel maps: onnx_import_channel.c.) */
static cb_status op_add_constant(importer *im, const Onnx__NodeProto *n, int *out)
{
    value *a = imp_lookup(im, n->input[0]), *b = imp_lookup(im, n->input[1]);
    int k = a->node >= 0 ? 0 : 1; /* the computed operand */
    value *x = k ? b : a, *c = k ? a : b;
    if (!is_float(&c->constant) || c->constant.ndim > 2 || (c->constant.ndim == 2 && c->constant.shape[0] != 1))
        return imp_unsupported(im, n, "the bias must be a float constant of shape [N] or [1,N]");
    /* a copy of the pending MatMul: other consumers of it still see the product alone */
    value v = *x;
    const cb_tensor *w;
    cb_status s = imp_constant(im, v.matmul, 1, &w);
    if (s != CB_OK) return s;
    if (cb_tensor_numel(&c->constant) != w->shape[1])
        return imp_unsupported(im, n, "the bias must have the MatMul's N values (no general broadcasting)");
    if ((s = imp_materialise(im, &v, n->input[1 - k], &c->constant)) != CB_OK) return s;
    *out = v.node;
    return CB_OK;
}

static cb_status op_batchnorm(importer *im, const Onnx__NodeProto *n, int *out)
{
    int x, ids[4];
    const cb_tensor *t[4];
    cb_status s = imp_activation(im, n, 0, &x);
    if (s != CB_OK) return s;
    if (imp_attr_int(n, "training_mode", 0)) return imp_unsupported(im, n, "training_mode is not implemented");
    if (n->n_output > 1) for (size_t k = 1; k < n->n_output; k++)
        if (n->output[k][0]) return imp_unsupported(im, n, "only the normalised output is implemented");
    if (im->m->graph.nodes[x].ndim != 3) return imp_unsupported(im, n, "only [N,C,H,W] inputs are implemented");
    int64_t c[1] = {im->m->graph.nodes[x].dims[0]};
    for (int k = 0; k < 4; k++) {
        if ((s = imp_constant(im, n, (size_t)k + 1, &t[k])) != CB_OK) return s;
        if (!t[k] || !is_float(t[k]) || cb_tensor_numel(t[k]) != c[0])
            return imp_unsupported(im, n, "scale, B, mean and var must be float initializers of the channel count");
        if ((s = imp_param(im, n->input[k + 1], 1, c, t[k]->data, &ids[k])) != CB_OK) return s;
    }
    im->m->graph.nodes[ids[2]].buffer = im->m->graph.nodes[ids[3]].buffer = 1;
    float eps = imp_attr_float(n, "epsilon", 1e-5f), momentum = 1.0f - imp_attr_float(n, "momentum", 0.9f);
    *out = cb_graph_batchnorm2d_with(&im->m->graph, n->name && n->name[0] ? n->name : n->output[0], x, ids[0],
                                     ids[1], ids[2], ids[3], eps, momentum);
    return *out < 0 ? CB_ERR_SHAPE : CB_OK;
}

static cb_status op_flatten(importer *im, const Onnx__NodeProto *n, int *out)
{
    int x;
    cb_status s = imp_activation(im, n, 0, &x);
    if (s != CB_OK) return s;
    int64_t axis = imp_attr_int(n, "axis", 1), rank = im->m->graph.nodes[x].ndim + 1;
    if (axis < 0) axis += rank;
    if (axis != 1) return imp_unsupported(im, n, "only axis 1 (keep the batch) is implemented");
    *out = cb_graph_unary(&im->m->graph, CB_OP_FLATTEN, x);
    return *out < 0 ? CB_ERR_SHAPE : CB_OK;
}

/* ReduceMean over the height and width of [N,C,H,W]: global average
 * pooling, flattened to [N,C] without keepdims. The axes are an attribute
 * before opset 18 and a constant input from 18 on. */
static cb_status op_reduce_mean(importer *im, const Onnx__NodeProto *n, int *out, int *nhwc)
{
    int x;
    cb_status s = imp_activation_nhwc(im, n, 0, &x, nhwc);
    if (s != CB_OK) return s;
    if (im->opset < 18 && n->n_input > 1) return imp_unsupported(im, n, "an axes input before opset 18");
    int64_t axes[4];
    const int na = imp_axes(im, n, axes, 4);
    if (im->m->graph.nodes[x].ndim != 3) return imp_unsupported(im, n, "only [N,C,H,W] inputs are averaged");
    if (na == 2 && (s = imp_norm_axes(im, n, axes, na)) == CB_OK && *nhwc) imp_nhwc_axes(axes, na);
    if (na != 2 || s != CB_OK || axes[0] + axes[1] != 5 || axes[0] < 2)
        return imp_unsupported(im, n, "only over the height and width (axes 2 and 3 as constants; 1 and 2 of an "
                                      "image in TensorFlow's layout)");
    if ((*out = cb_graph_global_avgpool(&im->m->graph, x)) < 0) return CB_ERR_SHAPE;
    if (imp_attr_int(n, "keepdims", 1)) return CB_OK; /* [N,C,1,1], or [N,1,1,C] where *nhwc */
    *nhwc = 0;
    *out = cb_graph_unary(&im->m->graph, CB_OP_FLATTEN, *out);
    return *out < 0 ? CB_ERR_SHAPE : CB_OK;
}

/* Reshape to a constant shape whose first entry keeps the batch (0 or -1,
 * or the model's fixed batch size). */
static cb_status op_reshape(importer *im, const Onnx__NodeProto *n, int *out)
{
    int x;
    const cb_tensor *shape;
    cb_status s;
    if ((s = imp_activation(im, n, 0, &x)) != CB_OK || (s = imp_constant(im, n, 1, &shape)) != CB_OK) return s;
    if (!shape || shape->dtype != CB_I64 || shape->ndim != 1 || shape->shape[0] < 1 || shape->shape[0] > CB_MAX_DIMS)
        return imp_unsupported(im, n, "the target shape must be a constant int64 vector");
    const int64_t *t = shape->data;
    /* allowzero (opset 14 on) changes only what a 0 means: with it, an
     * empty dimension, which crossbind does not make. */
    if (imp_attr_int(n, "allowzero", 0))
        for (int64_t i = 0; i < shape->shape[0]; i++)
            if (t[i] == 0) return imp_unsupported(im, n, "a 0 in the target shape with allowzero (an empty dimension)");
    const cb_node *xn = &im->m->graph.nodes[x];
    int64_t fixed = im->m->fixed_batch;
    int minus_first = t[0] == -1;
    if (!(t[0] == 0 || minus_first || (fixed > 0 && t[0] == fixed)))
        return imp_unsupported(im, n, "the first dimension must stay the batch (0, -1 or the batch size)");
    int nd = (int)shape->shape[0] - 1;
    int64_t dims[CB_MAX_DIMS], known = 1, total = cb_node_numel(xn);
    int unknown = -1;
    for (int i = 0; i < nd; i++) {
        int64_t v = t[i + 1];
        if (v == 0) {
            if (i >= xn->ndim) return imp_unsupported(im, n, "a 0 in the target shape has no input dimension to copy");
            v = xn->dims[i];
        }
        if (v == -1) {
            if (unknown >= 0 || minus_first) return imp_unsupported(im, n, "more than one -1 in the target shape");
            unknown = i;
            v = 1;
        } else if (v < 0) {
            return imp_unsupported(im, n, "negative target dimension");
        }
        dims[i] = v;
        known *= v;
    }
    if (minus_first && known != total)
        return imp_unsupported(im, n, "the reshape would move elements across the batch dimension");
    if (unknown >= 0) {
        if (!known || total % known) return imp_unsupported(im, n, "the target shape does not fit the input's size");
        dims[unknown] = total / known;
    }
    *out = cb_graph_reshape(&im->m->graph, x, nd, dims);
    return *out < 0 ? CB_ERR_SHAPE : CB_OK;
}

static cb_status op_constant(importer *im, const Onnx__NodeProto *n)
{
    const Onnx__AttributeProto *a = imp_attr(n, "value");
    if (!a || !a->t || n->n_attribute != 1) return imp_unsupported(im, n, "only the tensor 'value' form is implemented");
    value *v = imp_define(im, n->output[0]);
    if (!v) return CB_ERR_FORMAT;
    return cb_onnx_tensor_to_cb(a->t, im->what, &v->constant);
}

/* The ONNX activations of one input and no attributes that are one op of
 * crossbind's each; CB_OP_COUNT for any other. */
static cb_op unary_op(const char *t)
{
    static const struct { const char *onnx; cb_op op; } unary[] = {
        {"Relu", CB_OP_RELU}, {"Tanh", CB_OP_TANH}, {"Sigmoid", CB_OP_SIGMOID}, {"HardSwish", CB_OP_HARDSWISH}};
    for (size_t k = 0; k < sizeof unary / sizeof *unary; k++)
        if (!strcmp(t, unary[k].onnx)) return unary[k].op;
    return CB_OP_COUNT;
}

/* Converts one node; the result node is bound to its first output. */
static cb_status convert_node(importer *im, const Onnx__NodeProto *n)
{
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
        return imp_unsupported(im, n, "operators outside the default ONNX domain are not implemented");
    if (n->n_output < 1 || !n->output[0][0]) return imp_unsupported(im, n, "node without an output");
    const char *t = n->op_type;
    int id = -1, nhwc = 0;
    cb_status s = CB_OK;
    if (strcmp(t, "Constant") == 0) return op_constant(im, n);
    int folded;
    if ((s = imp_fold(im, n, &folded)) != CB_OK || folded) return s;
    if (strcmp(t, "MatMul") == 0) return op_matmul(im, n);
    const int add = strcmp(t, "Add") == 0 && n->n_input == 2 && n->input[0][0] && n->input[1][0];
    value *va = add ? imp_lookup(im, n->input[0]) : NULL, *vb = add ? imp_lookup(im, n->input[1]) : NULL;
    const int add_constant = va && vb && (va->node < 0 || vb->node < 0);
    /* Mul, Sub, Div: only scale-and-shift maps by constants (onnx_import_channel.c) */
    const int arith = strcmp(t, "Mul") == 0 || strcmp(t, "Sub") == 0 || strcmp(t, "Div") == 0;
    /* A MatMul's linear layer, made for any reader but an Add of its bias. */
    for (size_t i = 0; !add_constant && i < n->n_input; i++) {
        value *v = n->input[i][0] ? imp_lookup(im, n->input[i]) : NULL;
        if (v && v->layout == IMP_MATMUL && (s = imp_materialise(im, v, NULL, NULL)) != CB_OK) return s;
    }
    if (strcmp(t, "Transpose") == 0) return imp_transpose(im, n);
    if (strcmp(t, "Squeeze") == 0) return imp_squeeze(im, n);
    if (strcmp(t, "Gather") == 0) return imp_gather(im, n);
    if (strcmp(t, "LSTM") == 0 || strcmp(t, "GRU") == 0) return imp_recurrent(im, n);
    const int channel_in = imp_reads_layout(im, n, IMP_CHANNEL);
    if (strcmp(t, "Concat") == 0 && channel_in) s = imp_channel_concat(im, n, &id);
    else if ((arith || add_constant) && channel_in) return imp_channel_affine(im, n);
    else if (strcmp(t, "Mul") == 0 && computed_plain(im, n, 0) && computed_plain(im, n, 1)) s = op_mul(im, n, &id);
    else if (arith || (add_constant && !matmul_operand(im, n))) s = imp_channel_broadcast(im, n, &id, &nhwc);
    else if (strcmp(t, "Concat") == 0 && computed_image_or_plain(im, n, 0)) s = op_concat(im, n, &id, &nhwc);
    else if (strcmp(t, "Shape") == 0 || strcmp(t, "Unsqueeze") == 0 || strcmp(t, "Concat") == 0 ||
             strcmp(t, "ConstantOfShape") == 0)
        return imp_shape_op(im, n);
    else if (strcmp(t, "Conv") == 0) s = op_conv(im, n, &id);
    else if (strcmp(t, "MaxPool") == 0) s = op_pool(im, n, CB_OP_MAXPOOL2D, &id);
    else if (strcmp(t, "AveragePool") == 0) s = op_pool(im, n, CB_OP_AVGPOOL2D, &id);
    else if (strcmp(t, "Gemm") == 0) s = op_gemm(im, n, &id);
    else if (strcmp(t, "Flatten") == 0) s = op_flatten(im, n, &id);
    else if (strcmp(t, "ReduceMean") == 0) s = op_reduce_mean(im, n, &id, &nhwc);
    else if (strcmp(t, "BatchNormalization") == 0) s = op_batchnorm(im, n, &id);
    else if (strcmp(t, "Reshape") == 0) s = op_reshape(im, n, &id);
    else if (strcmp(t, "Clip") == 0) s = op_clip(im, n, &id);
    else if (strcmp(t, "Pad") == 0) s = op_pad(im, n, &id, &nhwc);
    else if (strcmp(t, "Slice") == 0) s = imp_slice(im, n, &id, &nhwc);
    else if (strcmp(t, "Softmax") == 0) s = op_softmax(im, n, &id, &nhwc);
    else if (add_constant) s = op_add_constant(im, n, &id);
    else if (strcmp(t, "Add") == 0) {
        int a, b;
        if ((s = imp_activation(im, n, 0, &a)) == CB_OK && (s = imp_activation(im, n, 1, &b)) == CB_OK &&
            (id = cb_graph_add(&im->m->graph, a, b)) < 0)
            s = imp_unsupported(im, n, "its inputs differ in shape (broadcasting is not implemented)");
    } else if (strcmp(t, "GlobalAveragePool") == 0) {
        int x;
        if ((s = imp_activation(im, n, 0, &x)) == CB_OK && (id = cb_graph_global_avgpool(&im->m->graph, x)) < 0)
            s = imp_unsupported(im, n, "its input is not [N,C,H,W]");
    }
    else if (unary_op(t) != CB_OP_COUNT) {
        int x;
        if ((s = imp_activation(im, n, 0, &x)) == CB_OK && (id = cb_graph_unary(&im->m->graph, unary_op(t), x)) < 0)
            s = CB_ERR_SHAPE;
    } else if (strcmp(t, "HardSigmoid") == 0) {
        int x;
        if ((s = imp_activation(im, n, 0, &x)) == CB_OK &&
            (id = cb_graph_hardsigmoid(&im->m->graph, x, imp_attr_float(n, "alpha", 0.2f),
                                       imp_attr_float(n, "beta", 0.5f))) < 0)
            s = imp_unsupported(im, n, "alpha and beta must be finite");
    } else if (strcmp(t, "Identity") == 0 || strcmp(t, "Dropout") == 0) {
        /* Inference: Dropout is the identity; its mask output is not produced. */
        if (n->n_output > 1 && n->output[1][0]) return imp_unsupported(im, n, "the mask output is not implemented");
        if (t[0] == 'D' && n->n_input > 2 && n->input[2][0]) {
            value *tm = imp_lookup(im, n->input[2]);
            if (!tm || tm->node >= 0 || tm->constant.dtype == CB_F32 || cb_tensor_numel(&tm->constant) != 1 ||
                ((const int64_t *)tm->constant.data)[0] != 0)
                return imp_unsupported(im, n, "training_mode must be a constant false");
        }
        s = imp_activation(im, n, 0, &id);
    } else {
        return cb_fail(CB_ERR_UNSUPPORTED, "%s: operator %s (node '%s') is not implemented by crossbind "
                       "(see docs/onnx-ops.md)", im->what, t, n->name ? n->name : "");
    }
    if (s != CB_OK) return s;
    value *v = imp_define(im, n->output[0]);
    if (!v) return CB_ERR_FORMAT;
    v->node = id;
    v->layout = nhwc ? IMP_NHWC : IMP_PLAIN;
    cb_node *gn = &im->m->graph.nodes[id];
    if (gn->op != CB_OP_INPUT && gn->op != CB_OP_CONV2D && gn->op != CB_OP_LINEAR &&
        strlen(n->output[0]) < CB_MAX_NAME)
        snprintf(gn->name, sizeof gn->name, "%s", n->output[0]);
    return CB_OK;
}

/* convert_node, after Keras' hard activations (onnx_import_hard.c), with
 * values in TensorFlow's image layout read as onnx_import_nhwc.c decides. */
static cb_status convert(importer *im, const Onnx__NodeProto *n)
{
    int hard;
    cb_status s = imp_hard_keras(im, n, &hard);
    if (s != CB_OK || hard) return s;
    imp_nhwc_use use = IMP_NHWC_AWARE;
    s = imp_reads_layout(im, n, IMP_NHWC) ? imp_nhwc_plan(im, n, &use) : CB_OK;
    if (s != CB_OK) return s;
    im->as_stored = use != IMP_NHWC_AWARE;
    s = convert_node(im, n);
    im->as_stored = 0;
    value *v = s == CB_OK && use == IMP_NHWC_AS_STORED ? imp_lookup(im, n->output[0]) : NULL;
    if (v && v->node >= 0) v->layout = IMP_NHWC;
    return s;
}

/* Whether `name` is an initializer or a Constant node's output. */
static int constant_name(const Onnx__GraphProto *gp, const char *name)
{
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (gp->initializer[i]->name && strcmp(gp->initializer[i]->name, name) == 0) return 1;
    for (size_t i = 0; i < gp->n_node; i++)
        if (gp->node[i]->op_type && strcmp(gp->node[i]->op_type, "Constant") == 0 && gp->node[i]->n_output == 1 &&
            strcmp(gp->node[i]->output[0], name) == 0)
            return 1;
    return 0;
}

/* Whether image `name` [N,H,W,C] reaches crossbind's layout only through
 * Transpose [0,3,1,2] (TensorFlow's image layout, as tf2onnx writes it),
 * maybe after Add, Sub, Mul or Div by constants (Keras' Rescaling and
 * Normalization layers inside the model): crossbind then holds it as
 * [N,C,H,W] throughout and records the file's layout. Whether each
 * constant has one value per channel is checked when the node is
 * converted. `depth` bounds the chain and *budget the values looked at
 * (each look scans the graph: a hostile file of many readers must not
 * make this quadratic in its size). */
static int nhwc_image(const Onnx__GraphProto *gp, const char *name, int depth, int *budget)
{
    int readers = 0;
    if (depth > 16 || --*budget < 0) return 0;
    for (size_t i = 0; i < gp->n_output; i++)
        if (gp->output[i]->name && strcmp(gp->output[i]->name, name) == 0) return 0;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (size_t k = 0; k < n->n_input; k++) {
            if (strcmp(n->input[k], name) != 0) continue;
            const char *t = n->op_type ? n->op_type : "";
            int64_t perm[8];
            const int to_nchw = strcmp(t, "Transpose") == 0 && k == 0 && imp_attr_ints(n, "perm", perm, 8, 0, 0) == 4 &&
                                perm[0] == 0 && perm[1] == 3 && perm[2] == 1 && perm[3] == 2;
            const int affine = (strcmp(t, "Add") == 0 || strcmp(t, "Sub") == 0 || strcmp(t, "Mul") == 0 ||
                                strcmp(t, "Div") == 0) && n->n_input == 2 && n->n_output == 1 &&
                               strcmp(n->input[0], n->input[1]) != 0 && constant_name(gp, n->input[1 - k]) &&
                               nhwc_image(gp, n->output[0], depth + 1, budget);
            if (!to_nchw && !affine) return 0;
            readers++;
        }
    }
    return readers > 0;
}

static cb_status add_inputs(importer *im)
{
    Onnx__GraphProto *gp = im->gp;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *t = gp->initializer[i];
        if (!t->name || !t->name[0]) return cb_fail(CB_ERR_FORMAT, "%s: initializer without a name", im->what);
        value *v = imp_define(im, t->name);
        if (!v) return CB_ERR_FORMAT;
        const int external = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        cb_status s = external ? cb_onnx_tensor_external(t, im->dir, im->what, &v->constant)
                               : cb_onnx_tensor_to_cb(t, im->what, &v->constant);
        if (s != CB_OK) return s;
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *in = gp->input[i];
        if (!in->name) return cb_fail(CB_ERR_FORMAT, "%s: graph input without a name", im->what);
        if (imp_lookup(im, in->name)) continue; /* an initializer listed as input (IR < 4) */
        const Onnx__TypeProto *tp = in->type;
        if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type->shape)
            return cb_fail(CB_ERR_UNSUPPORTED, "%s: input '%s' is not a tensor with a known shape", im->what, in->name);
        const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
        /* int64 inputs are token ids; crossbind holds them as floats (exact below 2^24) */
        if (tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64)
            return cb_fail(CB_ERR_UNSUPPORTED, "%s: input '%s' is neither float32 nor int64", im->what, in->name);
        size_t nd = tt->shape->n_dim;
        if (nd < 1 || nd > CB_MAX_DIMS)
            return cb_fail(CB_ERR_UNSUPPORTED, "%s: input '%s' has %zu dims (needs a batch dim)", im->what, in->name, nd);
        int64_t dims[CB_MAX_DIMS];
        for (size_t d = 0; d < nd; d++) {
            const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
            int has = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            if (d == 0) {
                if (has && dim->dim_value < 1)
                    return cb_fail(CB_ERR_UNSUPPORTED, "%s: input '%s' has an empty batch", im->what, in->name);
                if (has && im->m->fixed_batch && im->m->fixed_batch != dim->dim_value)
                    return cb_fail(CB_ERR_UNSUPPORTED, "%s: inputs disagree on the batch size", im->what);
                if (has) im->m->fixed_batch = dim->dim_value;
                continue;
            }
            const cb_input_shapes *sh = im->shapes;
            const size_t k = im->m->n_inputs; /* this input's place among the run-time inputs */
            const int given = sh && (int)k < sh->n && (size_t)sh->ndim[k] == nd;
            const int64_t v = has ? dim->dim_value : given ? sh->dims[k][d] : 0;
            if (v < 1 || v > ((int64_t)1 << 30))
                return cb_fail(CB_ERR_UNSUPPORTED, "%s: input '%s' dim %zu is not a fixed positive size (only the "
                               "batch may vary, unless the input given sizes it: crossbind run does)", im->what,
                               in->name, d);
            dims[d - 1] = v;
        }
        if (im->m->n_inputs == CB_MAX_IO) return cb_fail(CB_ERR_UNSUPPORTED, "%s: too many inputs", im->what);
        if (strlen(in->name) >= CB_MAX_NAME) return cb_fail(CB_ERR_UNSUPPORTED, "%s: input name too long", im->what);
        int budget = 256; /* values of the scaling chain looked at, at most */
        const int nhwc = nd == 4 && tt->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
                         nhwc_image(im->gp, in->name, 0, &budget);
        if (nhwc) { /* [H,W,C] -> [C,H,W] */
            int64_t c = dims[2];
            dims[2] = dims[1], dims[1] = dims[0], dims[0] = c;
        }
        int id = cb_graph_input(&im->m->graph, in->name, (int)nd - 1, dims);
        if (id < 0) return CB_ERR_SHAPE;
        im->m->input_nhwc[im->m->n_inputs] = (unsigned char)nhwc;
        im->m->inputs[im->m->n_inputs++] = id;
        value *v = imp_define(im, in->name);
        if (!v) return CB_ERR_FORMAT;
        v->node = id;
        v->layout = nhwc ? IMP_NHWC : IMP_PLAIN;
    }
    if (!im->m->n_inputs) return cb_fail(CB_ERR_UNSUPPORTED, "%s: the graph has no run-time input", im->what);
    return CB_OK;
}

/* Takes nodes in dependency order; fails on cycles and undefined inputs. */
static cb_status convert_nodes(importer *im)
{
    Onnx__GraphProto *gp = im->gp;
    char *done = calloc(gp->n_node ? gp->n_node : 1, 1);
    im->skip = calloc(gp->n_node ? gp->n_node : 1, 1);
    if (!done || !im->skip) {
        free(done);
        free(im->skip);
        im->skip = NULL;
        return cb_fail(CB_ERR_NOMEM, "out of memory importing %s", im->what);
    }
    size_t left = gp->n_node;
    cb_status s = CB_OK;
    while (s == CB_OK && left) {
        int progress = 0;
        for (size_t i = 0; s == CB_OK && i < gp->n_node; i++) {
            if (done[i]) continue;
            if (im->skip[i]) { /* converted with the node it was folded into */
                done[i] = 1, left--, progress = 1;
                continue;
            }
            const Onnx__NodeProto *n = gp->node[i];
            int ready = 1;
            for (size_t k = 0; ready && k < n->n_input; k++) ready = !n->input[k][0] || imp_lookup(im, n->input[k]);
            if (!ready) continue;
            if (!n->op_type) s = cb_fail(CB_ERR_FORMAT, "%s: node %zu has no op_type", im->what, i);
            else s = convert(im, n);
            done[i] = 1;
            left--;
            progress = 1;
        }
        if (s == CB_OK && !progress) {
            for (size_t i = 0; i < gp->n_node; i++) {
                if (done[i]) continue;
                const Onnx__NodeProto *n = gp->node[i];
                for (size_t k = 0; k < n->n_input; k++)
                    if (n->input[k][0] && !imp_lookup(im, n->input[k])) {
                        s = cb_fail(CB_ERR_FORMAT, "%s: the graph has a cycle or uses a value nothing defines: "
                                    "node '%s' (%s) needs '%s'", im->what, n->name ? n->name : "",
                                    n->op_type ? n->op_type : "?", n->input[k]);
                        break;
                    }
                break;
            }
        }
    }
    free(done);
    free(im->skip);
    im->skip = NULL;
    return s;
}

static cb_status add_outputs(importer *im, int with_loss)
{
    Onnx__GraphProto *gp = im->gp;
    cb_model *m = im->m;
    if (gp->n_output < 1) return cb_fail(CB_ERR_FORMAT, "%s: the graph has no output", im->what);
    if (gp->n_output > CB_MAX_IO) return cb_fail(CB_ERR_UNSUPPORTED, "%s: too many outputs", im->what);
    for (size_t i = 0; i < gp->n_output; i++) {
        value *v = gp->output[i]->name ? imp_lookup(im, gp->output[i]->name) : NULL;
        if (v && v->layout == IMP_MATMUL) {
            cb_status s = imp_materialise(im, v, NULL, NULL);
            if (s != CB_OK) return s;
        }
        if (v && v->node >= 0 && v->layout == IMP_NHWC)
            return cb_fail(CB_ERR_UNSUPPORTED, "%s: output '%s' is an image in TensorFlow's layout [N,H,W,C]; "
                           "crossbind writes images only as [N,C,H,W]", im->what, gp->output[i]->name);
        if (!v || v->node < 0 || v->layout != IMP_PLAIN)
            return cb_fail(CB_ERR_UNSUPPORTED, "%s: output '%s' is not computed from the inputs", im->what,
                           gp->output[i]->name ? gp->output[i]->name : "");
        m->outputs[m->n_outputs++] = v->node;
        m->graph.nodes[v->node].pinned = 1;
    }
    m->graph.output = m->outputs[0];
    m->input = m->inputs[0];
    const cb_node *o = &m->graph.nodes[m->graph.output];
    m->classes = o->ndim == 1 ? (int)o->dims[0] : (int)cb_node_numel(o);
    if (!with_loss) return CB_OK;
    int64_t one[1] = {1};
    m->labels = cb_graph_input(&m->graph, "labels", 1, one);
    if (o->ndim != 1) return cb_fail(CB_ERR_SHAPE, "%s: the first output must be [N,K] to evaluate it", im->what);
    int loss = cb_graph_loss(&m->graph, m->classes > 1 ? CB_OP_SOFTMAX_XENT : CB_OP_BCE, m->graph.output, m->labels);
    return loss < 0 ? CB_ERR_SHAPE : CB_OK;
}

/* cb_model.onnx_values: values are defined in node order, so the last
 * plain value naming a node is the furthest along (a MatMul's output and
 * the Add that became its bias name one linear node: the Add's wins). */
static cb_status record_value_names(importer *im)
{
    cb_model *m = im->m;
    if (!(m->onnx_values = calloc((size_t)m->graph.count, sizeof *m->onnx_values)))
        return cb_fail(CB_ERR_NOMEM, "out of memory importing %s", im->what);
    m->n_onnx_values = m->graph.count;
    for (int i = 0; i < im->n_vals; i++) {
        const value *v = &im->vals[i];
        if (v->node < 0 || v->node >= m->graph.count || v->layout != IMP_PLAIN) continue;
        char *copy = strdup(v->name);
        if (!copy) return cb_fail(CB_ERR_NOMEM, "out of memory importing %s", im->what);
        free(m->onnx_values[v->node]);
        m->onnx_values[v->node] = copy;
    }
    return CB_OK;
}

static cb_status import_model(const unsigned char *buf, size_t len, const char *what, const char *dir,
                              const cb_input_shapes *shapes, int with_loss, cb_model **out)
{
    *out = NULL;
    Onnx__ModelProto *mp;
    cb_status s = cb_onnx_unpack(buf, len, what, &mp);
    if (s != CB_OK) return s;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if ((!o->domain || !o->domain[0]) && (o->version < CB_ONNX_OPSET_MIN || o->version > CB_ONNX_OPSET_MAX))
            s = cb_fail(CB_ERR_UNSUPPORTED, "%s: opset %lld is outside the %d-%d this importer reads", what,
                        (long long)o->version, CB_ONNX_OPSET_MIN, CB_ONNX_OPSET_MAX);
    }
    importer im = {.what = what, .gp = mp->graph, .opset = 17, .dir = dir, .shapes = shapes};
    for (size_t i = 0; i < mp->n_opset_import; i++)
        if (!mp->opset_import[i]->domain || !mp->opset_import[i]->domain[0]) im.opset = mp->opset_import[i]->version;
    if (s == CB_OK && !(im.m = calloc(1, sizeof *im.m))) s = cb_fail(CB_ERR_NOMEM, "out of memory importing %s", what);
    if (s == CB_OK) {
        snprintf(im.m->name, sizeof im.m->name, "onnx");
        im.m->labels = -1;
        cb_graph_init(&im.m->graph);
        s = add_inputs(&im);
    }
    if (s == CB_OK) s = convert_nodes(&im);
    if (s == CB_OK) s = add_outputs(&im, with_loss);
    if (s == CB_OK) s = cb_graph_finalize(&im.m->graph);
    for (int i = 0; i < im.n_pend; i++) {
        if (s == CB_OK) {
            const cb_node *n = &im.m->graph.nodes[im.pend[i].node];
            memcpy(cb_graph_param_data(&im.m->graph, im.pend[i].node), im.pend[i].data,
                   (size_t)cb_node_numel(n) * sizeof(float));
        }
        free(im.pend[i].data);
    }
    if (s == CB_OK) s = record_value_names(&im);
    for (int i = 0; i < im.n_vals; i++) cb_tensor_free(&im.vals[i].constant);
    free(im.vals);
    cb_name_index_free(&im.val_names);
    free(im.pend);
    onnx__model_proto__free_unpacked(mp, NULL);
    if (s != CB_OK) {
        cb_model_free(im.m);
        return s;
    }
    *out = im.m;
    return CB_OK;
}

cb_status cb_onnx_import(const unsigned char *buf, size_t len, const char *what, int with_loss, cb_model **out)
{
    return import_model(buf, len, what, NULL, NULL, with_loss, out);
}

cb_status cb_onnx_load(const char *path, int with_loss, cb_model **out)
{
    return cb_onnx_load_shaped(path, with_loss, NULL, out);
}

cb_status cb_onnx_load_shaped(const char *path, int with_loss, const cb_input_shapes *shapes, cb_model **out)
{
    unsigned char *buf;
    size_t len;
    *out = NULL;
    cb_status s = cb_read_file(path, (size_t)1 << 34, &buf, &len);
    if (s != CB_OK) return s;
    /* external data lies beside the file */
    const char *slash = strrchr(path, '/');
    char *named = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
    /* resolved once here: each external tensor's file must resolve below it (onnx_external.c) */
    char *dir = named ? realpath(named, NULL) : NULL;
    if (!named) s = cb_fail(CB_ERR_NOMEM, "out of memory");
    else if (!dir) s = cb_fail(CB_ERR_IO, "%s: cannot resolve its directory %s: %s", path, named, strerror(errno));
    else s = import_model(buf, len, path, dir, shapes, with_loss, out);
    free(named);
    free(dir);
    free(buf);
    return s;
}
