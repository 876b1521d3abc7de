/* What the blocked-layout rewrite's three files share (blocked.c: the
 * plan; blocked_own.c: crossbind's own convolution kernels in it;
 * blocked_run.c: its runs, whole or in lanes). Not a public header. */
#ifndef CROSSBIND_BLOCKED_INTERNAL_H
#define CROSSBIND_BLOCKED_INTERNAL_H
#include "blocked.h"
#include "op.h"

enum { R_NONE = 0, R_CONV, R_POOL, R_ADD, R_ACT, R_CONCAT, R_GAP, R_BN, R_MUL, R_FUSED };
enum { MAX_POST = 4 };

enum { OWN_NONE = 0, OWN_FEW, OWN_WINOGRAD, OWN_DIRECT16 };
/* One of crossbind's own convolution kernels (blocked_own.c). */
typedef struct own_kernel {
    const char *what; /* as the plan names it */
    const char *rule; /* as --list-kernels prints it */
    int fastmath_only;
    int (*supports)(const cb_conv_shape *s, int groups, int block);
    size_t (*weight_floats)(const cb_conv_shape *s);
    size_t (*workspace)(const cb_conv_shape *s, int threads);
    void (*weights)(const cb_conv_shape *s, const float *w, float *dst);
    void (*conv)(const cb_conv_shape *s, int block, const float *x, const float *w, const float *bias,
                 const cb_blk_post *post, int npost, float *y, float *ws, int threads);
} own_kernel;
extern const own_kernel blk_own_kernels[];

/* What one run of the plan writes, made for one batch size: its
 * primitives, blocked buffers and workspaces. A whole batch has one, on
 * the executor's oneDNN context and the threads; in lane-parallel
 * inference each thread has one (a lane) for its chunks of the batch, on
 * a context of its own, single-threaded. */
typedef struct blk_run {
    int batch;              /* the batch size the primitives are made for (0: none yet) */
    int cap;                /* the samples its buffers hold */
    int threads;            /* the threads its kernels run on */
    cb_dnnl_ctx *dnnl;      /* a lane's own context, or NULL: the executor's */
    cb_blk_prim **prim, **in_reorder, **out_reorder;
    float **slot_buf;
    float *in_buf;
    float *own_ws;          /* crossbind's own convolutions' workspace (the largest one's) */
    size_t own_ws_floats;
} blk_run;

struct cb_blk_plan {
    int count, block;
    unsigned char *role;    /* R_* per node */
    unsigned char *blocked; /* the value lives in a blocked buffer */
    unsigned char *exit;    /* ... and is copied out to its plain buffer after its step (a reader outside) */
    unsigned char *captured; /* ... copied out too because a caller asked (cb_blk_capture; not in the plan) */
    int *fused_into;        /* R_FUSED: the convolution computing it; else -1 */
    int *result;            /* convolution: the node whose value holds its group's result */
    int *sum_with;          /* convolution: the Add's other operand whose buffer it accumulates into, or -1 */
    int *bn_of;             /* convolution: the batch normalisation folded into its weights and bias, or -1 */
    int *pad_from;          /* convolution: the zero Pad folded into its padding (it reads the Pad's input), or -1 */
    float **coef;           /* batch normalisation: its per-channel scales then shifts, made at each pass */
    float **fold_b;         /* convolution with bn_of: its folded bias */
    float *fold_w;          /* the folded weights of the convolution being reordered (the largest one's size) */
    unsigned char *own;     /* convolution run by one of crossbind's own kernels (OWN_*), else OWN_NONE */
    float **own_w;          /* ... its weights converted for that kernel (a batch normalisation folded in first) */
    unsigned char *own_ready; /* ... made from the weights as they are (kept where the caller froze them) */
    int threads;            /* the threads a whole batch runs on */
    int max_batch;
    int *npost;
    cb_blk_post (*post)[MAX_POST];
    int *slot;              /* blocked value: its buffer */
    int nslots;
    size_t *slot_floats;    /* per sample */
    size_t in_floats;       /* per sample: a plain input reordered for a convolution (the largest one) */
    blk_run whole;          /* a batch run whole, on the threads */
    blk_run *lanes;         /* lane-parallel inference: one per thread (cb_blk_lanes_ready) */
    int nlanes;
};


/* The floats per sample of node n's blocked value, padded channels included. */
static inline size_t blk_numel(const cb_node *n) { return (size_t)(cb_blk_padded(n->dims[0]) * n->dims[1] * n->dims[2]); }

/* The value convolution i reads (its input, or the input of the Pad
 * folded into it) and its shape at `batch` with that Pad's rows and columns
 * as padding: the far side's padding follows from the output size. */
int blk_conv_src(const cb_blk_plan *p, const cb_graph *g, int i);
cb_conv_shape blk_conv_shape(const cb_blk_plan *p, const cb_graph *g, int i, int batch);
/* Max pooling that crossbind's own blocked loop runs (oneDNN's the others). */
int blk_own_pool(const cb_graph *g, int i);
/* A Mul's second operand is a channel gate ([C,1,1]) rather than a tensor of
 * the first's shape. */
int blk_mul_gate(const cb_graph *g, const cb_node *n);
/* 64-byte aligned floats (at least one), or NULL. */
float *blk_aligned_floats(size_t n);

/* blocked_own.c: which convolutions crossbind's own kernels run, with
 * their converted weights; the workspace they need at `batch` on `threads`. */
cb_status blk_plan_own(cb_blk_plan *p, const cb_graph *g, int fastmath);
size_t blk_own_ws_floats(const cb_blk_plan *p, const cb_graph *g, int batch, int threads);

/* blocked_run.c: a run's arrays for `count` nodes, its primitives freed
 * (buffers kept), everything freed. */
cb_status blk_run_init(blk_run *r, int count, int nslots, int threads);
void blk_run_clear(blk_run *r, int count);
void blk_run_free(blk_run *r, int count, int nslots);
#endif
