/* ONNX import of per-channel input maps written channel by channel:
 * torchvision's Inception-v3 and GoogLeNet with transform_input (their
 * pretrained form) re-normalise the image as
 *     Gather(x, c, axis 1) -> Unsqueeze(1) -> Mul(a_c) -> Add(b_c)
 * for each channel c, then Concat(axis 1); written by hand, Sub and Div
 * of scalars come too. crossbind has no tensor of one
 * channel; the importer follows each channel symbolically (IMP_CHANNEL:
 * which channel of which node, times what, plus what) and makes the
 * Concat one 1x1 convolution: weight a_c at (output k, input channel c_k),
 * bias b_c; depthwise where the channels come back in order. Anything else
 * reading a channel is refused with a message. The same ops of a whole
 * [N,C,H,W] tensor and a constant of one value per channel (or a scalar),
 * such as (x - mean) / std, become a depthwise 1x1 convolution each; so do
 * those of an image input in TensorFlow's layout before its Transpose
 * (Keras' Rescaling and Normalization layers inside the model), where the
 * constant runs along the last axis.
 *
 * Rounding: PyTorch rounds x * a, then the sum (and divides where the file
 * divides); the convolution multiplies by the combined scale and may fuse
 * the sum into one multiply-add. The outputs then differ by a unit or two
 * in the last place, far inside the CNNs' tolerance. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "onnx_import_internal.h"

static cb_status bind_channel(importer *im, const Onnx__NodeProto *n, int node, int channel, int kept, float scale,
                              float shift)
{
    value *v = imp_define(im, n->output[0]);
    if (!v) return CB_ERR_FORMAT;
    v->node = node;
    v->layout = IMP_CHANNEL;
    v->channel = (imp_channel){channel, kept, scale, shift};
    return CB_OK;
}

/* A 1x1 convolution of node x named after n: weights w [oc, ic, 1, 1]
 * (ic = the input's channels / groups), bias [oc]. */
static cb_status one_by_one(importer *im, const Onnx__NodeProto *n, int x, int64_t oc, int64_t ic, const float *w,
                            const float *bias, int groups, int *out)
{
    const int64_t wd[4] = {oc, ic, 1, 1}, bd[1] = {oc};
    char name[CB_MAX_NAME], wname[CB_MAX_NAME + 8], bname[CB_MAX_NAME + 8];
    snprintf(name, sizeof name, "%.100s", n->name && n->name[0] ? n->name : n->output[0]);
    snprintf(wname, sizeof wname, "%s.weight", name);
    snprintf(bname, sizeof bname, "%s.bias", name);
    int wi = -1, bi = -1;
    cb_status s = imp_param(im, wname, 4, wd, w, &wi);
    if (s == CB_OK) s = imp_param(im, bname, 1, bd, bias, &bi);
    if (s != CB_OK) return s;
    const cb_window win = {1, 1, 1, 1, 0, 0, 1, 1};
    *out = cb_graph_conv2d_grouped(&im->m->graph, name, x, wi, bi, &win, groups);
    return *out < 0 ? CB_ERR_SHAPE : CB_OK;
}

cb_status imp_channel_gather(importer *im, const Onnx__NodeProto *n, const value *data, int *handled)
{
    *handled = 0;
    const cb_node *x = &im->m->graph.nodes[data->node];
    const int64_t axis = imp_attr_int(n, "axis", 0);
    if (data->layout != IMP_PLAIN || x->ndim != 3 || (axis != 1 && axis != -3)) return CB_OK;
    const cb_tensor *idx;
    cb_status s = imp_constant(im, n, 1, &idx);
    if (s != CB_OK) return s;
    /* a scalar index drops the channel axis; an index of shape [1] keeps it */
    if (!idx || (idx->dtype != CB_I64 && idx->dtype != CB_I32) || cb_tensor_numel(idx) != 1 || idx->ndim > 1)
        return CB_OK;
    int64_t c = idx->dtype == CB_I64 ? ((const int64_t *)idx->data)[0] : ((const int32_t *)idx->data)[0];
    if (c < 0) c += x->dims[0];
    if (c < 0 || c >= x->dims[0]) return imp_unsupported(im, n, "the channel index is out of range");
    *handled = 1;
    return bind_channel(im, n, data->node, (int)c, idx->ndim == 1, 1.0f, 0.0f);
}

cb_status imp_channel_unsqueeze(importer *im, const Onnx__NodeProto *n, const value *v)
{
    int64_t axes[4];
    const int na = imp_axes(im, n, axes, 4);
    if (v->channel.kept || na != 1 || (axes[0] != 1 && axes[0] != -3))
        return imp_unsupported(im, n, "one channel of a tensor (Gather along axis 1) is unsqueezed only at axis 1");
    return bind_channel(im, n, v->node, v->channel.index, 1, v->channel.scale, v->channel.shift);
}

/* The two operands of a binary node: *x the computed one (the first where
 * both are), *k the other; returns whether *x comes first. */
static int operands(importer *im, const Onnx__NodeProto *n, value **x, value **k)
{
    value *a = n->n_input == 2 ? imp_lookup(im, n->input[0]) : NULL, *b = n->n_input == 2 ? imp_lookup(im, n->input[1]) : NULL;
    *x = a && a->node >= 0 ? a : b;
    *k = *x == a ? b : a;
    return *x == a;
}

/* (scale, shift) composed with Mul, Div, Add or Sub (op) of the constant c,
 * the computed operand first or not; 0 where c is not finite, is zero in a
 * Div, or divides (a Div of the constant by the tensor). Div multiplies by
 * 1 / c: within an ulp of x / c. */
static int compose(const char *op, int computed_first, float c, float *scale, float *shift)
{
    if (!isfinite(c)) return 0;
    if (strcmp(op, "Mul") == 0) *scale *= c, *shift *= c;
    else if (strcmp(op, "Div") == 0) {
        if (c == 0.0f || !computed_first) return 0;
        *scale /= c, *shift /= c;
    } else if (strcmp(op, "Add") == 0) *shift += c;
    else if (computed_first) *shift -= c; /* Sub: x - c */
    else *scale = -*scale, *shift = c - *shift; /* c - x */
    return 1;
}

cb_status imp_channel_affine(importer *im, const Onnx__NodeProto *n)
{
    value *ch, *k;
    const int first = operands(im, n, &ch, &k);
    const imp_channel *p = ch && ch->node >= 0 && ch->layout == IMP_CHANNEL ? &ch->channel : NULL;
    float scale = p ? p->scale : 0.0f, shift = p ? p->shift : 0.0f;
    if (!p || !k || k->node >= 0 || k->constant.dtype != CB_F32 || cb_tensor_numel(&k->constant) != 1 ||
        !compose(n->op_type, first, ((const float *)k->constant.data)[0], &scale, &shift))
        return imp_unsupported(im, n, "implemented only for one channel of a tensor (Gather along axis 1) and a "
                                      "finite float scalar constant (an input normalisation; a Div by the "
                                      "constant, not zero)");
    return bind_channel(im, n, ch->node, p->index, p->kept, scale, shift);
}

cb_status imp_channel_concat(importer *im, const Onnx__NodeProto *n, int *out)
{
    const int64_t axis = imp_attr_int(n, "axis", 0);
    const int k = (int)n->n_input;
    const value *first = k > 0 ? imp_lookup(im, n->input[0]) : NULL;
    if (axis != 1 && axis != -3) return imp_unsupported(im, n, "channels of a tensor are concatenated only along axis 1");
    for (int i = 0; i < k; i++) {
        const value *v = n->input[i][0] ? imp_lookup(im, n->input[i]) : NULL;
        if (!v || !first || v->node < 0 || v->layout != IMP_CHANNEL || !v->channel.kept || v->node != first->node)
            return imp_unsupported(im, n, "channels of a tensor (Gather along axis 1, Unsqueeze) are concatenated "
                                          "only with other channels of the same tensor");
    }
    const int64_t c = im->m->graph.nodes[first->node].dims[0];
    int in_order = k == c;
    for (int i = 0; i < k && in_order; i++) in_order = imp_lookup(im, n->input[i])->channel.index == i;
    /* in order: depthwise [C, 1, 1, 1]; else dense [k, C, 1, 1] with one weight per row */
    const int64_t ic = in_order ? 1 : c;
    float *w = calloc((size_t)(k * ic), sizeof *w), *bias = malloc((size_t)k * sizeof *bias);
    cb_status s = w && bias ? CB_OK : cb_fail(CB_ERR_NOMEM, "out of memory importing %s", im->what);
    for (int i = 0; i < k && s == CB_OK; i++) {
        const imp_channel *p = &imp_lookup(im, n->input[i])->channel;
        w[(size_t)i * ic + (in_order ? 0 : p->index)] = p->scale;
        bias[i] = p->shift;
    }
    if (s == CB_OK) s = one_by_one(im, n, first->node, k, ic, w, bias, in_order ? (int)c : 1, out);
    free(w);
    free(bias);
    return s;
}

/* The per-channel values of constant k for a [N,C,H,W] tensor under ONNX's
 * broadcasting: a scalar (every dim 1) or [C,1,1] / [1,C,1,1]; for the same
 * tensor seen in TensorFlow's layout [N,H,W,C] (IMP_NHWC), a scalar or
 * [C] / [1,C] / [1,1,C] / [1,1,1,C]. NULL else. */
static const float *per_channel(const cb_tensor *k, int64_t c, int nhwc, int *stride)
{
    if (k->dtype != CB_F32 || k->ndim > 4) return NULL;
    const int64_t numel = cb_tensor_numel(k);
    *stride = numel == 1 ? 0 : 1;
    if (numel == 1) return k->data;
    const int axis = k->ndim - (nhwc ? 1 : 3); /* the channel axis counted from the front */
    if (numel != c || axis < 0) return NULL;
    for (int d = 0; d < k->ndim; d++)
        if (k->shape[d] != (d == axis ? c : 1)) return NULL;
    return k->data;
}

cb_status imp_channel_broadcast(importer *im, const Onnx__NodeProto *n, int *out, int *nhwc)
{
    value *xv, *k;
    const int first = operands(im, n, &xv, &k);
    *nhwc = xv && xv->node >= 0 && xv->layout == IMP_NHWC;
    const cb_node *x = xv && xv->node >= 0 && (xv->layout == IMP_PLAIN || *nhwc) ? &im->m->graph.nodes[xv->node] : NULL;
    int stride = 0;
    const float *kc = x && x->ndim == 3 && k && k->node < 0 ? per_channel(&k->constant, x->dims[0], *nhwc, &stride)
                                                            : NULL;
    if (!kc && *nhwc)
        return imp_unsupported(im, n, "a tensor in TensorFlow's layout [N,H,W,C] is mapped only by a constant "
                                      "of one value per channel along its last axis ([C], [1,1,1,C]) or a scalar");
    if (!kc && strcmp(n->op_type, "Add") == 0)
        return imp_unsupported(im, n, "a constant is added only as the bias of a MatMul right before it, or as one "
                                      "value per channel ([C,1,1], [1,C,1,1]) or a scalar to a computed [N,C,H,W] "
                                      "tensor (no other broadcasting)");
    if (!kc)
        return imp_unsupported(im, n, "implemented only for a computed [N,C,H,W] tensor and a float constant of one "
                                      "value per channel ([C,1,1], [1,C,1,1]) or a scalar (a Div by the constant), or "
                                      "for one channel of a tensor (see Gather); no other broadcasting");
    const int64_t c = x->dims[0];
    float *w = malloc((size_t)c * sizeof *w), *bias = malloc((size_t)c * sizeof *bias);
    cb_status s = w && bias ? CB_OK : cb_fail(CB_ERR_NOMEM, "out of memory importing %s", im->what);
    for (int64_t i = 0; i < c && s == CB_OK; i++) {
        w[i] = 1.0f, bias[i] = 0.0f;
        if (!compose(n->op_type, first, kc[i * stride], &w[i], &bias[i]))
            s = imp_unsupported(im, n, "the constant must be finite (and, in a Div, the divisor and not zero)");
    }
    if (s == CB_OK) s = one_by_one(im, n, xv->node, c, 1, w, bias, (int)c, out);
    free(w);
    free(bias);
    return s;
}
