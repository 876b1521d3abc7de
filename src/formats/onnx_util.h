/* Helpers shared by the ONNX importer, exporter and conformance runner. */
#ifndef CB_FORMATS_ONNX_UTIL_H
#define CB_FORMATS_ONNX_UTIL_H

#include <stdint.h>
#include "crossbind/status.h"
#include "crossbind/tensor.h"
#include "onnx.pb-c.h"

/* Unpacks a ModelProto, with a clear error for anything protobuf-c rejects. */
cb_status cb_onnx_unpack(const unsigned char *buf, size_t len, const char *what, Onnx__ModelProto **out);

/* A TensorProto's contents as a cb_tensor (F32 for float/double, I64 for
 * int64/int32), after checking that the data agrees with the declared dims.
 * Externally stored data is refused. */
cb_status cb_onnx_tensor_to_cb(const Onnx__TensorProto *t, const char *what, cb_tensor *out);

#endif
