/* safetensors reader and writer.
 * Layout: u64 little-endian N, N bytes of JSON header
 * {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 *  "__metadata__": {"key": "value"}}, then the data buffer the offsets index.
 * Every field of a file is validated before it is used: the reader never
 * trusts a size it has not checked against the file's real length. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/tensor.h"
#include "crossbind/formats.h"
#include "../core/file.h"
#include "../core/json.h"

#define MAX_HEADER ((uint64_t)100 << 20)

static int dtype_from_name(const char *s, cb_dtype *out)
{
    static const struct { const char *name; cb_dtype t; } map[] = {
        {"F32", CB_F32}, {"F64", CB_F64}, {"I64", CB_I64}, {"I32", CB_I32}, {"U8", CB_U8}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(s, map[i].name) == 0) { *out = map[i].t; return 1; }
    return 0;
}

static int as_count(const cb_json *v, uint64_t *out)
{
    if (!v || v->type != CB_JSON_NUM || !(v->num >= 0) || v->num > 9007199254740992.0 ||
        v->num != floor(v->num))
        return 0;
    *out = (uint64_t)v->num;
    return 1;
}

static cb_status read_entry(const char *path, const char *name, const cb_json *e,
                            const unsigned char *data, uint64_t data_len, cb_tensor_list *out)
{
    const cb_json *dt = cb_json_get(e, "dtype"), *shape = cb_json_get(e, "shape"),
                  *offs = cb_json_get(e, "data_offsets");
    cb_dtype dtype;
    if (e->type != CB_JSON_OBJ || !dt || dt->type != CB_JSON_STR || !shape ||
        shape->type != CB_JSON_ARR || !offs || offs->type != CB_JSON_ARR || offs->count != 2)
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' lacks dtype, shape or data_offsets", path, name);
    if (!dtype_from_name(dt->str, &dtype))
        return cb_fail(CB_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s (supported: F32 F64 I64 I32 U8)",
                       path, name, dt->str);
    if (shape->count > CB_MAX_DIMS)
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' has %d dimensions", path, name, shape->count);
    int64_t dims[CB_MAX_DIMS];
    uint64_t numel = 1, begin, end;
    for (int i = 0; i < shape->count; i++) {
        uint64_t d;
        if (!as_count(&shape->items[i], &d) || (d && numel > data_len / d))
            return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' has an invalid or oversized shape", path, name);
        dims[i] = (int64_t)d;
        numel *= d;
    }
    if (!as_count(&offs->items[0], &begin) || !as_count(&offs->items[1], &end) || begin > end ||
        end > data_len || end - begin != numel * cb_dtype_size(dtype))
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' has data_offsets that do not match its shape "
                       "or lie outside the file (truncated?)", path, name);
    return cb_tensor_list_add(out, name, dtype, shape->count, dims, data + begin);
}

cb_status cb_safetensors_parse(const unsigned char *buf, size_t size, const char *path, cb_tensor_list *out)
{
    memset(out, 0, sizeof *out);
    if (size < 8)
        return cb_fail(CB_ERR_FORMAT, "%s: too short to be a safetensors file (%zu bytes)", path, size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | buf[i];
    if (hlen > MAX_HEADER || hlen > (uint64_t)size - 8)
        return cb_fail(CB_ERR_FORMAT, "%s: not a safetensors file or truncated (header length %llu, file %zu bytes)",
                       path, (unsigned long long)hlen, size);
    cb_json hdr;
    cb_status s = cb_json_parse((const char *)buf + 8, (size_t)hlen, path, &hdr);
    if (s != CB_OK) return s;
    if (hdr.type != CB_JSON_OBJ) s = cb_fail(CB_ERR_FORMAT, "%s: safetensors header is not a JSON object", path);
    const unsigned char *data = buf + 8 + hlen;
    uint64_t data_len = (uint64_t)size - 8 - hlen;
    for (int i = 0; s == CB_OK && i < hdr.count; i++) {
        if (strcmp(hdr.keys[i], "__metadata__") == 0) continue;
        if (cb_tensor_list_find(out, hdr.keys[i]))
            s = cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' appears twice", path, hdr.keys[i]);
        else if (strlen(hdr.keys[i]) >= CB_MAX_NAME)
            s = cb_fail(CB_ERR_FORMAT, "%s: tensor name too long", path);
        else
            s = read_entry(path, hdr.keys[i], &hdr.items[i], data, data_len, out);
    }
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

cb_status cb_safetensors_write(const char *path, const cb_tensor_list *list,
                               const char *const *metadata)
{
    cb_buf h = {0};
    uint64_t offset = 0;
    cb_buf_printf(&h, "{");
    if (metadata && metadata[0]) {
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
    cb_status s = cb_write_file_atomic(path, file, total);
    free(file);
    cb_buf_free(&h);
    return s;
}
