/* Nodes that run nothing: inputs (fed by the caller), parameters (owned by
 * the graph) and flatten / reshape (a view of its input's storage). */
#include "op.h"

static cb_status nothing(const cb_step *s)
{
    (void)s;
    return CB_OK;
}

const cb_op_desc cb_op_input = {.flags = CB_OPF_LEAF, .forward = nothing};
const cb_op_desc cb_op_param = {.flags = CB_OPF_LEAF, .forward = nothing};
/* Its gradient is its input's (the same storage), so backward has nothing to do either. */
const cb_op_desc cb_op_flatten = {.flags = CB_OPF_VIEW, .forward = nothing, .backward = nothing};
