/* crossbind: the static graph every model is expressed in.
 *
 * Built-in models are graph builders; importers (ONNX) produce the same
 * graph. Nodes are appended in topological order and identified by index.
 * Activation nodes carry a per-sample shape: the batch dimension is implicit
 * and chosen when an executor is created. Parameter nodes carry their full
 * shape and live in one allocation owned by the graph.
 *
 * Builder functions return the new node's index, or -1 on failure with the
 * reason in cb_last_error(); passing -1 on to another builder fails again, so
 * a builder sequence needs one check at its end. */
#ifndef CROSSBIND_GRAPH_H
#define CROSSBIND_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include "crossbind/rng.h"
#include "crossbind/status.h"
#include "crossbind/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CB_MAX_INPUTS 5

typedef enum cb_op {
    CB_OP_INPUT = 0,   /* fed by the caller: images, labels */
    CB_OP_PARAM,       /* trainable tensor */
    CB_OP_CONV2D,      /* in: x[C,H,W], weight[OC,C,KH,KW], bias[OC] (optional) */
    CB_OP_MAXPOOL2D,
    CB_OP_AVGPOOL2D,   /* count_include_pad = true, as PyTorch's default; exclude_pad: the mean of the
                        * window's input elements only (ONNX's count_include_pad = 0, TensorFlow's SAME) */
    CB_OP_LINEAR,      /* in: x[K], weight[N,K], bias[N] (optional): y = x W^T + b */
    CB_OP_TANH,
    CB_OP_RELU,
    CB_OP_SIGMOID,
    CB_OP_FLATTEN,     /* a view with new per-sample dims (flatten, reshape): shares memory */
    CB_OP_BATCHNORM2D, /* in: x[C,H,W], weight[C], bias[C], running_mean[C], running_var[C] */
    CB_OP_DROPOUT,     /* training: zero with probability p, scale the rest by 1/(1-p); inference: identity */
    CB_OP_EMBEDDING,   /* in: ids[T] (token ids as floats), weight[V,D] -> [T,D] */
    CB_OP_LSTM,        /* in: x[T,D], weight_ih[4H,D], weight_hh[4H,H], bias_ih[4H], bias_hh[4H] -> [T,H] */
    CB_OP_GRU,         /* in: x[T,D], weight_ih[3H,D], weight_hh[3H,H], bias_ih[3H], bias_hh[3H] -> [T,H] */
    CB_OP_LAST_STEP,   /* in: x[T,H] -> x[T-1] as [H] */
    CB_OP_SOFTMAX_XENT,/* in: logits[K], labels[1] (class index as float): mean loss */
    CB_OP_BCE,         /* in: probabilities[1], labels[1] (0 or 1): mean loss */
    CB_OP_ADD,         /* in: a, b of one shape: a + b (residual connections) */
    CB_OP_GLOBAL_AVGPOOL, /* in: x[C,H,W] -> [C,1,1], the mean of each plane */
    CB_OP_CLIP,        /* min(max(x, lo), hi) (ReLU6: 0, 6); NaN stays NaN */
    CB_OP_CONCAT,      /* in: 2 to CB_MAX_INPUTS tensors joined along their first per-sample dim (channels) */
    CB_OP_PAD,         /* in: x[C,H,W] -> [C,H+top+bottom,W+left+right], the border filled with lo
                        * (negative pads crop, constant mode only) */
    CB_OP_SOFTMAX,     /* softmax along per-sample dimension `axis` */
    CB_OP_MUL,         /* in: a, b: a * b, b of a's shape, or b [C,1,1] scaling each plane of a [C,H,W]
                        * (a channel gate: squeeze-and-excitation) */
    CB_OP_HARDSIGMOID, /* min(max(alpha x + beta, 0), 1); NaN stays NaN */
    CB_OP_HARDSWISH,   /* x min(max(x + 3, 0), 6) / 6, as PyTorch's hardswish */
    CB_OP_COUNT
} cb_op;

/* How a parameter is initialised by cb_graph_init_params (PyTorch defaults). */
typedef enum cb_init {
    CB_INIT_NONE = 0,
    CB_INIT_KAIMING_UNIFORM, /* a = sqrt(5): U(+-1/sqrt(fan_in)) */
    CB_INIT_FAN_IN_UNIFORM,  /* U(+-1/sqrt(fan_in)), biases */
    CB_INIT_ONE,             /* 1 (BatchNorm weights and running variances) */
    CB_INIT_NORMAL           /* N(0, 1) (embeddings) */
} cb_init;

typedef struct cb_node {
    cb_op op;
    char name[CB_MAX_NAME];
    int in[CB_MAX_INPUTS];
    int n_in;
    int ndim;                   /* per-sample for activations, full for params */
    int64_t dims[CB_MAX_DIMS];
    int batched;                /* 1: a leading batch dimension is implicit */
    int pinned;                 /* 1: the value must stay observable (a model output) */
    /* convolution and pooling attributes */
    int kh, kw, sh, sw, ph, pw;
    int dh, dw;                 /* convolution: dilation (0 or 1: none) */
    int groups;                 /* convolution: input and output channels in this many groups (0 or 1: one) */
    float lo, hi;               /* clip: the bounds; pad: lo is the fill value */
    int pads[4];                /* pad, and average pooling with exclude_pad: top, left, bottom, right */
    int pad_mode;               /* pad: a cb_pad_mode */
    int exclude_pad;            /* average pooling: divide by the input elements in the window (ph, pw: top, left) */
    int axis;                   /* softmax: the per-sample dimension */
    float alpha, beta;          /* hard sigmoid: the slope and offset; with keras_order, alpha is the scale */
    int keras_order;            /* hard sigmoid, hard swish: computed as Keras writes them (cb_graph_hard_keras) */
    /* batch normalisation and dropout */
    float eps, momentum, p;
    int reset_before;           /* GRU: 1 for the reset-before variant (GRU-rb) */
    /* parameters */
    int buffer;                 /* 1: state, not trained (BatchNorm running statistics) */
    cb_init init;
    int64_t fan_in;
    size_t param_offset;        /* in floats, into cb_graph.params / .grads */
} cb_node;

typedef struct cb_graph {
    cb_node *nodes;
    int count, capacity;
    int output;                 /* the model's prediction (logits or probabilities) */
    int loss;                   /* the training loss, -1 if none */
    float *params;              /* one allocation for all parameters ... */
    float *grads;               /* ... and one for their gradients */
    size_t n_params;            /* total floats, buffers included */
    size_t n_trainable;         /* the first n_trainable floats are trained; buffers follow */
    struct cb_name_index *names; /* internal: node names to ids, for cb_graph_find */
} cb_graph;

cb_status cb_graph_init(cb_graph *g);
void cb_graph_free(cb_graph *g);

int64_t cb_node_numel(const cb_node *n); /* per sample for batched nodes */
int cb_graph_find(const cb_graph *g, const char *name); /* -1 if absent */

/* Builders. Names of layers prefix their parameters ("conv1" -> "conv1.weight"). */
int cb_graph_input(cb_graph *g, const char *name, int ndim, const int64_t *dims);
int cb_graph_param(cb_graph *g, const char *name, int ndim, const int64_t *dims,
                   cb_init init, int64_t fan_in);
int cb_graph_conv2d(cb_graph *g, const char *name, int x, int out_ch, int kernel,
                    int stride, int pad, int bias);
int cb_graph_pool2d(cb_graph *g, cb_op op, int x, int kernel, int stride, int pad);
int cb_graph_linear(cb_graph *g, const char *name, int x, int out_features, int bias);

/* A sliding window: kernel, stride and symmetric padding per spatial axis. */
/* A window's kernel, strides, symmetric pads and (convolution only)
 * dilation: dh, dw of 0 or 1 mean none, so that a window written without
 * them is undilated. */
typedef struct cb_window { int kh, kw, sh, sw, ph, pw, dh, dw; } cb_window;
/* The same layers over parameter nodes that already exist (importers);
 * b = -1 for no bias. */
int cb_graph_conv2d_with(cb_graph *g, const char *name, int x, int w, int b, const cb_window *win);
/* ... in `groups` groups (weight [OC, C/groups, KH, KW]; depthwise: groups = C). */
int cb_graph_conv2d_grouped(cb_graph *g, const char *name, int x, int w, int b, const cb_window *win, int groups);
int cb_graph_pool2d_with(cb_graph *g, cb_op op, int x, const cb_window *win);
/* Average pooling whose padding (pads[] = top, left, bottom, right, each
 * smaller than the window; win's ph and pw are ignored) is left out of each
 * window's count: ONNX's AveragePool with count_include_pad 0, TensorFlow's
 * average pooling with SAME padding. */
int cb_graph_avgpool2d_exclude_pad(cb_graph *g, int x, const cb_window *win, const int pads[4]);
int cb_graph_linear_with(cb_graph *g, const char *name, int x, int w, int b);
/* A non-trained parameter (state saved with the weights), initialised by
 * `init` (CB_INIT_NONE: zeros, CB_INIT_ONE: ones). */
int cb_graph_buffer(cb_graph *g, const char *name, int ndim, const int64_t *dims, cb_init init);
/* 2-D batch normalisation over x[C,H,W] with parameters "<name>.weight",
 * "<name>.bias" and buffers "<name>.running_mean", "<name>.running_var";
 * PyTorch's semantics (biased variance to normalise, unbiased to update the
 * running variance; running = (1 - momentum) * running + momentum * batch).
 * Training executors use batch statistics, inference executors the running
 * ones. */
int cb_graph_batchnorm2d(cb_graph *g, const char *name, int x, float eps, float momentum);
/* The same over parameter nodes that already exist (importers). */
int cb_graph_batchnorm2d_with(cb_graph *g, const char *name, int x, int w, int b, int rm, int rv, float eps,
                              float momentum);
/* Embedding of token ids x[T] (floats holding integers) into "<name>.weight"
 * [vocab, dim], initialised N(0, 1) as PyTorch's. */
int cb_graph_embedding(cb_graph *g, const char *name, int x, int64_t vocab, int64_t dim);
/* One LSTM layer over x[T,D] (batch first) with PyTorch's gate order and
 * parameter names "<name>.weight_ih_l0", "weight_hh_l0", "bias_ih_l0",
 * "bias_hh_l0", initialised U(+-1/sqrt(hidden)); all hidden states [T,H]. */
int cb_graph_lstm(cb_graph *g, const char *name, int x, int64_t hidden);
/* One GRU layer, as cb_graph_lstm with gates r, z, n: PyTorch's GRU
 * (reset_before 0) or the reset-before variant GRU-rb (1). */
int cb_graph_gru(cb_graph *g, const char *name, int x, int64_t hidden, int reset_before);
/* The same layers over parameter nodes that already exist (importers):
 * the table [vocab, dim]; p = weight_ih, weight_hh, bias_ih, bias_hh in
 * PyTorch's layout, op CB_OP_LSTM or CB_OP_GRU. */
int cb_graph_embedding_with(cb_graph *g, const char *name, int x, int w);
int cb_graph_recurrent_with(cb_graph *g, cb_op op, const char *name, int x, const int p[4], int reset_before);
/* The last time step of x[T,H], as [H]. */
int cb_graph_last_step(cb_graph *g, int x);
/* Dropout with probability p (training executors only). */
int cb_graph_dropout(cb_graph *g, int x, float p);
/* A view of x with new per-sample dims (same element count). */
int cb_graph_reshape(cb_graph *g, int x, int ndim, const int64_t *dims);
int cb_graph_unary(cb_graph *g, cb_op op, int x); /* tanh, relu, sigmoid, hardswish, flatten */
/* Products' floating-point operations (2 per multiply-add) of one sample's
 * forward pass through a node (convolution, linear, LSTM, GRU; 0 for other
 * ops) and through the whole graph. A training step is counted as 3 times
 * the forward pass (the forward, and the two products of the backward). */
double cb_node_forward_flops(const cb_graph *g, int node);
double cb_graph_forward_flops(const cb_graph *g);
/* The same, counting only the multiply-adds done: a convolution's window
 * taps that fall on padding multiply nothing (LeNet-5's first layer, padded
 * by 2, does 92% of its nominal count). */
double cb_node_forward_flops_done(const cb_graph *g, int node);
double cb_graph_forward_flops_done(const cb_graph *g);
/* An op's short name ("conv2d", "lstm", ...); "?" for a value outside the enum. */
const char *cb_op_name(cb_op op);
/* a + b, elementwise, of two nodes with the same per-sample shape. */
int cb_graph_add(cb_graph *g, int a, int b);
/* a * b: b of a's shape, or b [C,1,1] against a [C,H,W] (a channel gate). */
int cb_graph_mul(cb_graph *g, int a, int b);
/* min(max(alpha x + beta, 0), 1) (ONNX's HardSigmoid; PyTorch's hardsigmoid
 * is alpha 1/6, beta 1/2). */
int cb_graph_hardsigmoid(cb_graph *g, int x, float alpha, float beta);
/* Keras' hard sigmoid (CB_OP_HARDSIGMOID) or hard swish (CB_OP_HARDSWISH)
 * in the order Keras computes them: h = min(max(x + 3, 0), 6) * scale
 * (scale 1/6 as float32), and x * h; every rounding as in the file's
 * Add, Clip, Mul (and Mul) chain, which is what makes one node of the
 * four exact. */
int cb_graph_hard_keras(cb_graph *g, cb_op op, int x, float scale);
/* The n tensors in[] joined along their first per-sample dimension (the
 * channels of [C,H,W]); the others must agree. More than CB_MAX_INPUTS
 * become a chain of concatenations. */
int cb_graph_concat(cb_graph *g, int n, const int *in);
/* x [C,H,W] with a border of `value`: pads[] = top, left, bottom, right
 * (explicit, asymmetric padding; maximum pooling pads with -infinity). A
 * negative pad removes that many rows or columns instead (ONNX Pad's
 * cropping, and Slice of the height and width: Keras' Cropping2D); the
 * result keeps at least one row and one column. */
int cb_graph_pad(cb_graph *g, int x, const int pads[4], float value);
/* How Pad fills the border: with a constant, the mirror image of the
 * input without its edge row (reflect: pads smaller than the input), or
 * copies of the edge row (edge). ONNX's modes; PyTorch's constant,
 * reflect and replicate. Only the constant mode crops (negative pads). */
typedef enum cb_pad_mode { CB_PAD_CONSTANT = 0, CB_PAD_REFLECT, CB_PAD_EDGE } cb_pad_mode;
int cb_graph_pad_mode(cb_graph *g, int x, const int pads[4], cb_pad_mode mode, float value);
/* Softmax along per-sample dimension `axis` (0-based, without the batch). */
int cb_graph_softmax(cb_graph *g, int x, int axis);
/* x clipped to [lo, hi]; the gradient passes where lo < x < hi (PyTorch's
 * hardtanh, of which ReLU6 is one). */
int cb_graph_clip(cb_graph *g, int x, float lo, float hi);
/* The mean of each channel's plane: [C,H,W] -> [C,1,1]. */
int cb_graph_global_avgpool(cb_graph *g, int x);
int cb_graph_loss(cb_graph *g, cb_op op, int prediction, int labels);

/* Allocates the parameter storage once all nodes exist (zero-filled). */
cb_status cb_graph_finalize(cb_graph *g);
/* PyTorch-default initialisation from the engine's generator, in node order. */
void cb_graph_init_params(cb_graph *g, cb_rng *rng);
float *cb_graph_param_data(cb_graph *g, int node);
float *cb_graph_param_grad(cb_graph *g, int node);

/* Parameters as named tensors (a copy). */
cb_status cb_graph_params_to_list(const cb_graph *g, cb_tensor_list *out);

/* How a file's tensors were matched to the graph's parameters. */
typedef enum cb_param_match { CB_MATCH_BY_NAME = 0, CB_MATCH_BY_ORDER } cb_param_match;
/* Loads parameters from named tensors (F32 or F64). By canonical name when
 * every parameter is found; otherwise by order and shape when the file's
 * floating-point tensors pair up with the parameters one to one (*how says
 * which, so that callers can tell the user); otherwise an error listing what
 * did not match. Strict, like PyTorch's load_state_dict: a list holding
 * tensors that no parameter takes is refused, naming them (PyTorch's
 * integer num_batches_tracked counters excepted: crossbind keeps none).
 * Nothing is changed unless the whole load succeeds. */
cb_status cb_graph_params_load(cb_graph *g, const cb_tensor_list *list, cb_param_match *how);
/* The tensors of a list that no parameter took. */
typedef struct cb_param_extra {
    int count;
    char names[512]; /* the first of them, comma-separated */
} cb_param_extra;
/* The same with strictness chosen: strict = 0 loads a list with extra
 * tensors too. *extra (may be NULL) receives the extra tensors either way. */
cb_status cb_graph_params_load_ex(cb_graph *g, const cb_tensor_list *list, int strict, cb_param_match *how,
                                  cb_param_extra *extra);
/* The same, without reporting how. */
cb_status cb_graph_params_from_list(cb_graph *g, const cb_tensor_list *list);

#ifdef __cplusplus
}
#endif
#endif
