/* Internal: the ONNX importer's state and helpers, shared by the files
 * that map operators (onnx_import.c, onnx_import_seq.c). */
#ifndef CB_ONNX_IMPORT_INTERNAL_H
#define CB_ONNX_IMPORT_INTERNAL_H

#include "crossbind/crossbind.h"
#include "onnx_util.h"
#include "../core/names.h"

/* How a value relates to its graph node (crossbind's activations are batch
 * first; ONNX's recurrent layers are time major). */
typedef enum {
    IMP_PLAIN = 0,     /* the node's output itself, [N, ...] */
    IMP_TIME_MAJOR,    /* [T, N, F]: the node's [N, T, F] output transposed */
    IMP_RNN_Y,         /* [T, 1, N, H]: a recurrent layer's Y output */
    IMP_RNN_Y_LAST,    /* [1, N, H]: its Y_h output (the last step) */
    IMP_UNAVAILABLE,   /* an output crossbind does not compute (LSTM Y_c) */
    IMP_SHAPE_EXPR,    /* computed from tensor shapes only (Shape, Gather, Unsqueeze, Concat) */
    IMP_ZEROS,         /* ConstantOfShape(0) of a shape expression: zeros (initial states) */
    IMP_NHWC,          /* [N,H,W,C]: the node's [N,C,H,W] output transposed (an image input in
                        * TensorFlow's layout, read through Transpose [0,3,1,2]) */
    IMP_MATMUL,        /* MatMul(node's output, constant): a linear layer not made yet, so that an Add
                        * of a constant after it can become its bias (imp_materialise) */
    IMP_CHANNEL        /* one channel of the node's [N,C,H,W] output times a scale plus a shift
                        * (onnx_import_channel.c) */
} imp_layout;

/* IMP_CHANNEL: channel `index` of the node's output, [N,H,W] or with the
 * channel axis kept ([N,1,H,W]), times scale plus shift. */
typedef struct imp_channel {
    int index, kept;
    float scale, shift;
} imp_channel;

typedef struct value {
    const char *name;   /* borrowed from the ModelProto */
    int node;           /* activation: its graph node; -1 for a constant */
    cb_tensor constant; /* constant: decoded data (owned) */
    imp_layout layout;  /* activation: see imp_layout */
    const Onnx__NodeProto *matmul; /* IMP_MATMUL: the MatMul node */
    imp_channel channel;           /* IMP_CHANNEL: which channel, and its map */
    int next_copy;      /* constant: where the search for its next parameter's name starts (0: the
                         * name itself, k: "name#k"); names taken once stay taken */
} value;

/* A parameter created from a constant, filled once the graph is finalized. */
typedef struct pending { int node; float *data; } pending;

typedef struct importer {
    const char *what;
    Onnx__GraphProto *gp;
    cb_model *m;
    value *vals;
    int n_vals, cap_vals;
    cb_name_index val_names; /* vals by name: a file of many values stays linear */
    pending *pend;
    int n_pend, cap_pend;
    int64_t opset;           /* of the default domain */
    const char *dir;         /* the model file's directory (external data), or NULL */
    const cb_input_shapes *shapes; /* sizes for symbolic input dims, or NULL */
    int as_stored;           /* the node being converted reads IMP_NHWC values as stored (onnx_import_nhwc.c) */
    unsigned char *skip;     /* per graph node: folded into another's conversion (onnx_import_hard.c) */
} importer;

value *imp_lookup(importer *im, const char *name);
/* A new value named `name` (a constant until its node is set). */
value *imp_define(importer *im, const char *name);
const Onnx__AttributeProto *imp_attr(const Onnx__NodeProto *n, const char *name);
int64_t imp_attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt);
/* The dims a Shape node returns, [*begin, *end) of `rank` (its start and
 * end attributes, opset 15 on). */
void imp_shape_range(const Onnx__NodeProto *n, int64_t rank, int64_t *begin, int64_t *end);
float imp_attr_float(const Onnx__NodeProto *n, const char *name, float dflt);
int imp_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int max, int dflt_len, int64_t dflt);
const char *imp_attr_str(const Onnx__NodeProto *n, const char *name, const char *dflt, char *buf, size_t size);
cb_status imp_unsupported(importer *im, const Onnx__NodeProto *n, const char *why);
/* The plain activation feeding input i of node n (or one in TensorFlow's
 * layout while im->as_stored). */
cb_status imp_activation(importer *im, const Onnx__NodeProto *n, size_t i, int *node);
/* Whether node n reads a computed value in `layout`. */
int imp_reads_layout(importer *im, const Onnx__NodeProto *n, imp_layout layout);
/* The same, also accepting an IMP_NHWC value: *nhwc says which it is. */
cb_status imp_activation_nhwc(importer *im, const Onnx__NodeProto *n, size_t i, int *node, int *nhwc);
/* The constant feeding input i (NULL when the optional input is absent). */
cb_status imp_constant(importer *im, const Onnx__NodeProto *n, size_t i, const cb_tensor **out);
/* A parameter node holding a copy of `data`, stored once the graph is final. */
cb_status imp_param(importer *im, const char *name, int ndim, const int64_t *dims, const float *data, int *node);

/* Axes of [N,C,H,W] as given (negative ones counted from the end) into
 * 0..3, each at most once; an error names the node otherwise. */
cb_status imp_norm_axes(importer *im, const Onnx__NodeProto *n, int64_t *axes, int64_t na);
/* Slice of a computed [N,C,H,W] tensor's height and width: a cropping Pad
 * (onnx_import_slice.c). */
cb_status imp_slice(importer *im, const Onnx__NodeProto *n, int *out, int *nhwc);

/* The linear layer of an IMP_MATMUL value, with `bias` (may be NULL; named
 * bias_name) added: the value becomes that layer's plain output. */
cb_status imp_materialise(importer *im, value *v, const char *bias_name, const cb_tensor *bias);

/* Sequence operators (onnx_import_seq.c). Each defines all of its outputs
 * itself. */
cb_status imp_transpose(importer *im, const Onnx__NodeProto *n);
cb_status imp_squeeze(importer *im, const Onnx__NodeProto *n);
cb_status imp_gather(importer *im, const Onnx__NodeProto *n);
cb_status imp_recurrent(importer *im, const Onnx__NodeProto *n);
/* The axes of a Squeeze or Unsqueeze: the attribute (opset < 13) or the
 * constant input; -1 where they are not constant int64 values. */
int imp_axes(importer *im, const Onnx__NodeProto *n, int64_t *axes, int max);
/* Per-channel input maps written channel by channel (onnx_import_channel.c):
 * Gather of one channel along axis 1 (*handled 0 where the node is not
 * that), its Unsqueeze, Mul or Add of a scalar constant, and the Concat of
 * such channels of one tensor (imp_reads_layout IMP_CHANNEL: whether a node reads
 * one), which becomes a 1x1 convolution. */
cb_status imp_channel_gather(importer *im, const Onnx__NodeProto *n, const value *data, int *handled);
cb_status imp_channel_unsqueeze(importer *im, const Onnx__NodeProto *n, const value *v);
cb_status imp_channel_affine(importer *im, const Onnx__NodeProto *n);
cb_status imp_channel_concat(importer *im, const Onnx__NodeProto *n, int *out);
/* Images in TensorFlow's layout between convolutions (onnx_import_nhwc.c):
 * how a node reading an IMP_NHWC value may read it. */
typedef enum {
    IMP_NHWC_AWARE,     /* the operator's converter handles the layout itself (or none is read) */
    IMP_NHWC_AS_STORED, /* elementwise: runs on the stored [N,C,H,W] tensors, its result IMP_NHWC */
    IMP_NHWC_FLAT       /* Flatten or Reshape of [N,1,1,C]: the same numbers in either layout */
} imp_nhwc_use;
/* How n reads its IMP_NHWC inputs; refuses (with a message) a reader not
 * implemented. */
cb_status imp_nhwc_plan(importer *im, const Onnx__NodeProto *n, imp_nhwc_use *use);
/* Maps n normalised axes of a [N,H,W,C] tensor onto [N,C,H,W]. */
void imp_nhwc_axes(int64_t *axes, int n);
/* Keras' hard sigmoid or hard swish chain starting at Add node `add`
 * (onnx_import_hard.c): made one node, its last value defined, the nodes
 * folded in marked in im->skip; *handled 0 where `add` starts none. */
cb_status imp_hard_keras(importer *im, const Onnx__NodeProto *add, int *handled);
/* Mul, Add, Sub or Div of a computed [N,C,H,W] tensor and a constant of one
 * value per channel or a scalar: a depthwise 1x1 convolution. */
cb_status imp_channel_broadcast(importer *im, const Onnx__NodeProto *n, int *out, int *nhwc);
/* Constant folding (onnx_fold.c): where every input of a shape-arithmetic
 * node (ConstantOfShape, Concat, Reshape, Slice, Transpose, Cast,
 * Unsqueeze, Squeeze, Gather, Shape, Identity) is a constant, evaluates it
 * and defines its output as a constant (*folded = 1). */
cb_status imp_fold(importer *im, const Onnx__NodeProto *n, int *folded);
/* Shape arithmetic that exporters use to build zero initial states. */
cb_status imp_shape_op(importer *im, const Onnx__NodeProto *n);

#endif
