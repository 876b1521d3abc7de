/* libFuzzer target: PyTorch state dicts (zip container + pickle subset). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "crossbind/formats.h"

/* A 64 KB input may lawfully declare tensors up to the memory cap (a
 * stride-0 view of one element, say); a cap below the fuzzer's RSS limit
 * keeps such inputs refusals instead of out-of-memory reports. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setenv("CROSSBIND_WEIGHTS_MAX_MEMORY", "256M", 0);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cb_tensor_list l;
    if (cb_torch_parse(data, size, "fuzz.pt", &l) == CB_OK) cb_tensor_list_free(&l);
    return 0;
}
