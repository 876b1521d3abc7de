/* The embedding-projection rewrite of recurrent inference, at the fused and
 * fastmath levels: a recurrent layer reading an embedding multiplies each
 * step's input, a row of the embedding table, by W_ih. The product of the
 * whole table with W_ih ([vocab, 4H] for an LSTM, [vocab, 3H] for a GRU)
 * holds every row such a step can need, so the input projection becomes a
 * lookup by token id: (E W_ih^T)[id] = E[id] W_ih^T.
 *
 * Why: the study's LSTM spends 94 of its 255 GFLOP per 256 samples on the
 * input projection; the table costs 12.3 GFLOP (10,000 x 300 x 2048 x 2).
 * When it is made:
 *  - parameters frozen (cb_exec_freeze_params: `crossbind run`, the
 *    bench's cells): once for good, at the first pass that brings the
 *    tokens projected directly since the freeze to the vocabulary size (a
 *    table costs as much as projecting that many tokens, so a one-sample
 *    run never pays for one and a long run pays at most twice the better
 *    choice), or at once on request (cb_exec_precompute: a served model);
 *  - otherwise at each pass of a batch holding at least as many tokens as
 *    the vocabulary (a pass of fewer projects them directly).
 * Each table row is the same dot products as the direct projection's,
 * through the same SGEMM; the executor owns the tables. */
#include <stdlib.h>
#include "exec_internal.h"
#include "op.h"

/* The embedding node recurrent node i reads, or -1. */
static int embedding_of(const cb_graph *g, int i)
{
    const cb_node *n = &g->nodes[i];
    if (n->op != CB_OP_LSTM && n->op != CB_OP_GRU) return -1;
    const int e = n->in[0];
    return g->nodes[e].op == CB_OP_EMBEDDING ? e : -1;
}

static int gate_rows(const cb_node *n) { return (n->op == CB_OP_LSTM ? 4 : 3) * (int)n->dims[1]; }

static size_t vocab_of(const cb_graph *g, int e) { return (size_t)g->nodes[g->nodes[e].in[1]].dims[0]; }

/* A larger table (a vocabulary of millions) is not made: 256 MiB. */
#define PTABLE_MAX_FLOATS ((size_t)64 << 20)

cb_status cb_ptable_plan(cb_exec *ex)
{
    const cb_graph *g = ex->g;
    for (int i = 0; i < g->count; i++) {
        const int e = embedding_of(g, i);
        if (e < 0) continue;
        if (!ex->ptable) {
            ex->ptable = calloc((size_t)g->count, sizeof *ex->ptable);
            ex->ptable_state = calloc((size_t)g->count, 1);
            ex->ptable_direct = calloc((size_t)g->count, sizeof *ex->ptable_direct);
            if (!ex->ptable || !ex->ptable_state || !ex->ptable_direct) return cb_fail(CB_ERR_NOMEM, "out of memory planning projection tables");
        }
        const size_t floats = vocab_of(g, e) * (size_t)gate_rows(&g->nodes[i]);
        if (floats > PTABLE_MAX_FLOATS) continue;
        if (!(ex->ptable[i] = malloc(floats * sizeof(float))))
            return cb_fail(CB_ERR_NOMEM, "out of memory for node '%s''s projection table (%zu MiB)", g->nodes[i].name,
                           floats * sizeof(float) >> 20);
        ex->ptable_floats += floats;
    }
    return CB_OK;
}

void cb_ptable_free(cb_exec *ex)
{
    for (int i = 0; ex->ptable && i < ex->g->count; i++) free(ex->ptable[i]);
    free(ex->ptable);
    free(ex->ptable_state);
    free(ex->ptable_direct);
}

/* Fills node i's table from the current E and W_ih. */
static void make_table(cb_exec *ex, int i)
{
    const cb_graph *g = ex->g;
    const cb_node *n = &g->nodes[i], *emb = &g->nodes[n->in[0]];
    const int rows = gate_rows(n), d = (int)emb->dims[1];
    cb_gemm(0, 1, (int)vocab_of(g, n->in[0]), rows, d, 1.0f, ex->val[emb->in[1]], d, ex->val[n->in[1]], d, 0.0f,
            ex->ptable[i], rows);
}

void cb_ptable_refresh(cb_exec *ex, int batch)
{
    const cb_graph *g = ex->g;
    for (int i = 0; ex->ptable && i < g->count; i++) {
        if (!ex->ptable[i]) continue;
        const int e = g->nodes[i].in[0];
        const size_t vocab = vocab_of(g, e), tokens = (size_t)batch * (size_t)g->nodes[e].dims[0];
        unsigned char *st = &ex->ptable_state[i];
        if (ex->params_frozen && (*st & PTABLE_READY)) {
            *st |= PTABLE_USED;
        } else if (ex->params_frozen) { /* made once the direct projections would have cost as much */
            ex->ptable_direct[i] += tokens;
            if (ex->ptable_direct[i] >= vocab) {
                make_table(ex, i);
                *st = PTABLE_READY | PTABLE_USED;
            }
        } else if (tokens >= vocab) {
            make_table(ex, i);
            *st = PTABLE_USED;
        } else {
            *st = 0; /* this pass projects directly */
        }
    }
}

/* For frozen executors (cb_exec_precompute checks). */
void cb_ptable_make_all(cb_exec *ex)
{
    for (int i = 0; ex->ptable && i < ex->g->count; i++)
        if (ex->ptable[i] && !(ex->ptable_state[i] & PTABLE_READY)) {
            make_table(ex, i);
            ex->ptable_state[i] = PTABLE_READY;
        }
}

const float *cb_ptable_for(const cb_exec *ex, int i)
{
    return ex->ptable && ex->ptable[i] && (ex->ptable_state[i] & PTABLE_USED) ? ex->ptable[i] : NULL;
}

double cb_ptable_flops_saved(const cb_exec *ex, int i)
{
    if (!ex->ptable || !ex->ptable[i] || !ex->params_frozen) return 0;
    const cb_node *n = &ex->g->nodes[i], *emb = &ex->g->nodes[n->in[0]];
    return 2.0 * (double)emb->dims[0] * (double)emb->dims[1] * gate_rows(n);
}

void cb_ptable_describe(const cb_exec *ex, int i, cb_buf *b)
{
    if (!ex->ptable || !ex->ptable[i]) return;
    const int e = ex->g->nodes[i].in[0];
    cb_buf_printf(b, "; input projection looked up by token in a table of node %d's embedding times W_ih (made once "
                     "where the parameters are frozen, when %zu tokens have been projected directly or on request, "
                     "else at each batch of that many tokens or more)",
                  e, vocab_of(ex->g, e));
}
