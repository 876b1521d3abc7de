/* crossbind: running a graph. An executor owns all memory a graph needs for
 * a given maximum batch size, planned once at creation: nothing is allocated
 * by forward or backward. Several executors may share one graph (and so its
 * parameters), e.g. one for training and one for evaluation. */
#ifndef CROSSBIND_EXEC_H
#define CROSSBIND_EXEC_H

#include "crossbind/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The optimisation levels, each a separable variant (named as the CLI's
 * --level and every run.json name them):
 *   reference  naive loops, double accumulation: the oracle;
 *   fast       optimised kernels (BLAS, oneDNN, crossbind's own), exact
 *              math (libm's tanh and exp), no rewrites;
 *   fused      fast plus the fusions whose results stay exact: a convolution
 *              computing its ReLU (and a 2x2 max pooling after it), a max
 *              pooling doing its activation's backward, gradients stored by
 *              their only consumer instead of cleared and added to;
 *   fastmath   fused plus every activation fused, with the approximate
 *              tanh, logistic and exp of src/ops/fastmath.h: the default,
 *              and what CB_KERNELS_FAST always meant. */
typedef enum cb_kernels {
    CB_KERNELS_REFERENCE = 0, /* reference */
    CB_KERNELS_FAST,          /* fastmath */
    CB_KERNELS_EXACT,         /* fast */
    CB_KERNELS_FUSED          /* fused */
} cb_kernels;
/* "reference", "fastmath", "fast", "fused"; NULL for another value. */
const char *cb_level_name(cb_kernels k);
/* The level of that name, or -1. */
int cb_level_parse(const char *name);

typedef struct cb_exec cb_exec;

/* with_grads = 1 also plans gradient buffers, enabling cb_exec_backward. */
cb_status cb_exec_create(cb_graph *g, int max_batch, int with_grads, cb_kernels kernels,
                         cb_exec **out);
void cb_exec_free(cb_exec *ex);

/* The buffer of a node (batch-major for activations). Inputs are written
 * here before cb_exec_forward; outputs read from here after it. Above the
 * reference level, the values of inference whose batch runs whole share
 * buffers by liveness (the plan's memory line): after a pass the inputs,
 * the output, the loss and pinned nodes hold their values, and any other
 * value only if it was captured (cb_exec_capture) before the pass; a value
 * that no step writes (fused away, or kept in another layout) has no
 * buffer here (NULL) until it is captured. */
float *cb_exec_value(cb_exec *ex, int node);
/* A promise that the graph's parameters will not change while this
 * executor lives (inference of a loaded model): kernels may then keep
 * them in their own layouts after the first forward pass instead of
 * converting them at every pass. Parameters written after this call are
 * outside that promise: a pass may read the old values or the new ones. */
void cb_exec_freeze_params(cb_exec *ex);
/* Makes now, from the frozen parameters, what the executor would otherwise
 * make at a later pass once it pays for itself: the recurrent layers'
 * embedding-projection tables (10,000 x 2,048 floats for the study's LSTM,
 * about 12 GFLOP). For an executor that will serve many passes (a served
 * model, the bench's latency cells); a one-shot run skips it. Fails unless
 * cb_exec_freeze_params was called. */
cb_status cb_exec_precompute(cb_exec *ex);
/* Asks that node's value be written to its buffer (cb_exec_value) by every
 * forward pass where the plan keeps it in another layout: a copy-out step
 * after the node's own, which changes no kernel and not the plan text; a
 * value of a shared buffer (or of none) gets one of its own, so that it
 * still holds the value after the pass (counted by cb_exec_bytes). A
 * value that a fusion computes inside another node's kernel stays
 * unmaterialised (cb_exec_materialised says which node holds the result). */
cb_status cb_exec_capture(cb_exec *ex, int node);
/* Seeds the generator of dropout masks (training executors; default 0). */
void cb_exec_seed(cb_exec *ex, uint64_t seed);
/* Points an input node at caller memory (batch x per-sample floats, kept
 * alive and unchanged until the next bind) instead of copying into the
 * executor's buffer; NULL restores the executor's own buffer. Inputs that
 * need gradients cannot be bound. */
cb_status cb_exec_bind(cb_exec *ex, int node, float *data);
/* The gradient buffer of a node (NULL when not planned). With the fast
 * kernels some buffers are not written: the value of a convolution that
 * computes the activation after it, in inference that of the activation a
 * 2x2 max pooling after it is computed with, and in training the gradient
 * of an activation whose max pooling does its backward. The graph's output,
 * its inputs and pinned nodes are never fused away. Above the reference
 * level, activations' gradients share buffers by liveness (the plan's
 * memory line): an activation's gradient holds its value from the end of
 * its last consumer's backward step until its own backward step has run,
 * after which a lower node's gradient may take the buffer. Parameters'
 * gradients (in the graph) always hold the whole pass's. */
float *cb_exec_grad(cb_exec *ex, int node);
size_t cb_exec_bytes(const cb_exec *ex); /* the memory planned at creation (and captures'), in bytes */
/* The floating-point operations (2 per multiply-add) one sample's forward
 * pass does with this plan's kernels: cb_graph_forward_flops_done, but a
 * convolution run by Winograd's method counts its point products, and a
 * recurrent layer whose input projections are looked up in a table made
 * once from frozen parameters does not count them. */
double cb_exec_forward_flops_done(const cb_exec *ex);

/* Runs the whole graph on the first `batch` samples (1 <= batch <= max). */
cb_status cb_exec_forward(cb_exec *ex, int batch);
/* Gradients of the loss with respect to every parameter (into the graph's
 * gradient buffer, overwriting it) and every activation that needs one. */
cb_status cb_exec_backward(cb_exec *ex, int batch);
/* The reverse pass from any node, given the gradient of its value (batch x
 * per-sample floats): for custom objectives and for tests. The executor's
 * graph must have a loss (it decides which nodes carry gradients). */
cb_status cb_exec_backward_from(cb_exec *ex, int node, const float *dy, int batch);
/* Per-node timing: from now on each forward (backward) adds every node's
 * seconds to fwd_s[node] (bwd_s[node]); arrays of the graph's node count,
 * owned by the caller, either may be NULL; both NULL turns timing off. A
 * convolution's fused activation counts with the convolution. Sliced
 * inference (threads running the graph on parts of a batch at once) is not
 * timed per node. For benchmarks and profiling. */
void cb_exec_profile(cb_exec *ex, double *fwd_s, double *bwd_s);
/* The plan made at creation, as stable text (caller frees; NULL when out
 * of memory): how each batch size runs, and per node what runs it forward
 * and backward, each convolution's kernel named for every sample count it
 * can run at. Nodes fused into another are shown as not materialised. */
char *cb_exec_plan_text(const cb_exec *ex);
/* Whether a forward pass writes node i's value (1), or a fusion computes
 * it inside another node's kernel without storing it (0; *by is the node
 * whose value holds the fused result, else -1). Parameters: 0. */
int cb_exec_materialised(const cb_exec *ex, int node, int *by);
/* Every named convolution kernel, best first, with its backend, passes and
 * the rule under which a plan chooses it, as text (caller frees; NULL
 * when out of memory). */
char *cb_kernel_list_text(void);
/* The SHA-256 of that text, as 64 hex digits: equal hashes, equal plans. */
cb_status cb_exec_plan_sha256(const cb_exec *ex, char hex[65]);
/* Copies samples [first, first + count) of a node's value out to host
 * memory, or in from it (a node without a batch dimension: first 0,
 * count 1), through the executor's backend: what a caller uses where the
 * value may not be host memory. CB_ERR_INVALID_ARG for a value with no
 * buffer (see cb_exec_value). */
cb_status cb_exec_read(const cb_exec *ex, int node, int first, int count, float *dst);
cb_status cb_exec_write(cb_exec *ex, int node, int first, int count, const float *src);
/* The loss value of the last forward pass (the graph must have a loss). */
float cb_exec_loss(const cb_exec *ex);

#ifdef __cplusplus
}
#endif
#endif
