/* libFuzzer target: ONNX import (protobuf decoding, then graph building). */
#include <stddef.h>
#include <stdint.h>
#include "crossbind/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cb_model *m;
    if (cb_onnx_import(data, size, "fuzz.onnx", 1, &m) == CB_OK) cb_model_free(m);
    return 0;
}
