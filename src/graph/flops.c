/* Floating-point operation counts of a graph, for benchmarks: what fraction
 * of the machine's SGEMM throughput a binding reaches. Only the products are
 * counted (2 per multiply-add): convolutions, fully connected layers and the
 * recurrent layers' input and recurrent products; elementwise work is left
 * out, as the usual FLOP counts of these models do. */
#include "crossbind/crossbind.h"

double cb_node_forward_flops(const cb_graph *g, int node)
{
    const cb_node *n = &g->nodes[node];
    if (!n->n_in) return 0;
    const cb_node *x = &g->nodes[n->in[0]];
    switch (n->op) {
    case CB_OP_CONV2D:
        return 2.0 * (double)cb_node_numel(n) * (double)x->dims[0] / (n->groups > 1 ? n->groups : 1) * n->kh * n->kw;
    case CB_OP_LINEAR:
        return 2.0 * (double)cb_node_numel(n) * (double)cb_node_numel(x);
    case CB_OP_LSTM: case CB_OP_GRU: {
        const double t = (double)x->dims[0], d = (double)x->dims[1], h = (double)n->dims[1];
        return 2.0 * t * (d + h) * (n->op == CB_OP_LSTM ? 4 : 3) * h;
    }
    default:
        return 0;
    }
}

double cb_graph_forward_flops(const cb_graph *g)
{
    double f = 0;
    for (int i = 0; i < g->count; i++) f += cb_node_forward_flops(g, i);
    return f;
}
