/* safetensors reader and writer.
 * Layout: u64 little-endian N, N bytes of JSON header
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {"key": "value"}}, then the data buffer the offsets index.
 * Every field of a file is validated before it is used: the reader never
 * trusts a size it has not checked against the file's real length. A file is
 * read only when it satisfies every rule of the reference implementation (the
 * Rust safetensors crate): header at most 100,000,000 bytes of UTF-8 JSON, an
 * object starting with '{' and padded only with spaces, no key twice,
 * __metadata__ a map of strings, known dtypes, shape x dtype size = the
 * byte range, and the ranges, in offset order, tiling the data buffer from 0
 * to its last byte with neither overlaps nor holes. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/tensor.h"
#include "crossbind/formats.h"
#include "../core/file.h"
#include "../core/json.h"
#include "../core/names.h"
#include "../core/utf8.h"

#define MAX_HEADER 100000000ULL /* the reference implementation's limit */
/* Far above any model's parameter count (VGG-16 has 78 tensors with its
 * batch-norm buffers) and low enough that a header of empty tensors cannot
 * keep the reader busy. */
#define MAX_TENSORS 100000
/* Values a header may hold: each tensor needs at most 1 + 1 + 1 + 8 + 1 + 2;
 * the rest is left to __metadata__. */
#define MAX_VALUES ((size_t)MAX_TENSORS * 20)

/* Every dtype of the format, with its size; crossbind reads five of them. */
static const struct { const char *name; unsigned size; int ours; cb_dtype t; } dtypes[] = {
    {"BOOL", 1, 0, CB_U8},    {"U8", 1, 1, CB_U8},      {"I8", 1, 0, CB_U8},       {"F8_E5M2", 1, 0, CB_U8},
    {"F8_E4M3", 1, 0, CB_U8}, {"F8_E8M0", 1, 0, CB_U8}, {"I16", 2, 0, CB_U8},      {"U16", 2, 0, CB_U8},
    {"F16", 2, 0, CB_U8},     {"BF16", 2, 0, CB_U8},    {"I32", 4, 1, CB_I32},     {"U32", 4, 0, CB_U8},
    {"F32", 4, 1, CB_F32},    {"F64", 8, 1, CB_F64},    {"I64", 8, 1, CB_I64},     {"U64", 8, 0, CB_U8},
    {"C64", 8, 0, CB_U8},
};
#define N_DTYPES (int)(sizeof dtypes / sizeof dtypes[0])

typedef struct entry {
    const char *name;
    int dtype; /* index into dtypes */
    int ndim;
    int64_t dims[CB_MAX_DIMS];
    uint64_t begin, end;
} entry;

static int as_count(const cb_json *v, uint64_t *out)
{
    if (!v || v->type != CB_JSON_NUM || !(v->num >= 0) || v->num > 9007199254740992.0 ||
        v->num != floor(v->num))
        return 0;
    *out = (uint64_t)v->num;
    return 1;
}

static cb_status read_entry(const char *path, const char *name, const cb_json *e, uint64_t data_len, entry *out)
{
    const cb_json *dt = cb_json_get(e, "dtype"), *shape = cb_json_get(e, "shape"),
                  *offs = cb_json_get(e, "data_offsets");
    if (e->type != CB_JSON_OBJ || !dt || dt->type != CB_JSON_STR || !shape ||
        shape->type != CB_JSON_ARR || !offs || offs->type != CB_JSON_ARR || offs->count != 2)
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' lacks dtype, shape or data_offsets", path, name);
    out->name = name;
    out->dtype = -1;
    for (int i = 0; i < N_DTYPES; i++)
        if (strcmp(dt->str, dtypes[i].name) == 0) out->dtype = i;
    if (out->dtype < 0)
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' has dtype '%.40s', which is not a safetensors dtype",
                       path, name, dt->str);
    if (shape->count > CB_MAX_DIMS)
        return cb_fail(CB_ERR_UNSUPPORTED, "%s: tensor '%s' has %d dimensions (crossbind reads at most %d)",
                       path, name, shape->count, CB_MAX_DIMS);
    /* The product is checked against the buffer as it grows, so it cannot
     * overflow: no valid tensor is larger than the data buffer. */
    uint64_t numel = 1, size = dtypes[out->dtype].size;
    out->ndim = shape->count;
    for (int i = 0; i < shape->count; i++) {
        uint64_t d;
        if (!as_count(&shape->items[i], &d))
            return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s': shape entry %d is not a non-negative integer",
                           path, name, i);
        if (d && numel > data_len / size / d)
            return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' has an oversized shape (more than the file's %llu "
                           "data bytes)", path, name, (unsigned long long)data_len);
        out->dims[i] = (int64_t)d;
        numel *= d;
    }
    if (!as_count(&offs->items[0], &out->begin) || !as_count(&offs->items[1], &out->end))
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' has data_offsets that are not non-negative integers",
                       path, name);
    if (out->begin > out->end || out->end > data_len)
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' has data_offsets [%llu, %llu] outside the %llu-byte data "
                       "buffer (truncated?)", path, name, (unsigned long long)out->begin,
                       (unsigned long long)out->end, (unsigned long long)data_len);
    if (out->end - out->begin != numel * size)
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' spans %llu bytes, its shape and dtype need %llu", path,
                       name, (unsigned long long)(out->end - out->begin), (unsigned long long)(numel * size));
    return CB_OK;
}

static int by_offsets(const void *a, const void *b)
{
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* The byte ranges, sorted, must tile [0, data_len) exactly: an overlap lets
 * two tensors alias one another's bytes, a hole hides data no tensor owns. */
static cb_status check_tiling(const char *path, entry *e, int n, uint64_t data_len)
{
    entry **order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!order) return cb_fail(CB_ERR_NOMEM, "out of memory checking %s", path);
    for (int i = 0; i < n; i++) order[i] = &e[i];
    qsort(order, (size_t)n, sizeof *order, by_offsets);
    uint64_t at = 0;
    cb_status s = CB_OK;
    for (int i = 0; i < n && s == CB_OK; i++) {
        const entry *t = order[i], *prev = i ? order[i - 1] : NULL;
        if (t->begin < at)
            s = cb_fail(CB_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap (bytes %llu to %llu of the data)",
                        path, prev->name, t->name, (unsigned long long)t->begin, (unsigned long long)at);
        else if (t->begin > at)
            s = cb_fail(CB_ERR_FORMAT, "%s: %llu bytes of the data before tensor '%s' (from byte %llu) belong to "
                        "no tensor", path, (unsigned long long)(t->begin - at), t->name, (unsigned long long)at);
        at = t->end;
    }
    if (s == CB_OK && at != data_len)
        s = cb_fail(CB_ERR_FORMAT, "%s: the tensors cover %llu bytes of data, the file holds %llu after its header",
                    path, (unsigned long long)at, (unsigned long long)data_len);
    free(order);
    return s;
}

static cb_status check_metadata(const char *path, const cb_json *m)
{
    if (m->type != CB_JSON_OBJ)
        return cb_fail(CB_ERR_FORMAT, "%s: __metadata__ is not a JSON object of strings", path);
    for (int i = 0; i < m->count; i++)
        if (m->items[i].type != CB_JSON_STR)
            return cb_fail(CB_ERR_FORMAT, "%s: __metadata__ entry '%.80s' is not a string", path, m->keys[i]);
    return CB_OK;
}

static cb_status check_header_bytes(const char *path, const unsigned char *h, uint64_t hlen, size_t *json_len)
{
    size_t bad;
    if (!cb_utf8_valid(h, (size_t)hlen, &bad))
        return cb_fail(CB_ERR_FORMAT, "%s: the safetensors header is not valid UTF-8 (byte %zu of it)", path, bad);
    if (hlen == 0 || h[0] != '{')
        return cb_fail(CB_ERR_FORMAT, "%s: the safetensors header does not start with '{'", path);
    size_t n = (size_t)hlen;
    while (n > 0 && h[n - 1] == ' ') n--; /* the only padding the format allows */
    if (h[n - 1] != '}')
        return cb_fail(CB_ERR_FORMAT, "%s: the safetensors header has something other than spaces after its "
                       "JSON object", path);
    *json_len = n;
    return CB_OK;
}

cb_status cb_safetensors_parse(const unsigned char *buf, size_t size, const char *path, cb_tensor_list *out)
{
    memset(out, 0, sizeof *out);
    if (size < 8)
        return cb_fail(CB_ERR_FORMAT, "%s: too short to be a safetensors file (%zu bytes)", path, size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | buf[i];
    if (hlen > MAX_HEADER)
        return cb_fail(CB_ERR_FORMAT, "%s: not a safetensors file: header length %llu exceeds the format's limit "
                       "of %llu bytes", path, (unsigned long long)hlen, MAX_HEADER);
    if (hlen > (uint64_t)size - 8)
        return cb_fail(CB_ERR_FORMAT, "%s: not a safetensors file or truncated (header length %llu, file %zu bytes)",
                       path, (unsigned long long)hlen, size);
    size_t json_len = 0;
    cb_status s = check_header_bytes(path, buf + 8, hlen, &json_len);
    if (s != CB_OK) return s;
    cb_json hdr;
    if ((s = cb_json_parse_capped((const char *)buf + 8, json_len, path, MAX_VALUES, &hdr)) != CB_OK) return s;
    const unsigned char *data = buf + 8 + hlen;
    uint64_t data_len = (uint64_t)size - 8 - hlen;
    int n_meta = cb_json_get(&hdr, "__metadata__") != NULL, n = hdr.count - n_meta;
    entry *e = NULL;
    if (n > MAX_TENSORS)
        s = cb_fail(CB_ERR_FORMAT, "%s holds %d tensors; crossbind reads at most %d per file", path, n,
                    MAX_TENSORS);
    else if (!(e = malloc((size_t)(n ? n : 1) * sizeof *e)))
        s = cb_fail(CB_ERR_NOMEM, "out of memory reading %s", path);
    for (int i = 0, k = 0; s == CB_OK && i < hdr.count; i++) {
        if (strcmp(hdr.keys[i], "__metadata__") == 0) s = check_metadata(path, &hdr.items[i]);
        else if (strlen(hdr.keys[i]) >= CB_MAX_NAME)
            s = cb_fail(CB_ERR_UNSUPPORTED, "%s: tensor name of %zu bytes (crossbind's limit is %d): %.60s...",
                        path, strlen(hdr.keys[i]), CB_MAX_NAME - 1, hdr.keys[i]);
        else s = read_entry(path, hdr.keys[i], &hdr.items[i], data_len, &e[k++]);
    }
    if (s == CB_OK) s = check_tiling(path, e, n, data_len);
    for (int i = 0; s == CB_OK && i < n; i++)
        if (!dtypes[e[i].dtype].ours)
            s = cb_fail(CB_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s (crossbind reads F32 F64 I64 I32 U8)",
                        path, e[i].name, dtypes[e[i].dtype].name);
    for (int i = 0; s == CB_OK && i < n; i++)
        s = cb_tensor_list_add(out, e[i].name, dtypes[e[i].dtype].t, e[i].ndim, e[i].dims, data + e[i].begin);
    free(e);
    cb_json_free(&hdr);
    if (s != CB_OK) cb_tensor_list_free(out);
    return s;
}

static cb_status parse_list(const unsigned char *buf, size_t len, const char *what, void *out)
{
    return cb_safetensors_parse(buf, len, what, out);
}

cb_status cb_safetensors_read(const char *path, cb_tensor_list *out)
{
    memset(out, 0, sizeof *out);
    return cb_parse_file(path, (size_t)1 << 40, parse_list, out);
}

/* The writer holds itself to the reader's rules: a file crossbind writes is
 * one that crossbind, and the reference implementation, read back. */
static cb_status check_writable(const char *path, const cb_tensor_list *list, const char *const *metadata)
{
    cb_name_index ix;
    cb_status s = cb_name_index_init(&ix, (size_t)list->count);
    for (int i = 0; s == CB_OK && i < list->count; i++) {
        const char *name = list->items[i].name;
        int r;
        if (!cb_utf8_valid(name, strlen(name), NULL))
            s = cb_fail(CB_ERR_INVALID_ARG, "cannot write %s: tensor name '%.60s' is not valid UTF-8", path, name);
        else if (strcmp(name, "__metadata__") == 0)
            s = cb_fail(CB_ERR_INVALID_ARG, "cannot write %s: a tensor may not be named __metadata__", path);
        else if ((r = cb_name_index_add(&ix, name, i)) == -2)
            s = CB_ERR_NOMEM;
        else if (r >= 0)
            s = cb_fail(CB_ERR_INVALID_ARG, "cannot write %s: two tensors are named '%s'", path, name);
    }
    cb_name_index_free(&ix);
    if (list->count > MAX_TENSORS && s == CB_OK)
        s = cb_fail(CB_ERR_INVALID_ARG, "cannot write %s: %d tensors (at most %d per file)", path, list->count,
                    MAX_TENSORS);
    for (int i = 0; s == CB_OK && metadata && metadata[i] && metadata[i + 1]; i += 2) {
        for (int k = 0; k < 2; k++)
            if (s == CB_OK && !cb_utf8_valid(metadata[i + k], strlen(metadata[i + k]), NULL))
                s = cb_fail(CB_ERR_INVALID_ARG, "cannot write %s: metadata '%.60s' is not valid UTF-8", path,
                            metadata[i + k]);
        for (int j = 0; s == CB_OK && j < i; j += 2)
            if (strcmp(metadata[i], metadata[j]) == 0)
                s = cb_fail(CB_ERR_INVALID_ARG, "cannot write %s: metadata key '%s' given twice", path, metadata[i]);
    }
    return s;
}

cb_status cb_safetensors_write(const char *path, const cb_tensor_list *list,
                               const char *const *metadata)
{
    cb_status s = check_writable(path, list, metadata);
    if (s != CB_OK) return s;
    cb_buf h = {0};
    uint64_t offset = 0;
    cb_buf_printf(&h, "{");
    if (metadata && metadata[0] && metadata[1]) {
        cb_buf_printf(&h, "\"__metadata__\":{");
        for (int i = 0; metadata[i] && metadata[i + 1]; i += 2) {
            if (i) cb_buf_printf(&h, ",");
            cb_buf_json_string(&h, metadata[i]);
            cb_buf_printf(&h, ":");
            cb_buf_json_string(&h, metadata[i + 1]);
        }
        cb_buf_printf(&h, "}");
    }
    for (int i = 0; i < list->count; i++) {
        const cb_tensor *t = &list->items[i];
        uint64_t bytes = (uint64_t)cb_tensor_numel(t) * cb_dtype_size(t->dtype);
        if (h.len > 1) cb_buf_printf(&h, ",");
        cb_buf_json_string(&h, t->name);
        cb_buf_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", cb_dtype_name(t->dtype));
        for (int d = 0; d < t->ndim; d++) cb_buf_printf(&h, d ? ",%lld" : "%lld", (long long)t->shape[d]);
        cb_buf_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)offset,
                      (unsigned long long)(offset + bytes));
        offset += bytes;
    }
    cb_buf_printf(&h, "}");
    while (cb_buf_ok(&h) && h.len % 8) cb_buf_printf(&h, " "); /* align the data to 8 bytes */
    if (!cb_buf_ok(&h)) { cb_buf_free(&h); return cb_fail(CB_ERR_NOMEM, "out of memory writing %s", path); }
    if (h.len > MAX_HEADER) {
        cb_buf_free(&h);
        return cb_fail(CB_ERR_INVALID_ARG, "cannot write %s: its header would exceed %llu bytes", path, MAX_HEADER);
    }
    size_t total = 8 + h.len + (size_t)offset;
    unsigned char *file = malloc(total);
    if (!file) { cb_buf_free(&h); return cb_fail(CB_ERR_NOMEM, "out of memory writing %s", path); }
    for (int i = 0; i < 8; i++) file[i] = (unsigned char)(((uint64_t)h.len >> (8 * i)) & 0xFF);
    memcpy(file + 8, h.data, h.len);
    size_t pos = 8 + h.len;
    for (int i = 0; i < list->count; i++) {
        const cb_tensor *t = &list->items[i];
        size_t bytes = (size_t)cb_tensor_numel(t) * cb_dtype_size(t->dtype);
        memcpy(file + pos, t->data, bytes);
        pos += bytes;
    }
    s = cb_write_file_atomic(path, file, total);
    free(file);
    cb_buf_free(&h);
    return s;
}
