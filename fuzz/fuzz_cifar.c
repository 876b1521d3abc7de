/* libFuzzer target: CIFAR-10 binary batches. The first byte picks the split
 * and a limit; the rest is test_batch.bin, or data_batch_1.bin of a
 * training set whose other four batches hold one valid record each. */
#include "fuzz_util.h"
#include "crossbind/data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        fz_scratch("cifar");
        static uint8_t record[3073];
        record[0] = 3;
        for (int i = 2; i <= 5; i++) {
            char name[32];
            snprintf(name, sizeof name, "data_batch_%d.bin", i);
            fz_put(name, record, sizeof record);
        }
        ready = 1;
    }
    if (size == 0) return 0;
    int train = data[0] & 1;
    int64_t limit = (data[0] >> 1) & 7; /* 0: all */
    fz_put(train ? "data_batch_1.bin" : "test_batch.bin", data + 1, size - 1);
    cb_dataset d;
    if (cb_cifar_load(fz_path(0, ""), train, limit, &d) != CB_OK) return 0;
    if (d.n < 1 || (limit && d.n > limit) || d.c != 3 || d.h != 32 || d.w != 32) abort();
    for (int64_t i = 0; i < d.n; i++)
        if (!(d.y[i] >= 0 && d.y[i] <= 9)) abort();
    cb_dataset_free(&d);
    return 0;
}
