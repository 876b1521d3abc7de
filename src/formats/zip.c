/* Zip reader and writer for PyTorch's .pt container (see zip.h).
 * Layout reminders: the end-of-central-directory record (EOCD) sits at the
 * end, possibly behind a comment; it points to the central directory, whose
 * entries point to local headers, each followed by the entry's data. zip64
 * replaces 16/32-bit fields that overflow by 0xFFFF.../extra records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "zip.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOCATOR64 0x07064b50u
#define MAX_ENTRIES 1000000

static uint64_t rd(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* Is [off, off+n) inside a buffer of len bytes? */
static int inside(size_t len, uint64_t off, uint64_t n) { return off <= len && n <= len - off; }

static cb_status find_directory(const unsigned char *b, size_t len, const char *what, uint64_t *count,
                                uint64_t *offset, uint64_t *size)
{
    if (len < 22) return cb_fail(CB_ERR_FORMAT, "%s: too short to be a zip archive (truncated?)", what);
    size_t eocd = 0;
    int found = 0;
    size_t lowest = len - 22 > 65535 ? len - 22 - 65535 : 0;
    for (size_t p = len - 22 + 1; p-- > lowest;)
        if (rd(b + p, 4) == SIG_EOCD) { eocd = p; found = 1; break; }
    if (!found) return cb_fail(CB_ERR_FORMAT, "%s: no zip end-of-directory record (truncated archive?)", what);
    *count = rd(b + eocd + 10, 2);
    *size = rd(b + eocd + 12, 4);
    *offset = rd(b + eocd + 16, 4);
    if (*count == 0xFFFF || *size == 0xFFFFFFFFu || *offset == 0xFFFFFFFFu) {
        if (eocd < 20 || rd(b + eocd - 20, 4) != SIG_LOCATOR64)
            return cb_fail(CB_ERR_FORMAT, "%s: zip64 archive without its locator", what);
        uint64_t e64 = rd(b + eocd - 20 + 8, 8);
        if (!inside(len, e64, 56) || rd(b + e64, 4) != SIG_EOCD64)
            return cb_fail(CB_ERR_FORMAT, "%s: zip64 end-of-directory record out of bounds", what);
        *count = rd(b + e64 + 32, 8);
        *size = rd(b + e64 + 40, 8);
        *offset = rd(b + e64 + 48, 8);
    }
    if (!inside(len, *offset, *size) || *count > MAX_ENTRIES || *count > *size / 46 + 1)
        return cb_fail(CB_ERR_FORMAT, "%s: zip central directory out of bounds (truncated archive?)", what);
    return CB_OK;
}

/* Reads the zip64 extra field of a central entry for the fields that
 * overflowed, in the order the format fixes: sizes, then offset. */
static int zip64_extra(const unsigned char *x, size_t n, uint64_t *usize, uint64_t *csize, uint64_t *off)
{
    while (n >= 4) {
        uint64_t id = rd(x, 2), sz = rd(x + 2, 2);
        if (sz > n - 4) return 0;
        if (id == 1) {
            const unsigned char *p = x + 4;
            uint64_t left = sz;
            uint64_t *fields[3] = {usize, csize, off};
            for (int i = 0; i < 3; i++) {
                if (*fields[i] != 0xFFFFFFFFu) continue;
                if (left < 8) return 0;
                *fields[i] = rd(p, 8);
                p += 8;
                left -= 8;
            }
            return 1;
        }
        x += 4 + sz;
        n -= 4 + sz;
    }
    return 1;
}

static cb_status inflate_entry(const unsigned char *src, uint64_t csize, uint64_t usize, const char *what,
                               const char *name, unsigned char **out)
{
    /* Deflate cannot expand more than about 1032:1; anything beyond is a bomb. */
    if (usize > csize * 1032 + 64 || usize > ((uint64_t)1 << 34))
        return cb_fail(CB_ERR_FORMAT, "%s: entry %s claims an impossible size", what, name);
    unsigned char *dst = malloc(usize ? usize : 1);
    if (!dst) return cb_fail(CB_ERR_NOMEM, "out of memory inflating %s", name);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -15) != Z_OK) {
        free(dst);
        return cb_fail(CB_ERR_NOMEM, "zlib: cannot start inflating %s", name);
    }
    zs.next_in = (unsigned char *)src;
    zs.avail_in = (uInt)(csize > 0xFFFFFFFFu ? 0xFFFFFFFFu : csize);
    zs.next_out = dst;
    zs.avail_out = (uInt)(usize > 0xFFFFFFFFu ? 0xFFFFFFFFu : usize);
    int rc = inflate(&zs, Z_FINISH);
    uint64_t produced = zs.total_out;
    inflateEnd(&zs);
    if (rc != Z_STREAM_END || produced != usize) {
        free(dst);
        return cb_fail(CB_ERR_FORMAT, "%s: entry %s does not inflate to its declared size", what, name);
    }
    *out = dst;
    return CB_OK;
}

cb_status cb_zip_open(const unsigned char *b, size_t len, const char *what, cb_zip *out)
{
    memset(out, 0, sizeof *out);
    uint64_t count = 0, cd = 0, cd_size = 0;
    cb_status s = find_directory(b, len, what, &count, &cd, &cd_size);
    if (s != CB_OK) return s;
    out->entries = calloc(count ? count : 1, sizeof *out->entries);
    if (!out->entries) return cb_fail(CB_ERR_NOMEM, "out of memory indexing %s", what);
    uint64_t p = cd, end = cd + cd_size;
    for (uint64_t i = 0; i < count; i++) {
        if (!inside(end, p, 46) || rd(b + p, 4) != SIG_CENTRAL) {
            s = cb_fail(CB_ERR_FORMAT, "%s: corrupt zip central directory entry %llu", what,
                        (unsigned long long)i);
            break;
        }
        uint64_t method = rd(b + p + 10, 2), crc = rd(b + p + 16, 4), csize = rd(b + p + 20, 4),
                 usize = rd(b + p + 24, 4), nlen = rd(b + p + 28, 2), xlen = rd(b + p + 30, 2),
                 clen = rd(b + p + 32, 2), local = rd(b + p + 42, 4);
        if (!inside(end, p + 46, nlen + xlen + clen) || nlen == 0 || nlen >= sizeof out->entries[0].name ||
            !zip64_extra(b + p + 46 + nlen, xlen, &usize, &csize, &local)) {
            s = cb_fail(CB_ERR_FORMAT, "%s: corrupt zip entry %llu (name or extra field)", what,
                        (unsigned long long)i);
            break;
        }
        cb_zip_entry *e = &out->entries[out->count];
        memcpy(e->name, b + p + 46, nlen);
        e->name[nlen] = 0;
        if (memchr(e->name, 0, nlen)) {
            s = cb_fail(CB_ERR_FORMAT, "%s: zip entry name contains a NUL byte", what);
            break;
        }
        p += 46 + nlen + xlen + clen;
        if (!inside(len, local, 30) || rd(b + local, 4) != SIG_LOCAL) {
            s = cb_fail(CB_ERR_FORMAT, "%s: entry %s: local header out of bounds (truncated archive?)", what, e->name);
            break;
        }
        uint64_t data = local + 30 + rd(b + local + 26, 2) + rd(b + local + 28, 2);
        if (!inside(len, data, csize)) {
            s = cb_fail(CB_ERR_FORMAT, "%s: entry %s: data runs past the end of the file (truncated archive?)",
                        what, e->name);
            break;
        }
        if (method == 0) {
            if (csize != usize) {
                s = cb_fail(CB_ERR_FORMAT, "%s: stored entry %s has differing sizes", what, e->name);
                break;
            }
            e->data = b + data;
        } else if (method == 8) {
            unsigned char *dst = NULL;
            s = inflate_entry(b + data, csize, usize, what, e->name, &dst);
            if (s != CB_OK) break;
            e->data = dst;
            e->owned = 1;
        } else {
            s = cb_fail(CB_ERR_UNSUPPORTED, "%s: entry %s uses zip compression method %llu (only stored and "
                        "deflate are read)", what, e->name, (unsigned long long)method);
            break;
        }
        e->size = (size_t)usize;
        out->count++;
        if (crc32_z(0, e->data, e->size) != crc) {
            s = cb_fail(CB_ERR_FORMAT, "%s: entry %s fails its CRC-32 check (corrupt file)", what, e->name);
            break;
        }
    }
    if (s != CB_OK) cb_zip_close(out);
    return s;
}

void cb_zip_close(cb_zip *z)
{
    for (int i = 0; i < z->count; i++)
        if (z->entries[i].owned) free((void *)z->entries[i].data);
    free(z->entries);
    memset(z, 0, sizeof *z);
}

const cb_zip_entry *cb_zip_find(const cb_zip *z, const char *name)
{
    for (int i = 0; i < z->count; i++)
        if (strcmp(z->entries[i].name, name) == 0) return &z->entries[i];
    return NULL;
}

/* ---- writer ---- */

typedef struct central_rec {
    char name[256];
    uint32_t crc, size, offset;
} central_rec;

struct cb_zip_writer {
    unsigned char *buf;
    size_t len, cap;
    central_rec *recs;
    int count, rcap;
    int failed;
};

static void put(cb_zip_writer *w, const void *p, size_t n)
{
    if (w->failed) return;
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (cap < w->len + n) cap *= 2;
        unsigned char *nb = realloc(w->buf, cap);
        if (!nb) { w->failed = 1; return; }
        w->buf = nb;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

static void put_le(cb_zip_writer *w, uint64_t v, int n)
{
    unsigned char b[8];
    for (int i = 0; i < n; i++) b[i] = (unsigned char)(v >> (8 * i));
    put(w, b, (size_t)n);
}

cb_status cb_zip_writer_create(cb_zip_writer **out)
{
    *out = calloc(1, sizeof **out);
    return *out ? CB_OK : cb_fail(CB_ERR_NOMEM, "out of memory creating a zip writer");
}

void cb_zip_writer_free(cb_zip_writer *w)
{
    if (!w) return;
    free(w->buf);
    free(w->recs);
    free(w);
}

cb_status cb_zip_writer_add(cb_zip_writer *w, const char *name, const void *data, size_t size)
{
    size_t nlen = strlen(name);
    if (nlen == 0 || nlen >= 256) return cb_fail(CB_ERR_INVALID_ARG, "zip: bad entry name '%s'", name);
    /* Plain zip fields: archives of 4 GiB or more would need zip64 records. */
    if (size >= 0xFFFF0000u || w->len + size + nlen + 200 >= 0xFFFF0000u || w->count >= 0xFFFF)
        return cb_fail(CB_ERR_UNSUPPORTED, "zip: archives of 4 GiB or more are not written");
    if (w->count == w->rcap) {
        int cap = w->rcap ? 2 * w->rcap : 16;
        central_rec *r = realloc(w->recs, (size_t)cap * sizeof *r);
        if (!r) return cb_fail(CB_ERR_NOMEM, "out of memory writing a zip archive");
        w->recs = r;
        w->rcap = cap;
    }
    central_rec *r = &w->recs[w->count++];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->crc = (uint32_t)crc32_z(0, data, size);
    r->size = (uint32_t)size;
    r->offset = (uint32_t)w->len;
    /* Pad with an extra field so that the data starts on a 64-byte boundary. */
    size_t at = w->len + 30 + nlen, pad = (64 - at % 64) % 64;
    if (pad && pad < 4) pad += 64;
    put_le(w, SIG_LOCAL, 4);
    put_le(w, 20, 2); /* version needed */
    put_le(w, 0, 2);  /* flags */
    put_le(w, 0, 2);  /* stored */
    put_le(w, 0, 4);  /* time, date */
    put_le(w, r->crc, 4);
    put_le(w, size, 4);
    put_le(w, size, 4);
    put_le(w, nlen, 2);
    put_le(w, pad, 2);
    put(w, name, nlen);
    if (pad) {
        static const unsigned char zeros[128];
        put_le(w, 0x4246, 2); /* an unregistered id ("FB"), skipped by readers */
        put_le(w, pad - 4, 2);
        put(w, zeros, pad - 4);
    }
    put(w, data, size);
    return w->failed ? cb_fail(CB_ERR_NOMEM, "out of memory writing a zip archive") : CB_OK;
}

cb_status cb_zip_writer_finish(cb_zip_writer *w, unsigned char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    size_t cd = w->len;
    for (int i = 0; i < w->count; i++) {
        const central_rec *r = &w->recs[i];
        size_t nlen = strlen(r->name);
        put_le(w, SIG_CENTRAL, 4);
        put_le(w, 20, 2); /* made by */
        put_le(w, 20, 2); /* needed */
        put_le(w, 0, 2);
        put_le(w, 0, 2);
        put_le(w, 0, 4);
        put_le(w, r->crc, 4);
        put_le(w, r->size, 4);
        put_le(w, r->size, 4);
        put_le(w, nlen, 2);
        put_le(w, 0, 2);  /* extra */
        put_le(w, 0, 2);  /* comment */
        put_le(w, 0, 2);  /* disk */
        put_le(w, 0, 2);  /* internal attributes */
        put_le(w, 0, 4);  /* external attributes */
        put_le(w, r->offset, 4);
        put(w, r->name, nlen);
    }
    size_t cd_size = w->len - cd;
    put_le(w, SIG_EOCD, 4);
    put_le(w, 0, 4);
    put_le(w, (uint64_t)w->count, 2);
    put_le(w, (uint64_t)w->count, 2);
    put_le(w, cd_size, 4);
    put_le(w, cd, 4);
    put_le(w, 0, 2);
    if (w->failed) {
        cb_zip_writer_free(w);
        return cb_fail(CB_ERR_NOMEM, "out of memory writing a zip archive");
    }
    *buf = w->buf;
    *len = w->len;
    w->buf = NULL;
    cb_zip_writer_free(w);
    return CB_OK;
}
