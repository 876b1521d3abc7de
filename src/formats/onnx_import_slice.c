/* Slice of a computed image tensor: a crop of its height and width.
 *
 * Keras' Cropping2D arrives from tf2onnx as a Slice of [N,C,H,W] (NASNet
 * shifts a feature map by one pixel with ZeroPadding2D then Cropping2D
 * before a strided pooling). A crop is a Pad with negative pads (ONNX
 * Pad's own meaning of them), so it becomes that graph node: no new op,
 * and crossbind's ONNX export writes it back as a Pad that crops.
 *
 * What is read: starts, ends and the optional axes and steps as constant
 * integer inputs (opset 10 on) or attributes (before); steps of 1; the
 * batch and the channels only as a whole (start 0, end at or past the
 * axis). A value held in TensorFlow's layout (IMP_NHWC) is sliced along
 * the file's axes mapped to crossbind's. Slice of constants never gets here:
 * it is folded at import (onnx_fold.c). */
#include <stdint.h>
#include "crossbind/onnx.h"
#include "onnx_import_internal.h"

/* A constant int64 list of at most `max` values into out[]; its length, or
 * -1 where the input is not one. */
static int int64_list(importer *im, const Onnx__NodeProto *n, size_t i, int64_t *out, int max, cb_status *s)
{
    const cb_tensor *t = NULL;
    if ((*s = imp_constant(im, n, i, &t)) != CB_OK || !t) return -1;
    const int64_t len = cb_tensor_numel(t);
    if (t->dtype != CB_I64 || len < 1 || len > max) return -1;
    for (int64_t k = 0; k < len; k++) out[k] = ((const int64_t *)t->data)[k];
    return (int)len;
}

/* The half-open range [b, e) of an axis of `dim` that starts/ends select
 * with step 1, after ONNX's rules: negative values count from the end, then
 * both are clamped into [0, dim]. */
static void clamp_range(int64_t start, int64_t end, int64_t dim, int64_t *b, int64_t *e)
{
    start = start < 0 ? start + dim : start;
    end = end < 0 ? end + dim : end;
    *b = start < 0 ? 0 : start > dim ? dim : start;
    *e = end < 0 ? 0 : end > dim ? dim : end;
}

cb_status imp_slice(importer *im, const Onnx__NodeProto *n, int *out, int *nhwc)
{
    int x;
    cb_status s = imp_activation_nhwc(im, n, 0, &x, nhwc);
    if (s != CB_OK) return s;
    const cb_node *xn = &im->m->graph.nodes[x];
    if (xn->ndim != 3 || !xn->batched) return imp_unsupported(im, n, "only [N,C,H,W] tensors are sliced (cropped)");
    int64_t starts[4], ends[4], axes[4] = {0, 1, 2, 3}, steps[4] = {1, 1, 1, 1};
    int ns, ne, na = -2, nt = -2;
    if (im->opset >= 10) {
        ns = int64_list(im, n, 1, starts, 4, &s);
        if (s == CB_OK) ne = int64_list(im, n, 2, ends, 4, &s);
        if (s == CB_OK && n->n_input > 3 && n->input[3][0]) na = int64_list(im, n, 3, axes, 4, &s);
        if (s == CB_OK && n->n_input > 4 && n->input[4][0]) nt = int64_list(im, n, 4, steps, 4, &s);
        if (s != CB_OK) return s;
    } else {
        ns = imp_attr_ints(n, "starts", starts, 4, 0, 0);
        ne = imp_attr_ints(n, "ends", ends, 4, 0, 0);
        if (imp_attr(n, "axes")) na = imp_attr_ints(n, "axes", axes, 4, 0, 0);
    }
    if (ns < 1 || ne != ns || (na != -2 && na != ns) || (nt != -2 && nt != ns))
        return imp_unsupported(im, n, "starts, ends, axes and steps must be constant int64 lists of one length (at "
                                      "most 4)");
    if ((s = imp_norm_axes(im, n, axes, ns)) != CB_OK) return s;
    for (int k = 0; k < ns; k++)
        if (steps[k] != 1) return imp_unsupported(im, n, "only steps of 1 are implemented");
    if (*nhwc) imp_nhwc_axes(axes, ns); /* the file's [N,H,W,C] axes to crossbind's */
    int pads[4] = {0, 0, 0, 0}; /* top, left, bottom, right: negative, the rows and columns cropped */
    for (int k = 0; k < ns; k++) {
        if (axes[k] == 0) { /* the batch: its size is the caller's, so only all of it */
            if (starts[k] != 0 || ends[k] < INT32_MAX) return imp_unsupported(im, n, "the batch is sliced");
            continue;
        }
        const int64_t dim = xn->dims[axes[k] - 1];
        int64_t b, e;
        clamp_range(starts[k], ends[k], dim, &b, &e);
        if (axes[k] == 1) {
            if (b != 0 || e != dim) return imp_unsupported(im, n, "only the height and width are sliced, not the channels");
            continue;
        }
        if (e <= b) return imp_unsupported(im, n, "it selects nothing along an axis (an empty tensor)");
        pads[axes[k] - 2] = (int)-b;
        pads[axes[k]] = (int)-(dim - e);
    }
    *out = cb_graph_pad(&im->m->graph, x, pads, 0.0f);
    return *out < 0 ? CB_ERR_SHAPE : CB_OK;
}
