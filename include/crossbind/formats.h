/* crossbind: model and tensor file formats other than safetensors.
 *
 * Every reader parses from memory (the *_parse functions, which tests and
 * fuzzers call directly); the path functions read the file and parse it.
 * Readers check every size and offset against the data before using it and
 * never execute anything a file contains. Writers write atomically: a
 * temporary file renamed into place. */
#ifndef CROSSBIND_FORMATS_H
#define CROSSBIND_FORMATS_H

#include <stddef.h>
#include <stdio.h>
#include "crossbind/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PyTorch state dicts as torch.save(model.state_dict(), f) writes them: a
 * zip archive holding data.pkl (a pickle) and data/<key> storages. Only the
 * pickle subset of state dicts is read (OrderedDict, tensors, storages);
 * anything else is refused by name. Tensors come out contiguous, in file
 * order, honouring shape, stride and storage offset; half and bfloat16 are
 * widened to F32, int8/int16 to I32, bool to U8. */
cb_status cb_torch_parse(const unsigned char *buf, size_t len, const char *what, cb_tensor_list *out);
cb_status cb_torch_read(const char *path, cb_tensor_list *out);
/* Writes an OrderedDict of tensors that torch.load reads back. */
cb_status cb_torch_write(const char *path, const cb_tensor_list *list);

/* NumPy .npy files (format versions 1 to 3; little-endian f4, f8, i8, i4,
 * u1; C order). The tensor's name is left empty. */
cb_status cb_npy_parse(const unsigned char *buf, size_t len, const char *what, cb_tensor *out);
cb_status cb_npy_read(const char *path, cb_tensor *out);
cb_status cb_npy_write(const char *path, const cb_tensor *t);
/* The header of a .npy file of this dtype and shape, written to `out`
 * (named `path` in errors): the caller streams the C-order data after it. */
cb_status cb_npy_write_header(FILE *out, const char *path, cb_dtype dtype, int ndim, const int64_t *shape);
/* Frees a tensor's data (one not held in a list). */
void cb_tensor_free(cb_tensor *t);

/* safetensors from memory (cb_safetensors_read reads a file). */
cb_status cb_safetensors_parse(const unsigned char *buf, size_t len, const char *what, cb_tensor_list *out);

/* What a weights or model file is, recognised by content. */
typedef enum cb_file_kind {
    CB_FILE_UNKNOWN = 0, CB_FILE_SAFETENSORS, CB_FILE_TORCH_ZIP, CB_FILE_TORCH_LEGACY,
    CB_FILE_ONNX, CB_FILE_NPY
} cb_file_kind;
cb_file_kind cb_file_kind_of(const unsigned char *head, size_t n);
cb_status cb_file_kind_read(const char *path, cb_file_kind *out);
const char *cb_file_kind_name(cb_file_kind k);

#ifdef __cplusplus
}
#endif
#endif
