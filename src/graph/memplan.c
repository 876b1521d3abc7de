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

/* A slot: one buffer that gradients with disjoint lives take in turn. */
typedef struct slot { size_t floats; int free; } slot;

cb_status cb_exec_plan_grads(const cb_exec *ex, int max_batch, size_t *goff, size_t *total)
{
    const cb_graph *g = ex->g;
    const int count = g->count;
    int *first = malloc((size_t)count * sizeof *first), *slot_of = malloc((size_t)count * sizeof *slot_of);
    int *head = malloc(((size_t)count + 1) * sizeof *head), *next = malloc((size_t)count * sizeof *next);
    slot *slots = calloc((size_t)count + 1, sizeof *slots);
    if (!first || !slot_of || !slots || !head || !next) {
        free(first), free(slot_of), free(slots), free(head), free(next);
        return cb_fail(CB_ERR_NOMEM, "out of memory planning the gradients");
    }
    /* Lives over the whole graph: a pass from a lower node only shortens them. */
    cb_exec_first_writers(ex, count - 1, first);
    int n_slots = 0;
    for (int k = 0; k <= count; k++) head[k] = -1;
    for (int i = count - 1; i >= 0; i--) { /* the planned gradients by the step that first writes them */
        const cb_node *n = &g->nodes[i];
        slot_of[i] = -1;
        if (!ex->needs_grad[i] || n->op == CB_OP_PARAM || (cb_op_desc_of(n->op)->flags & CB_OPF_VIEW)) continue;
        const int start = first[i] >= 0 ? first[i] : count; /* no writer: cleared before the pass */
        next[i] = head[start];
        head[start] = i;
    }
    /* Time runs down the nodes, as the reverse pass does; at step k the
     * gradients that k writes first are taken before k's own is given back. */
    for (int k = count; k >= 0; k--) {
        for (int i = head[k]; i >= 0; i = next[i]) {
            const size_t need = cb_node_floats(&g->nodes[i], max_batch);
            int best = -1, largest = -1;
            for (int s = 0; s < n_slots; s++) {
                if (!slots[s].free) continue;
                if (slots[s].floats >= need && (best < 0 || slots[s].floats < slots[best].floats)) best = s;
                if (largest < 0 || slots[s].floats > slots[largest].floats) largest = s;
            }
            if (best < 0) best = largest; /* it grows to fit */
            if (best < 0) best = n_slots++;
            if (slots[best].floats < need) slots[best].floats = need;
            slots[best].free = 0;
            slot_of[i] = best;
        }
        if (k < count && slot_of[k] >= 0) slots[slot_of[k]].free = 1;
    }
    size_t off = 0;
    for (int s = 0; s < n_slots; s++) {
        const size_t here = off;
        off += slots[s].floats;
        slots[s].floats = here; /* now the slot's offset */
    }
    for (int i = 0; i < count; i++)
        if (slot_of[i] >= 0) goff[i] = slots[slot_of[i]].floats;
    *total = off;
    free(first), free(slot_of), free(slots), free(head), free(next);
    return CB_OK;
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
