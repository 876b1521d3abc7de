/* The op descriptors (src/graph/op.h): every op has one, its flags agree
 * with what the executor relies on, and the FLOP counts the benchmarks
 * divide by are the hand-counted ones. */
#include "harness.h"
#include <string.h>
#include "../src/graph/op.h"

TEST(every_op_has_a_descriptor)
{
    for (int op = 0; op < CB_OP_COUNT; op++) {
        const cb_op_desc *d = cb_op_desc_of((cb_op)op);
        CHECK(d != NULL);
        if (!d) continue;
        CHECK(d->forward != NULL);
        /* Leaves run nothing backward; every other op passes a gradient. */
        CHECK(((d->flags & CB_OPF_LEAF) != 0) == (d->backward == NULL));
        if (d->flags & CB_OPF_ACT) CHECK(d->act != CB_ACT_NONE);
    }
    CHECK(cb_op_desc_of(CB_OP_COUNT) == NULL);
    CHECK(cb_op_desc_of((cb_op)-1) == NULL);
    CHECK(cb_op_desc_of(CB_OP_TANH)->act == CB_ACT_TANH && cb_op_desc_of(CB_OP_SIGMOID)->act == CB_ACT_SIGMOID);
    CHECK(cb_op_desc_of(CB_OP_SOFTMAX_XENT)->flags & CB_OPF_LOSS);
    CHECK(cb_op_desc_of(CB_OP_FLATTEN)->flags & CB_OPF_VIEW);
}

/* LeNet-5 per sample, counted by hand (2 per multiply-add): conv1
 * 6x28x28 outputs x 25 taps = 235,200; conv2 16x10x10 x 6x25 = 480,000;
 * conv3 120 x 16x25 = 96,000; fc1 84 x 120 = 20,160; fc2 10 x 84 = 1,680. */
TEST(flops_are_the_hand_counted_ones)
{
    cb_model *m;
    CHECK_OK(cb_model_create("lenet5", &m));
    if (!m) return;
    CHECK(cb_graph_forward_flops(&m->graph) == 833040.0);
    double conv = 0;
    for (int i = 0; i < m->graph.count; i++)
        if (m->graph.nodes[i].op == CB_OP_CONV2D) conv += cb_node_forward_flops(&m->graph, i);
    CHECK(conv == 811200.0);
    /* Done, not nominal: conv1's padding of 2 leaves 134 of the 140 taps per
     * axis inside the 28 inputs (3 + 4 + 24 x 5 + 4 + 3), so 6 x 134^2 x 2. */
    CHECK(cb_graph_forward_flops_done(&m->graph) == 813312.0);
    cb_model_free(m);
}

/* The convolution kernel list (src/ops/conv_kernels.c): every kernel named,
 * and the choice the first-match rule makes on shapes whose answer is known. */
TEST(conv_kernel_list_names_every_kernel_and_chooses_by_rule)
{
    int count;
    const cb_conv_kernel_desc *list = cb_conv_kernel_list(&count);
    for (int k = CB_CK_REF; k < CB_CK_COUNT; k++) {
        int found = 0;
        for (int i = 0; i < count; i++) found |= list[i].id == (cb_conv_kernel)k && list[i].supports && list[i].rule;
        CHECK(found);
        CHECK(strcmp(cb_conv_kernel_name((cb_conv_kernel)k), "?") != 0);
    }
    CHECK(!strcmp(cb_conv_kernel_name(CB_CK_NONE), "none"));
    /* 64 -> 64 channels, 3x3, 56x56, one sample: nothing specialised applies. */
    cb_conv_ctx c = {.s = {.n = 1, .c = 64, .h = 56, .w = 56, .oc = 64, .kh = 3, .kw = 3, .sh = 1, .sw = 1, .ph = 1,
                           .pw = 1, .oh = 56, .ow = 56},
                     .groups = 1, .level = CB_KERNELS_FAST};
    CHECK(cb_conv_select_fwd(&c) == CB_CK_IM2COL);
    cb_conv_bwd_choice b = cb_conv_select_bwd(&c, 0);
    CHECK(b.dgrad == CB_CK_NONE && b.wgrad == CB_CK_IM2COL);
    c.dnnl = CB_DNNL_FWD | CB_DNNL_BWD;
    CHECK(cb_conv_select_fwd(&c) == CB_CK_ONEDNN);
    c.in_parallel = 1; /* oneDNN's buffers are the executor's: never in a slice */
    CHECK(cb_conv_select_fwd(&c) == CB_CK_IM2COL);
    b = cb_conv_select_bwd(&c, 1);
    CHECK(b.dgrad == CB_CK_ONEDNN && b.wgrad == CB_CK_ONEDNN);
    c.level = CB_KERNELS_REFERENCE;
    CHECK(cb_conv_select_fwd(&c) == CB_CK_REF);
    c.groups = 64; /* depthwise: the grouped kernel at every level */
    CHECK(cb_conv_select_fwd(&c) == CB_CK_GROUPED);
    c.level = CB_KERNELS_FAST;
    b = cb_conv_select_bwd(&c, 1);
    CHECK(b.dgrad == CB_CK_GROUPED && b.wgrad == CB_CK_GROUPED);
    c.backend = "nowhere"; /* a backend without kernels chooses none */
    CHECK(cb_conv_select_fwd(&c) == CB_CK_NONE);
    /* LeNet-5's conv3: the window is the whole 5x5 input, a fully connected product both ways. */
    cb_conv_ctx fc = {.s = {.n = 32, .c = 16, .h = 5, .w = 5, .oc = 120, .kh = 5, .kw = 5, .sh = 1, .sw = 1, .oh = 1,
                            .ow = 1},
                      .groups = 1, .level = CB_KERNELS_EXACT};
    CHECK(cb_conv_select_fwd(&fc) == CB_CK_WHOLE_WINDOW);
    b = cb_conv_select_bwd(&fc, 1);
    CHECK(b.dgrad == CB_CK_WHOLE_WINDOW && b.wgrad == CB_CK_WHOLE_WINDOW);
}
