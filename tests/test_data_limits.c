/* Data readers validate the whole file before a sample limit applies: a
 * limit (which the quick profile always passes) must not hide a truncated
 * file, a lying header, mismatched image and label files, or bad labels
 * after the kept samples, in plain or gzip files. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "harness.h"
#include "crossbind/formats.h"

static void put_be32(unsigned char *b, uint32_t v)
{
    b[0] = (unsigned char)(v >> 24), b[1] = (unsigned char)(v >> 16), b[2] = (unsigned char)(v >> 8);
    b[3] = (unsigned char)v;
}

/* An IDX file whose header claims `claimed` items of `item` bytes and whose
 * data holds `actual` bytes (value i % 10 at byte i). */
static void write_idx(const char *path, int ndim, uint32_t claimed, size_t actual, int gzip_it)
{
    unsigned char hdr[16] = {0, 0, 8, (unsigned char)ndim};
    put_be32(hdr + 4, claimed);
    if (ndim == 3) put_be32(hdr + 8, 28), put_be32(hdr + 12, 28);
    FILE *f = fopen(path, "wb");
    fwrite(hdr, 1, 4 + 4 * (size_t)ndim, f);
    for (size_t i = 0; i < actual; i++) fputc((int)(i % 10), f);
    fclose(f);
    if (gzip_it) {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "gzip -f '%s'", path);
        CHECK(system(cmd) == 0);
    }
}

static const char *mnist_dir(const char *name, int gz)
{
    static char dir[700];
    snprintf(dir, sizeof dir, "%s/%s-%s", test_tmpdir(), name, gz ? "gz" : "plain");
    char cmd[1500];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    CHECK(system(cmd) == 0);
    return dir;
}

static void write_pair(const char *dir, uint32_t images_claimed, size_t images, uint32_t labels_claimed,
                       size_t labels, int gz)
{
    char p[800];
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte", dir);
    write_idx(p, 3, images_claimed, images * 784, gz);
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte", dir);
    write_idx(p, 1, labels_claimed, labels, gz);
}

static void expect_limited_error(const char *dir, int64_t limit, const char *needle, const char *label)
{
    cb_dataset d;
    cb_status s = cb_mnist_load(dir, 1, limit, &d);
    if (s == CB_OK || !strstr(cb_last_error(), needle)) {
        fprintf(stderr, "  %s (limit %lld): expected an error containing '%s', got '%s'\n", label, (long long)limit,
                needle, s == CB_OK ? "success" : cb_last_error());
        test_failures++;
    }
    if (s == CB_OK) cb_dataset_free(&d);
}

TEST(idx_files_are_validated_whatever_the_limit)
{
    for (int gz = 0; gz < 2; gz++) {
        const char *dir = mnist_dir("idxlimit-ok", gz);
        write_pair(dir, 30, 30, 30, 30, gz);
        cb_dataset d;
        CHECK_OK(cb_mnist_load(dir, 1, 7, &d));
        CHECK(d.n == 7 && d.y[6] == 6.0f);
        cb_dataset_free(&d);
        for (int k = 0; k < 2; k++) {
            const int64_t limit = k ? 1 : 10;
            /* A header claiming 10^8 images in a 30-image file. */
            dir = mnist_dir("idxlimit-claims", gz);
            write_pair(dir, 100000000u, 30, 30, 30, gz);
            expect_limited_error(dir, limit, "truncated: the header promises 100000000 items, the data holds 30",
                                 "lying image header");
            /* Truncated image and label files, cut after the limit. */
            dir = mnist_dir("idxlimit-trunc", gz);
            write_pair(dir, 30, 29, 30, 30, gz);
            expect_limited_error(dir, limit, "truncated", "truncated images");
            dir = mnist_dir("idxlimit-trunc-labels", gz);
            write_pair(dir, 30, 30, 30, 20, gz);
            expect_limited_error(dir, limit, "truncated", "truncated labels");
            /* Over-long data after the promised items. */
            dir = mnist_dir("idxlimit-long", gz);
            write_pair(dir, 30, 31, 30, 30, gz);
            expect_limited_error(dir, limit, "trailing bytes", "trailing images");
            /* Image and label counts that disagree (both files internally sound). */
            dir = mnist_dir("idxlimit-mismatch", gz);
            write_pair(dir, 30, 30, 29, 29, gz);
            expect_limited_error(dir, limit, "has 30 images but", "count mismatch");
            dir = mnist_dir("idxlimit-mismatch2", gz);
            write_pair(dir, 300, 300, 30, 30, gz);
            expect_limited_error(dir, limit, "has 300 images but", "count mismatch, more images");
        }
    }
    /* A label over 9 after the limit (plain file; label 200 at sample 25). */
    const char *dir = mnist_dir("idxlimit-label", 0);
    write_pair(dir, 30, 30, 30, 30, 0);
    char p[800];
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte", dir);
    FILE *f = fopen(p, "r+b");
    fseek(f, 8 + 25, SEEK_SET);
    fputc(200, f);
    fclose(f);
    expect_limited_error(dir, 5, "label 200 of sample 25", "bad label after the limit");
    /* The same in a gzip file, where only decompressing finds it. */
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "gzip -f '%s'", p);
    CHECK(system(cmd) == 0);
    expect_limited_error(dir, 5, "label 200 of sample 25", "bad label after the limit, gzip");
}

/* CIFAR-10 binary batches: a bad label after the limit, and a damaged or
 * missing batch file after the one that fills the limit. */
TEST(cifar_batches_are_validated_whatever_the_limit)
{
    char dir[700], p[800];
    snprintf(dir, sizeof dir, "%s/cifarlimit", test_tmpdir());
    mkdir(dir, 0700);
    const size_t rec = 3073, n = 4;
    unsigned char *buf = calloc(n * rec + 1, 1);
    for (size_t i = 0; i < n; i++) buf[i * rec] = (unsigned char)i;
    for (int f = 1; f <= 5; f++) {
        snprintf(p, sizeof p, "%s/data_batch_%d.bin", dir, f);
        FILE *fp = fopen(p, "wb");
        fwrite(buf, 1, n * rec, fp);
        fclose(fp);
    }
    cb_dataset d;
    CHECK_OK(cb_cifar_load(dir, 1, 2, &d));
    CHECK(d.n == 2);
    cb_dataset_free(&d);
    /* Label 12 in record 3 of the first file, with a limit of 2. */
    buf[3 * rec] = 12;
    snprintf(p, sizeof p, "%s/data_batch_1.bin", dir);
    FILE *fp = fopen(p, "wb");
    fwrite(buf, 1, n * rec, fp);
    fclose(fp);
    CHECK(cb_cifar_load(dir, 1, 2, &d) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "record 3 has label 12") != NULL);
    buf[3 * rec] = 3;
    fp = fopen(p, "wb");
    fwrite(buf, 1, n * rec, fp);
    fclose(fp);
    /* The fourth file truncated by one byte, the limit met by the first. */
    snprintf(p, sizeof p, "%s/data_batch_4.bin", dir);
    fp = fopen(p, "wb");
    fwrite(buf, 1, n * rec - 1, fp);
    fclose(fp);
    CHECK(cb_cifar_load(dir, 1, 2, &d) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "data_batch_4.bin") != NULL);
    /* The fifth file missing. */
    remove(p);
    fp = fopen(p, "wb");
    fwrite(buf, 1, n * rec, fp);
    fclose(fp);
    snprintf(p, sizeof p, "%s/data_batch_5.bin", dir);
    remove(p);
    CHECK(cb_cifar_load(dir, 1, 2, &d) != CB_OK);
    CHECK(strstr(cb_last_error(), "data_batch_5.bin") != NULL);
    free(buf);
}

/* Prepared IMDb data: token indices and labels of rows after the limit. */
TEST(prepared_text_data_is_validated_whatever_the_limit)
{
    char dir[700], p[800];
    snprintf(dir, sizeof dir, "%s/preplimit", test_tmpdir());
    mkdir(dir, 0700);
    cb_word_counter *c;
    CHECK_OK(cb_word_counter_create(&c));
    char text[] = "good bad good film";
    CHECK_OK(cb_word_counter_add(c, text, strlen(text)));
    cb_vocab v = {0};
    CHECK_OK(cb_vocab_from_counts(c, 10, 4, &v));
    cb_word_counter_free(c);
    snprintf(p, sizeof p, "%s/vocab.txt", dir);
    CHECK_OK(cb_vocab_save(&v, p));
    int64_t ids[6 * 4], labels[6];
    for (int i = 0; i < 6 * 4; i++) ids[i] = 1 + i % 3;
    for (int i = 0; i < 6; i++) labels[i] = i % 2;
    cb_tensor x = {.dtype = CB_I64, .ndim = 2, .shape = {6, 4}, .data = ids};
    cb_tensor y = {.dtype = CB_I64, .ndim = 1, .shape = {6}, .data = labels};
    snprintf(p, sizeof p, "%s/x_train.npy", dir);
    CHECK_OK(cb_npy_write(p, &x));
    snprintf(p, sizeof p, "%s/y_train.npy", dir);
    CHECK_OK(cb_npy_write(p, &y));
    cb_dataset d;
    CHECK_OK(cb_text_dataset_load(dir, 1, 2, NULL, NULL, &d));
    CHECK(d.n == 2);
    cb_dataset_free(&d);
    labels[5] = 7;
    CHECK_OK(cb_npy_write(p, &y));
    CHECK(cb_text_dataset_load(dir, 1, 2, NULL, NULL, &d) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "label 7 is not 0 or 1") != NULL);
    labels[5] = 1;
    CHECK_OK(cb_npy_write(p, &y));
    ids[4 * 4 + 1] = 999;
    snprintf(p, sizeof p, "%s/x_train.npy", dir);
    CHECK_OK(cb_npy_write(p, &x));
    CHECK(cb_text_dataset_load(dir, 1, 2, NULL, NULL, &d) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "token index 999") != NULL);
    cb_vocab_free(&v);
}
