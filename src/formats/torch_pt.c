/* PyTorch state-dict files (.pt/.pth): the zip container, the pickle subset
 * and the storages, in both directions (see formats.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/formats.h"
#include "../core/file.h"
#include "../core/json.h"
#include "pickle.h"
#include "zip.h"

static cb_dtype dtype_of(pk_storage_type t)
{
    switch (t) {
    case PK_ST_DOUBLE: return CB_F64;
    case PK_ST_LONG: return CB_I64;
    case PK_ST_INT: case PK_ST_SHORT: case PK_ST_CHAR: return CB_I32;
    case PK_ST_BYTE: case PK_ST_BOOL: return CB_U8;
    default: return CB_F32; /* float, half, bfloat16 */
    }
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 31, man = h & 1023, bits;
    if (exp == 0) {
        if (!man) bits = sign;
        else { /* subnormal: renormalise */
            exp = 127 - 15 + 1;
            while (!(man & 1024)) { man <<= 1; exp--; }
            bits = sign | (exp << 23) | ((man & 1023) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Element i of a storage, converted to the output dtype, into dst. */
static void convert(pk_storage_type st, const unsigned char *src, void *dst)
{
    switch (st) {
    case PK_ST_HALF: {
        uint16_t h;
        memcpy(&h, src, 2);
        *(float *)dst = half_to_float(h);
        break;
    }
    case PK_ST_BFLOAT16: {
        uint32_t bits = (uint32_t)(src[0] | (src[1] << 8)) << 16;
        memcpy(dst, &bits, 4);
        break;
    }
    case PK_ST_SHORT: {
        int16_t v;
        memcpy(&v, src, 2);
        *(int32_t *)dst = v;
        break;
    }
    case PK_ST_CHAR: *(int32_t *)dst = (int8_t)src[0]; break;
    default: memcpy(dst, src, pk_storage_elem_size(st)); break;
    }
}

static cb_status read_tensor(const cb_zip *z, const char *prefix, const char *what, const char *name,
                             const pk_value *t, cb_tensor_list *out)
{
    const pk_value *st = t->storage;
    char entry[600];
    snprintf(entry, sizeof entry, "%sdata/%s", prefix, st->s);
    const cb_zip_entry *e = cb_zip_find(z, entry);
    if (!e) return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s': storage %s is missing from the archive", what, name, entry);
    size_t esz = pk_storage_elem_size(st->st);
    if ((uint64_t)st->i > e->size / esz || (uint64_t)st->i * esz != e->size)
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s': storage %s holds %zu bytes, its declared size is %lld "
                       "elements of %zu bytes", what, name, entry, e->size, (long long)st->i, esz);
    /* The last element addressed must lie inside the storage. */
    uint64_t numel = 1, last = (uint64_t)t->offset;
    for (int d = 0; d < t->ndim; d++) {
        if (t->size[d] == 0) { numel = 0; break; }
        uint64_t reach;
        if (__builtin_mul_overflow((uint64_t)(t->size[d] - 1), (uint64_t)t->stride[d], &reach) ||
            __builtin_add_overflow(last, reach, &last) ||
            __builtin_mul_overflow(numel, (uint64_t)t->size[d], &numel))
            return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s': shape overflows", what, name);
    }
    if (numel && last >= (uint64_t)st->i)
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' addresses element %llu of a storage of %lld elements",
                       what, name, (unsigned long long)last, (long long)st->i);
    if (numel > ((uint64_t)1 << 40)) return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' is too large", what, name);
    if (strlen(name) >= CB_MAX_NAME) return cb_fail(CB_ERR_FORMAT, "%s: tensor name too long: %.40s...", what, name);
    cb_dtype dt = dtype_of(st->st);
    cb_status s = cb_tensor_list_add(out, name, dt, t->ndim, t->size, NULL);
    if (s != CB_OK) return s;
    unsigned char *dst = out->items[out->count - 1].data;
    size_t osz = cb_dtype_size(dt);
    int64_t idx[CB_MAX_DIMS] = {0};
    for (uint64_t i = 0; i < numel; i++) {
        uint64_t at = (uint64_t)t->offset;
        for (int d = 0; d < t->ndim; d++) at += (uint64_t)idx[d] * (uint64_t)t->stride[d];
        convert(st->st, e->data + at * esz, dst + i * osz);
        for (int d = t->ndim - 1; d >= 0; d--) { /* next index, row-major */
            if (++idx[d] < t->size[d]) break;
            idx[d] = 0;
        }
    }
    return CB_OK;
}

/* The archive's top-level folder: the prefix of its "<folder>/data.pkl". */
static const cb_zip_entry *find_pickle(const cb_zip *z, char *prefix, size_t size)
{
    for (int i = 0; i < z->count; i++) {
        const char *n = z->entries[i].name, *slash = strchr(n, '/');
        if (slash && strcmp(slash + 1, "data.pkl") == 0 && (size_t)(slash + 1 - n) < size) {
            memcpy(prefix, n, (size_t)(slash + 1 - n));
            prefix[slash + 1 - n] = 0;
            return &z->entries[i];
        }
    }
    return NULL;
}

cb_status cb_torch_parse(const unsigned char *buf, size_t len, const char *what, cb_tensor_list *out)
{
    memset(out, 0, sizeof *out);
    cb_file_kind kind = cb_file_kind_of(buf, len);
    if (kind == CB_FILE_TORCH_LEGACY)
        return cb_fail(CB_ERR_UNSUPPORTED, "%s uses PyTorch's legacy (pre-1.6) serialization; re-save it with "
                       "torch.save(state_dict, f) from PyTorch 1.6 or later", what);
    if (kind != CB_FILE_TORCH_ZIP) return cb_fail(CB_ERR_FORMAT, "%s is not a PyTorch zip archive", what);
    cb_zip z;
    cb_status s = cb_zip_open(buf, len, what, &z);
    if (s != CB_OK) return s;
    char prefix[256];
    const cb_zip_entry *pkl = find_pickle(&z, prefix, sizeof prefix);
    pk_pool *pool = NULL;
    pk_value *root = NULL;
    if (!pkl) s = cb_fail(CB_ERR_FORMAT, "%s: zip archive without <folder>/data.pkl (not a torch.save file)", what);
    if (s == CB_OK) s = pk_load(pkl->data, pkl->size, what, &pool, &root);
    if (s == CB_OK && root->type != PK_DICT)
        s = cb_fail(CB_ERR_FORMAT, "%s does not hold a state dict (its pickle is not a dict)", what);
    for (int i = 0; s == CB_OK && i + 1 < root->n; i += 2) {
        const pk_value *k = root->items[i], *v = root->items[i + 1];
        if (k->type != PK_STR) s = cb_fail(CB_ERR_FORMAT, "%s: a state-dict key is not a string", what);
        else if (v->type != PK_TENSOR)
            s = cb_fail(CB_ERR_FORMAT, "%s: entry '%s' is not a tensor (save model.state_dict(), "
                        "not the model or an optimizer)", what, k->s);
        else if (cb_tensor_list_find(out, k->s))
            s = cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' appears twice", what, k->s);
        else s = read_tensor(&z, prefix, what, k->s, v, out);
    }
    pk_pool_free(pool);
    cb_zip_close(&z);
    if (s != CB_OK) cb_tensor_list_free(out);
    return s;
}

static cb_status parse_list(const unsigned char *buf, size_t len, const char *what, void *out)
{
    return cb_torch_parse(buf, len, what, out);
}

cb_status cb_torch_read(const char *path, cb_tensor_list *out)
{
    memset(out, 0, sizeof *out);
    return cb_parse_file(path, (size_t)1 << 40, parse_list, out);
}

/* ---- writer: pickle protocol 2, the layout torch.save produces ---- */

static void op(cb_buf *b, unsigned char c) { cb_buf_append(b, &c, 1); }

static void ustr(cb_buf *b, const char *s)
{
    uint32_t n = (uint32_t)strlen(s);
    unsigned char len[4] = {(unsigned char)n, (unsigned char)(n >> 8), (unsigned char)(n >> 16),
                            (unsigned char)(n >> 24)};
    op(b, 'X');
    cb_buf_append(b, len, 4);
    cb_buf_append(b, s, n);
}

static void integer(cb_buf *b, int64_t v)
{
    unsigned char bytes[9];
    if (v >= 0 && v < 256) {
        bytes[0] = 'K';
        bytes[1] = (unsigned char)v;
        cb_buf_append(b, bytes, 2);
    } else { /* LONG1 with 8 bytes of two's complement */
        bytes[0] = 0x8a;
        bytes[1] = 8;
        cb_buf_append(b, bytes, 2);
        for (int i = 0; i < 8; i++) bytes[i] = (unsigned char)((uint64_t)v >> (8 * i));
        cb_buf_append(b, bytes, 8);
    }
}

static void global(cb_buf *b, const char *module, const char *name)
{
    op(b, 'c');
    cb_buf_printf(b, "%s\n%s\n", module, name);
}

static const char *storage_name(cb_dtype t)
{
    switch (t) {
    case CB_F32: return "FloatStorage";
    case CB_F64: return "DoubleStorage";
    case CB_I64: return "LongStorage";
    case CB_I32: return "IntStorage";
    default: return "ByteStorage";
    }
}

cb_status cb_torch_write(const char *path, const cb_tensor_list *list)
{
    cb_buf p = {0};
    op(&p, 0x80);
    op(&p, 2);
    global(&p, "collections", "OrderedDict");
    op(&p, ')');
    op(&p, 'R');
    op(&p, '(');
    for (int i = 0; i < list->count; i++) {
        const cb_tensor *t = &list->items[i];
        char key[32];
        snprintf(key, sizeof key, "%d", i);
        ustr(&p, t->name);
        global(&p, "torch._utils", "_rebuild_tensor_v2");
        op(&p, '(');
        op(&p, '(');
        ustr(&p, "storage");
        global(&p, "torch", storage_name(t->dtype));
        ustr(&p, key);
        ustr(&p, "cpu");
        integer(&p, cb_tensor_numel(t));
        op(&p, 't');
        op(&p, 'Q');
        integer(&p, 0); /* storage offset */
        op(&p, '(');
        for (int d = 0; d < t->ndim; d++) integer(&p, t->shape[d]);
        op(&p, 't');
        op(&p, '(');
        int64_t stride = 1, strides[CB_MAX_DIMS];
        for (int d = t->ndim - 1; d >= 0; d--) {
            strides[d] = stride;
            stride *= t->shape[d];
        }
        for (int d = 0; d < t->ndim; d++) integer(&p, strides[d]);
        op(&p, 't');
        op(&p, 0x89); /* requires_grad = False */
        global(&p, "collections", "OrderedDict");
        op(&p, ')');
        op(&p, 'R'); /* backward hooks */
        op(&p, 't');
        op(&p, 'R');
    }
    op(&p, 'u');
    op(&p, '.');
    if (!cb_buf_ok(&p)) {
        cb_buf_free(&p);
        return cb_fail(CB_ERR_NOMEM, "out of memory writing %s", path);
    }
    cb_zip_writer *w;
    cb_status s = cb_zip_writer_create(&w);
    if (s == CB_OK) s = cb_zip_writer_add(w, "archive/data.pkl", p.data, p.len);
    for (int i = 0; s == CB_OK && i < list->count; i++) {
        char name[64];
        snprintf(name, sizeof name, "archive/data/%d", i);
        const cb_tensor *t = &list->items[i];
        s = cb_zip_writer_add(w, name, t->data, (size_t)cb_tensor_numel(t) * cb_dtype_size(t->dtype));
    }
    if (s == CB_OK) s = cb_zip_writer_add(w, "archive/version", "3\n", 2);
    cb_buf_free(&p);
    if (s != CB_OK) {
        cb_zip_writer_free(w);
        return s;
    }
    unsigned char *zbuf;
    size_t zlen;
    s = cb_zip_writer_finish(w, &zbuf, &zlen);
    if (s == CB_OK) {
        s = cb_write_file_atomic(path, zbuf, zlen);
        free(zbuf);
    }
    return s;
}
