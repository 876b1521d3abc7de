/* libFuzzer target: MNIST IDX files (plain or gzip). The reader streams
 * from files, so the input becomes the test images file (first byte even)
 * or the test labels file (odd) of a directory whose other file is valid.
 * The directory is the scratch one of fuzz_util.h (in /dev/shm). */
#include "fuzz_util.h"
#include "crossbind/data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t labels[] = {0, 0, 8, 1, 0, 0, 0, 2, 3, 7};
    static const uint8_t images[16 + 2 * 4] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2};
    fz_scratch("idx");
    int as_images = size == 0 || !(data[0] & 1);
    fz_put("t10k-images-idx3-ubyte", as_images ? data : images, as_images ? size : sizeof images);
    fz_put("t10k-labels-idx1-ubyte", as_images ? labels : data, as_images ? sizeof labels : size);
    cb_dataset d;
    if (cb_mnist_load(fz_path(0, ""), 0, 0, &d) == CB_OK) cb_dataset_free(&d);
    return 0;
}
