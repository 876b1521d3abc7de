/* Embedding: rows of a table by token id (ids as floats, exact below 2^24). */
#include "exec_internal.h"
#include "op.h"

static cb_status embedding_forward(const cb_step *st)
{
    const cb_node *n = st->n, *w = &st->g->nodes[n->in[1]];
    return cb_embedding_fwd((int64_t)st->batch * n->dims[0], st->x, st->ex->val[n->in[1]], w->dims[0], (int)w->dims[1],
                            st->y);
}

static cb_status embedding_backward(const cb_step *st) /* the table only: ids take no gradient */
{
    const cb_node *n = st->n;
    cb_embedding_bwd((int64_t)st->batch * n->dims[0], st->x, (int)st->g->nodes[n->in[1]].dims[1], st->dy,
                     st->ex->grad[n->in[1]]);
    return CB_OK;
}

const cb_op_desc cb_op_embedding = {.forward = embedding_forward, .backward = embedding_backward};
