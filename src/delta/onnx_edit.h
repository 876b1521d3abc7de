/* ONNX files as crossbind delta reads and rewrites them for localisation:
 * the values the nodes compute in file order (with each node's op type and
 * the initializers it reads), the initializers themselves (to compare two
 * files' weights layer by layer), and copies of a file whose graph outputs
 * are other values: every intermediate (instrumentation of a runtime that
 * only returns graph outputs) or a single one (a sub-model for bisection).
 * Internal. */
#ifndef CB_DELTA_ONNX_EDIT_H
#define CB_DELTA_ONNX_EDIT_H

#include "crossbind/tensor.h"
#include "../formats/onnx_util.h"

typedef struct delta_onnx_node {
    const char *name, *op, *output; /* borrowed from the model */
    const char *inits[4];           /* the initializers among its inputs */
    int n_inits;
} delta_onnx_node;

typedef struct delta_onnx {
    Onnx__ModelProto *mp;
    delta_onnx_node *nodes;
    int n;
} delta_onnx;

cb_status delta_onnx_open(const char *path, delta_onnx *g);
void delta_onnx_close(delta_onnx *g);
/* The node computing value `name` (its first output), or -1. */
int delta_onnx_producer(const delta_onnx *g, const char *name);
/* The initializer `name` as a float tensor (owned by the caller); CB_ERR_NOT_FOUND when absent. */
cb_status delta_onnx_initializer(const delta_onnx *g, const char *name, cb_tensor *out);
/* Writes the model with graph outputs: its first output when keep_first,
 * then `names` (float32 tensors, shapes left to the runtime). */
cb_status delta_onnx_write_outputs(delta_onnx *g, const char *path, const char *const *names, int n, int keep_first);

#endif
