/* Floating-point operation counts of a graph, for benchmarks: what fraction
 * of the machine's SGEMM throughput a binding reaches. Each op's descriptor
 * counts its own (op.h): only the products (2 per multiply-add) of
 * convolutions, fully connected layers and the recurrent layers' input and
 * recurrent products; elementwise work is left out, as the usual FLOP
 * counts of these models do. */
#include "crossbind/crossbind.h"
#include "op.h"

double cb_node_forward_flops(const cb_graph *g, int node)
{
    const cb_node *n = &g->nodes[node];
    const cb_op_desc *d = cb_op_desc_of(n->op);
    return n->n_in && d && d->flops ? d->flops(g, n) : 0;
}

double cb_graph_forward_flops(const cb_graph *g)
{
    double f = 0;
    for (int i = 0; i < g->count; i++) f += cb_node_forward_flops(g, i);
    return f;
}

double cb_node_forward_flops_done(const cb_graph *g, int node)
{
    const cb_node *n = &g->nodes[node];
    const cb_op_desc *d = cb_op_desc_of(n->op);
    if (!n->n_in || !d) return 0;
    return d->flops_done ? d->flops_done(g, n) : d->flops ? d->flops(g, n) : 0;
}

double cb_graph_forward_flops_done(const cb_graph *g)
{
    double f = 0;
    for (int i = 0; i < g->count; i++) f += cb_node_forward_flops_done(g, i);
    return f;
}
