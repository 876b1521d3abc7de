/* The blocked-layout rewrite of inference (blocked.c): which nodes run on
 * channel-blocked values through oneDNN, their fused post-ops, buffers and
 * copy-out steps. Internal to the executor. */
#ifndef CROSSBIND_BLOCKED_H
#define CROSSBIND_BLOCKED_H

#include "../core/json.h"
#include "exec_internal.h"

/* The plan for g, or *out = NULL where no node joins (or oneDNN is not
 * built in). Buffers and primitives are made at the first forward of each
 * batch size. fastmath: a batch normalisation right
 * after a convolution is folded into its weights (else it runs on its own,
 * in the plain step's arithmetic), and the 3x3 convolutions that
 * cb_wino_supports takes run Winograd's method (on nChw8c only). */
cb_status cb_blk_plan_create(const cb_graph *g, int max_batch, int fastmath, cb_blk_plan **out);
void cb_blk_plan_free(cb_blk_plan *p);
/* Whether node i's forward step is the plan's (p may be NULL). */
int cb_blk_member(const cb_blk_plan *p, int i);
/* Node i's forward step over samples [b0, b0 + batch): the whole batch
 * (lane -1, b0 0) on the threads, or one chunk in lane `lane` (made ready
 * for chunks of `batch` by cb_blk_lanes_ready) on its thread; ws is the
 * plain steps' workspace for that run. */
cb_status cb_blk_forward(cb_blk_plan *p, cb_exec *ex, int i, int b0, int batch, int lane, float *ws);
/* Makes `lanes` lanes ready to run chunks of `chunk` samples side by side
 * (outside any parallel region): their primitives, and the weights and
 * coefficients each pass derives from the parameters. */
cb_status cb_blk_lanes_ready(cb_blk_plan *p, cb_exec *ex, int lanes, int chunk);
/* Whether the graph's steps outside the plan read few enough parameters to
 * repeat for every chunk of a batch (lane-parallel inference). */
int cb_blk_lanes_fit(const cb_blk_plan *p, const cb_graph *g);
/* Whether node i's plain value is written by a forward pass; 0 with *by
 * the node holding the result where a post-op fused it away, 0 with *by -1
 * where it stays blocked (cb_blk_capture asks for a copy-out). */
int cb_blk_materialised(const cb_blk_plan *p, int i, int *by);
/* Adds a copy-out step for node i's blocked value (no kernel changes). */
void cb_blk_capture(cb_blk_plan *p, int i);
/* The rewrite's convolution kernels, in the order a plan tries them, with
 * their rules (crossbind plan --list-kernels). */
void cb_blk_list_kernels(cb_buf *b);
/* Node i's step as plan text. */
void cb_blk_describe(const cb_blk_plan *p, const cb_graph *g, int i, cb_buf *b);
/* Node i's floating-point operations done per sample where the plan
 * changes them, else 0 (the node's own count holds): Winograd's method
 * (its 16 point products per 2x2 block of outputs), a convolution with a
 * Pad folded in (the Pad's zeros are padding, never multiplied). */
double cb_blk_flops_done(const cb_blk_plan *p, const cb_graph *g, int i);
/* The blocked buffers' bytes, with crossbind's own convolutions'
 * workspaces: for a whole batch of `whole` samples (0: none runs whole)
 * and for `lanes` lanes of `chunk` samples. */
size_t cb_blk_bytes(const cb_blk_plan *p, const cb_graph *g, int whole, int lanes, int chunk);

#endif
