/* Hostile PyTorch .pt files: zip bombs, sizes that disagree, archives that
 * two zip readers would read differently, declarations that ask for more
 * memory than the cap. Every file is forged here, with zlib, so that each
 * case shows what it is made of. The bombs must be refused without being
 * inflated: those tests measure the peak memory of the parse. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include "harness.h"
#include "crossbind/formats.h"

#define CAP_ENV "CROSSBIND_WEIGHTS_MAX_MEMORY"
#define MIB ((uint64_t)1 << 20)

/* ---- a growable byte buffer ---- */

typedef struct gbuf {
    unsigned char *p;
    size_t n, cap;
} gbuf;

static void put(gbuf *b, const void *data, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        b->p = realloc(b->p, cap);
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_le(gbuf *b, uint64_t v, int n)
{
    unsigned char x[8];
    for (int i = 0; i < n; i++) x[i] = (unsigned char)(v >> (8 * i));
    put(b, x, (size_t)n);
}

static void put_byte(gbuf *b, unsigned char c) { put(b, &c, 1); }

/* ---- state-dict pickles (protocol 2, the layout torch.save writes) ---- */

typedef struct tensor_spec {
    const char *key, *storage_type, *storage_key;
    int64_t numel, offset;
    int ndim;
    int64_t size[4], stride[4];
} tensor_spec;

static void pk_str(gbuf *b, const char *s)
{
    put_byte(b, 'X');
    put_le(b, strlen(s), 4);
    put(b, s, strlen(s));
}

static void pk_int(gbuf *b, int64_t v)
{
    put_byte(b, 0x8a);
    put_byte(b, 8);
    put_le(b, (uint64_t)v, 8);
}

static void pk_global(gbuf *b, const char *module, const char *name)
{
    put_byte(b, 'c');
    put(b, module, strlen(module));
    put_byte(b, '\n');
    put(b, name, strlen(name));
    put_byte(b, '\n');
}

static gbuf state_dict_pickle(const tensor_spec *t, int n)
{
    gbuf b = {0};
    put(&b, "\x80\x02", 2);
    pk_global(&b, "collections", "OrderedDict");
    put(&b, ")R(", 3);
    for (int i = 0; i < n; i++) {
        pk_str(&b, t[i].key);
        pk_global(&b, "torch._utils", "_rebuild_tensor_v2");
        put(&b, "((", 2);
        pk_str(&b, "storage");
        pk_global(&b, "torch", t[i].storage_type);
        pk_str(&b, t[i].storage_key);
        pk_str(&b, "cpu");
        pk_int(&b, t[i].numel);
        put(&b, "tQ", 2);
        pk_int(&b, t[i].offset);
        put_byte(&b, '(');
        for (int d = 0; d < t[i].ndim; d++) pk_int(&b, t[i].size[d]);
        put(&b, "t(", 2);
        for (int d = 0; d < t[i].ndim; d++) pk_int(&b, t[i].stride[d]);
        put(&b, "t\x89", 2);
        pk_global(&b, "collections", "OrderedDict");
        put(&b, ")RtR", 4);
    }
    put(&b, "u.", 2);
    return b;
}

/* ---- deflate ---- */

static gbuf deflate_bytes(const void *data, size_t n)
{
    gbuf out = {0};
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    CHECK(deflateInit2(&zs, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) == Z_OK);
    out.cap = deflateBound(&zs, n) + 16;
    out.p = malloc(out.cap);
    zs.next_in = (unsigned char *)data;
    zs.avail_in = (uInt)n;
    zs.next_out = out.p;
    zs.avail_out = (uInt)out.cap;
    CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    out.n = zs.total_out;
    deflateEnd(&zs);
    return out;
}

/* A raw deflate stream of `mib` MiB of zeros, built without compressing
 * them: after a full flush the compressor forgets its history, so the code
 * for each further MiB is the same bytes, which are repeated. */
static gbuf zero_stream(uint64_t mib, uint32_t *crc)
{
    static unsigned char zeros[1 << 20];
    gbuf out = {0};
    unsigned char chunk[2][4096];
    size_t clen[2];
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    CHECK(deflateInit2(&zs, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) == Z_OK);
    for (int i = 0; i < 2; i++) {
        zs.next_in = zeros;
        zs.avail_in = sizeof zeros;
        zs.next_out = chunk[i];
        zs.avail_out = sizeof chunk[i];
        CHECK(deflate(&zs, Z_FULL_FLUSH) == Z_OK && zs.avail_in == 0);
        clen[i] = sizeof chunk[i] - zs.avail_out;
    }
    CHECK(clen[0] == clen[1] && memcmp(chunk[0], chunk[1], clen[0]) == 0);
    for (uint64_t i = 0; i < mib; i++) put(&out, chunk[1], clen[1]);
    unsigned char tail[64];
    zs.next_in = zeros;
    zs.avail_in = 0;
    zs.next_out = tail;
    zs.avail_out = sizeof tail;
    CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    put(&out, tail, sizeof tail - zs.avail_out);
    deflateEnd(&zs);
    uLong one = crc32_z(0, zeros, sizeof zeros), c = 0;
    for (uint64_t i = 0; i < mib; i++) c = crc32_combine(c, one, sizeof zeros);
    *crc = (uint32_t)c;
    return out;
}

/* ---- zip archives, with every field under the test's control ---- */

typedef struct forged {
    const char *name;
    const unsigned char *data; /* the bytes in the archive (compressed when method is 8) */
    size_t len;
    int method;
    uint64_t usize;         /* declared uncompressed size (stored: 0 means len) */
    uint32_t crc;           /* declared CRC-32 (stored: computed when 0) */
    const char *local_name; /* the local header's name, when it lies */
    int local_size_lies;    /* the local header declares one byte more */
    int descriptor;         /* 1: zero local fields and a true data descriptor; 2: a false one */
    int inside;             /* 1 + index of an earlier entry whose data holds this local header */
} forged;

typedef struct forge_opts {
    int hide_last;      /* the end record counts one entry less than the directory holds */
    size_t trailing;    /* bytes after the end record */
} forge_opts;

static void local_header(gbuf *b, const forged *e, uint32_t crc, uint64_t usize)
{
    const char *name = e->local_name ? e->local_name : e->name;
    int zeroed = e->descriptor != 0;
    put_le(b, 0x04034b50u, 4);
    put_le(b, 20, 2);
    put_le(b, zeroed ? 8 : 0, 2);
    put_le(b, (uint64_t)e->method, 2);
    put_le(b, 0, 4);
    put_le(b, zeroed ? 0 : crc, 4);
    put_le(b, zeroed ? 0 : e->len, 4);
    put_le(b, zeroed ? 0 : usize + (e->local_size_lies ? 1 : 0), 4);
    put_le(b, strlen(name), 2);
    put_le(b, 0, 2);
    put(b, name, strlen(name));
}

static unsigned char *forge_zip(const forged *e, int n, const forge_opts *o, size_t *len)
{
    static const forge_opts none = {0, 0};
    if (!o) o = &none;
    gbuf b = {0};
    uint64_t offset[16], crc[16], usize[16];
    for (int i = 0; i < n && i < 16; i++) {
        usize[i] = e[i].method == 0 && !e[i].usize ? e[i].len : e[i].usize;
        crc[i] = e[i].crc || e[i].method != 0 ? e[i].crc : (uint32_t)crc32_z(0, e[i].data, e[i].len);
        if (e[i].inside) { /* the header sits at the start of an earlier entry's data */
            int j = e[i].inside - 1;
            offset[i] = offset[j] + 30 + strlen(e[j].local_name ? e[j].local_name : e[j].name);
            continue;
        }
        offset[i] = b.n;
        local_header(&b, &e[i], (uint32_t)crc[i], usize[i]);
        put(&b, e[i].data, e[i].len);
        if (e[i].descriptor) {
            put_le(&b, 0x08074b50u, 4);
            put_le(&b, e[i].descriptor == 2 ? crc[i] ^ 1 : crc[i], 4);
            put_le(&b, e[i].len, 4);
            put_le(&b, usize[i], 4);
        }
    }
    size_t cd = b.n;
    for (int i = 0; i < n && i < 16; i++) {
        put_le(&b, 0x02014b50u, 4);
        put_le(&b, 20, 2);
        put_le(&b, 20, 2);
        put_le(&b, e[i].descriptor ? 8 : 0, 2);
        put_le(&b, (uint64_t)e[i].method, 2);
        put_le(&b, 0, 4);
        put_le(&b, crc[i], 4);
        put_le(&b, e[i].len, 4);
        put_le(&b, usize[i], 4);
        put_le(&b, strlen(e[i].name), 2);
        put_le(&b, 0, 2);
        put_le(&b, 0, 2);
        put_le(&b, 0, 2);
        put_le(&b, 0, 2);
        put_le(&b, 0, 4);
        put_le(&b, offset[i], 4);
        put(&b, e[i].name, strlen(e[i].name));
    }
    size_t cd_size = b.n - cd;
    int counted = n - (o->hide_last ? 1 : 0);
    put_le(&b, 0x06054b50u, 4);
    put_le(&b, 0, 4);
    put_le(&b, (uint64_t)counted, 2);
    put_le(&b, (uint64_t)counted, 2);
    put_le(&b, cd_size, 4);
    put_le(&b, cd, 4);
    put_le(&b, 0, 2);
    for (size_t i = 0; i < o->trailing; i++) put_byte(&b, 0);
    *len = b.n;
    return b.p;
}

/* A one-tensor state dict: `w`, 4 floats of FloatStorage "0". */
static const tensor_spec four_floats = {"w", "FloatStorage", "0", 4, 0, 1, {4}, {1}};

static forged stored(const char *name, const void *data, size_t len)
{
    forged f = {0};
    f.name = name;
    f.data = data;
    f.len = len;
    return f;
}

static cb_status parse(const unsigned char *buf, size_t len, cb_tensor_list *l)
{
    return cb_torch_parse(buf, len, "forged.pt", l);
}

/* ---- what a parse costs: peak resident memory and processor time ---- */

static long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, field, n) == 0) kb = strtol(line + n, NULL, 10);
    if (f) fclose(f);
    return kb;
}

typedef struct cost {
    long base_kb;
    clock_t cpu;
} cost;

/* Resets the kernel's peak-RSS mark (Linux: "5" to clear_refs), so the
 * peak read afterwards belongs to the parse alone. */
static cost cost_start(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
    cost c = {status_kb("VmRSS:"), clock()};
    return c;
}

/* The parse's growth of the peak in MiB and its processor seconds. */
static void cost_end(cost c, double *mib, double *sec)
{
    *mib = (double)(status_kb("VmHWM:") - c.base_kb) / 1024.0;
    *sec = (double)(clock() - c.cpu) / CLOCKS_PER_SEC;
}

#define CHEAP(mib, sec, what)                                                                       \
    do {                                                                                           \
        CHECK((mib) < 64 && (sec) < 0.5);                                                          \
        if (!((mib) < 64 && (sec) < 0.5))                                                          \
            fprintf(stderr, "  %s: the parse grew the peak RSS by %.0f MiB and took %.2f s\n", what, mib, sec); \
    } while (0)

static unsigned char *pt_with_storage(const tensor_spec *t, int nt, forged storage, size_t *len)
{
    gbuf pkl = state_dict_pickle(t, nt);
    forged e[3] = {stored("archive/data.pkl", pkl.p, pkl.n), storage, stored("archive/version", "3\n", 2)};
    unsigned char *pt = forge_zip(e, 3, NULL, len);
    free(pkl.p);
    return pt;
}

TEST(torch_zip_bomb_is_refused_before_inflating)
{
    uint32_t crc;
    gbuf bomb = zero_stream(1024, &crc); /* 1 GiB of zeros in about 1 MB */
    forged st = {0};
    st.name = "archive/data/0";
    st.data = bomb.p;
    st.len = bomb.n;
    st.method = 8;
    st.usize = 1024 * MIB;
    st.crc = crc;
    size_t len;
    cb_tensor_list l;
    double mib, sec;

    /* The pickle declares 16 bytes, the archive 1 GiB: refused on the
     * declarations alone. */
    unsigned char *pt = pt_with_storage(&four_floats, 1, st, &len);
    CHECK(len < 2 * MIB);
    cost c = cost_start();
    CHECK(parse(pt, len, &l) == CB_ERR_FORMAT);
    cost_end(c, &mib, &sec);
    CHECK(strstr(cb_last_error(), "forged.pt") && strstr(cb_last_error(), "archive/data/0") &&
          strstr(cb_last_error(), "1073741824 bytes") && strstr(cb_last_error(), "4 elements"));
    CHEAP(mib, sec, "declared 16 bytes, archive 1 GiB");
    free(pt);

    /* Both declare 16 bytes, but the stream inflates to 1 GiB: inflation
     * stops at the 17th byte. */
    st.usize = 16;
    pt = pt_with_storage(&four_floats, 1, st, &len);
    c = cost_start();
    CHECK(parse(pt, len, &l) == CB_ERR_FORMAT);
    cost_end(c, &mib, &sec);
    CHECK(strstr(cb_last_error(), "archive/data/0") && strstr(cb_last_error(), "more than its declared 16 bytes"));
    CHEAP(mib, sec, "declared 16 bytes, stream 1 GiB");
    free(pt);

    /* Both declare 1 GiB: a consistent file, but above a 256 MiB cap, so
     * refused before anything is allocated, naming the tensor. */
    tensor_spec big = {"layer.weight", "FloatStorage", "0", (int64_t)1 << 28, 0, 1, {(int64_t)1 << 28}, {1}};
    st.usize = 1024 * MIB;
    pt = pt_with_storage(&big, 1, st, &len);
    setenv(CAP_ENV, "256M", 1);
    c = cost_start();
    CHECK(parse(pt, len, &l) == CB_ERR_UNSUPPORTED);
    cost_end(c, &mib, &sec);
    unsetenv(CAP_ENV);
    CHECK(strstr(cb_last_error(), "forged.pt") && strstr(cb_last_error(), "'layer.weight' (1.0 GiB)") &&
          strstr(cb_last_error(), "256.0 MiB") && strstr(cb_last_error(), CAP_ENV));
    CHEAP(mib, sec, "1 GiB declared twice, 256 MiB cap");
    free(pt);
    free(bomb.p);
}

TEST(torch_memory_cap_counts_every_tensor)
{
    /* Two 16 MiB tensors, each inflated from zeros: 32 MiB as loaded plus
     * 32 MiB inflated. */
    uint32_t crc;
    gbuf z = zero_stream(16, &crc);
    const tensor_spec t[2] = {{"a", "FloatStorage", "0", 4 * MIB, 0, 1, {4 * MIB}, {1}},
                              {"b", "FloatStorage", "1", 4 * MIB, 0, 1, {4 * MIB}, {1}}};
    gbuf pkl = state_dict_pickle(t, 2);
    forged e[3] = {stored("archive/data.pkl", pkl.p, pkl.n), {0}, {0}};
    for (int i = 1; i < 3; i++) {
        e[i].name = i == 1 ? "archive/data/0" : "archive/data/1";
        e[i].data = z.p;
        e[i].len = z.n;
        e[i].method = 8;
        e[i].usize = 16 * MIB;
        e[i].crc = crc;
    }
    size_t len;
    unsigned char *pt = forge_zip(e, 3, NULL, &len);
    cb_tensor_list l;
    setenv(CAP_ENV, "48M", 1);
    CHECK(parse(pt, len, &l) == CB_ERR_UNSUPPORTED);
    CHECK(strstr(cb_last_error(), "tensor 'b' (16.0 MiB)") && strstr(cb_last_error(), "48.0 MiB"));
    setenv(CAP_ENV, "1G", 1);
    CHECK_OK(parse(pt, len, &l));
    CHECK(l.count == 2 && l.items[1].shape[0] == (int64_t)(4 * MIB));
    if (l.count == 2) CHECK(((const float *)l.items[1].data)[4 * MIB - 1] == 0.0f);
    cb_tensor_list_free(&l);
    /* The file is read whole: its own length counts against the cap. */
    const char *path = test_tmp("capped.pt");
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(pt, 1, len, f) == len);
    if (f) fclose(f);
    setenv(CAP_ENV, "4K", 1);
    CHECK(cb_torch_read(path, &l) == CB_ERR_UNSUPPORTED);
    CHECK(strstr(cb_last_error(), "capped.pt: reading it whole") != NULL);
    /* A malformed setting is an error naming the variable, not a default. */
    setenv(CAP_ENV, "12X", 1);
    CHECK(parse(pt, len, &l) == CB_ERR_INVALID_ARG);
    CHECK(strstr(cb_last_error(), CAP_ENV) != NULL);
    unsetenv(CAP_ENV);
    free(pt);
    free(pkl.p);
    free(z.p);
}

TEST(torch_huge_views_of_tiny_storages_are_weighed)
{
    /* 2^26 elements viewing one float through stride 0: 256 MiB as loaded
     * from a file of a few hundred bytes. */
    float one = 1.0f;
    const tensor_spec t = {"w", "FloatStorage", "0", 1, 0, 1, {(int64_t)1 << 26}, {0}};
    size_t len;
    unsigned char *pt = pt_with_storage(&t, 1, stored("archive/data/0", &one, sizeof one), &len);
    cb_tensor_list l;
    setenv(CAP_ENV, "64M", 1);
    cost c = cost_start();
    CHECK(parse(pt, len, &l) == CB_ERR_UNSUPPORTED);
    double mib, sec;
    cost_end(c, &mib, &sec);
    unsetenv(CAP_ENV);
    CHECK(strstr(cb_last_error(), "tensor 'w' (256.0 MiB)") != NULL);
    CHEAP(mib, sec, "stride-0 view of 256 MiB");
    free(pt);
    /* Shapes whose element count or reach overflows 64 bits. */
    const tensor_spec over[2] = {{"w", "FloatStorage", "0", 1, 0, 2, {(int64_t)1 << 62, 8}, {0, 0}},
                                 {"w", "FloatStorage", "0", 1, (int64_t)1 << 62, 2, {2, 2}, {(int64_t)1 << 62, 0}}};
    for (int i = 0; i < 2; i++) {
        pt = pt_with_storage(&over[i], 1, stored("archive/data/0", &one, sizeof one), &len);
        CHECK(parse(pt, len, &l) == CB_ERR_FORMAT);
        free(pt);
    }
}

TEST(torch_declarations_must_agree)
{
    float v[4] = {1, 2, 3, 4};
    cb_tensor_list l;
    size_t len;
    /* The pickle declares 5 floats, the archive holds 4. */
    tensor_spec five = four_floats;
    five.numel = 5;
    unsigned char *pt = pt_with_storage(&five, 1, stored("archive/data/0", v, sizeof v), &len);
    CHECK(parse(pt, len, &l) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "16 bytes for storage archive/data/0") && strstr(cb_last_error(), "5 elements"));
    free(pt);
    /* One storage declared as floats by one tensor and as ints by another:
     * PyTorch keeps the first type, a reader per tensor would mix them. */
    const tensor_spec two[2] = {four_floats, {"v", "IntStorage", "0", 4, 0, 1, {4}, {1}}};
    pt = pt_with_storage(two, 2, stored("archive/data/0", v, sizeof v), &len);
    CHECK(parse(pt, len, &l) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "'w' and 'v' declare storage archive/data/0 with different types") != NULL);
    free(pt);
    /* The same declaration twice is a shared storage: both views load, and a
     * deflated storage (and pickle) read correctly. */
    const tensor_spec views[2] = {four_floats, {"tail", "FloatStorage", "0", 4, 2, 1, {2}, {1}}};
    gbuf pkl = state_dict_pickle(views, 2), zpkl = deflate_bytes(pkl.p, pkl.n), zv = deflate_bytes(v, sizeof v);
    forged e[2] = {{0}, {0}};
    e[0].name = "archive/data.pkl";
    e[0].data = zpkl.p;
    e[0].len = zpkl.n;
    e[0].method = 8;
    e[0].usize = pkl.n;
    e[0].crc = (uint32_t)crc32_z(0, pkl.p, pkl.n);
    e[1].name = "archive/data/0";
    e[1].data = zv.p;
    e[1].len = zv.n;
    e[1].method = 8;
    e[1].usize = sizeof v;
    e[1].crc = (uint32_t)crc32_z(0, (const unsigned char *)v, sizeof v);
    e[1].descriptor = 1; /* as PyTorch writes: zero local fields, then a descriptor */
    pt = forge_zip(e, 2, NULL, &len);
    CHECK_OK(parse(pt, len, &l));
    CHECK(l.count == 2);
    if (l.count == 2) {
        const float *tail = l.items[1].data;
        CHECK(memcmp(l.items[0].data, v, sizeof v) == 0 && tail[0] == 3 && tail[1] == 4);
    }
    cb_tensor_list_free(&l);
    free(pt);
    /* A data descriptor that disagrees with the central directory. */
    e[1].descriptor = 2;
    pt = forge_zip(e, 2, NULL, &len);
    CHECK(parse(pt, len, &l) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "archive/data/0: its data descriptor") != NULL);
    free(pt);
    e[1].descriptor = 0;
    /* A local header that declares another size than the central one. */
    e[1].local_size_lies = 1;
    pt = forge_zip(e, 2, NULL, &len);
    CHECK(parse(pt, len, &l) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "archive/data/0: its local header declares other sizes") != NULL);
    free(pt);
    free(pkl.p);
    free(zpkl.p);
    free(zv.p);
}

TEST(torch_zip_ambiguous_archives_are_refused)
{
    float v[4] = {1, 2, 3, 4}, u[4] = {5, 6, 7, 8};
    gbuf pkl = state_dict_pickle(&four_floats, 1);
    const tensor_spec other_t = {"other", "FloatStorage", "1", 4, 0, 1, {4}, {1}};
    gbuf other = state_dict_pickle(&other_t, 1);
    cb_tensor_list l;
    size_t len;
    const struct {
        forged e[4];
        int n;
        forge_opts o;
        const char *why;
    } cases[] = {
        {{stored("archive/data.pkl", pkl.p, pkl.n), stored("archive/data/0", v, sizeof v),
          stored("archive/data/1", u, sizeof u), stored("archive/data.pkl", other.p, other.n)},
         4, {0, 0}, "holds entry archive/data.pkl twice"},
        {{stored("archive/data.pkl", pkl.p, pkl.n), stored("archive/data/0", v, sizeof v),
          stored("archive/data/0", u, sizeof u)},
         3, {0, 0}, "holds entry archive/data/0 twice"},
        {{stored("archive/data.pkl", pkl.p, pkl.n), stored("archive/data/0", v, sizeof v),
          stored("other/data.pkl", other.p, other.n)},
         3, {0, 0}, "different folders"},
        {{stored("archive/data/0", v, sizeof v), stored("archive/data.pkl", pkl.p, pkl.n),
          stored("archive/data/1", u, sizeof u)},
         3, {1, 0}, "more than the 2 entries"},
        {{stored("archive/data.pkl", pkl.p, pkl.n), stored("archive/data/0", v, sizeof v)},
         2, {0, 3}, "bytes after the zip end"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char *pt = forge_zip(cases[i].e, cases[i].n, &cases[i].o, &len);
        CHECK(parse(pt, len, &l) == CB_ERR_FORMAT);
        if (!strstr(cb_last_error(), cases[i].why)) {
            CHECK(!"the message names the ambiguity");
            fprintf(stderr, "  case %zu: %s\n", i, cb_last_error());
        }
        free(pt);
    }
    /* A local header whose name is not the central one's. */
    forged e[2] = {stored("archive/data.pkl", pkl.p, pkl.n), stored("archive/data/0", v, sizeof v)};
    e[1].local_name = "archive/data/9";
    unsigned char *pt = forge_zip(e, 2, NULL, &len);
    CHECK(parse(pt, len, &l) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "archive/data/0: its local header names another entry") != NULL);
    free(pt);
    /* An entry whose local header lies inside another entry's data (the
     * overlap that non-recursive zip bombs are made of). */
    gbuf inner = {0};
    forged hidden = stored("archive/data/0", v, sizeof v);
    local_header(&inner, &hidden, (uint32_t)crc32_z(0, (const unsigned char *)v, sizeof v), sizeof v);
    put(&inner, v, sizeof v);
    forged o[3] = {stored("archive/data.pkl", pkl.p, pkl.n), stored("archive/blob", inner.p, inner.n), hidden};
    o[2].inside = 2;
    pt = forge_zip(o, 3, NULL, &len);
    CHECK(parse(pt, len, &l) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "archive/blob and archive/data/0 overlap") != NULL);
    free(pt);
    /* The well-formed archive these cases spoil loads. */
    e[1].local_name = NULL;
    pt = forge_zip(e, 2, NULL, &len);
    CHECK_OK(parse(pt, len, &l));
    CHECK(l.count == 1);
    cb_tensor_list_free(&l);
    free(pt);
    free(inner.p);
    free(pkl.p);
    free(other.p);
}

TEST(torch_pickle_reader_memory_is_capped)
{
    /* A megabyte of EMPTY_LIST opcodes makes a million values, each a
     * hundred times its opcode's size. */
    gbuf pkl = {0};
    put(&pkl, "\x80\x02", 2);
    for (int i = 0; i < 1 << 20; i++) put_byte(&pkl, ']');
    put_byte(&pkl, '.');
    size_t len;
    forged e[1] = {stored("archive/data.pkl", pkl.p, pkl.n)};
    unsigned char *pt = forge_zip(e, 1, NULL, &len);
    cb_tensor_list l;
    setenv(CAP_ENV, "32M", 1);
    cost c = cost_start();
    CHECK(parse(pt, len, &l) == CB_ERR_UNSUPPORTED);
    double mib, sec;
    cost_end(c, &mib, &sec);
    unsetenv(CAP_ENV);
    CHECK(strstr(cb_last_error(), "pickle needs more than 32.0 MiB") && strstr(cb_last_error(), CAP_ENV));
    CHEAP(mib, sec, "a million empty lists");
    free(pt);
    free(pkl.p);
}
