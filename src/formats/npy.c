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

/* The header is read as the Python literal numpy writes and nothing looser:
 * numpy evaluates it with ast.literal_eval, where a repeated key means its
 * last value, so anything a regular-expression reader could take otherwise
 * (a key twice, an unknown key, text after the dict, a one-element shape
 * without its comma) is refused rather than guessed at. */
typedef struct hdr_reader {
    const char *s, *what;
    size_t pos, len;
} hdr_reader;

static void skip_spaces(hdr_reader *r)
{
    while (r->pos < r->len && r->s[r->pos] == ' ') r->pos++;
}

static int peek(hdr_reader *r, char c)
{
    skip_spaces(r);
    return r->pos < r->len && r->s[r->pos] == c;
}

static int eat(hdr_reader *r, char c)
{
    if (!peek(r, c)) return 0;
    r->pos++;
    return 1;
}

static cb_status bad_header(const hdr_reader *r, const char *why)
{
    return cb_fail(CB_ERR_FORMAT, "%s: malformed .npy header at byte %zu of it: %s", r->what, r->pos, why);
}

/* A quoted string without escapes: its text is s[*b, *e). */
static int read_str(hdr_reader *r, size_t *b, size_t *e)
{
    skip_spaces(r);
    if (r->pos >= r->len || (r->s[r->pos] != '\'' && r->s[r->pos] != '"')) return 0;
    char q = r->s[r->pos++];
    *b = r->pos;
    while (r->pos < r->len && r->s[r->pos] != q && r->s[r->pos] != '\\' && r->s[r->pos] != '\n') r->pos++;
    if (r->pos >= r->len || r->s[r->pos] != q) return 0;
    *e = r->pos++;
    return 1;
}

static int is_word(const hdr_reader *r, const char *w)
{
    size_t n = strlen(w);
    return r->len - r->pos >= n && memcmp(r->s + r->pos, w, n) == 0 &&
           (r->len - r->pos == n || strchr(" ,}", r->s[r->pos + n]));
}

static cb_status read_shape(hdr_reader *r, cb_tensor *out)
{
    if (!eat(r, '(')) return bad_header(r, "'shape' is not a tuple");
    int commas = 0;
    while (!eat(r, ')')) {
        skip_spaces(r);
        size_t b = r->pos;
        while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9') r->pos++;
        size_t n = r->pos - b;
        if (n == 0 || (n > 1 && r->s[b] == '0'))
            return bad_header(r, "'shape' holds something other than non-negative decimal integers");
        /* %.*s with the entry's own length: the header is not NUL-terminated
         * and the entry may be its last bytes. */
        if (n > 15)
            return cb_fail(CB_ERR_FORMAT, "%s: .npy shape entry %.*s%s is too large", r->what, (int)(n > 20 ? 20 : n),
                           r->s + b, n > 20 ? "..." : "");
        if (out->ndim == CB_MAX_DIMS)
            return cb_fail(CB_ERR_UNSUPPORTED, "%s: .npy array of more than %d dimensions", r->what, CB_MAX_DIMS);
        int64_t d = 0; /* by hand: the header is not NUL-terminated */
        for (size_t k = b; k < r->pos; k++) d = d * 10 + (r->s[k] - '0');
        out->shape[out->ndim++] = d;
        if (eat(r, ',')) commas++;
        else if (!peek(r, ')')) return bad_header(r, "expected ',' or ')' in 'shape'");
    }
    /* (3) is the integer 3 to Python, not a shape. */
    if (out->ndim == 1 && commas == 0) return bad_header(r, "'shape' (n) lacks the comma of a one-element tuple");
    return CB_OK;
}

/* Reads the dict into out->dtype and out->shape; every key exactly once. */
static cb_status read_header(hdr_reader *r, cb_tensor *out)
{
    static const char *const keys[] = {"descr", "fortran_order", "shape"};
    int seen[3] = {0, 0, 0}, fortran = 0;
    size_t db = 0, de = 0;
    cb_status s = CB_OK;
    if (!eat(r, '{')) return bad_header(r, "not a dict");
    while (s == CB_OK && !eat(r, '}')) {
        size_t kb, ke;
        if (!read_str(r, &kb, &ke)) return bad_header(r, "expected a quoted key");
        int k = -1;
        for (int i = 0; i < 3; i++)
            if (ke - kb == strlen(keys[i]) && memcmp(r->s + kb, keys[i], ke - kb) == 0) k = i;
        if (k < 0)
            return cb_fail(CB_ERR_FORMAT, "%s: .npy header has the unknown key '%.*s' (numpy allows descr, "
                           "fortran_order and shape only)", r->what, (int)(ke - kb > 40 ? 40 : ke - kb), r->s + kb);
        if (seen[k]++)
            return cb_fail(CB_ERR_FORMAT, "%s: .npy header gives '%s' twice (numpy would take the last, an older "
                           "reader the first): refused as ambiguous", r->what, keys[k]);
        if (!eat(r, ':')) return bad_header(r, "expected ':'");
        skip_spaces(r);
        if (k == 0 && !read_str(r, &db, &de)) {
            return cb_fail(CB_ERR_UNSUPPORTED, "%s: .npy dtype is not a plain type (structured arrays are not read)",
                           r->what);
        } else if (k == 1) {
            if (is_word(r, "True")) fortran = 1, r->pos += 4;
            else if (is_word(r, "False")) r->pos += 5;
            else return bad_header(r, "'fortran_order' is neither True nor False");
        } else if (k == 2) {
            s = read_shape(r, out);
        }
        if (s == CB_OK && !eat(r, ',') && !peek(r, '}')) return bad_header(r, "expected ',' or '}'");
    }
    if (s != CB_OK) return s;
    for (int i = 0; i < 3; i++)
        if (!seen[i]) return cb_fail(CB_ERR_FORMAT, "%s: .npy header lacks '%s'", r->what, keys[i]);
    /* Spaces, then the newline that ends every header. */
    skip_spaces(r);
    if (r->pos + 1 != r->len || r->s[r->pos] != '\n')
        return bad_header(r, "something other than space padding and a final newline after the dict");
    static const struct { const char *d; cb_dtype t; } map[] = {
        {"<f4", CB_F32}, {"<f8", CB_F64}, {"<i8", CB_I64}, {"<i4", CB_I32}, {"|u1", CB_U8}, {"<u1", CB_U8}};
    size_t i = 0;
    while (i < sizeof map / sizeof map[0] && (de - db != strlen(map[i].d) || memcmp(r->s + db, map[i].d, de - db)))
        i++;
    if (i == sizeof map / sizeof map[0])
        return cb_fail(CB_ERR_UNSUPPORTED, "%s: .npy dtype '%.*s' is not read (little-endian f4, f8, i8, i4, u1 are)",
                       r->what, (int)(de - db > 16 ? 16 : de - db), r->s + db);
    out->dtype = map[i].t;
    if (fortran)
        return cb_fail(CB_ERR_UNSUPPORTED, "%s: Fortran-order .npy arrays are not read; save the array with "
                       "np.save(f, np.ascontiguousarray(a))", r->what);
    return CB_OK;
}

cb_status cb_npy_parse(const unsigned char *buf, size_t len, const char *what, cb_tensor *out)
{
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0)
        return cb_fail(CB_ERR_FORMAT, "%s is not a .npy file (no \\x93NUMPY magic)", what);
    int major = buf[6];
    size_t hlen, start;
    if (buf[7] != 0 || major < 1 || major > 3)
        return cb_fail(CB_ERR_UNSUPPORTED, "%s: .npy format version %d.%d is not read (1.0, 2.0 and 3.0 are)",
                       what, major, buf[7]);
    if (major == 1) {
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        start = 10;
    } else {
        if (len < 12) return cb_fail(CB_ERR_FORMAT, "%s: truncated .npy header", what);
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        start = 12;
    }
    if (hlen > 1 << 20 || hlen > len - start) return cb_fail(CB_ERR_FORMAT, "%s: truncated .npy header", what);
    /* numpy pads the header so that the data starts on a 64-byte boundary
     * (16 before numpy 1.14): any other length is not a writer's doing. */
    if ((start + hlen) % 16)
        return cb_fail(CB_ERR_FORMAT, "%s: .npy header length %zu puts the data at byte %zu, not on the 16-byte "
                       "boundary the format pads to", what, hlen, start + hlen);
    for (size_t i = 0; i < hlen; i++)
        if (buf[start + i] < 0x20 && buf[start + i] != '\n')
            return cb_fail(CB_ERR_FORMAT, "%s: .npy header holds control byte 0x%02x", what, buf[start + i]);
        else if (buf[start + i] >= 0x7f)
            return cb_fail(CB_ERR_FORMAT, "%s: .npy header holds non-ASCII byte 0x%02x", what, buf[start + i]);
    hdr_reader r = {.s = (const char *)buf + start, .what = what, .pos = 0, .len = hlen};
    cb_status s = read_header(&r, out);
    if (s != CB_OK) {
        out->ndim = 0;
        return s;
    }
    /* The product is bounded by the data as it grows, so it cannot overflow. */
    size_t have = len - start - hlen, size = cb_dtype_size(out->dtype);
    uint64_t numel = 1;
    for (int d = 0; d < out->ndim; d++) {
        uint64_t k = (uint64_t)out->shape[d];
        if (k && numel > have / size / k)
            return cb_fail(CB_ERR_FORMAT, "%s: .npy shape needs more than the %zu data bytes the file holds "
                           "(truncated?)", what, have);
        numel *= k;
    }
    size_t bytes = (size_t)numel * size;
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

/* The 10-byte preamble and the padded header dict of a version 1.0 file. */
static void npy_header(cb_dtype dtype, int ndim, const int64_t *shape, cb_buf *f)
{
    static const char *descr[] = {"<f4", "<f8", "<i8", "<i4", "|u1"};
    cb_buf h = {0};
    cb_buf_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr[dtype]);
    for (int d = 0; d < ndim; d++) cb_buf_printf(&h, "%lld,%s", (long long)shape[d], d + 1 < ndim ? " " : "");
    cb_buf_printf(&h, "), }");
    /* Pad so that the data starts on a 64-byte boundary; end with '\n'. */
    while ((10 + h.len + 1) % 64) cb_buf_printf(&h, " ");
    cb_buf_printf(&h, "\n");
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)h.len, (unsigned char)(h.len >> 8)};
    cb_buf_append(f, pre, sizeof pre);
    if (h.data) cb_buf_append(f, h.data, h.len);
    if (!cb_buf_ok(&h)) f->failed = 1;
    cb_buf_free(&h);
}

cb_status cb_npy_write(const char *path, const cb_tensor *t)
{
    size_t bytes = (size_t)cb_tensor_numel(t) * cb_dtype_size(t->dtype);
    cb_buf f = {0};
    npy_header(t->dtype, t->ndim, t->shape, &f);
    cb_buf_append(&f, t->data, bytes);
    cb_status s = cb_buf_ok(&f) ? cb_write_file_atomic(path, f.data, f.len)
                                : cb_fail(CB_ERR_NOMEM, "out of memory writing %s", path);
    cb_buf_free(&f);
    return s;
}

cb_status cb_npy_write_header(FILE *out, const char *path, cb_dtype dtype, int ndim, const int64_t *shape)
{
    cb_buf f = {0};
    npy_header(dtype, ndim, shape, &f);
    cb_status s = !cb_buf_ok(&f) ? cb_fail(CB_ERR_NOMEM, "out of memory writing %s", path)
                  : fwrite(f.data, 1, f.len, out) != f.len ? cb_fail(CB_ERR_IO, "cannot write %s", path)
                                                          : CB_OK;
    cb_buf_free(&f);
    return s;
}
