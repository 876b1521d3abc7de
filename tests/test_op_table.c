/* The op descriptors (src/graph/op.h): every op has one, its flags agree
 * with what the executor relies on, and the FLOP counts the benchmarks
 * divide by are the hand-counted ones. */
#include "harness.h"
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
    cb_model_free(m);
}
