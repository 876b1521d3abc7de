/* MNIST IDX reader and writer. zlib's gz* functions read plain and gzip
 * files alike. The header is validated against the real amount of data: a
 * truncated or over-long file is an error, never a short data set. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "crossbind/data.h"
#include "../core/json.h"

#define IDX_UBYTE 0x08
#define MAX_SAMPLES 100000000LL

static gzFile open_idx(const char *dir, const char *base, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", dir, base);
    gzFile f = gzopen(path, "rb");
    if (f) return f;
    snprintf(path, size, "%s/%s.gz", dir, base);
    f = gzopen(path, "rb");
    if (!f) snprintf(path, size, "%s/%s[.gz]", dir, base);
    return f;
}

static int read_exact(gzFile f, void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
        int got = gzread(f, p, chunk);
        if (got <= 0) return 0;
        p += got;
        n -= (size_t)got;
    }
    return 1;
}

static uint32_t be32(const unsigned char *b)
{
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

/* Reads the rest of an IDX file after the kept items, without keeping it:
 * returns the bytes there are, up to `want` + 1 (one more means trailing
 * data). Labels (max_value < 255) are checked as they pass. */
static cb_status skim_rest(gzFile f, uint64_t want, uint8_t max_value, uint64_t first, const char *path,
                           uint64_t *got)
{
    unsigned char chunk[1 << 16];
    *got = 0;
    while (*got <= want) {
        uint64_t left = want + 1 - *got;
        int n = gzread(f, chunk, (unsigned)(left < sizeof chunk ? left : sizeof chunk));
        if (n <= 0) break;
        for (int i = 0; i < n && max_value < 255 && *got + (uint64_t)i < want; i++)
            if (chunk[i] > max_value)
                return cb_fail(CB_ERR_FORMAT, "%s: label %d of sample %llu is not a digit class 0-%d", path, chunk[i],
                               (unsigned long long)(first + *got + (uint64_t)i), max_value);
        *got += (uint64_t)n;
    }
    return CB_OK;
}

/* Reads an IDX file of unsigned bytes with `ndim` dimensions; `limit` > 0
 * keeps the first `limit` items. The whole file is validated whatever the
 * limit: its header against its real length (for gzip, the decompressed
 * length), and every value against max_value, so that a limit never hides
 * a truncated, over-long or corrupt file. dims[0] is the file's item count,
 * *kept the items returned in *data (owned). */
static cb_status read_idx(const char *dir, const char *base, int ndim, int64_t limit, uint8_t max_value,
                          int64_t dims[3], int64_t *kept, uint8_t **data, char *path, size_t path_size)
{
    *data = NULL;
    *kept = 0;
    gzFile f = open_idx(dir, base, path, path_size);
    if (!f) return cb_fail(CB_ERR_IO, "cannot open %s: %s", path, strerror(errno ? errno : ENOENT));
    unsigned char hdr[16];
    cb_status s = CB_OK;
    if (!read_exact(f, hdr, 4 + 4 * (size_t)ndim)) {
        s = cb_fail(CB_ERR_FORMAT, "%s: truncated IDX header", path);
    } else if (hdr[0] != 0 || hdr[1] != 0 || hdr[2] != IDX_UBYTE || hdr[3] != ndim) {
        s = cb_fail(CB_ERR_FORMAT, "%s: wrong IDX magic %02x%02x%02x%02x (expected 000008%02x: unsigned bytes, %d dims)",
                    path, hdr[0], hdr[1], hdr[2], hdr[3], ndim, ndim);
    }
    int64_t item = 1;
    for (int i = 0; s == CB_OK && i < ndim; i++) {
        dims[i] = be32(hdr + 4 + 4 * i);
        if (dims[i] < 1 || dims[i] > (i ? 4096 : MAX_SAMPLES))
            s = cb_fail(CB_ERR_FORMAT, "%s: implausible dimension %lld", path, (long long)dims[i]);
        if (i) item *= dims[i];
    }
    if (s == CB_OK) {
        int64_t keep = (limit > 0 && limit < dims[0]) ? limit : dims[0];
        size_t bytes = (size_t)(keep * item);
        /* The header's size is not trusted with memory: the buffer starts
         * small and grows with the data actually read, so a lying header
         * cannot make the reader allocate (or clear, page by page) more than
         * about twice the file's real content. */
        size_t cap = bytes < ((size_t)1 << 16) ? bytes : ((size_t)1 << 16), have = 0;
        *data = malloc(cap ? cap : 1);
        while (*data && have < bytes) {
            if (have == cap) {
                size_t ncap = cap * 2 < bytes ? cap * 2 : bytes;
                uint8_t *nd = realloc(*data, ncap);
                if (!nd) { free(*data); *data = NULL; break; }
                *data = nd;
                cap = ncap;
            }
            int got = gzread(f, *data + have, (unsigned)(cap - have < (1u << 30) ? cap - have : (1u << 30)));
            if (got <= 0) break;
            have += (size_t)got;
        }
        uint64_t rest_want = (uint64_t)(dims[0] - keep) * (uint64_t)item, rest = 0;
        if (!*data) s = cb_fail(CB_ERR_NOMEM, "%s: out of memory (%zu bytes)", path, bytes);
        for (size_t i = 0; s == CB_OK && max_value < 255 && i < have; i++)
            if ((*data)[i] > max_value)
                s = cb_fail(CB_ERR_FORMAT, "%s: label %d of sample %zu is not a digit class 0-%d", path, (*data)[i], i,
                            max_value);
        if (s == CB_OK && have == bytes) s = skim_rest(f, rest_want, max_value, (uint64_t)keep, path, &rest);
        uint64_t total = (uint64_t)have + rest; /* data bytes after the header, up to one past the promise */
        if (s == CB_OK && total < (uint64_t)dims[0] * (uint64_t)item)
            s = cb_fail(CB_ERR_FORMAT, "%s: truncated: the header promises %lld items, the data holds %llu%s "
                        "(a damaged or incomplete copy: restore the file from its source)", path, (long long)dims[0],
                        (unsigned long long)(total / (uint64_t)item), total % (uint64_t)item ? " and a part" : "");
        else if (s == CB_OK && rest > rest_want)
            s = cb_fail(CB_ERR_FORMAT, "%s: trailing bytes after %lld items", path, (long long)dims[0]);
        int gzerr;
        const char *msg = gzerror(f, &gzerr);
        if (s == CB_OK && gzerr != Z_OK && gzerr != Z_STREAM_END)
            s = cb_fail(CB_ERR_FORMAT, "%s: corrupt compressed data: %s", path, msg);
        *kept = keep;
    }
    gzclose(f);
    if (s != CB_OK) {
        free(*data);
        *data = NULL;
    }
    return s;
}

cb_status cb_mnist_load(const char *dir, int train, int64_t limit, cb_dataset *out)
{
    memset(out, 0, sizeof *out);
    char ipath[4096], lpath[4096];
    int64_t idims[3], ldims[3], ikept, lkept;
    uint8_t *pix = NULL, *lab = NULL;
    const char *prefix = train ? "train" : "t10k";
    char base[64];
    snprintf(base, sizeof base, "%s-images-idx3-ubyte", prefix);
    cb_status s = read_idx(dir, base, 3, limit, 255, idims, &ikept, &pix, ipath, sizeof ipath);
    if (s != CB_OK) return s;
    snprintf(base, sizeof base, "%s-labels-idx1-ubyte", prefix);
    s = read_idx(dir, base, 1, limit, 9, ldims, &lkept, &lab, lpath, sizeof lpath);
    /* The files' own counts, not the kept ones: a limit must not hide a
     * pair of files that do not belong together. */
    if (s == CB_OK && idims[0] != ldims[0])
        s = cb_fail(CB_ERR_FORMAT, "%s has %lld images but %s has %lld labels (files of two data sets?)", ipath,
                    (long long)idims[0], lpath, (long long)ldims[0]);
    if (s == CB_OK) {
        out->n = ikept;
        out->c = 1;
        out->h = (int)idims[1];
        out->w = (int)idims[2];
        out->classes = 10;
        size_t npix = (size_t)(out->n * out->h * out->w);
        out->x = malloc(npix * sizeof(float));
        out->y = malloc((size_t)out->n * sizeof(float));
        if (!out->x || !out->y) s = cb_fail(CB_ERR_NOMEM, "out of memory loading %s", ipath);
        for (size_t i = 0; s == CB_OK && i < npix; i++) out->x[i] = (float)pix[i] / 255.0f;
        for (int64_t i = 0; s == CB_OK && i < out->n; i++) out->y[i] = (float)lab[i];
        snprintf(out->source, sizeof out->source, "%s", dir);
    }
    free(pix);
    free(lab);
    if (s != CB_OK) cb_dataset_free(out);
    return s;
}

void cb_dataset_free(cb_dataset *d)
{
    free(d->x);
    free(d->y);
    memset(d, 0, sizeof *d);
}

static void put_be32(unsigned char *b, uint32_t v)
{
    b[0] = (unsigned char)(v >> 24); b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8); b[3] = (unsigned char)v;
}

static cb_status write_idx(const char *path, int ndim, const int64_t *dims, const uint8_t *data, size_t bytes)
{
    size_t hlen = 4 + 4 * (size_t)ndim;
    unsigned char *buf = malloc(hlen + bytes);
    if (!buf) return cb_fail(CB_ERR_NOMEM, "out of memory writing %s", path);
    buf[0] = buf[1] = 0;
    buf[2] = IDX_UBYTE;
    buf[3] = (unsigned char)ndim;
    for (int i = 0; i < ndim; i++) put_be32(buf + 4 + 4 * i, (uint32_t)dims[i]);
    memcpy(buf + hlen, data, bytes);
    cb_status s = cb_write_file_atomic(path, buf, hlen + bytes);
    free(buf);
    return s;
}

cb_status cb_idx_write_images(const char *path, const uint8_t *pixels, int64_t n, int rows, int cols)
{
    int64_t dims[3] = {n, rows, cols};
    return write_idx(path, 3, dims, pixels, (size_t)(n * rows * cols));
}

cb_status cb_idx_write_labels(const char *path, const uint8_t *labels, int64_t n)
{
    int64_t dims[1] = {n};
    return write_idx(path, 1, dims, labels, (size_t)n);
}
