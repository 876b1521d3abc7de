/* libFuzzer target: PyTorch state dicts (zip container + pickle subset). */
#include <stddef.h>
#include <stdint.h>
#include "crossbind/formats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cb_tensor_list l;
    if (cb_torch_parse(data, size, "fuzz.pt", &l) == CB_OK) cb_tensor_list_free(&l);
    return 0;
}
