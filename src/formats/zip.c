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
#define SIG_DESCRIPTOR 0x08074b50u
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
    /* Readers that search for the record differently (from the end, or
     * after the comment) must find the same one: nothing may follow it. */
    if (eocd + 22 + rd(b + eocd + 20, 2) != len)
        return cb_fail(CB_ERR_FORMAT, "%s: bytes after the zip end-of-directory record (a damaged or "
                       "doctored archive)", what);
    uint64_t disk = rd(b + eocd + 4, 2), cd_disk = rd(b + eocd + 6, 2), here = rd(b + eocd + 8, 2);
    *count = rd(b + eocd + 10, 2);
    *size = rd(b + eocd + 12, 4);
    *offset = rd(b + eocd + 16, 4);
    if (disk != 0 || cd_disk != 0 || here != *count)
        return cb_fail(CB_ERR_FORMAT, "%s: multi-volume zip archives are not read", what);
    if (*count == 0xFFFF || *size == 0xFFFFFFFFu || *offset == 0xFFFFFFFFu) {
        if (eocd < 20 || rd(b + eocd - 20, 4) != SIG_LOCATOR64)
            return cb_fail(CB_ERR_FORMAT, "%s: zip64 archive without its locator", what);
        uint64_t e64 = rd(b + eocd - 20 + 8, 8);
        if (!inside(len, e64, 56) || rd(b + e64, 4) != SIG_EOCD64)
            return cb_fail(CB_ERR_FORMAT, "%s: zip64 end-of-directory record out of bounds", what);
        if (rd(b + e64 + 24, 8) != rd(b + e64 + 32, 8))
            return cb_fail(CB_ERR_FORMAT, "%s: multi-volume zip archives are not read", what);
        *count = rd(b + e64 + 32, 8);
        *size = rd(b + e64 + 40, 8);
        *offset = rd(b + e64 + 48, 8);
    }
    /* The count is weighed against the directory's size before anything is
     * allocated for it: each central record takes at least 46 bytes. */
    if (!inside(len, *offset, *size) || *count > MAX_ENTRIES || *count > *size / 46)
        return cb_fail(CB_ERR_FORMAT, "%s: zip central directory out of bounds (truncated archive?)", what);
    return CB_OK;
}

/* Reads a zip64 extra field for the fields that overflowed (hold all ones),
 * in the order the format fixes: uncompressed size, compressed size, offset. */
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
                if (!fields[i] || *fields[i] != 0xFFFFFFFFu) continue;
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

/* The byte range an entry occupies, local header to data descriptor, for
 * the overlap check. */
typedef struct span {
    uint64_t from, to;
    int entry;
} span;

static int by_from(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->from < y->from ? -1 : x->from > y->from;
}

/* qsort has no context argument in C11; per thread, as parsers may run in parallel. */
static _Thread_local const cb_zip *sort_zip;

static int by_name(const void *a, const void *b)
{
    return strcmp(sort_zip->entries[*(const int *)a].name, sort_zip->entries[*(const int *)b].name);
}

/* Checks the local header of central entry e against the directory and
 * finds where its data starts and its record ends. */
static cb_status check_local(const cb_zip *z, cb_zip_entry *e, uint64_t local, uint64_t *end)
{
    const unsigned char *b = z->buf;
    size_t len = z->len;
    if (!inside(len, local, 30) || rd(b + local, 4) != SIG_LOCAL)
        return cb_fail(CB_ERR_FORMAT, "%s: entry %s: local header out of bounds (truncated archive?)", z->what,
                       e->name);
    uint64_t flags = rd(b + local + 6, 2), method = rd(b + local + 8, 2), crc = rd(b + local + 14, 4),
             csize = rd(b + local + 18, 4), usize = rd(b + local + 22, 4), nlen = rd(b + local + 26, 2),
             xlen = rd(b + local + 28, 2);
    if (!inside(len, local + 30, nlen + xlen))
        return cb_fail(CB_ERR_FORMAT, "%s: entry %s: local header out of bounds (truncated archive?)", z->what,
                       e->name);
    if (nlen != strlen(e->name) || memcmp(b + local + 30, e->name, nlen) != 0 || method != (uint64_t)e->method)
        return cb_fail(CB_ERR_FORMAT, "%s: entry %s: its local header names another entry or method than the "
                       "central directory (a doctored archive: zip readers would disagree on its content)",
                       z->what, e->name);
    if (!zip64_extra(b + local + 30 + nlen, xlen, &usize, &csize, NULL))
        return cb_fail(CB_ERR_FORMAT, "%s: entry %s: corrupt local extra field", z->what, e->name);
    /* With a data descriptor (flag bit 3) the local fields may be zero; any
     * value given must still agree. */
    int described = (flags & 8) != 0;
    if ((crc != e->crc && !(described && crc == 0)) || (csize != e->csize && !(described && csize == 0)) ||
        (usize != e->usize && !(described && usize == 0)))
        return cb_fail(CB_ERR_FORMAT, "%s: entry %s: its local header declares other sizes or CRC than the "
                       "central directory (a doctored archive: zip readers would disagree on its content)",
                       z->what, e->name);
    e->data = local + 30 + nlen + xlen;
    if (!inside(len, e->data, e->csize))
        return cb_fail(CB_ERR_FORMAT, "%s: entry %s: data runs past the end of the file (truncated archive?)",
                       z->what, e->name);
    *end = e->data + e->csize;
    if (!described) return CB_OK;
    /* The descriptor: an optional signature, the CRC, then both sizes in 4
     * or (zip64) 8 bytes each. One of the readings must agree. */
    uint64_t d = *end;
    if (inside(len, d, 4) && rd(b + d, 4) == SIG_DESCRIPTOR) d += 4;
    if (inside(len, d, 12) && rd(b + d, 4) == e->crc) {
        if (inside(len, d + 4, 16) && rd(b + d + 4, 8) == e->csize && rd(b + d + 12, 8) == e->usize) {
            *end = d + 20;
            return CB_OK;
        }
        if (rd(b + d + 4, 4) == e->csize && rd(b + d + 8, 4) == e->usize) {
            *end = d + 12;
            return CB_OK;
        }
    }
    return cb_fail(CB_ERR_FORMAT, "%s: entry %s: its data descriptor is missing or disagrees with the central "
                   "directory (a doctored archive: zip readers would disagree on its content)", z->what, e->name);
}

/* One central directory record at *p into e; *p moves past it. */
static cb_status read_central(cb_zip *z, uint64_t *p, uint64_t end, cb_zip_entry *e, uint64_t *local)
{
    const unsigned char *b = z->buf;
    uint64_t at = *p;
    if (!inside(end, at, 46) || rd(b + at, 4) != SIG_CENTRAL)
        return cb_fail(CB_ERR_FORMAT, "%s: corrupt zip central directory entry %d", z->what, z->count);
    uint64_t flags = rd(b + at + 8, 2), method = rd(b + at + 10, 2), crc = rd(b + at + 16, 4),
             csize = rd(b + at + 20, 4), usize = rd(b + at + 24, 4), nlen = rd(b + at + 28, 2),
             xlen = rd(b + at + 30, 2), clen = rd(b + at + 32, 2), disk = rd(b + at + 34, 2);
    *local = rd(b + at + 42, 4);
    if (!inside(end, at + 46, nlen + xlen + clen) || nlen == 0 || nlen >= sizeof e->name ||
        !zip64_extra(b + at + 46 + nlen, xlen, &usize, &csize, local))
        return cb_fail(CB_ERR_FORMAT, "%s: corrupt zip entry %d (name or extra field)", z->what, z->count);
    memcpy(e->name, b + at + 46, nlen);
    e->name[nlen] = 0;
    if (memchr(e->name, 0, nlen)) return cb_fail(CB_ERR_FORMAT, "%s: zip entry name contains a NUL byte", z->what);
    *p = at + 46 + nlen + xlen + clen;
    if (disk == 0xFFFF) disk = 0; /* its zip64 form is not read: one volume only */
    if (flags & 1) return cb_fail(CB_ERR_UNSUPPORTED, "%s: entry %s is encrypted", z->what, e->name);
    if (method != 0 && method != 8)
        return cb_fail(CB_ERR_UNSUPPORTED, "%s: entry %s uses zip compression method %llu (only stored and "
                       "deflate are read)", z->what, e->name, (unsigned long long)method);
    if (disk != 0) return cb_fail(CB_ERR_FORMAT, "%s: multi-volume zip archives are not read", z->what);
    e->method = (int)method;
    e->crc = (uint32_t)crc;
    e->csize = csize;
    e->usize = usize;
    if (method == 0 && csize != usize)
        return cb_fail(CB_ERR_FORMAT, "%s: stored entry %s has differing sizes", z->what, e->name);
    /* Deflate cannot expand more than about 1032:1; a larger claim is a bomb. */
    if (method == 8 && usize / 1032 > csize + 1)
        return cb_fail(CB_ERR_FORMAT, "%s: entry %s claims an impossible size (%llu bytes from %llu compressed)",
                       z->what, e->name, (unsigned long long)usize, (unsigned long long)csize);
    return CB_OK;
}

cb_status cb_zip_open(const unsigned char *b, size_t len, const char *what, cb_zip *out)
{
    memset(out, 0, sizeof *out);
    out->buf = b;
    out->len = len;
    out->what = what;
    uint64_t count = 0, cd = 0, cd_size = 0;
    cb_status s = find_directory(b, len, what, &count, &cd, &cd_size);
    if (s != CB_OK) return s;
    out->entries = calloc(count ? count : 1, sizeof *out->entries);
    out->by_name = malloc((count ? count : 1) * sizeof *out->by_name);
    span *spans = malloc((count + 1) * sizeof *spans);
    if (!out->entries || !out->by_name || !spans) {
        free(spans);
        cb_zip_close(out);
        return cb_fail(CB_ERR_NOMEM, "out of memory indexing %s", what);
    }
    uint64_t p = cd, end = cd + cd_size;
    for (uint64_t i = 0; s == CB_OK && i < count; i++) {
        cb_zip_entry *e = &out->entries[out->count];
        uint64_t local = 0, rec_end = 0;
        s = read_central(out, &p, end, e, &local);
        if (s == CB_OK) s = check_local(out, e, local, &rec_end);
        if (s != CB_OK) break;
        spans[out->count] = (span){local, rec_end, out->count};
        out->by_name[out->count] = out->count;
        out->count++;
    }
    /* A directory larger than its records would hide entries from readers
     * that trust the count, and show them to readers that walk the bytes. */
    if (s == CB_OK && p != end)
        s = cb_fail(CB_ERR_FORMAT, "%s: the zip central directory holds more than the %llu entries its end record "
                    "counts (a doctored archive)", what, (unsigned long long)count);
    if (s == CB_OK) {
        spans[out->count] = (span){cd, end, -1};
        qsort(spans, (size_t)out->count + 1, sizeof *spans, by_from);
        for (int i = 0; s == CB_OK && i < out->count; i++)
            if (spans[i + 1].from < spans[i].to) {
                int a = spans[i].entry, c = spans[i + 1].entry;
                s = cb_fail(CB_ERR_FORMAT, "%s: zip entries %s and %s overlap (a doctored archive)", what,
                            a < 0 ? "(central directory)" : out->entries[a].name,
                            c < 0 ? "(central directory)" : out->entries[c].name);
            }
    }
    if (s == CB_OK) {
        sort_zip = out;
        qsort(out->by_name, (size_t)out->count, sizeof *out->by_name, by_name);
        sort_zip = NULL;
        for (int i = 0; s == CB_OK && i + 1 < out->count; i++)
            if (strcmp(out->entries[out->by_name[i]].name, out->entries[out->by_name[i + 1]].name) == 0)
                s = cb_fail(CB_ERR_FORMAT, "%s: the zip archive holds entry %s twice (readers would disagree on "
                            "which one counts): refused", what, out->entries[out->by_name[i]].name);
    }
    free(spans);
    if (s != CB_OK) cb_zip_close(out);
    return s;
}

void cb_zip_close(cb_zip *z)
{
    free(z->entries);
    free(z->by_name);
    memset(z, 0, sizeof *z);
}

const cb_zip_entry *cb_zip_find(const cb_zip *z, const char *name)
{
    int lo = 0, hi = z->count;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(z->entries[z->by_name[mid]].name, name);
        if (c == 0) return &z->entries[z->by_name[mid]];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* Inflates exactly e->usize bytes into dst; one byte more, a stream that
 * ends early, or compressed bytes left over are all refusals. */
static cb_status inflate_exact(const cb_zip *z, const cb_zip_entry *e, unsigned char *dst)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -15) != Z_OK) return cb_fail(CB_ERR_NOMEM, "zlib: cannot start inflating %s", e->name);
    const unsigned char *src = z->buf + e->data;
    uint64_t in_left = e->csize, out_left = e->usize;
    unsigned char spare;
    int probing = 0, rc;
    zs.next_out = dst;
    for (;;) {
        if (zs.avail_in == 0 && in_left) {
            zs.next_in = (unsigned char *)src;
            zs.avail_in = (uInt)(in_left > 0x40000000u ? 0x40000000u : in_left);
            src += zs.avail_in;
            in_left -= zs.avail_in;
        }
        if (zs.avail_out == 0 && out_left) {
            zs.avail_out = (uInt)(out_left > 0x40000000u ? 0x40000000u : out_left);
            out_left -= zs.avail_out;
        } else if (zs.avail_out == 0 && !probing) {
            /* The declared size is reached: one byte of room tells whether
             * the stream wants more. */
            zs.next_out = &spare;
            zs.avail_out = 1;
            probing = 1;
        }
        rc = inflate(&zs, Z_NO_FLUSH);
        if (probing && zs.avail_out == 0) {
            inflateEnd(&zs);
            return cb_fail(CB_ERR_FORMAT, "%s: entry %s inflates to more than its declared %llu bytes (a zip bomb "
                           "or a damaged file): refused", z->what, e->name, (unsigned long long)e->usize);
        }
        if (rc == Z_STREAM_END) break;
        if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0) break; /* input ran out */
        if (rc != Z_OK) break;
    }
    uint64_t produced = zs.total_out, consumed = zs.total_in;
    inflateEnd(&zs);
    if (rc != Z_STREAM_END || produced != e->usize || consumed != e->csize)
        return cb_fail(CB_ERR_FORMAT, "%s: entry %s does not inflate to its declared %llu bytes (corrupt or "
                       "truncated compressed data)", z->what, e->name, (unsigned long long)e->usize);
    return CB_OK;
}

cb_status cb_zip_read(const cb_zip *z, const cb_zip_entry *e, uint64_t max_bytes, const unsigned char **data,
                      unsigned char **owned)
{
    *data = NULL;
    *owned = NULL;
    if (e->usize > max_bytes || e->usize > SIZE_MAX - 1)
        return cb_fail(CB_ERR_UNSUPPORTED, "%s: entry %s declares %llu bytes, more than the %llu this file may "
                       "still ask for", z->what, e->name, (unsigned long long)e->usize,
                       (unsigned long long)max_bytes);
    const unsigned char *d = z->buf + e->data;
    if (e->method == 8) {
        unsigned char *dst = malloc(e->usize ? (size_t)e->usize : 1);
        if (!dst) return cb_fail(CB_ERR_NOMEM, "out of memory inflating %s from %s", e->name, z->what);
        cb_status s = inflate_exact(z, e, dst);
        if (s != CB_OK) {
            free(dst);
            return s;
        }
        d = dst;
        *owned = dst;
    }
    if (crc32_z(0, d, (size_t)e->usize) != e->crc) {
        free(*owned);
        *owned = NULL;
        return cb_fail(CB_ERR_FORMAT, "%s: entry %s fails its CRC-32 check (corrupt file)", z->what, e->name);
    }
    *data = d;
    return CB_OK;
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
