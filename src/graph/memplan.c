/* The gradients' memory plan: an activation's gradient lives from the first
 * backward step that writes it (its last consumer's, in the reverse pass)
 * to its own node's backward step, which reads it. Gradients whose lives do
 * not overlap share a buffer, so a training executor holds a few layers'
 * gradients at a time instead of one per activation (VGG-16's gradients
 * are as large as its activations). Each gradient is cleared when its life
 * begins, not all at once before the pass. Parameters' gradients live in
 * the graph and are not planned here. */
#include <stdlib.h>
#include <string.h>
#include "exec_internal.h"
#include "op.h"
#include "slots.h"

/* The node whose storage a view (flatten, reshape) shares. */
static int base_of(const cb_graph *g, int j)
{
    while (cb_op_desc_of(g->nodes[j].op)->flags & CB_OPF_VIEW) j = g->nodes[j].in[0];
    return j;
}

void cb_exec_first_writers(const cb_exec *ex, int top, int *first)
{
    const cb_graph *g = ex->g;
    for (int i = 0; i < g->count; i++) first[i] = -1;
    for (int k = 0; k <= top; k++) {
        const cb_node *n = &g->nodes[k];
        if (!ex->needs_grad[k]) continue;
        if (cb_exec_pooled_act(ex, k, top)) { /* its pooling writes its input's gradient */
            const int src = base_of(g, n->in[0]), p = ex->pool_after[k];
            if (p > first[src]) first[src] = p;
            continue;
        }
        for (int j = 0; j < n->n_in; j++) {
            const int b = base_of(g, n->in[j]);
            if (k > first[b]) first[b] = k;
        }
    }
}

/* Whether node i's gradient buffer is cleared before its first writer in a
 * pass from `top`: not where nothing reads it (an activation whose pooling
 * does its backward) or where its only writer stores it whole. */
int cb_exec_grad_needs_clear(const cb_exec *ex, int i, int top)
{
    const cb_node *n = &ex->g->nodes[i];
    if (!ex->grad[i] || n->op == CB_OP_PARAM || (cb_op_desc_of(n->op)->flags & CB_OPF_VIEW) || i >= top) return 0;
    if (cb_exec_pooled_act(ex, i, top)) return 0;
    return !(ex->stored_by[i] >= 0 && ex->stored_by[i] <= top);
}

cb_status cb_exec_plan_grads(const cb_exec *ex, int max_batch, size_t *goff, size_t *total)
{
    const cb_graph *g = ex->g;
    const int count = g->count;
    int *first = malloc((size_t)count * sizeof *first), *start = malloc((size_t)count * sizeof *start);
    int *end = malloc((size_t)count * sizeof *end);
    size_t *floats = malloc((size_t)count * sizeof *floats);
    if (!first || !start || !end || !floats) {
        free(first), free(start), free(end), free(floats);
        return cb_fail(CB_ERR_NOMEM, "out of memory planning the gradients");
    }
    /* Lives over the whole graph: a pass from a lower node only shortens
     * them. Time runs down the nodes, as the reverse pass does: step t is
     * node count - t's backward, and t 0 comes before every step (where a
     * gradient that no step writes is cleared). */
    cb_exec_first_writers(ex, count - 1, first);
    for (int i = 0; i < count; i++) {
        const cb_node *n = &g->nodes[i];
        start[i] = end[i] = -1;
        if (!ex->needs_grad[i] || n->op == CB_OP_PARAM || (cb_op_desc_of(n->op)->flags & CB_OPF_VIEW)) continue;
        start[i] = first[i] >= 0 ? count - first[i] : 0;
        end[i] = count - i;
        floats[i] = cb_node_floats(n, max_batch);
    }
    cb_status st = cb_slots_assign(count, start, end, floats, goff, total);
    free(first), free(start), free(end), free(floats);
    return st;
}

static void clear(cb_exec *ex, int i, int batch)
{
    ex->be->zero(ex->be_ctx, ex->grad[i], cb_node_floats(&ex->g->nodes[i], batch) * sizeof(float));
}

void cb_exec_clear_grads_before(cb_exec *ex, int top, int batch)
{
    cb_exec_first_writers(ex, top, ex->gfirst);
    for (int i = 0; i < top; i++)
        if (ex->gfirst[i] < 0 && cb_exec_grad_needs_clear(ex, i, top)) clear(ex, i, batch);
}

void cb_exec_clear_grads_at(cb_exec *ex, int k, int top, int batch)
{
    const cb_graph *g = ex->g;
    const cb_node *n = &g->nodes[k];
    for (int j = 0; j < n->n_in; j++) {
        const int b = base_of(g, n->in[j]);
        if (ex->gfirst[b] == k && cb_exec_grad_needs_clear(ex, b, top)) clear(ex, b, batch);
        /* A pooling doing its activation's backward writes the activation's input's gradient. */
        if (j == 0 && cb_exec_pooled_act(ex, n->in[0], top) && ex->pool_after[n->in[0]] == k) {
            const int src = base_of(g, g->nodes[n->in[0]].in[0]);
            if (ex->gfirst[src] == k && cb_exec_grad_needs_clear(ex, src, top)) clear(ex, src, batch);
        }
    }
}

int cb_exec_value_whole_pass(const cb_graph *g, int i)
{
    const cb_node *n = &g->nodes[i];
    return n->op == CB_OP_INPUT || n->pinned || i == g->output || i == g->loss;
}

/* The values' memory plan of an inference executor whose batch runs whole:
 * a value lives from the step that writes it (a fused group's first node
 * writes the group's result) to its last reader's step; values whose lives
 * do not overlap share a buffer. Inputs, the output, the loss and pinned
 * nodes keep theirs over the whole pass (the caller writes or reads them
 * between passes); a value no step writes (fused away, or kept blocked)
 * gets none: cb_exec_capture gives a captured one its own. Without `share`
 * (lane-parallel inference, whose lanes run different steps at once) every
 * value a step writes keeps its own buffer over the pass. */
cb_status cb_exec_plan_values(const cb_exec *ex, int max_batch, int share, size_t *voff, size_t *total)
{
    const cb_graph *g = ex->g;
    const int count = g->count;
    int *start = malloc((size_t)count * sizeof *start), *end = malloc((size_t)count * sizeof *end);
    size_t *floats = malloc((size_t)count * sizeof *floats);
    if (!start || !end || !floats) {
        free(start), free(end), free(floats);
        return cb_fail(CB_ERR_NOMEM, "out of memory planning the values");
    }
    for (int i = 0; i < count; i++) start[i] = end[i] = -1;
    for (int i = 0; i < count; i++) { /* where each life starts */
        const cb_node *n = &g->nodes[i];
        if (n->op == CB_OP_PARAM || (cb_op_desc_of(n->op)->flags & CB_OPF_VIEW)) continue;
        if (start[i] < 0 || start[i] > i) start[i] = i;
        int by;
        if (!cb_exec_materialised(ex, i, &by) && by >= 0 && (start[by] < 0 || start[by] > start[i]))
            start[by] = start[i]; /* node i's step (or its group's first) writes by's value */
    }
    for (int k = 0; k < count; k++) /* ... and where it ends: its last reader */
        for (int j = 0; j < g->nodes[k].n_in; j++) {
            const int b = base_of(g, g->nodes[k].in[j]);
            if (k > end[b]) end[b] = k;
        }
    for (int i = 0; i < count; i++) {
        const cb_node *n = &g->nodes[i];
        int by;
        if (n->op == CB_OP_PARAM || (cb_op_desc_of(n->op)->flags & CB_OPF_VIEW) || !cb_exec_materialised(ex, i, &by)) {
            start[i] = -1;
            voff[i] = CB_NO_BUFFER;
            continue;
        }
        if (!share || cb_exec_value_whole_pass(g, i)) start[i] = 0, end[i] = count - 1;
        if (end[i] < start[i]) end[i] = start[i];
        floats[i] = cb_node_floats(n, max_batch);
    }
    cb_status st = cb_slots_assign(count, start, end, floats, voff, total);
    free(start), free(end), free(floats);
    return st;
}
