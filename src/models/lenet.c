/* LeNet-1 and LeNet-5 exactly as the study protocol (section 2) defines them:
 * 28x28 inputs, 5x5 convolutions, tanh, 2x2 max pooling. */
#include "models.h"

int cb_build_lenet1(cb_graph *g, int x)
{
    int h = cb_graph_conv2d(g, "conv1", x, 4, 5, 1, 2, 1);   /* [4,28,28] */
    h = cb_graph_unary(g, CB_OP_TANH, h);
    h = cb_graph_pool2d(g, CB_OP_MAXPOOL2D, h, 2, 2, 0);      /* [4,14,14] */
    h = cb_graph_conv2d(g, "conv2", h, 12, 5, 1, 0, 1);       /* [12,10,10] */
    h = cb_graph_unary(g, CB_OP_TANH, h);
    h = cb_graph_pool2d(g, CB_OP_MAXPOOL2D, h, 2, 2, 0);      /* [12,5,5] */
    h = cb_graph_unary(g, CB_OP_FLATTEN, h);                  /* [300] */
    return cb_graph_linear(g, "fc", h, 10, 1);                /* [10] */
}

int cb_build_lenet5(cb_graph *g, int x)
{
    int h = cb_graph_conv2d(g, "conv1", x, 6, 5, 1, 2, 1);   /* [6,28,28] */
    h = cb_graph_unary(g, CB_OP_TANH, h);
    h = cb_graph_pool2d(g, CB_OP_MAXPOOL2D, h, 2, 2, 0);      /* [6,14,14] */
    h = cb_graph_conv2d(g, "conv2", h, 16, 5, 1, 0, 1);       /* [16,10,10] */
    h = cb_graph_unary(g, CB_OP_TANH, h);
    h = cb_graph_pool2d(g, CB_OP_MAXPOOL2D, h, 2, 2, 0);      /* [16,5,5] */
    h = cb_graph_conv2d(g, "conv3", h, 120, 5, 1, 0, 1);      /* [120,1,1] */
    h = cb_graph_unary(g, CB_OP_TANH, h);
    h = cb_graph_unary(g, CB_OP_FLATTEN, h);                  /* [120] */
    h = cb_graph_linear(g, "fc1", h, 84, 1);
    h = cb_graph_unary(g, CB_OP_TANH, h);
    return cb_graph_linear(g, "fc2", h, 10, 1);               /* [10] */
}
