/* libFuzzer target: NumPy .npy. */
#include <stddef.h>
#include <stdint.h>
#include "crossbind/formats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cb_tensor t;
    if (cb_npy_parse(data, size, "fuzz.npy", &t) == CB_OK) cb_tensor_free(&t);
    return 0;
}
