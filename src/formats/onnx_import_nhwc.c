/* ONNX import of image tensors in TensorFlow's layout [N,H,W,C] between
 * convolutions. tf2onnx wraps every Conv of a Keras model in
 *     Transpose [0,3,1,2] -> Conv -> Transpose [0,2,3,1]
 * and its optimiser cancels the pairs it can push through; in Keras'
 * MobileNetV3, RegNet or EfficientNet some remain (hard swish, squeeze and
 * excitation, residual adds between them). crossbind keeps every image in
 * [N,C,H,W] and marks such a value IMP_NHWC: the file's [N,H,W,C] tensor
 * is the node's output transposed, and no data moves.
 *
 * Who reads an IMP_NHWC value:
 *   - elementwise operators (activations, Clip, Identity, Add and Mul of
 *     two such values): they do not care how the tensor is laid out, so
 *     they run on the stored [N,C,H,W] tensor and their result is IMP_NHWC
 *     too (a [N,1,1,C] gate is stored [N,C,1,1], so the gate Mul is the
 *     graph's own);
 *   - Add, Sub, Mul and Div of a constant of one value per channel along
 *     the last axis (onnx_import_channel.c);
 *   - Pad (its pads are permuted) and ReduceMean over H and W (global
 *     average pooling), Concat along the channels and Softmax (their
 *     axes are mapped), in onnx_import.c, and Slice (onnx_import_slice.c);
 *   - Flatten and Reshape where H and W are 1: then both layouts hold the
 *     same numbers in the same order;
 *   - Transpose [0,3,1,2], which gives back crossbind's layout.
 * Anything else is refused with a message; nothing is transposed in
 * memory. */
#include <string.h>
#include "crossbind/onnx.h"
#include "onnx_import_internal.h"

/* Operators whose result at each position depends only on their inputs at
 * that position (with ONNX's broadcasting of a [N,1,1,C] gate). */
static int elementwise(const char *t)
{
    static const char *const ops[] = {"Relu", "Tanh", "Sigmoid", "HardSigmoid", "HardSwish", "Clip", "Identity",
                                      "Dropout", "Add", "Sub", "Mul", "Div", NULL};
    for (int i = 0; ops[i]; i++)
        if (!strcmp(t, ops[i])) return 1;
    return 0;
}

cb_status imp_nhwc_plan(importer *im, const Onnx__NodeProto *n, imp_nhwc_use *use)
{
    const char *t = n->op_type;
    int computed = 0, nhwc = 0, spatial_one = 1;
    for (size_t i = 0; i < n->n_input; i++) {
        const value *v = n->input[i][0] ? imp_lookup(im, n->input[i]) : NULL;
        if (!v || v->node < 0) continue;
        computed++;
        if (v->layout != IMP_NHWC) continue;
        nhwc++;
        const cb_node *x = &im->m->graph.nodes[v->node];
        spatial_one = spatial_one && x->ndim == 3 && x->dims[1] == 1 && x->dims[2] == 1;
    }
    *use = IMP_NHWC_AWARE;
    /* an operator crossbind does not implement at all is refused as such, later */
    if (!cb_onnx_op_versions(t) || !strcmp(t, "Transpose") || !strcmp(t, "Pad") || !strcmp(t, "Slice") ||
        !strcmp(t, "ReduceMean") || !strcmp(t, "Concat") || !strcmp(t, "Softmax"))
        return CB_OK;
    if (elementwise(t) && computed == 1 && n->n_input == 2 && strcmp(t, "Dropout") != 0 && strcmp(t, "Clip") != 0)
        return CB_OK; /* a constant operand along the last axis: onnx_import_channel.c */
    if (elementwise(t) && computed == nhwc) {
        *use = IMP_NHWC_AS_STORED;
        return CB_OK;
    }
    if ((!strcmp(t, "Flatten") || !strcmp(t, "Reshape")) && computed == 1 && spatial_one) {
        *use = IMP_NHWC_FLAT;
        return CB_OK;
    }
    if (elementwise(t))
        return imp_unsupported(im, n, "it mixes a tensor in TensorFlow's layout [N,H,W,C] with one in crossbind's "
                                      "[N,C,H,W]; only operands in one layout are implemented");
    return imp_unsupported(im, n, "it reads a tensor in TensorFlow's layout [N,H,W,C] (a Transpose [0,2,3,1] of "
                                  "[N,C,H,W]), which only elementwise operators, Pad, Slice, Concat of the channels, "
                                  "Softmax, ReduceMean over the height and width, Flatten of [N,1,1,C] and a Transpose [0,3,1,2] back read here");
}

void imp_nhwc_axes(int64_t *axes, int n)
{
    static const int64_t to_nchw[4] = {0, 2, 3, 1}; /* [N,H,W,C] axis -> [N,C,H,W] axis */
    for (int i = 0; i < n; i++)
        if (axes[i] >= 0 && axes[i] < 4) axes[i] = to_nchw[axes[i]];
}
