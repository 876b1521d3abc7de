/* libFuzzer target: MNIST IDX files (plain or gzip). The reader streams
 * from files, so the input becomes the test images file (first byte even)
 * or the test labels file (odd) of a directory whose other file is valid. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "crossbind/data.h"

static char dir[64];

static void put(const char *name, const uint8_t *data, size_t size)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/crossbind-fuzz-idx-%d", (int)getpid());
        if (mkdir(dir, 0700) && access(dir, W_OK)) abort();
    }
    static const uint8_t labels[] = {0, 0, 8, 1, 0, 0, 0, 2, 3, 7};
    static uint8_t images[16 + 2 * 4];
    const uint8_t hdr[16] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2};
    memcpy(images, hdr, 16);
    int as_images = size == 0 || !(data[0] & 1);
    put("t10k-images-idx3-ubyte", as_images ? data : images, as_images ? size : sizeof images);
    put("t10k-labels-idx1-ubyte", as_images ? labels : data, as_images ? sizeof labels : size);
    cb_dataset d;
    if (cb_mnist_load(dir, 0, 0, &d) == CB_OK) cb_dataset_free(&d);
    return 0;
}
