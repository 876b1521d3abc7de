/* CIFAR-10's binary format: data_batch_1.bin ... data_batch_5.bin (train) and
 * test_batch.bin (test), each a sequence of 3073-byte records: one label
 * byte (0-9), then 1024 red, 1024 green and 1024 blue bytes of a 32x32 image,
 * row-major. Pixels are scaled to [0, 1] as torchvision's ToTensor does.
 * Also the stand-in writer: Fashion-MNIST in that format (see cifar_from_idx). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/data.h"
#include "../core/file.h"
#include "../core/json.h"

#define CIFAR_SIDE 32
#define CIFAR_PIXELS (3 * CIFAR_SIDE * CIFAR_SIDE)
#define CIFAR_RECORD (1 + CIFAR_PIXELS)
#define CIFAR_TRAIN_FILES 5

static const char *const train_files[CIFAR_TRAIN_FILES] = {"data_batch_1.bin", "data_batch_2.bin",
                                                           "data_batch_3.bin", "data_batch_4.bin",
                                                           "data_batch_5.bin"};

/* Appends the records of one file (up to `room` of them, possibly none) to
 * d. Every record's label is checked whatever `room`, so that a limit never
 * hides a damaged file. */
static cb_status read_batch(const char *path, cb_dataset *d, int64_t room, int64_t *cap)
{
    unsigned char *buf;
    size_t len;
    cb_status s = cb_read_file(path, (size_t)1 << 32, &buf, &len);
    if (s != CB_OK) return s;
    if (len == 0 || len % CIFAR_RECORD) {
        free(buf);
        return cb_fail(CB_ERR_FORMAT, "%s: %zu bytes is not a whole number of %d-byte CIFAR-10 records "
                       "(truncated or not a CIFAR-10 binary batch)", path, len, CIFAR_RECORD);
    }
    int64_t n = (int64_t)(len / CIFAR_RECORD);
    for (int64_t i = 0; i < n; i++) {
        int label = buf[(size_t)i * CIFAR_RECORD];
        if (label > 9) {
            free(buf);
            return cb_fail(CB_ERR_FORMAT, "%s: record %lld has label %d (CIFAR-10 labels are 0-9)", path,
                           (long long)i, label);
        }
    }
    if (n > room) n = room;
    if (d->n + n > *cap) {
        int64_t ncap = (d->n + n) * 2;
        float *x = realloc(d->x, (size_t)ncap * CIFAR_PIXELS * sizeof *x), *y;
        if (x) d->x = x;
        y = x ? realloc(d->y, (size_t)ncap * sizeof *y) : NULL;
        if (!x || !y) {
            free(buf);
            return cb_fail(CB_ERR_NOMEM, "out of memory reading %s", path);
        }
        d->y = y;
        *cap = ncap;
    }
    for (int64_t i = 0; i < n; i++) {
        const unsigned char *r = buf + (size_t)i * CIFAR_RECORD;
        d->y[d->n + i] = (float)r[0];
        float *x = d->x + (size_t)(d->n + i) * CIFAR_PIXELS;
        for (int p = 0; p < CIFAR_PIXELS; p++) x[p] = (float)r[1 + p] / 255.0f;
    }
    d->n += n;
    free(buf);
    return CB_OK;
}

cb_status cb_cifar_load(const char *dir, int train, int64_t limit, cb_dataset *out)
{
    memset(out, 0, sizeof *out);
    out->c = 3, out->h = out->w = CIFAR_SIDE, out->classes = 10;
    int64_t cap = 0, room = limit > 0 ? limit : INT64_MAX;
    char path[4096];
    cb_status s = CB_OK;
    const char *const *files = train ? train_files : (const char *const[]){"test_batch.bin"};
    int n_files = train ? CIFAR_TRAIN_FILES : 1;
    /* Every file is read and checked, also those after the limit is met. */
    for (int f = 0; s == CB_OK && f < n_files; f++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[f]);
        s = read_batch(path, out, room - out->n, &cap);
    }
    if (s != CB_OK) {
        cb_dataset_free(out);
        return s;
    }
    snprintf(out->source, sizeof out->source, "%s (CIFAR-10 binary, %s)", dir, train ? "train" : "test");
    return CB_OK;
}

/* ---- the stand-in: Fashion-MNIST written as CIFAR-10 binary batches ---- */

static cb_status write_records(const char *path, const cb_dataset *d, int64_t from, int64_t n)
{
    unsigned char *buf = malloc((size_t)n * CIFAR_RECORD + 1);
    if (!buf) return cb_fail(CB_ERR_NOMEM, "out of memory writing %s", path);
    const int pad = (CIFAR_SIDE - d->h) / 2;
    for (int64_t i = 0; i < n; i++) {
        unsigned char *r = buf + (size_t)i * CIFAR_RECORD;
        const float *x = d->x + (size_t)(from + i) * d->h * d->w;
        r[0] = (unsigned char)d->y[from + i];
        memset(r + 1, 0, CIFAR_PIXELS);
        for (int c = 0; c < 3; c++) /* the gray image in all three channels */
            for (int yy = 0; yy < d->h; yy++)
                for (int xx = 0; xx < d->w; xx++) {
                    /* x was scaled from a byte: v * 255 recovers it exactly */
                    float v = x[yy * d->w + xx] * 255.0f + 0.5f;
                    r[1 + c * CIFAR_SIDE * CIFAR_SIDE + (yy + pad) * CIFAR_SIDE + xx + pad] = (unsigned char)v;
                }
    }
    cb_status s = cb_write_file_atomic(path, buf, (size_t)n * CIFAR_RECORD);
    free(buf);
    return s;
}

cb_status cb_cifar_from_mnist(const char *mnist_dir, const char *out_dir, int64_t *n_train, int64_t *n_test)
{
    cb_dataset tr, te;
    cb_status s = cb_mnist_load(mnist_dir, 1, 0, &tr);
    if (s != CB_OK) return s;
    if ((s = cb_mnist_load(mnist_dir, 0, 0, &te)) != CB_OK) {
        cb_dataset_free(&tr);
        return s;
    }
    if (tr.h > CIFAR_SIDE || tr.w > CIFAR_SIDE || tr.h != tr.w || tr.c != 1)
        s = cb_fail(CB_ERR_SHAPE, "%s: images of %dx%d do not fit 32x32", mnist_dir, tr.h, tr.w);
    /* Train: file order, split into five batches of (nearly) equal size, as
     * CIFAR-10's 5 x 10,000. Test: all of the test set in test_batch.bin. */
    char path[4096];
    for (int f = 0; s == CB_OK && f < CIFAR_TRAIN_FILES; f++) {
        int64_t lo = tr.n * f / CIFAR_TRAIN_FILES, hi = tr.n * (f + 1) / CIFAR_TRAIN_FILES;
        snprintf(path, sizeof path, "%s/%s", out_dir, train_files[f]);
        if (hi > lo) s = write_records(path, &tr, lo, hi - lo);
    }
    snprintf(path, sizeof path, "%s/test_batch.bin", out_dir);
    if (s == CB_OK) s = write_records(path, &te, 0, te.n);
    static const char names[] = "T-shirt/top\nTrouser\nPullover\nDress\nCoat\nSandal\nShirt\nSneaker\nBag\n"
                                "Ankle boot\n";
    snprintf(path, sizeof path, "%s/batches.meta.txt", out_dir);
    if (s == CB_OK) s = cb_write_file_atomic(path, names, sizeof names - 1);
    snprintf(path, sizeof path, "%s/README.txt", out_dir);
    char readme[1024];
    int len = snprintf(readme, sizeof readme,
                       "A stand-in in CIFAR-10's binary format, NOT CIFAR-10: Fashion-MNIST from %s,\n"
                       "each 28x28 gray image padded with 2 zero pixels on every side to 32x32 and copied\n"
                       "into the red, green and blue planes. Train: %lld images in file order, split into\n"
                       "data_batch_1..5.bin; test: %lld images in test_batch.bin. Labels are Fashion-MNIST's\n"
                       "(batches.meta.txt). Written by crossbind data cifar-stand-in.\n",
                       mnist_dir, (long long)tr.n, (long long)te.n);
    if (s == CB_OK) s = cb_write_file_atomic(path, readme, (size_t)len);
    if (s == CB_OK) {
        *n_train = tr.n;
        *n_test = te.n;
    }
    cb_dataset_free(&tr);
    cb_dataset_free(&te);
    return s;
}

cb_status cb_dataset_load(const char *format, const char *dir, int train, int64_t limit, cb_dataset *out)
{
    if (strcmp(format, "mnist") == 0) return cb_mnist_load(dir, train, limit, out);
    if (strcmp(format, "cifar") == 0) return cb_cifar_load(dir, train, limit, out);
    if (strcmp(format, "imdb") == 0) return cb_text_dataset_load(dir, train, limit, NULL, NULL, out);
    memset(out, 0, sizeof *out);
    return cb_fail(CB_ERR_INVALID_ARG, "unknown data set format '%s' (known: mnist, cifar, imdb)", format);
}

const char *cb_dataset_default_dir(const char *format)
{
    if (strcmp(format, "cifar") == 0) return "data/cifar-stand-in";
    if (strcmp(format, "imdb") == 0) return "data/imdb-prepared";
    return "/usr/share/datasets/fashion-mnist";
}
