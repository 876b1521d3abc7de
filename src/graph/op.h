/* One descriptor per op: what the executor needs to know of it, with its
 * forward and backward steps side by side in the op's own file (op_*.c).
 * Adding an op is its file plus a line in op_table.c (and its builder and
 * ONNX mapping); the executor never switches on the op.
 *
 * A step runs node `i` over samples [b0, b0 + batch): forward steps may run
 * on a slice of the batch (sliced inference, one slice per thread), backward
 * steps always on the whole batch (b0 = 0). Not part of the public API. */
#ifndef CROSSBIND_OP_H
#define CROSSBIND_OP_H

#include <stddef.h>
#include "crossbind/crossbind.h"
#include "../ops/ops.h"

typedef struct cb_step {
    cb_exec *ex;
    const cb_graph *g;
    const cb_node *n;
    int i;            /* the node */
    int b0, batch;    /* the samples */
    float *ws;        /* this step's workspace (a slice's own in sliced inference) */
    int fast;         /* the kernels' `fast` argument at the executor's level (ops.h) */
    float *y;         /* forward: the node's value over the samples */
    const float *x;   /* its first input's (NULL for leaves) */
    /* backward only */
    int top;          /* the node the pass started from */
    const float *dy;  /* the node's gradient */
    float *dx;        /* its first input's, or NULL where that takes none */
} cb_step;

enum {
    CB_OPF_LEAF = 1, /* input or parameter: holds data, runs nothing */
    CB_OPF_VIEW = 2, /* shares its input's storage (flatten, reshape) */
    CB_OPF_ACT = 4,  /* an elementwise activation a convolution or pooling can compute (desc.act) */
    CB_OPF_LOSS = 8  /* a batch-mean loss: runs over the whole batch, never a slice */
};

typedef struct cb_op_desc {
    unsigned flags;
    cb_act act; /* CB_OPF_ACT: which one */
    /* Multiply-adds times two of one sample's forward (NULL: 0). Only the
     * products are counted, as the usual FLOP counts of these models do. */
    double (*flops)(const cb_graph *g, const cb_node *n);
    /* ... counting only the multiply-adds done (NULL: all of flops). */
    double (*flops_done)(const cb_graph *g, const cb_node *n);
    /* Floats kept from forward to backward (BatchNorm's statistics, dropout's
     * mask, recurrent gates) for max_batch samples (NULL: none). */
    size_t (*saved)(const cb_node *n, int max_batch, int with_grads);
    /* Workspace floats of one run over `batch` samples on `threads` threads
     * (NULL: none). */
    size_t (*workspace)(const cb_exec *ex, const cb_node *n, int batch, int threads);
    cb_status (*forward)(const cb_step *s);
    cb_status (*backward)(const cb_step *s); /* NULL: takes no gradient through it */
} cb_op_desc;

/* The descriptor of an op (op_table.c); NULL for an op without one. */
const cb_op_desc *cb_op_desc_of(cb_op op);

/* The descriptors, one per file. */
extern const cb_op_desc cb_op_input, cb_op_param, cb_op_flatten, cb_op_conv2d, cb_op_maxpool2d, cb_op_avgpool2d,
    cb_op_global_avgpool, cb_op_linear, cb_op_tanh, cb_op_relu, cb_op_sigmoid, cb_op_batchnorm2d, cb_op_dropout,
    cb_op_embedding, cb_op_lstm, cb_op_gru, cb_op_last_step, cb_op_softmax_xent, cb_op_bce, cb_op_add, cb_op_clip,
    cb_op_concat, cb_op_pad, cb_op_softmax, cb_op_mul, cb_op_hardsigmoid, cb_op_hardswish;

#endif
