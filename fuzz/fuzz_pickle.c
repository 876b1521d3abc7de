/* libFuzzer target: the state-dict pickle subset on its own. */
#include <stddef.h>
#include <stdint.h>
#include "../src/formats/pickle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pk_pool *pool;
    pk_value *v;
    if (pk_load(data, size, "fuzz.pkl", &pool, &v) == CB_OK) pk_pool_free(pool);
    return 0;
}
