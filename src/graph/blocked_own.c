/* crossbind's own convolution kernels in the blocked-layout plan
 * (blocked.c): their table, the rule choosing them, their converted
 * weights and workspaces. */
#include <stdlib.h>
#include "blocked_internal.h"

/* crossbind's own convolution kernels on blocked values: the direct 3x3
 * kernel of nChw16c (conv_direct16.c; ResNet-50's 3x3 layers of stride 2,
 * and at batch 1 of stride 1 on planes of 7 to 16 wide), the few-output
 * product (conv_few.c; VGG-16's last layers on 4x4 and 2x2 planes at batch
 * 1: one product streaming the weights once) and Winograd's method
 * (conv_winograd.c, fastmath only). The first two run at every level (each
 * output a direct sum). On nChw16c a plan tries Winograd's method first
 * (own_order): with 2.25x fewer multiply-adds it was faster than both at
 * batch 1 on the Intel Xeon (model 207), VGG-16's 256-channel layer on 8x8
 * planes 178 us against the direct kernel's 249 and the few-output
 * product's 293; on 4x4 planes (4 blocks, under its rule's 16) the
 * few-output product's 130 us beat its 155. On nChw8c (AVX2 builds, not
 * measured against each other) the few-output product keeps its place
 * before it. Each takes what its `supports` rule takes at the plan's
 * largest batch; oneDNN runs the others. */
const own_kernel blk_own_kernels[] = {
    [OWN_FEW] = {"few-output product",
                 "at most 64 outputs per channel at the largest batch (16 for 1x1 kernels), ungrouped, undilated",
                 0, cb_few_supports, cb_few_weight_floats, cb_few_workspace, cb_few_weights, cb_few_conv},
    [OWN_WINOGRAD] = {"winograd F(2x2,3x3)",
                      "fastmath; 3x3 stride 1, at most 256 channels in and out (nChw16c: 16 2x2 tiles or more)", 1,
                      cb_wino_supports, cb_wino_weight_floats, cb_wino_workspace, cb_wino_weights, cb_wino_conv},
    [OWN_DIRECT16] = {"direct 3x3",
                      "AVX-512 builds, nChw16c; 3x3 padding 1, rows of 7 or more; stride 2, or stride 1 at batch 1",
                      0, cb_direct16_supports, cb_direct16_weight_floats, cb_direct16_workspace, cb_direct16_weights,
                      cb_direct16_conv},
};
/* The order a plan tries them in, per block, up to OWN_NONE: on nChw16c
 * Winograd's method first (fastmath only: at fused the next that takes
 * it); on nChw8c the few-output product before it (the direct kernel is
 * nChw16c's alone). */
static const int own_order16[] = {OWN_WINOGRAD, OWN_DIRECT16, OWN_FEW, OWN_NONE};
static const int own_order8[] = {OWN_FEW, OWN_WINOGRAD, OWN_NONE};
static const int *own_order(int block) { return block == 16 ? own_order16 : own_order8; }

void cb_blk_list_kernels(cb_buf *b)
{
    cb_buf_printf(b, "convolutions of the blocked-layout rewrite (inference at fused and fastmath, oneDNN built in),\n"
                     "the first whose rule holds at the plan's largest batch, in this order on nChw16c (on nChw8c the\n"
                     "few-output product before Winograd's method):\n");
    for (int k = 0; own_order16[k] != OWN_NONE; k++)
        cb_buf_printf(b, "  %-19s cpu  fwd  %s\n", blk_own_kernels[own_order16[k]].what,
                      blk_own_kernels[own_order16[k]].rule);
    cb_buf_printf(b, "  %-19s cpu  fwd  any other\n", "onednn-blocked");
}

/* The convolutions crossbind's own kernels run, and their converted
 * weights (shared by every run). */
cb_status blk_plan_own(cb_blk_plan *p, const cb_graph *g, int fastmath)
{
    for (int i = 0; i < g->count; i++) {
        const cb_node *n = &g->nodes[i];
        if (p->role[i] != R_CONV || p->pad_from[i] >= 0) continue; /* a folded Pad's sides differ: oneDNN's */
        const cb_conv_shape s = cb_node_conv_shape(g, n, p->max_batch);
        const int *order = own_order(p->block);
        for (int k = 0; order[k] != OWN_NONE && !p->own[i]; k++) {
            const own_kernel *o = &blk_own_kernels[order[k]];
            if ((o->fastmath_only && !fastmath) || !o->supports(&s, n->groups, p->block)) continue;
            p->own[i] = (unsigned char)order[k];
            if (!(p->own_w[i] = blk_aligned_floats(o->weight_floats(&s))))
                return cb_fail(CB_ERR_NOMEM, "out of memory for a convolution's converted weights");
        }
    }
    return CB_OK;
}

/* The workspace floats crossbind's own convolutions need at `batch` on
 * `threads` threads (the largest one's: they run one at a time). */
size_t blk_own_ws_floats(const cb_blk_plan *p, const cb_graph *g, int batch, int threads)
{
    size_t ws = 0;
    for (int i = 0; i < g->count; i++) {
        if (!p->own[i]) continue;
        const cb_conv_shape s = cb_node_conv_shape(g, &g->nodes[i], batch);
        const size_t w = blk_own_kernels[p->own[i]].workspace(&s, threads);
        if (w > ws) ws = w;
    }
    return ws;
}
