/* Named tensor lists: the exchange currency of file formats and bindings. */
#include <stdlib.h>
#include <string.h>
#include "crossbind/tensor.h"

size_t cb_dtype_size(cb_dtype t)
{
    switch (t) {
    case CB_F32: case CB_I32: return 4;
    case CB_F64: case CB_I64: return 8;
    case CB_U8: return 1;
    }
    return 0;
}

const char *cb_dtype_name(cb_dtype t)
{
    switch (t) {
    case CB_F32: return "F32";
    case CB_F64: return "F64";
    case CB_I64: return "I64";
    case CB_I32: return "I32";
    case CB_U8: return "U8";
    }
    return "?";
}

int64_t cb_tensor_numel(const cb_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

cb_status cb_tensor_nhwc_to_nchw(cb_tensor *t)
{
    if (t->dtype != CB_F32 || t->ndim != 4) return cb_fail(CB_ERR_SHAPE, "an [N,H,W,C] float32 tensor was expected");
    const int64_t n = t->shape[0], h = t->shape[1], w = t->shape[2], c = t->shape[3];
    const int64_t total = n * h * w * c;
    float *f = malloc((size_t)(total ? total : 1) * sizeof *f);
    if (!f) return cb_fail(CB_ERR_NOMEM, "out of memory");
    const float *src = t->data;
    for (int64_t i = 0; i < n; i++)
        for (int64_t y = 0; y < h; y++)
            for (int64_t x = 0; x < w; x++)
                for (int64_t k = 0; k < c; k++)
                    f[((i * c + k) * h + y) * w + x] = src[((i * h + y) * w + x) * c + k];
    free(t->data);
    t->data = f;
    t->shape[1] = c, t->shape[2] = h, t->shape[3] = w;
    return CB_OK;
}

cb_status cb_tensor_to_f32(cb_tensor *t, const char *path)
{
    if (t->dtype == CB_F32) return CB_OK;
    if (t->dtype != CB_F64 && t->dtype != CB_I64)
        return cb_fail(CB_ERR_FORMAT, "%s: input must be float32, float64 or int64, is %s", path,
                       cb_dtype_name(t->dtype));
    int64_t n = cb_tensor_numel(t);
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    if (!f) return cb_fail(CB_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        if (t->dtype == CB_F64) { f[i] = (float)((double *)t->data)[i]; continue; }
        int64_t v = ((int64_t *)t->data)[i];
        if (v <= -(1 << 24) || v >= (1 << 24)) {
            free(f);
            return cb_fail(CB_ERR_FORMAT, "%s: integer %lld at %lld is too large to hold exactly", path,
                           (long long)v, (long long)i);
        }
        f[i] = (float)v;
    }
    free(t->data);
    t->data = f;
    t->dtype = CB_F32;
    return CB_OK;
}

cb_status cb_tensor_list_add(cb_tensor_list *list, const char *name, cb_dtype dtype,
                             int ndim, const int64_t *shape, const void *data)
{
    if (ndim < 0 || ndim > CB_MAX_DIMS)
        return cb_fail(CB_ERR_SHAPE, "tensor '%s': %d dimensions (at most %d)", name, ndim, CB_MAX_DIMS);
    if (strlen(name) >= CB_MAX_NAME)
        return cb_fail(CB_ERR_INVALID_ARG, "tensor name longer than %d characters", CB_MAX_NAME - 1);
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (shape[i] > 0 && numel > INT64_MAX / 16 / shape[i]))
            return cb_fail(CB_ERR_SHAPE, "tensor '%s': invalid dimension %lld", name, (long long)shape[i]);
        numel *= shape[i];
    }
    if (list->count == list->capacity) {
        int cap = list->capacity ? list->capacity * 2 : 16;
        cb_tensor *items = realloc(list->items, (size_t)cap * sizeof *items);
        if (!items) return cb_fail(CB_ERR_NOMEM, "out of memory growing a tensor list");
        list->items = items;
        list->capacity = cap;
    }
    size_t bytes = (size_t)numel * cb_dtype_size(dtype);
    cb_tensor *t = &list->items[list->count];
    memset(t, 0, sizeof *t);
    strcpy(t->name, name);
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->data = calloc(bytes ? bytes : 1, 1);
    if (!t->data) return cb_fail(CB_ERR_NOMEM, "out of memory for tensor '%s' (%zu bytes)", name, bytes);
    if (data && bytes) memcpy(t->data, data, bytes);
    list->count++;
    return CB_OK;
}

const cb_tensor *cb_tensor_list_find(const cb_tensor_list *list, const char *name)
{
    for (int i = 0; i < list->count; i++)
        if (strcmp(list->items[i].name, name) == 0) return &list->items[i];
    return NULL;
}

void cb_tensor_list_free(cb_tensor_list *list)
{
    for (int i = 0; i < list->count; i++) free(list->items[i].data);
    free(list->items);
    memset(list, 0, sizeof *list);
}
