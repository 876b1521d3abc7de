/* VGG-16 for 32x32x3 inputs as the study protocol (section 2) defines it:
 * 3x3 convolutions with padding 1 and no bias, each followed by batch
 * normalisation and ReLU; 2x2 max pooling at the M's of the channel plan;
 * then 512 -> 4096 -> 4096 -> 10 with ReLU and dropout 0.5.
 * Names follow a PyTorch module with `features` and `classifier`
 * nn.Sequential blocks (torchvision's layout): features.<i> for the i-th
 * layer of the feature block (conv i, its BatchNorm i+1, ReLU i+2, ...),
 * classifier.0 / .3 / .6 for the dense layers. */
#include <stdio.h>
#include "models.h"

#define POOL 0

static const int plan[] = {64, 64, POOL, 128, 128, POOL, 256, 256, 256, POOL,
                           512, 512, 512, POOL, 512, 512, 512, POOL};

int cb_build_vgg16(cb_graph *g, int x)
{
    char name[32];
    int h = x, layer = 0; /* layer: the index in the features block */
    for (size_t i = 0; i < sizeof plan / sizeof plan[0]; i++) {
        if (plan[i] == POOL) {
            h = cb_graph_pool2d(g, CB_OP_MAXPOOL2D, h, 2, 2, 0);
            layer += 1;
            continue;
        }
        snprintf(name, sizeof name, "features.%d", layer);
        h = cb_graph_conv2d(g, name, h, plan[i], 3, 1, 1, 0);
        snprintf(name, sizeof name, "features.%d", layer + 1);
        h = cb_graph_batchnorm2d(g, name, h, 1e-5f, 0.1f);
        h = cb_graph_unary(g, CB_OP_RELU, h);
        layer += 3;
    }
    h = cb_graph_unary(g, CB_OP_FLATTEN, h);                         /* [512] */
    h = cb_graph_linear(g, "classifier.0", h, 4096, 1);
    h = cb_graph_unary(g, CB_OP_RELU, h);
    h = cb_graph_dropout(g, h, 0.5f);
    h = cb_graph_linear(g, "classifier.3", h, 4096, 1);
    h = cb_graph_unary(g, CB_OP_RELU, h);
    h = cb_graph_dropout(g, h, 0.5f);
    return cb_graph_linear(g, "classifier.6", h, 10, 1);
}
