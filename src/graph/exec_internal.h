/* The executor's state, shared by exec.c (planning and running) and
 * plan.c (the plan as text). Not part of the public API. */
#ifndef CROSSBIND_EXEC_INTERNAL_H
#define CROSSBIND_EXEC_INTERNAL_H

#include <stdint.h>
#include "crossbind/crossbind.h"
#include "../backend/backend.h"
#include "../core/json.h"
#include "../ops/ops.h"

#define FUSED_POOL 2

typedef struct cb_blk_plan cb_blk_plan;

#ifndef SLICE_SAMPLES
#define SLICE_SAMPLES 64
#endif

struct cb_exec {
    cb_graph *g;
    int max_batch;
    int with_grads;
    cb_kernels kernels;
    const cb_backend *be; /* where the arena lives; its name selects the kernels */
    void *be_ctx;
    float *arena;
    size_t arena_floats;
    float **val;
    float **own_val;     /* the planned buffer of each node (val may be rebound) */
    float **grad;
    unsigned char *needs_grad; /* does the loss depend on this node through a parameter path */
    float *ws;
    size_t ws_floats;
    int slices;          /* fast inference: threads the batch's chunks are spread over; 0: no chunks */
    int lanes;           /* ... where the blocked plan runs: in lanes (blocked.c), chunks of cb_exec_chunk */
    int recurrent;       /* the graph has a recurrent layer: its chunks grow with the batch (cb_exec_chunk) */
    unsigned char *fused; /* fast kernels: an activation node computed by the convolution before it (1), a
                           * pooling by the one two before (FUSED_POOL) */
    int *pool_after;      /* training, fast kernels: the max pooling whose backward also does this activation's, or -1 */
    int *stored_by;       /* ... and the one that stores (not adds) this node's whole gradient, or -1 */
    int *inplace;         /* training, rewrites: the node whose buffer this ReLU overwrites (plan_inplace_relu), or -1 */
    float **aux;          /* per node: BatchNorm's saved statistics, dropout's mask (training) */
    cb_rng rng;           /* dropout masks */
    size_t ws_slice;     /* workspace floats per slice */
    int kthreads;        /* the most threads the kernels run with: the workspace is sized for them */
    int big;             /* over CONV_HEAVY_FLOPS per sample: a batch smaller than the threads is not sliced */
    double *prof_fwd, *prof_bwd; /* per-node seconds added up (cb_exec_profile); NULL: off */
    cb_dnnl_ctx *dnnl;    /* oneDNN's shared buffers; NULL: no convolution goes through oneDNN */
    cb_dnnl_conv **dplan; /* per convolution node: its oneDNN plan for the last batch size, or NULL */
    unsigned char *dwant; /* per node: the passes of this convolution oneDNN runs (CB_DNNL_FWD | CB_DNNL_BWD) */
    int whole_dnnl;       /* sliced inference whose batches of several chunks run whole (whole_batch_dnnl) */
    /* The convolution kernel of every convolution node for every sample
     * count it can run at, chosen once at creation (cb_conv_kernel values,
     * indexed [node][n], n = 1..max_batch; NULL for other nodes): forward
     * outside a parallel region, forward inside one (a slice of sliced
     * inference, where oneDNN's shared buffers cannot serve; the same table
     * where nothing differs), and the backward's data and weight gradients. */
    uint8_t **kfwd, **kpar, **kdgrad, **kwgrad;
    int grad_reuse;       /* activations' gradients share buffers by liveness (memplan.c) */
    int val_reuse;        /* inference: values share buffers by liveness (memplan.c) */
    size_t val_unshared;  /* the values' floats were each its own */
    float **kept;         /* per node: the buffer cb_exec_capture gave a value of a shared or no buffer, or NULL */
    size_t kept_floats;   /* ... their floats */
    size_t val_floats, grad_floats, grad_unshared, aux_floats; /* the arena's parts (the plan prints them) */
    int *gfirst;          /* per node: the first backward step writing its gradient (a pass's scratch) */
    cb_blk_plan *blk;     /* the blocked-layout rewrite (blocked.c), or NULL */
    int params_frozen;    /* the caller promised the parameters stay as they are (cb_exec_freeze_params) */
    /* The embedding-projection rewrite (proj_table.c): per recurrent node
     * reading an embedding, its table, or NULL; PTABLE_* flags. */
    float **ptable;
    unsigned char *ptable_state;
    size_t *ptable_direct; /* per node: tokens projected directly since the parameters were frozen */
    size_t ptable_floats;
};
enum { PTABLE_READY = 1, PTABLE_USED = 2 }; /* made from frozen parameters; read by this pass */

/* The embedding-projection rewrite (proj_table.c): tables allocated at
 * creation (inference at fused and fastmath), filled before a forward pass
 * that reads them (cb_ptable_refresh) or on request (cb_ptable_make_all);
 * the table node i's step reads in this pass, or NULL. */
cb_status cb_ptable_plan(cb_exec *ex);
void cb_ptable_free(cb_exec *ex);
void cb_ptable_refresh(cb_exec *ex, int batch);
void cb_ptable_make_all(cb_exec *ex);
const float *cb_ptable_for(const cb_exec *ex, int i);
void cb_ptable_describe(const cb_exec *ex, int i, cb_buf *b);
/* Per sample, the input projection's operations node i does not do once
 * its table is made for good (frozen parameters), else 0. */
double cb_ptable_flops_saved(const cb_exec *ex, int i);

/* How cb_exec_forward runs a batch. */
typedef enum exec_mode {
    EXEC_WHOLE,     /* the whole batch through threaded kernels */
    EXEC_ONE_CHUNK, /* the whole batch on the calling thread, kernels single-threaded */
    EXEC_SLICED     /* chunks of cb_exec_chunk samples spread over `threads` threads */
} exec_mode;
/* Lane-parallel inference's chunks: the batch split evenly into chunks of
 * LANE_CHUNK_MIN to LANE_CHUNK_MAX samples, at least one per lane. */
#define LANE_CHUNK_MIN 4
#define LANE_CHUNK_MAX 8
exec_mode cb_exec_mode(const cb_exec *ex, int batch, int now_threads, int *threads);
/* The samples per chunk of sliced inference at this batch size. */
int cb_exec_chunk(const cb_exec *ex, int batch);
/* The blocked plan's buffers' bytes over every batch size the executor
 * runs (whole batches and lanes). */
size_t cb_exec_blk_bytes(const cb_exec *ex);

/* What the op descriptors' steps (op_*.c) read of the executor. */
size_t cb_node_floats(const cb_node *n, int batch);           /* a value's floats over `batch` samples */
float *cb_exec_slice(const cb_exec *ex, int node, int b0);     /* a value from sample b0 on */
cb_conv_shape cb_node_conv_shape(const cb_graph *g, const cb_node *n, int batch); /* convolution, pooling */
/* Node i's oneDNN plan for this pass and batch size (made or remade here). */
cb_status cb_exec_dnnl_plan(cb_exec *ex, int i, int pass, const cb_conv_shape *s, cb_act act, cb_dnnl_conv **out);
/* Whether activation i's backward is done by its max pooling's, in a
 * backward pass from `top`; whether node i's backward stores (not adds)
 * its first input's whole gradient. */
int cb_exec_pooled_act(const cb_exec *ex, int i, int top);
int cb_exec_stores_grad(const cb_exec *ex, int i);

/* The gradients' memory plan (memplan.c). first[i]: the first step of a
 * backward pass from `top` that writes node i's gradient, or -1. */
void cb_exec_first_writers(const cb_exec *ex, int top, int *first);
/* Whether node i's gradient is cleared before that step. */
int cb_exec_grad_needs_clear(const cb_exec *ex, int i, int top);
/* Offsets of the activations' gradients (goff, in floats from the
 * gradients' start) sharing buffers where their lives do not overlap;
 * *total: the floats they take. */
cb_status cb_exec_plan_grads(const cb_exec *ex, int max_batch, size_t *goff, size_t *total);
/* Offsets of the values of an inference executor whose batch runs whole
 * (voff, in floats from the values' start; CB_NO_BUFFER where no step
 * writes the value) sharing buffers where their lives do not overlap;
 * *total: the floats they take. */
#define CB_NO_BUFFER ((size_t)-1)
/* Whether node i's value keeps its buffer over the whole pass in that plan
 * (the caller writes or reads it between passes): inputs, the output, the
 * loss, pinned nodes. */
int cb_exec_value_whole_pass(const cb_graph *g, int i);
cb_status cb_exec_plan_values(const cb_exec *ex, int max_batch, int share, size_t *voff, size_t *total);
/* With shared buffers, a backward pass clears each gradient when its life
 * begins: those no step writes, before the pass; the others before step k
 * (its first writer) runs. */
void cb_exec_clear_grads_before(cb_exec *ex, int top, int batch);
void cb_exec_clear_grads_at(cb_exec *ex, int k, int top, int batch);

#endif


