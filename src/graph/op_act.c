/* The activations tanh, ReLU and logistic sigmoid. A convolution may
 * compute one in its output loop (the fusion rewrite; the node then runs
 * nothing), a max pooling its backward. */
#include "exec_internal.h"
#include "op.h"

static cb_status act_forward(const cb_step *st)
{
    cb_act_fwd(cb_op_desc_of(st->n->op)->act, (int64_t)cb_node_floats(st->n, st->batch), st->x, st->y, st->fast);
    return CB_OK;
}

static cb_status act_backward(const cb_step *st)
{
    if (st->dx)
        cb_act_bwd_to(cb_op_desc_of(st->n->op)->act, (int64_t)cb_node_floats(st->n, st->batch), st->ex->val[st->i],
                      st->dy, st->dx, st->fast, cb_exec_stores_grad(st->ex, st->i));
    return CB_OK;
}

const cb_op_desc cb_op_tanh = {.flags = CB_OPF_ACT, .act = CB_ACT_TANH, .forward = act_forward, .backward = act_backward};
const cb_op_desc cb_op_relu = {.flags = CB_OPF_ACT, .act = CB_ACT_RELU, .forward = act_forward, .backward = act_backward};
const cb_op_desc cb_op_sigmoid = {
    .flags = CB_OPF_ACT, .act = CB_ACT_SIGMOID, .forward = act_forward, .backward = act_backward};
