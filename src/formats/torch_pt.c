/* PyTorch state-dict files (.pt/.pth): the zip container, the pickle subset
 * and the storages, in both directions (see formats.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "crossbind/formats.h"
#include "../core/file.h"
#include "../core/json.h"
#include "pickle.h"
#include "weights_cap.h"
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

/* One state-dict entry, weighed before anything is allocated for it. */
typedef struct planned {
    const char *name;
    const pk_value *t;
    const cb_zip_entry *e; /* its storage */
    uint64_t numel;
    cb_dtype dt;
} planned;

/* Per zip entry: the first tensor that names it as a storage, and that
 * declaration (PyTorch keeps the first; a later one that differs would be
 * read differently here), then the bytes once read. */
typedef struct storage_use {
    const char *by;
    pk_storage_type st;
    int64_t numel;
    const unsigned char *data;
    unsigned char *owned;
} storage_use;

/* Checks tensor t's declaration against its storage entry's declared size
 * (the central directory's, so nothing is inflated yet) and adds what
 * loading it asks for to *asked: its converted elements, and its storage
 * once inflated if the storage is compressed and not yet counted. */
static cb_status plan_tensor(const cb_zip *z, const char *prefix, const char *what, const char *name,
                             const pk_value *t, storage_use *uses, planned *p, uint64_t *asked)
{
    const pk_value *st = t->storage;
    char entry[300];
    if (strlen(name) >= CB_MAX_NAME) return cb_fail(CB_ERR_FORMAT, "%s: tensor name too long: %.40s...", what, name);
    int n = snprintf(entry, sizeof entry, "%sdata/%s", prefix, st->s);
    const cb_zip_entry *e = n > 0 && (size_t)n < sizeof entry ? cb_zip_find(z, entry) : NULL;
    if (!e)
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s': storage %sdata/%.40s is missing from the archive", what, name,
                       prefix, st->s);
    size_t esz = pk_storage_elem_size(st->st);
    uint64_t bytes;
    if (__builtin_mul_overflow((uint64_t)st->i, (uint64_t)esz, &bytes) || bytes != e->usize)
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s': the archive declares %llu bytes for storage %s, its pickle "
                       "%lld elements of %zu bytes (refused before reading it)", what, name,
                       (unsigned long long)e->usize, entry, (long long)st->i, esz);
    storage_use *u = &uses[e - z->entries];
    if (u->by && (u->st != st->st || u->numel != st->i))
        return cb_fail(CB_ERR_FORMAT, "%s: tensors '%s' and '%s' declare storage %s with different types or sizes "
                       "(readers would disagree on its content): refused", what, u->by, name, entry);
    /* The last element addressed must lie inside the storage. */
    uint64_t numel = 1, last = (uint64_t)t->offset, out_bytes;
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
    p->dt = dtype_of(st->st);
    if (__builtin_mul_overflow(numel, (uint64_t)cb_dtype_size(p->dt), &out_bytes) ||
        __builtin_add_overflow(*asked, out_bytes, asked))
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' is too large", what, name);
    if (!u->by) {
        u->by = name;
        u->st = st->st;
        u->numel = st->i;
        if (e->method != 0 && __builtin_add_overflow(*asked, e->usize, asked))
            return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' is too large", what, name);
    }
    p->name = name;
    p->t = t;
    p->e = e;
    p->numel = numel;
    return CB_OK;
}

/* Reads a planned tensor's elements (its storage inflated at most once). */
static cb_status load_tensor(const cb_zip *z, const planned *p, storage_use *uses, cb_tensor_list *out)
{
    const pk_value *t = p->t, *st = t->storage;
    storage_use *u = &uses[p->e - z->entries];
    if (!u->data) {
        cb_status s = cb_zip_read(z, p->e, p->e->usize, &u->data, &u->owned);
        if (s != CB_OK) return s;
    }
    cb_status s = cb_tensor_list_add(out, p->name, p->dt, t->ndim, t->size, NULL);
    if (s != CB_OK) return s;
    unsigned char *dst = out->items[out->count - 1].data;
    size_t esz = pk_storage_elem_size(st->st), osz = cb_dtype_size(p->dt);
    int64_t idx[CB_MAX_DIMS] = {0};
    for (uint64_t i = 0; i < p->numel; i++) {
        uint64_t at = (uint64_t)t->offset;
        for (int d = 0; d < t->ndim; d++) at += (uint64_t)idx[d] * (uint64_t)t->stride[d];
        convert(st->st, u->data + at * esz, dst + i * osz);
        for (int d = t->ndim - 1; d >= 0; d--) { /* next index, row-major */
            if (++idx[d] < t->size[d]) break;
            idx[d] = 0;
        }
    }
    return CB_OK;
}

/* The archive's folder, "<folder>/": torch.load takes it from the first
 * entry and reads nothing outside it, so an entry elsewhere (another
 * data.pkl, say) would mean something here and nothing there. */
static cb_status archive_folder(const cb_zip *z, const char *what, char *prefix)
{
    if (!z->count) return cb_fail(CB_ERR_FORMAT, "%s: empty zip archive (not a torch.save file)", what);
    const char *first = z->entries[0].name, *slash = strchr(first, '/');
    if (!slash || slash == first)
        return cb_fail(CB_ERR_FORMAT, "%s: zip entry %s lies outside a folder (not a torch.save file)", what, first);
    size_t n = (size_t)(slash + 1 - first);
    for (int i = 1; i < z->count; i++)
        if (strncmp(z->entries[i].name, first, n) != 0)
            return cb_fail(CB_ERR_FORMAT, "%s: zip entries %s and %s lie in different folders (torch.load reads "
                           "only the first one's): refused as ambiguous", what, first, z->entries[i].name);
    memcpy(prefix, first, n);
    prefix[n] = 0;
    return CB_OK;
}

static _Thread_local const planned *sort_plan; /* qsort context (see zip.c) */

static int by_key(const void *a, const void *b)
{
    return strcmp(sort_plan[*(const int *)a].name, sort_plan[*(const int *)b].name);
}

static cb_status over_cap(const char *what, const char *part, uint64_t asked, uint64_t cap)
{
    char a[32], c[32];
    cb_format_bytes(asked, a, sizeof a);
    cb_format_bytes(cap, c, sizeof c);
    return cb_fail(CB_ERR_UNSUPPORTED, "%s: %s brings the memory this file asks for to %s, above the limit of %s "
                   "for one weights file (refused before allocating it; set %s, e.g. %s=64G, to raise the "
                   "limit)", what, part, a, c, CB_WEIGHTS_CAP_ENV, CB_WEIGHTS_CAP_ENV);
}

/* Checks every tensor of the state dict, then the total, and only then reads. */
static cb_status read_state_dict(const cb_zip *z, const char *prefix, const char *what, const pk_value *root,
                                 uint64_t asked, uint64_t cap, cb_tensor_list *out)
{
    int n = root->n / 2;
    planned *plan = calloc((size_t)n + 1, sizeof *plan);
    int *order = calloc((size_t)n + 1, sizeof *order);
    storage_use *uses = calloc((size_t)z->count + 1, sizeof *uses);
    cb_status s = plan && order && uses ? CB_OK : cb_fail(CB_ERR_NOMEM, "out of memory reading %s", what);
    for (int i = 0; s == CB_OK && i < n; i++) {
        const pk_value *k = root->items[2 * i], *v = root->items[2 * i + 1];
        if (k->type != PK_STR) s = cb_fail(CB_ERR_FORMAT, "%s: a state-dict key is not a string", what);
        else if (v->type != PK_TENSOR)
            s = cb_fail(CB_ERR_FORMAT, "%s: entry '%s' is not a tensor (save model.state_dict(), "
                        "not the model or an optimizer)", what, k->s);
        else s = plan_tensor(z, prefix, what, k->s, v, uses, &plan[i], &asked);
        if (s == CB_OK && asked > cap) {
            char part[CB_MAX_NAME + 64], b[32];
            cb_format_bytes((uint64_t)plan[i].numel * cb_dtype_size(plan[i].dt), b, sizeof b);
            snprintf(part, sizeof part, "tensor '%s' (%s)", plan[i].name, b);
            s = over_cap(what, part, asked, cap);
        }
        order[i] = i;
    }
    if (s == CB_OK) { /* a key twice: Python keeps the last value, a list both */
        sort_plan = plan;
        qsort(order, (size_t)n, sizeof *order, by_key);
        sort_plan = NULL;
        for (int i = 0; s == CB_OK && i + 1 < n; i++)
            if (strcmp(plan[order[i]].name, plan[order[i + 1]].name) == 0)
                s = cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' appears twice", what, plan[order[i]].name);
    }
    for (int i = 0; s == CB_OK && i < n; i++) s = load_tensor(z, &plan[i], uses, out);
    for (int i = 0; uses && i < z->count; i++) free(uses[i].owned);
    free(uses);
    free(order);
    free(plan);
    return s;
}

cb_status cb_torch_parse(const unsigned char *buf, size_t len, const char *what, cb_tensor_list *out)
{
    memset(out, 0, sizeof *out);
    cb_file_kind kind = cb_file_kind_of(buf, len);
    if (kind == CB_FILE_TORCH_LEGACY)
        return cb_fail(CB_ERR_UNSUPPORTED, "%s uses PyTorch's legacy (pre-1.6) serialization; re-save it with "
                       "torch.save(state_dict, f) from PyTorch 1.6 or later", what);
    if (kind != CB_FILE_TORCH_ZIP) return cb_fail(CB_ERR_FORMAT, "%s is not a PyTorch zip archive", what);
    uint64_t cap;
    cb_status s = cb_weights_cap(&cap);
    if (s != CB_OK) return s;
    cb_zip z;
    if ((s = cb_zip_open(buf, len, what, &z)) != CB_OK) return s;
    char prefix[256], name[300];
    s = archive_folder(&z, what, prefix);
    snprintf(name, sizeof name, "%sdata.pkl", prefix);
    const cb_zip_entry *pkl = s == CB_OK ? cb_zip_find(&z, name) : NULL;
    if (s == CB_OK && !pkl)
        s = cb_fail(CB_ERR_FORMAT, "%s: zip archive without %s (not a torch.save file)", what, name);
    uint64_t asked = 0;
    if (s == CB_OK && pkl->method != 0) {
        asked = pkl->usize;
        if (asked > cap) s = over_cap(what, "its pickle (data.pkl)", asked, cap);
    }
    const unsigned char *pdata = NULL;
    unsigned char *powned = NULL;
    pk_pool *pool = NULL;
    pk_value *root = NULL;
    if (s == CB_OK) s = cb_zip_read(&z, pkl, cap, &pdata, &powned);
    if (s == CB_OK) s = pk_load_within(pdata, (size_t)pkl->usize, what, cap - asked, &pool, &root);
    if (s == CB_OK && root->type != PK_DICT)
        s = cb_fail(CB_ERR_FORMAT, "%s does not hold a state dict (its pickle is not a dict)", what);
    if (s == CB_OK) s = read_state_dict(&z, prefix, what, root, asked + pk_pool_bytes(pool), cap, out);
    pk_pool_free(pool);
    free(powned);
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
    /* The file is read whole, so its own length counts against the cap too. */
    uint64_t cap;
    cb_status s = cb_weights_cap(&cap);
    if (s != CB_OK) return s;
    struct stat st;
    if (stat(path, &st) == 0 && (uint64_t)st.st_size > cap)
        return over_cap(path, "reading it whole", (uint64_t)st.st_size, cap);
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
