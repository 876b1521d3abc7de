/* Every op's descriptor, by op. */
#include "op.h"

static const cb_op_desc *const table[CB_OP_COUNT] = {
    [CB_OP_INPUT] = &cb_op_input,
    [CB_OP_PARAM] = &cb_op_param,
    [CB_OP_CONV2D] = &cb_op_conv2d,
    [CB_OP_MAXPOOL2D] = &cb_op_maxpool2d,
    [CB_OP_AVGPOOL2D] = &cb_op_avgpool2d,
    [CB_OP_LINEAR] = &cb_op_linear,
    [CB_OP_TANH] = &cb_op_tanh,
    [CB_OP_RELU] = &cb_op_relu,
    [CB_OP_SIGMOID] = &cb_op_sigmoid,
    [CB_OP_FLATTEN] = &cb_op_flatten,
    [CB_OP_BATCHNORM2D] = &cb_op_batchnorm2d,
    [CB_OP_DROPOUT] = &cb_op_dropout,
    [CB_OP_EMBEDDING] = &cb_op_embedding,
    [CB_OP_LSTM] = &cb_op_lstm,
    [CB_OP_GRU] = &cb_op_gru,
    [CB_OP_LAST_STEP] = &cb_op_last_step,
    [CB_OP_SOFTMAX_XENT] = &cb_op_softmax_xent,
    [CB_OP_BCE] = &cb_op_bce,
    [CB_OP_ADD] = &cb_op_add,
    [CB_OP_GLOBAL_AVGPOOL] = &cb_op_global_avgpool,
    [CB_OP_CLIP] = &cb_op_clip,
    [CB_OP_CONCAT] = &cb_op_concat,
    [CB_OP_PAD] = &cb_op_pad,
    [CB_OP_SOFTMAX] = &cb_op_softmax,
    [CB_OP_MUL] = &cb_op_mul,
    [CB_OP_HARDSIGMOID] = &cb_op_hardsigmoid,
    [CB_OP_HARDSWISH] = &cb_op_hardswish,
};

const cb_op_desc *cb_op_desc_of(cb_op op)
{
    return (unsigned)op < CB_OP_COUNT ? table[op] : NULL;
}
