/* NumPy .npy files: "\x93NUMPY", a version, a header length, then a Python
 * dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces, then the raw data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/formats.h"
#include "../core/file.h"
#include "../core/json.h"

void cb_tensor_free(cb_tensor *t)
{
    free(t->data);
    t->data = NULL;
}

/* Finds 'key': in the header and returns a pointer to its value. */
static const char *field(const char *h, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s':", key);
    const char *p = strstr(h, pat);
    if (!p) return NULL;
    p += strlen(pat);
    while (*p == ' ') p++;
    return p;
}

static int parse_descr(const char *v, cb_dtype *out)
{
    static const struct { const char *d; cb_dtype t; } map[] = {
        {"'<f4'", CB_F32}, {"'<f8'", CB_F64}, {"'<i8'", CB_I64}, {"'<i4'", CB_I32},
        {"'|u1'", CB_U8}, {"'<u1'", CB_U8}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strncmp(v, map[i].d, strlen(map[i].d)) == 0) { *out = map[i].t; return 1; }
    return 0;
}

cb_status cb_npy_parse(const unsigned char *buf, size_t len, const char *what, cb_tensor *out)
{
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0)
        return cb_fail(CB_ERR_FORMAT, "%s is not a .npy file (no \\x93NUMPY magic)", what);
    int major = buf[6];
    size_t hlen, start;
    if (major == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        start = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) return cb_fail(CB_ERR_FORMAT, "%s: truncated .npy header", what);
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        start = 12;
    } else {
        return cb_fail(CB_ERR_UNSUPPORTED, "%s: .npy format version %d is not read", what, major);
    }
    if (hlen > 1 << 20 || hlen > len - start) return cb_fail(CB_ERR_FORMAT, "%s: truncated .npy header", what);
    char *h = malloc(hlen + 1);
    if (!h) return cb_fail(CB_ERR_NOMEM, "out of memory reading %s", what);
    memcpy(h, buf + start, hlen);
    h[hlen] = 0;
    cb_status s = CB_OK;
    const char *descr = field(h, "descr"), *fo = field(h, "fortran_order"), *shape = field(h, "shape");
    if (strlen(h) != hlen || !descr || !fo || !shape || *shape != '(')
        s = cb_fail(CB_ERR_FORMAT, "%s: malformed .npy header", what);
    else if (!parse_descr(descr, &out->dtype))
        s = cb_fail(CB_ERR_UNSUPPORTED, "%s: .npy dtype %.8s is not read (little-endian f4, f8, i8, i4, u1 are)",
                    what, descr);
    else if (strncmp(fo, "False", 5) != 0)
        s = cb_fail(CB_ERR_UNSUPPORTED, "%s: Fortran-order .npy arrays are not read", what);
    uint64_t numel = 1;
    const char *p = s == CB_OK ? shape + 1 : NULL;
    while (s == CB_OK) {
        while (*p == ' ' || *p == ',') p++;
        if (*p == ')') break;
        char *end;
        long long d = strtoll(p, &end, 10);
        if (end == p || d < 0 || out->ndim == CB_MAX_DIMS || (d && numel > (((uint64_t)1 << 40) / (uint64_t)d))) {
            s = cb_fail(CB_ERR_FORMAT, "%s: bad .npy shape", what);
            break;
        }
        out->shape[out->ndim++] = d;
        numel *= (uint64_t)d;
        p = end;
    }
    free(h);
    if (s != CB_OK) return s;
    size_t bytes = (size_t)numel * cb_dtype_size(out->dtype), have = len - start - hlen;
    if (have != bytes)
        return cb_fail(CB_ERR_FORMAT, "%s: .npy data is %zu bytes, its shape needs %zu (truncated?)", what, have,
                       bytes);
    if (!(out->data = malloc(bytes ? bytes : 1))) return cb_fail(CB_ERR_NOMEM, "out of memory reading %s", what);
    memcpy(out->data, buf + start + hlen, bytes);
    return CB_OK;
}

static cb_status parse_tensor(const unsigned char *buf, size_t len, const char *what, void *out)
{
    return cb_npy_parse(buf, len, what, out);
}

cb_status cb_npy_read(const char *path, cb_tensor *out)
{
    memset(out, 0, sizeof *out);
    return cb_parse_file(path, (size_t)1 << 40, parse_tensor, out);
}

cb_status cb_npy_write(const char *path, const cb_tensor *t)
{
    static const char *descr[] = {"<f4", "<f8", "<i8", "<i4", "|u1"};
    cb_buf h = {0};
    cb_buf_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr[t->dtype]);
    for (int d = 0; d < t->ndim; d++) cb_buf_printf(&h, "%lld,%s", (long long)t->shape[d], d + 1 < t->ndim ? " " : "");
    cb_buf_printf(&h, "), }");
    /* Pad so that the data starts on a 64-byte boundary; end with '\n'. */
    while ((10 + h.len + 1) % 64) cb_buf_printf(&h, " ");
    cb_buf_printf(&h, "\n");
    size_t bytes = (size_t)cb_tensor_numel(t) * cb_dtype_size(t->dtype);
    cb_buf f = {0};
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)h.len, (unsigned char)(h.len >> 8)};
    cb_buf_append(&f, pre, sizeof pre);
    cb_buf_append(&f, h.data, h.len);
    cb_buf_append(&f, t->data, bytes);
    cb_status s = cb_buf_ok(&f) && cb_buf_ok(&h) ? cb_write_file_atomic(path, f.data, f.len)
                                                 : cb_fail(CB_ERR_NOMEM, "out of memory writing %s", path);
    cb_buf_free(&h);
    cb_buf_free(&f);
    return s;
}
