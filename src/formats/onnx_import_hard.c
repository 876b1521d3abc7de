/* ONNX import of Keras' hard sigmoid and hard swish as tf2onnx writes them
 * (MobileNetV3's activations and squeeze-and-excitation gates):
 *     p = Add(x, 3); r = Clip(p, 0, 6); h = Mul(r, k)    hard sigmoid, k = 1/6
 *     y = Mul(x, h)                                       hard swish
 * Converted node by node, each Add and Mul of a constant is a depthwise 1x1
 * convolution and the chain is four passes over the tensor. Recognised at
 * its Add, it becomes one crossbind node that rounds as the chain does
 * (cb_graph_hard_keras), so the result is the same at every level.
 *
 * Only where each value inside the chain has the next node as its one
 * reader and is no graph output: those values then do not exist in
 * crossbind (a capture or dump cannot name them); the chain's last value
 * names the node. The nodes folded in are skipped by convert_nodes. */
#include <math.h>
#include <string.h>
#include "onnx_import_internal.h"

/* The index of the one node reading `name`, or -1 where none or several
 * do, or where it is a graph output. */
static int only_reader(const Onnx__GraphProto *gp, const char *name)
{
    for (size_t i = 0; i < gp->n_output; i++)
        if (gp->output[i]->name && strcmp(gp->output[i]->name, name) == 0) return -1;
    int found = -1;
    for (size_t i = 0; i < gp->n_node; i++)
        for (size_t k = 0; k < gp->node[i]->n_input; k++)
            if (strcmp(gp->node[i]->input[k], name) == 0) {
                if (found >= 0) return -1;
                found = (int)i;
            }
    return found;
}

/* Whether `name` is a float scalar constant; its value in *v. */
static int scalar(importer *im, const char *name, float *v)
{
    const value *c = name[0] ? imp_lookup(im, name) : NULL;
    if (!c || c->node >= 0 || c->constant.dtype != CB_F32 || cb_tensor_numel(&c->constant) != 1) return 0;
    *v = ((const float *)c->constant.data)[0];
    return 1;
}

static int is_op(const Onnx__NodeProto *n, const char *op, size_t n_in)
{
    return n->op_type && strcmp(n->op_type, op) == 0 && n->n_input == n_in && n->n_output == 1 &&
           (!n->domain || !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0);
}

/* Binary node n reads `a` and, on its other input, the scalar constant
 * *c (either order). */
static int with_scalar(importer *im, const Onnx__NodeProto *n, const char *a, float *c)
{
    return (strcmp(n->input[0], a) == 0 && scalar(im, n->input[1], c)) ||
           (strcmp(n->input[1], a) == 0 && scalar(im, n->input[0], c));
}

/* Clip's bounds: constant inputs from opset 11 on, attributes before. */
static int clip_bounds(importer *im, const Onnx__NodeProto *n, float *lo, float *hi)
{
    if (im->opset < 11) {
        if (n->n_input != 1 || !imp_attr(n, "min") || !imp_attr(n, "max")) return 0;
        *lo = imp_attr_float(n, "min", 0.0f), *hi = imp_attr_float(n, "max", 0.0f);
        return 1;
    }
    return n->n_input == 3 && scalar(im, n->input[1], lo) && scalar(im, n->input[2], hi);
}

cb_status imp_hard_keras(importer *im, const Onnx__NodeProto *add, int *handled)
{
    *handled = 0;
    const Onnx__GraphProto *gp = im->gp;
    float three, lo, hi, scale;
    if (!is_op(add, "Add", 2)) return CB_OK;
    const value *x = imp_lookup(im, add->input[0]);
    if (!x || x->node < 0) x = imp_lookup(im, add->input[1]);
    if (!x || x->node < 0 || (x->layout != IMP_PLAIN && x->layout != IMP_NHWC)) return CB_OK;
    const char *xname = x->name;
    if (!with_scalar(im, add, xname, &three) || three != 3.0f) return CB_OK;
    const int ci = only_reader(gp, add->output[0]);
    const Onnx__NodeProto *clip = ci >= 0 ? gp->node[ci] : NULL;
    if (!clip || !is_op(clip, "Clip", clip->n_input) || strcmp(clip->input[0], add->output[0]) != 0 ||
        !clip_bounds(im, clip, &lo, &hi) || lo != 0.0f || hi != 6.0f)
        return CB_OK;
    const int mi = only_reader(gp, clip->output[0]);
    const Onnx__NodeProto *mul = mi >= 0 ? gp->node[mi] : NULL;
    if (!mul || !is_op(mul, "Mul", 2) || !with_scalar(im, mul, clip->output[0], &scale) || !isfinite(scale))
        return CB_OK;
    /* hard swish where x times the hard sigmoid is all that reads it */
    const int si = only_reader(gp, mul->output[0]);
    const Onnx__NodeProto *swish = si >= 0 ? gp->node[si] : NULL;
    const int is_swish = swish && is_op(swish, "Mul", 2) &&
                         ((strcmp(swish->input[0], xname) == 0 && strcmp(swish->input[1], mul->output[0]) == 0) ||
                          (strcmp(swish->input[1], xname) == 0 && strcmp(swish->input[0], mul->output[0]) == 0));
    const Onnx__NodeProto *last = is_swish ? swish : mul;
    const int id = cb_graph_hard_keras(&im->m->graph, is_swish ? CB_OP_HARDSWISH : CB_OP_HARDSIGMOID, x->node, scale);
    if (id < 0) return CB_ERR_SHAPE;
    const imp_layout layout = x->layout; /* elementwise: the result is laid out as x */
    value *v = imp_define(im, last->output[0]);
    if (!v) return CB_ERR_FORMAT;
    v->node = id;
    v->layout = layout;
    if (strlen(last->output[0]) < CB_MAX_NAME)
        snprintf(im->m->graph.nodes[id].name, sizeof im->m->graph.nodes[id].name, "%s", last->output[0]);
    im->skip[ci] = im->skip[mi] = 1;
    if (is_swish) im->skip[si] = 1;
    *handled = 1;
    return CB_OK;
}
