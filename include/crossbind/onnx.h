/* crossbind: ONNX models, the serialization load mode.
 *
 * Import maps an ONNX graph (opsets CB_ONNX_OPSET_MIN to CB_ONNX_OPSET_MAX)
 * onto crossbind's graph: the same executor then runs it, so an imported
 * model and a built-in one share every kernel. The first dimension of each
 * graph input is the batch. Operators, attributes or layouts that crossbind
 * does not implement are refused with an error naming them; nothing is
 * approximated. Export writes a model's
 * graph (without its loss) as opset 13 (14 with a hard swish) with a
 * dynamic batch axis "N". */
#ifndef CROSSBIND_ONNX_H
#define CROSSBIND_ONNX_H

#include <stddef.h>
#include "crossbind/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Imports from memory. with_loss: also add a labels input and the loss that
 * fits the first output (softmax cross-entropy for [K] with K > 1, binary
 * cross-entropy for [1]) so that the model can be evaluated like a built-in
 * one. The model's name is "onnx". *out is owned by the caller
 * (cb_model_free). Tensors kept as external data are refused: they are
 * named relative to a file. */
cb_status cb_onnx_import(const unsigned char *buf, size_t len, const char *what, int with_loss,
                         cb_model **out);
/* Imports a file; external data is read from files named relative to its
 * directory, never outside it. */
cb_status cb_onnx_load(const char *path, int with_loss, cb_model **out);

/* cb_onnx_load with sizes for the input dimensions the file leaves
 * symbolic (cb_input_shapes; NULL: none, as cb_onnx_load). */
cb_status cb_onnx_load_shaped(const char *path, int with_loss, const cb_input_shapes *shapes, cb_model **out);

/* Writes the model's prediction graph and parameters as ONNX. */
cb_status cb_onnx_export(const cb_model *m, const char *path);

/* The ONNX operator types the importer maps, NULL-terminated, and what of
 * each one it implements (NULL for an operator it does not map). */
const char *const *cb_onnx_supported_ops(void);
const char *cb_onnx_op_notes(const char *op);
/* The versions of an operator's ONNX definition the importer reads, as
 * space-separated since_versions ("7 13 14"), or NULL. */
const char *cb_onnx_op_versions(const char *op);

/* The opsets of the default domain the importer reads. */
#define CB_ONNX_OPSET_MIN 7
#define CB_ONNX_OPSET_MAX 23

#ifdef __cplusplus
}
#endif
#endif
