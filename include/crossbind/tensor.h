/* crossbind: named dense tensors, as exchanged with files and other bindings.
 *
 * Ownership: a cb_tensor_list owns every tensor in it and each tensor owns its
 * data. cb_tensor_list_free() releases everything. */
#ifndef CROSSBIND_TENSOR_H
#define CROSSBIND_TENSOR_H

#include <stddef.h>
#include <stdint.h>
#include "crossbind/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CB_MAX_DIMS 8
#define CB_MAX_NAME 128

typedef enum cb_dtype { CB_F32 = 0, CB_F64, CB_I64, CB_I32, CB_U8 } cb_dtype;

typedef struct cb_tensor {
    char name[CB_MAX_NAME];
    cb_dtype dtype;
    int ndim;
    int64_t shape[CB_MAX_DIMS];
    void *data; /* owned, contiguous, row-major, native (little-endian) order */
} cb_tensor;

typedef struct cb_tensor_list {
    cb_tensor *items;
    int count;
    int capacity;
} cb_tensor_list;

size_t cb_dtype_size(cb_dtype t);
const char *cb_dtype_name(cb_dtype t);
int64_t cb_tensor_numel(const cb_tensor *t);
/* A float32 [N,H,W,C] tensor (TensorFlow's image layout) rearranged as
 * [N,C,H,W] in place (its data reallocated): how a model file that takes
 * [N,H,W,C] is fed (cb_model.input_nhwc). Other tensors are refused. */
cb_status cb_tensor_nhwc_to_nchw(cb_tensor *t);
/* A float64 or int64 (token ids) tensor converted to float32 in place (the
 * executor's one type); ids must stay exact, |id| < 2^24, or the tensor is
 * refused. `path` names the file in messages. float32 is left as it is. */
cb_status cb_tensor_to_f32(cb_tensor *t, const char *path);

/* Appends a tensor with a copy of `data` (NULL: zero-filled). */
cb_status cb_tensor_list_add(cb_tensor_list *list, const char *name, cb_dtype dtype,
                             int ndim, const int64_t *shape, const void *data);
/* Finds a tensor by exact name; NULL when absent. */
const cb_tensor *cb_tensor_list_find(const cb_tensor_list *list, const char *name);
void cb_tensor_list_free(cb_tensor_list *list);

/* safetensors files (https://huggingface.co/docs/safetensors format):
 * an 8-byte little-endian header length, a JSON header, raw data. */
cb_status cb_safetensors_read(const char *path, cb_tensor_list *out);
/* Writes atomically: a temporary file renamed into place, so an interrupted
 * or failed write never leaves a file that looks complete. `metadata` may be
 * NULL or a NULL-terminated key, value, key, value, ... array of strings. */
cb_status cb_safetensors_write(const char *path, const cb_tensor_list *list,
                               const char *const *metadata);

#ifdef __cplusplus
}
#endif
#endif
