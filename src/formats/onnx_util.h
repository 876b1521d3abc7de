/* Helpers shared by the ONNX importer, exporter and conformance runner. */
#ifndef CB_FORMATS_ONNX_UTIL_H
#define CB_FORMATS_ONNX_UTIL_H

#include <stdint.h>
#include "crossbind/status.h"
#include "crossbind/tensor.h"
#include "onnx.pb-c.h"

/* Walks the wire format of a message of type `d` iteratively, before
 * protobuf-c (whose decoder recurses without a limit) sees it: malformed
 * tags and lengths, messages nested too deep and subgraphs nested in node
 * attributes beyond a few levels are refused with an error naming `what`. */
cb_status cb_pb_precheck(const ProtobufCMessageDescriptor *d, const unsigned char *buf, size_t len, const char *what);

/* Unpacks a ModelProto after cb_pb_precheck, with a clear error for anything
 * either rejects. */
cb_status cb_onnx_unpack(const unsigned char *buf, size_t len, const char *what, Onnx__ModelProto **out);

/* A TensorProto's contents as a cb_tensor (F32 for float/double, I64 for
 * int64/int32), after checking that the data agrees with the declared dims.
 * Externally stored data is refused here (see cb_onnx_tensor_external). */
cb_status cb_onnx_tensor_to_cb(const Onnx__TensorProto *t, const char *what, cb_tensor *out);

/* The same for a tensor whose data lies in an external file, named
 * relative to `dir`, the model file's directory already resolved by
 * realpath (onnx_external.c); with dir NULL (a model read from memory) it
 * is refused. */
cb_status cb_onnx_tensor_external(const Onnx__TensorProto *t, const char *dir, const char *what, cb_tensor *out);

/* Whether the file open on `fd` lies below the resolved directory `dir`,
 * by the path the kernel holds for the descriptor (/proc/self/fd): what
 * was opened, not what a path named a moment before. 1 inside, 0 outside
 * (its path in `opened`, `n` bytes), -1 unknown (no /proc). */
int cb_fd_inside_dir(int fd, const char *dir, char *opened, size_t n);

#endif
