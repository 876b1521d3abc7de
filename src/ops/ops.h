/* Kernels of every op, forward and backward side by side.
 *
 * Each op has a reference kernel (plain loops, double accumulation: the
 * oracle) and a fast kernel (BLAS, OpenMP). Backward kernels ACCUMULATE into
 * the gradients they are given (dx += ...), so a tensor consumed by several
 * nodes gets the sum; a NULL gradient pointer means "not needed".
 * Tensors are NCHW, row-major, float32. */
#ifndef CB_OPS_H
#define CB_OPS_H

#include <stddef.h>
#include <stdint.h>
#include "crossbind/rng.h"
#include "crossbind/status.h"

/* C = alpha op(A) op(B) + beta C, row-major, split across the engine's
 * threads (gemm.c). ta/tb: 1 = transposed. */
void cb_gemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
             const float *b, int ldb, float beta, float *c, int ldc);
/* c[rows] += B[rows, k] (row stride ldb) a[k] on the calling thread: a
 * slice of a matrix-vector product for callers that split the rows. */
void cb_sgemv_rows(int rows, int k, const float *b, int ldb, const float *a, float *c);

/* Batch normalisation (norm.c). saved: 2*C floats, the batch mean and
 * 1/sqrt(var + eps) per channel, written by the forward pass (may be NULL
 * in inference) and read by the backward pass. */
typedef struct cb_bn_shape { int n, c, h, w; float eps, momentum; } cb_bn_shape;
void cb_bn_fwd(const cb_bn_shape *s, int training, const float *x, const float *gamma, const float *beta,
               float *running_mean, float *running_var, float *saved, float *y, int fast);
/* Inference's per-channel scales (coef[0, c)) and shifts (coef[c, 2c)):
 * y = x * scale + shift is cb_bn_fwd's inference arithmetic. */
void cb_bn_infer_coef(int c, float eps, const float *gamma, const float *beta, const float *running_mean,
                      const float *running_var, float *coef);
/* dx is added to, or stored where store_dx (dgamma, dbeta are added to). */
void cb_bn_bwd(const cb_bn_shape *s, const float *x, const float *gamma, const float *saved, const float *dy,
               float *dx, float *dgamma, float *dbeta, int fast, int store_dx);

/* Recurrent layers (rnn.c): per sample x [t, d], hidden states y [t, h];
 * saved: [n, t, 5h] (activated gates and cell states) from the forward pass;
 * ws: cb_lstm_workspace floats for the backward pass. */
typedef struct cb_rnn_shape { int n, t, d, h; } cb_rnn_shape;
void cb_lstm_fwd(const cb_rnn_shape *s, const float *x, const float *w_ih, const float *w_hh, const float *b_ih,
                 const float *b_hh, float *y, float *saved, int fast);
void cb_lstm_bwd(const cb_rnn_shape *s, const float *x, const float *w_ih, const float *w_hh, const float *y,
                 const float *saved, const float *dy, float *dx, float *dw_ih, float *dw_hh, float *db_ih,
                 float *db_hh, float *ws, int fast);
size_t cb_lstm_workspace(const cb_rnn_shape *s);
/* Inference only (nothing saved): ws holds cb_lstm_infer_workspace floats. */
/* ids, table: where not NULL, the input projections are table rows by token id ([N, T] ids). */
void cb_lstm_infer(const cb_rnn_shape *s, const float *x, const float *w_ih, const float *w_hh, const float *b_ih,
                   const float *b_hh, float *y, float *ws, int fast, const float *ids, const float *table);
size_t cb_lstm_infer_workspace(const cb_rnn_shape *s);
/* Whether an LSTM's or GRU's inference steps multiply a recurrent matrix
 * packed once per pass where its kernels run single-threaded or it runs
 * one sample on all threads (fast levels, h a multiple of the packed panel). */
int cb_rnn_infer_packs(int h, int fast);
/* GRU (rnn.c): reset_before 0 is PyTorch's GRU, 1 the Keras reset_after=False
 * variant; saved [n, t, 6h]; ws: cb_gru_workspace floats, forward too. */
void cb_gru_fwd(const cb_rnn_shape *s, int reset_before, const float *x, const float *w_ih, const float *w_hh,
                const float *b_ih, const float *b_hh, float *y, float *saved, float *ws, int fast);
void cb_gru_bwd(const cb_rnn_shape *s, int reset_before, const float *x, const float *w_ih, const float *w_hh,
                const float *y, const float *saved, const float *dy, float *dx, float *dw_ih, float *dw_hh,
                float *db_ih, float *db_hh, float *ws, int fast);
size_t cb_gru_workspace(const cb_rnn_shape *s);
/* Inference only (nothing saved), cb_gru_fwd's arithmetic: ws holds
 * cb_gru_infer_workspace floats. */
void cb_gru_infer(const cb_rnn_shape *s, int reset_before, const float *x, const float *w_ih, const float *w_hh,
                  const float *b_ih, const float *b_hh, float *y, float *ws, int fast, const float *ids,
                  const float *table);
size_t cb_gru_infer_workspace(const cb_rnn_shape *s);
/* Embedding rows by token id (ids as floats; a non-integer or out-of-range
 * id is an error), and the gradient scattered into the rows used. */
cb_status cb_embedding_fwd(int64_t n_ids, const float *ids, const float *w, int64_t vocab, int dim, float *y);
void cb_embedding_bwd(int64_t n_ids, const float *ids, int dim, const float *dy, float *dw);

/* Dropout (dropout.c): mask holds 0 or 1/(1-p) per value. */
void cb_dropout_fwd(int64_t n, float p, cb_rng *rng, const float *x, float *mask, float *y);
void cb_dropout_bwd(int64_t n, const float *mask, const float *dy, float *dx);

/* Elementwise activations (also fused into convolution outputs). */
typedef enum { CB_ACT_TANH, CB_ACT_RELU, CB_ACT_SIGMOID, CB_ACT_NONE } cb_act;

typedef struct cb_conv_shape {
    int n, c, h, w;      /* input */
    int oc, kh, kw;      /* weight [oc, c, kh, kw] */
    int sh, sw, ph, pw;
    int dh, dw;          /* dilation, 0 or 1: none (only the reference, grouped and oneDNN kernels take one) */
    int oh, ow;          /* output */
    int exclude_pad;     /* average pooling: divide by the input elements in the window, not kh * kw */
} cb_conv_shape;

/* Convolution (cross-correlation, as PyTorch); bias may be NULL. */
void cb_conv2d_fwd_ref(const cb_conv_shape *s, const float *x, const float *w, const float *b, float *y);
void cb_conv2d_bwd_ref(const cb_conv_shape *s, const float *x, const float *w, const float *dy,
                       float *dx, float *dw, float *db);
size_t cb_conv2d_workspace(const cb_conv_shape *s); /* floats the fast kernels need at OpenMP's thread count */
/* ... when they run with at most `threads` threads (1: inside a slice of
 * sliced inference). */
size_t cb_conv2d_workspace_threads(const cb_conv_shape *s, int threads);
/* The threads a kernel that splits `units` (samples, blocks of samples)
 * across threads runs with, at most `threads`: never more than there are
 * units, so that no thread holds a workspace with nothing to do in it (at
 * --threads 300 a batch of 64 samples planned 300 per-thread buffers in
 * every slice). Its workspace is sized with the same count. */
static inline int cb_split_threads(int threads, int units)
{
    if (units < 1) units = 1;
    if (threads < 1) threads = 1;
    return units < threads ? units : threads;
}
/* Direct stride-1 convolution, forward (conv_direct.c): used by the fast
 * forward for small layers, where it beats im2col + SGEMM. */
int cb_conv2d_direct_ok(const cb_conv_shape *s);
size_t cb_conv2d_direct_workspace(const cb_conv_shape *s, int threads);
void cb_conv2d_fwd_direct(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act,
                          float *y, float *ws);
/* Direct stride-1 convolution over flattened rows (conv_flat.c), for few
 * channels: forward (y = act(conv(x))) and data gradient (dx += ...). */
int cb_conv2d_flat_ok(const cb_conv_shape *s);
size_t cb_conv2d_flat_workspace(const cb_conv_shape *s, int threads);
void cb_conv2d_fwd_flat(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act,
                        float *y, float *ws);
/* conv -> activation -> 2x2 max pooling in one pass; oh and ow must be
 * even. With full (training), full = act(conv(x)) and y = its pooling.
 * Without (inference), y = act(maxpool2x2(conv(x))), which equals
 * maxpool2x2(act(conv(x))) for the monotonic activations (to the last bit
 * where the approximations keep order), the activation on a quarter of the
 * values. */
int cb_conv2d_flat_pool_ok(const cb_conv_shape *s);
/* Whether it forms the pooling in registers (AVX-512 builds, output rows of
 * 17 to 32); elsewhere it stages the output and pools it afterwards, which
 * saves training nothing over the separate pooling pass. */
int cb_conv2d_flat_pool_in_registers(const cb_conv_shape *s);
void cb_conv2d_fwd_flat_pool(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act,
                             float *full, float *y, float *ws);
int cb_conv2d_dgrad_flat_ok(const cb_conv_shape *s);
size_t cb_conv2d_dgrad_flat_workspace(const cb_conv_shape *s, int threads);
void cb_conv2d_dgrad_flat(const cb_conv_shape *s, const float *w, const float *dy, float *dx, float *ws);
/* Whether cb_conv2d_bwd_fast takes this layer's data gradient from it. */
int cb_conv2d_dgrad_own(const cb_conv_shape *s);
/* Backward of small stride-1 convolutions with 16 samples in the vector
 * lanes (conv_nb.c; AVX-512 builds): adds to dx, dw, db (any may be NULL). */
int cb_conv2d_bwd_nb_ok(const cb_conv_shape *s);
size_t cb_conv2d_bwd_nb_workspace(const cb_conv_shape *s, int threads);
void cb_conv2d_bwd_nb(const cb_conv_shape *s, const float *x, const float *w, const float *dy, float *dx, float *dw,
                      float *db, float *ws);
/* Forward of the same layers with 16 samples in the lanes (conv_nb_fwd.c;
 * AVX-512 builds, batches of 16 or more): y = act(conv(x, w) + b), b may be
 * NULL. */
int cb_conv2d_fwd_nb_ok(const cb_conv_shape *s);
size_t cb_conv2d_fwd_nb_workspace(const cb_conv_shape *s, int threads);
void cb_conv2d_fwd_nb(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act, float *y,
                      float *ws);
/* Direct weight (and bias) gradient of a stride-1 single-input-channel
 * convolution (conv_wgrad.c), added to dw and db (db may be NULL). */
int cb_conv2d_wgrad_direct_ok(const cb_conv_shape *s);
size_t cb_conv2d_wgrad_direct_workspace(const cb_conv_shape *s, int threads);
void cb_conv2d_wgrad_direct(const cb_conv_shape *s, const float *x, const float *dy, float *dw, float *db,
                            float *ws);
/* The `fast` argument the kernels take: 0 runs the reference loops; any
 * other value the optimised ones, CB_FAST_APPROX with the approximate
 * tanh, logistic and exp of fastmath.h, CB_FAST_EXACT with libm's. */
enum { CB_FAST_APPROX = 1, CB_FAST_EXACT = 2 };

/* The convolution kernels by name: what a plan records per node and batch
 * size, and prints (cb_conv_kernel_name). */
typedef enum cb_conv_kernel {
    CB_CK_NONE = 0,     /* nothing runs (a gradient not wanted, a node fused away) */
    CB_CK_REF,          /* the reference loops */
    CB_CK_FLAT_POOL,    /* conv + activation + 2x2 max pooling over flattened rows */
    CB_CK_NB_FWD,       /* 16 samples in the vector lanes, forward */
    CB_CK_ONEDNN,       /* oneDNN's primitive (forward, or both gradients) */
    CB_CK_DENSE,        /* one product over the batch (conv_dense.c) */
    CB_CK_FLAT,         /* direct over flattened rows (conv_flat.c) */
    CB_CK_DIRECT,       /* direct stride-1 (conv_direct.c) */
    CB_CK_WHOLE_WINDOW, /* the window is the whole input: a fully connected product */
    CB_CK_IM2COL,       /* lowered chunks of samples, one SGEMM each */
    CB_CK_NB_BWD,       /* 16 samples in the vector lanes, both gradients */
    CB_CK_SMALL,        /* per-thread lowering of a few samples (small layers) */
    CB_CK_DGRAD_FLAT,   /* data gradient over flattened rows */
    CB_CK_WGRAD_DIRECT, /* direct weight and bias gradient */
    CB_CK_GROUPED,      /* grouped and depthwise convolution, direct loops (conv_grouped.c) */
    CB_CK_COUNT
} cb_conv_kernel;
const char *cb_conv_kernel_name(cb_conv_kernel k);
/* A backward pass's kernels: the data gradient's and the weight and bias
 * gradients' (the same one where one kernel does both). */
typedef struct cb_conv_bwd_choice {
    cb_conv_kernel dgrad, wgrad;
} cb_conv_bwd_choice;
/* What a convolution kernel's rule looks at (conv_kernels.c). */
typedef struct cb_conv_ctx {
    cb_conv_shape s;     /* n: the sample count */
    int groups;          /* 0 or 1: one */
    int level;           /* a cb_kernels value (crossbind/exec.h) */
    int training;        /* the executor keeps gradients */
    int pool_fused;      /* the fusion rewrite gave it its activation and a 2x2 max pooling */
    int dnnl;            /* the passes oneDNN was set up for (CB_DNNL_FWD | CB_DNNL_BWD), 0: none */
    int in_parallel;     /* runs inside a slice of sliced inference */
    const char *backend; /* NULL: "cpu" */
} cb_conv_ctx;
enum { CB_KPASS_FWD = 1, CB_KPASS_DGRAD = 2, CB_KPASS_WGRAD = 4, CB_KPASS_JOINT = 8 };
/* A named kernel, its backend, the passes it runs (JOINT: both gradients
 * in one call) and its rule, as a predicate and in words. */
typedef struct cb_conv_kernel_desc {
    cb_conv_kernel id;
    const char *name, *backend;
    unsigned passes;
    int (*supports)(const cb_conv_ctx *c);
    const char *rule;
} cb_conv_kernel_desc;
/* The kernel list, best first; the first kernel that runs a pass and
 * supports the context is chosen. */
const cb_conv_kernel_desc *cb_conv_kernel_list(int *count);
cb_conv_kernel cb_conv_select_fwd(const cb_conv_ctx *c);
cb_conv_bwd_choice cb_conv_select_bwd(const cb_conv_ctx *c, int want_dx);
/* The rules cb_conv_kernel_list reads that live with their kernels. */
int cb_conv2d_direct_pays(const cb_conv_shape *s);  /* few channels, wide rows: direct beats the GEMM */
int cb_conv2d_small_bwd_ok(const cb_conv_shape *s); /* one sample's lowered input fits in cache */
/* The runs of a chosen kernel (forward: CB_CK_DENSE, _FLAT, _DIRECT,
 * _WHOLE_WINDOW, _IM2COL; backward: what cb_conv_select_bwd returns for
 * crossbind's own kernels). */
void cb_conv2d_fwd_kernel(cb_conv_kernel k, const cb_conv_shape *s, const float *x, const float *w, const float *b,
                          cb_act act, float *y, float *ws);
void cb_conv2d_bwd_kernels(cb_conv_bwd_choice k, const cb_conv_shape *s, const float *x, const float *w,
                           const float *dy, float *dx, float *dw, float *db, float *ws);
/* Grouped convolution (conv_grouped.c): weights [OC, C/groups, KH, KW],
 * groups > 1 dividing C and OC; fast = 0 accumulates in double. The
 * forward writes y (then act); the backward adds to dx, dw, db (any NULL). */
void cb_conv2d_grouped_fwd(const cb_conv_shape *s, int groups, const float *x, const float *w, const float *b,
                           cb_act act, float *y, int fast);
void cb_conv2d_grouped_bwd(const cb_conv_shape *s, int groups, const float *x, const float *w, const float *dy,
                           float *dx, float *dw, float *db, int fast);
/* act: an activation fused into the output loop, or CB_ACT_NONE. */
void cb_conv2d_fwd_fast(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act,
                        float *y, float *ws);
void cb_conv2d_bwd_fast(const cb_conv_shape *s, const float *x, const float *w, const float *dy,
                        float *dx, float *dw, float *db, float *ws);
/* The window covers the whole unpadded input (LeNet-5's conv3): a fully
 * connected layer, which the fast kernels run as matrix products. */
int cb_conv2d_whole_window(const cb_conv_shape *s);
/* Every output position sees every input position of its plane (VGG-16's
 * 2 x 2 layers), in batches of 64 or more: one dense product each way
 * (conv_dense.c). Gradients are added to dx, dw, db (any may be NULL). */
int cb_conv2d_dense_ok(const cb_conv_shape *s);
size_t cb_conv2d_dense_workspace(const cb_conv_shape *s);
void cb_conv2d_fwd_dense(const cb_conv_shape *s, const float *x, const float *w, const float *b, cb_act act,
                         float *y, float *ws);
void cb_conv2d_bwd_dense(const cb_conv_shape *s, const float *x, const float *w, const float *dy, float *dx,
                         float *dw, float *db, float *ws, int store_dx);

/* Convolution through oneDNN (conv_dnnl.c), where the build has it and
 * CROSSBIND_CONV is not "blas". A plan holds one node's primitives for one
 * batch size; its blocked-layout buffers live in a context that every plan
 * of an executor shares (one convolution runs at a time, never inside a
 * parallel region). Backward adds to dx (may be NULL), dw and db. */
typedef struct cb_dnnl_ctx cb_dnnl_ctx;
typedef struct cb_dnnl_conv cb_dnnl_conv;
/* The passes of this layer oneDNN runs (0 where it is not built in or not
 * enabled): bits CB_DNNL_FWD, CB_DNNL_BWD. */
enum { CB_DNNL_FWD = 1, CB_DNNL_BWD = 2 };
int cb_dnnl_conv_use(const cb_conv_shape *s);
/* Whether a convolution of this shape (ungrouped, undilated) is run as a
 * matrix product rather than by oneDNN: the whole window, or the dense
 * kernel's every-output-sees-every-input case at this sample count. */
int cb_conv2d_matrix_product(const cb_conv_shape *s);
int cb_dnnl_enabled(void);                      /* built in, and not turned off by CROSSBIND_CONV */
const char *cb_dnnl_version(void);               /* NULL when not built in */
cb_status cb_dnnl_ctx_create(cb_dnnl_ctx **out);
/* A context for one lane of lane-parallel inference (src/graph/blocked_run.c):
 * its own stream, and a scratchpad of its own that every primitive made on
 * it uses (grown to the largest by cb_dnnl_ctx_scratchpad). */
cb_status cb_dnnl_ctx_create_lane(cb_dnnl_ctx **out);
int cb_dnnl_ctx_user_scratchpad(const cb_dnnl_ctx *c);
void *cb_dnnl_ctx_scratchpad(cb_dnnl_ctx *c, size_t bytes);
void cb_dnnl_ctx_free(cb_dnnl_ctx *c);
cb_status cb_dnnl_conv_create(cb_dnnl_ctx *ctx, const cb_conv_shape *s, int has_bias, cb_act act,
                              cb_dnnl_conv **out);
int cb_dnnl_conv_batch(const cb_dnnl_conv *p);
cb_status cb_dnnl_conv_fwd(cb_dnnl_conv *p, const float *x, const float *w, const float *b, float *y);
/* ws: cb_conv2d_workspace(s) floats (tiny planes take their weight gradient
 * from the im2col + BLAS product, faster there than oneDNN's). dw, db are
 * added to; dx too, or stored where store_dx. */
cb_status cb_dnnl_conv_bwd(cb_dnnl_conv *p, const float *x, const float *w, const float *dy, float *dx, float *dw,
                           float *db, float *ws, int store_dx);
void cb_dnnl_conv_free(cb_dnnl_conv *p);

/* oneDNN primitives on channel-blocked activations (dnnl_blocked.c), for
 * the blocked-layout rewrite of inference (src/graph/blocked.c). A blocked
 * value is [N, Cp/B, H, W, B] with B = cb_blk_block() (0 where oneDNN is not
 * built in) and Cp = cb_blk_padded(C): C rounded up to a multiple of B, the
 * channels past C zero where a primitive or reorder wrote them (oneDNN's
 * zero padding). Primitives are made for one batch size; they run on the
 * context's stream: never inside a parallel region, unless made on a
 * lane's context (cb_dnnl_ctx_create_lane), one lane per thread. */
typedef struct cb_blk_prim cb_blk_prim;
enum { CB_POST_SUM = 1, CB_POST_RELU, CB_POST_CLIP };
typedef struct cb_blk_post {
    int kind;     /* CB_POST_*: add the destination's old value, or an activation */
    float lo, hi; /* CB_POST_CLIP's bounds */
} cb_blk_post;
int cb_blk_block(void);
int64_t cb_blk_padded(int64_t c);
struct dnnl_engine *cb_dnnl_ctx_engine(cb_dnnl_ctx *c); /* oneDNN builds only */
struct dnnl_stream *cb_dnnl_ctx_stream(cb_dnnl_ctx *c);
/* Convolution, grouped or not, dilated or not, into a blocked y; x blocked
 * (src_blocked) or plain NCHW; post-ops in order. The weights are reordered
 * from the graph's layout at every run, or only at the first where keep_w
 * (the caller froze them, cb_exec_freeze_params). */
cb_status cb_blk_conv_create(cb_dnnl_ctx *ctx, const cb_conv_shape *s, int groups, int has_bias, int src_blocked,
                             const cb_blk_post *post, int npost, cb_blk_prim **out);
cb_status cb_blk_conv_run(cb_blk_prim *p, const float *x, const float *w, const float *b, float *y, int keep_w);
/* Whether the next cb_blk_conv_run(..., keep_w) reads w (and so whether a
 * caller that derives the weights must derive them first). */
int cb_blk_conv_reads_weights(const cb_blk_prim *p, int keep_w);
/* The reorder of cb_blk_conv_run alone: w into the primitive's layout where
 * it reads weights (before lanes run side by side, which must not). */
cb_status cb_blk_conv_ready_weights(cb_blk_prim *p, const float *w, int keep_w);
/* Makes p run on `from`'s reordered weights where both primitives take
 * them in one layout (lanes of one batch size): no copy of its own. 1 if
 * shared. `from` must outlive p's runs and be made ready first. */
int cb_blk_conv_share_weights(cb_blk_prim *p, const cb_blk_prim *from);
/* Max or average pooling (s->exclude_pad) between blocked values. */
cb_status cb_blk_pool_create(cb_dnnl_ctx *ctx, const cb_conv_shape *s, int max, cb_blk_prim **out);
cb_status cb_blk_pool_run(cb_blk_prim *p, const float *x, float *y);
/* Plain NCHW to blocked, or back (to_plain). */
cb_status cb_blk_reorder_create(cb_dnnl_ctx *ctx, int n, int c, int h, int w, int to_plain, cb_blk_prim **out);
cb_status cb_blk_reorder_run(cb_blk_prim *p, const float *x, float *y);
void cb_blk_prim_free(cb_blk_prim *p);
/* Products with a right-hand side packed once (gemm_packed.c), on the
 * calling thread: b [n, k] (row stride ldb, n a multiple of CB_PACK_PANEL)
 * packed as the panels of b^T; then c [m, n] = a [m, k] b^T, or c + that
 * where add, each element's products summed in order. */
#define CB_PACK_PANEL 16
void cb_pack_rows_as_panels(int n, int k, const float *b, int ldb, float *bp);
void cb_gemm_packed(int m, int n, int k, const float *a, int lda, const float *bp, float *c, int ldc, int add);
/* Winograd F(2x2, 3x3) convolution between blocked values (conv_winograd.c;
 * block 8 or 16), for the fastmath level: 3x3, stride 1, padding 1,
 * undilated, ungrouped, channels a multiple of the block, output channels
 * of 16, both at most 256, and on nChw16c at least 96 tiles of 2x2
 * outputs over s->n samples (the measured rules). u holds
 * cb_wino_weight_floats(s) transformed weights (cb_wino_weights, from
 * [oc, c, 3, 3]); ws cb_wino_workspace(s, threads) floats. Post-ops in
 * order, CB_POST_SUM reading y's old value. Runs on `threads` threads,
 * never inside a parallel region. */
int cb_wino_supports(const cb_conv_shape *s, int groups, int block);
size_t cb_wino_weight_floats(const cb_conv_shape *s);
size_t cb_wino_workspace(const cb_conv_shape *s, int threads);
void cb_wino_weights(const cb_conv_shape *s, const float *w, float *u);
void cb_wino_conv(const cb_conv_shape *s, int block, const float *x, const float *u, const float *bias,
                  const cb_blk_post *post, int npost, float *y, float *ws, int threads);
/* A convolution with at most 64 outputs per channel (s->n x oh x ow; 16
 * for 1x1 kernels) between blocked values (conv_few.c; block 8 or 16): ungrouped,
 * undilated, channels a multiple of the block, output channels of 16; each
 * output a direct sum over (kh, kw, c) in order. wp holds
 * cb_few_weight_floats(s) weights packed by cb_few_weights from
 * [oc, c, kh, kw]; ws cb_few_workspace(s, threads) floats; post-ops as
 * cb_wino_conv's. Runs on `threads` threads, never inside a parallel
 * region. */
int cb_few_supports(const cb_conv_shape *s, int groups, int block);
size_t cb_few_weight_floats(const cb_conv_shape *s);
void cb_few_weights(const cb_conv_shape *s, const float *w, float *wp);
size_t cb_few_workspace(const cb_conv_shape *s, int threads); /* the same at any thread count */
void cb_few_conv(const cb_conv_shape *s, int block, const float *x, const float *wp, const float *bias,
                 const cb_blk_post *post, int npost, float *y, float *ws, int threads);
/* A 3x3 convolution, stride 1 or 2, padding 1, ungrouped and undilated,
 * between nChw16c values (conv_direct16.c): channels a multiple of 16,
 * output channels of 32. What a plan gives it (supports, the measured
 * rule) is less: AVX-512 builds only, rows of 7 outputs or more, and
 * stride 1 only for s->n == 1. wp holds
 * cb_direct16_weight_floats(s) weights packed by cb_direct16_weights from
 * [oc, c, 3, 3]; ws cb_direct16_workspace(s, threads) floats; post-ops as
 * cb_wino_conv's. Runs on `threads` threads, never inside a parallel
 * region. */
int cb_direct16_fits(const cb_conv_shape *s, int groups, int block);
int cb_direct16_supports(const cb_conv_shape *s, int groups, int block);
size_t cb_direct16_weight_floats(const cb_conv_shape *s);
void cb_direct16_weights(const cb_conv_shape *s, const float *w, float *wp);
size_t cb_direct16_workspace(const cb_conv_shape *s, int threads);
void cb_direct16_conv(const cb_conv_shape *s, int block, const float *x, const float *wp, const float *bias,
                      const cb_blk_post *post, int npost, float *y, float *ws, int threads);
/* Steps of crossbind's own on blocked values. */
void cb_blk_add(const float *a, const float *b, float *y, size_t n);
void cb_blk_mul(const float *a, const float *b, float *y, size_t n);
/* Each channel plane times its value of a plain gate [N, C] (squeeze-and-excitation). */
void cb_blk_mul_gate(const float *x, const float *gate, float *y, int n, int c, int hw);
/* 2x2, stride 2, unpadded max pooling of a blocked [N, Cp/B, H, W, B] value
 * (oh = h / 2, ow = w / 2), NaN winning as in the plain step. */
void cb_blk_maxpool2x2(const float *x, float *y, int n, int c, int h, int w);
/* y = x * scale[c] + shift[c] on a blocked [N, C/B, HW, B] value, C a
 * multiple of B (no padded channels); coef: C scales, then C shifts. */
void cb_blk_scale_shift(const float *x, const float *coef, float *y, int n, int c, int hw);
void cb_blk_global_avgpool(const float *x, float *y, int n, int c, int hw); /* y plain [N, C] */
/* Channel concatenation; every input's channels a multiple of B. */
void cb_blk_concat(const float *const *xs, const int64_t *sample_floats, int k, float *y, int n);

/* Pooling (uses kh, kw, sh, sw, ph, pw, oh, ow; oc is ignored). Max pooling
 * propagates NaN and, on ties, routes the gradient to the first maximum in
 * scan order, as PyTorch does. Average pooling counts padding (PyTorch's
 * default count_include_pad = true). */
void cb_maxpool_fwd(const cb_conv_shape *s, const float *x, float *y, int fast);
void cb_maxpool_bwd(const cb_conv_shape *s, const float *x, const float *dy, float *dx, int fast);
/* The backward of act followed by max pooling in one pass: x is the
 * activation's output (the pooling's input), y the pooling's output, dy its
 * gradient; adds dy * act'(y) at each window's maximum to dx, the gradient
 * of the activation's input. The same values as the two backward passes;
 * the other positions, which would get 0 * act'(x), are not touched (so a
 * NaN there does not spread to them). */
void cb_maxpool_act_bwd(const cb_conv_shape *s, cb_act act, const float *x, const float *y, const float *dy,
                        float *dx, int fast, int store);
/* Whether cb_maxpool_act_bwd with store = 1 writes every element of dx
 * (2x2 windows tiling the plane; fast kernels) instead of adding, so that dx
 * need not be cleared first. With store = 1 on other shapes it adds. */
int cb_maxpool_act_bwd_stores(const cb_conv_shape *s, int fast);
void cb_avgpool_fwd(const cb_conv_shape *s, const float *x, float *y, int fast);
void cb_avgpool_bwd(const cb_conv_shape *s, const float *dy, float *dx, int fast);

/* Linear: y[n,o] = x[n,k] w[o,k]^T + b[o]. */
void cb_linear_fwd_ref(int n, int k, int o, const float *x, const float *w, const float *b, float *y);
void cb_linear_bwd_ref(int n, int k, int o, const float *x, const float *w, const float *dy,
                       float *dx, float *dw, float *db);
void cb_linear_fwd_fast(int n, int k, int o, const float *x, const float *w, const float *b, float *y);
void cb_linear_bwd_fast(int n, int k, int o, const float *x, const float *w, const float *dy,
                        float *dx, float *dw, float *db);

/* Elementwise activations. The backward kernels use the forward OUTPUT y. */
void cb_act_fwd(cb_act a, int64_t n, const float *x, float *y, int fast);
/* The fast forward of an activation in place on one thread, for kernels
 * that fuse it into their output loop (CB_ACT_NONE: nothing). */
void cb_act_fwd_inplace(cb_act a, int64_t n, float *y);
void cb_act_bwd(cb_act a, int64_t n, const float *y, const float *dy, float *dx, int fast);
/* The same, storing dx (store) instead of adding to it: for a gradient this
 * activation's backward alone makes, which then need not be cleared first. */
void cb_act_bwd_to(cb_act a, int64_t n, const float *y, const float *dy, float *dx, int fast, int store);

/* Losses: the mean over the batch. Labels are class indices (softmax
 * cross-entropy) or 0/1 targets (binary cross-entropy on probabilities),
 * stored as float. Forward fails cleanly on an invalid label. */
cb_status cb_softmax_xent_fwd(int n, int k, const float *logits, const float *labels, float *loss);
void cb_softmax_xent_bwd(int n, int k, const float *logits, const float *labels, float dloss,
                         float *dlogits);
cb_status cb_bce_fwd(int n, const float *p, const float *labels, float *loss);
void cb_bce_bwd(int n, const float *p, const float *labels, float dloss, float *dp);

#endif
