/* crossbind: the built-in models of the study, as graph builders. */
#ifndef CROSSBIND_MODEL_H
#define CROSSBIND_MODEL_H

#include "crossbind/graph.h"
#include "crossbind/optim.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CB_MAX_IO 8

typedef struct cb_model {
    char name[64];
    cb_graph graph;   /* owned */
    int input;        /* node fed with the samples (= inputs[0]) */
    int labels;       /* node fed with the labels (as float); -1 if none */
    int classes;      /* outputs of the prediction (1: binary with sigmoid) */
    /* Every input and output, for models with several (ONNX imports). */
    int n_inputs, inputs[CB_MAX_IO];
    int n_outputs, outputs[CB_MAX_IO];
    /* 1 where the model file takes input k as [N,H,W,C] (TensorFlow's layout,
     * which the file transposes to [N,C,H,W] first): the graph's input node is
     * [C,H,W], and callers feeding the file's layout transpose (cb_tensor_nhwc_to_nchw). */
    unsigned char input_nhwc[CB_MAX_IO];
    /* A batch size fixed by the model file (ONNX input dims), 0 if free. */
    int64_t fixed_batch;
    /* The data set format it takes: "mnist" (28x28x1) or "cifar" (32x32x3);
     * empty for imported models (chosen by their input shape). */
    char data_format[16];
    /* ONNX imports: per graph node, the name of the ONNX value it computes
     * (the last one defined where several alias one node, e.g. through
     * Identity or Flatten), NULL where none; NULL for built-in models.
     * Owned (cb_model_free). Differential testing pairs crossbind's
     * intermediate values with another runtime's by these names. */
    char **onnx_values;
    int n_onnx_values; /* the graph's node count when they were recorded */
} cb_model;

/* The protocol's training configuration of a built-in model (section 3,
 * the default study): optimizer, learning rate, batch size, epochs. */
typedef struct cb_train_defaults {
    cb_optim_kind optimizer;
    float lr;
    int batch, epochs;
} cb_train_defaults;
cb_status cb_model_train_defaults(const char *name, cb_train_defaults *out);

/* Names of the built-in models, NULL-terminated. */
const char *const *cb_model_names(void);
/* The data set format a built-in model takes ("mnist", "cifar", "imdb"),
 * or NULL for a name that is none. */
const char *cb_model_data_format(const char *name);
/* Builds a model's graph with zeroed parameters; unknown names fail with
 * CB_ERR_NOT_FOUND and a message listing the known ones. */
cb_status cb_model_create(const char *name, cb_model **out);
void cb_model_free(cb_model *m);
/* PyTorch-default initialisation from the engine's generator. */
void cb_model_init(cb_model *m, uint64_t seed);
size_t cb_model_param_count(const cb_model *m);

/* How cb_model_load read a file. */
typedef struct cb_load_info {
    int kind;             /* a cb_file_kind (crossbind/formats.h) */
    int serialized;       /* 1: the graph came from the file (ONNX) */
    cb_param_match match; /* parameters mode: by name or by order */
    cb_param_extra extra; /* parameters mode: the file's tensors the model has no use for */
} cb_load_info;

/* Loads a model from a file, recognising the format by content. ONNX files
 * give the model (serialization mode; `name`, if given, must take the same
 * input shape); safetensors and PyTorch state dicts fill the built-in model
 * `name` (parameters mode). with_loss: see cb_onnx_import. */
cb_status cb_model_load(const char *name, const char *path, int with_loss, cb_model **out, cb_load_info *info);
/* Any weights file as named tensors (an ONNX file gives its initializers);
 * *kind is a cb_file_kind. */
cb_status cb_weights_read(const char *path, cb_tensor_list *out, int *kind);
/* Fills an existing model's parameters from any weights file (by name, or
 * by order and shape; info says which). */
cb_status cb_model_load_weights(cb_model *m, const char *path, cb_load_info *info);
/* Both load strictly (PyTorch's default): a parameters file holding tensors
 * that the model has no parameter for is refused, naming them. These take
 * the choice: strict = 0 loads such a file and lists the rest in info->extra. */
cb_status cb_model_load_ex(const char *name, const char *path, int with_loss, int strict, cb_model **out,
                           cb_load_info *info);

/* Sizes for a serialized model's input dimensions that its file leaves
 * symbolic after the batch (an ONNX dim_param or no value), such as the
 * height and width of an export with dynamic image sizes: input k has
 * ndim[k] dimensions dims[k] (the batch first, then in the file's order);
 * ndim[k] = 0 gives none. A dimension the file fixes stays as the file
 * says (the caller then checks its input against it). */
typedef struct cb_input_shapes {
    int n;
    int ndim[CB_MAX_IO];
    int64_t dims[CB_MAX_IO][CB_MAX_DIMS + 1];
} cb_input_shapes;
/* cb_model_load_ex with such sizes (NULL: none); a parameters file ignores them. */
cb_status cb_model_load_shaped(const char *name, const char *path, int with_loss, int strict,
                               const cb_input_shapes *shapes, cb_model **out, cb_load_info *info);
cb_status cb_model_load_weights_ex(cb_model *m, const char *path, int strict, cb_load_info *info);

#ifdef __cplusplus
}
#endif
#endif
