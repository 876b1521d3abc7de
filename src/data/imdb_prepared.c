/* Prepared IMDb data: what `crossbind data imdb-prepare` writes and every
 * binding reads, so that all of them see identical token matrices:
 *   vocab.txt                 the vocabulary (crossbind/text.h)
 *   x_train.npy, x_test.npy   int64 [n, maxlen] token indices
 *   y_train.npy, y_test.npy   int64 [n] labels (1 positive, 0 negative)
 *   README.txt                where it came from */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "crossbind/data.h"
#include "crossbind/formats.h"
#include "../core/json.h"
#include "text_data.h"

static cb_status write_split(const char *out_dir, const char *split, const cb_dataset *d)
{
    char path[4096];
    const int64_t len = d->w;
    int64_t *ids = malloc((size_t)(d->n ? d->n : 1) * (size_t)len * sizeof *ids);
    int64_t *labels = malloc((size_t)(d->n ? d->n : 1) * sizeof *labels);
    cb_status s = ids && labels ? CB_OK : cb_fail(CB_ERR_NOMEM, "out of memory writing %s", out_dir);
    for (int64_t i = 0; s == CB_OK && i < d->n * len; i++) ids[i] = (int64_t)d->x[i];
    for (int64_t i = 0; s == CB_OK && i < d->n; i++) labels[i] = (int64_t)d->y[i];
    cb_tensor x = {.dtype = CB_I64, .ndim = 2, .shape = {d->n, len}, .data = ids};
    cb_tensor y = {.dtype = CB_I64, .ndim = 1, .shape = {d->n}, .data = labels};
    if (s == CB_OK) {
        snprintf(path, sizeof path, "%s/x_%s.npy", out_dir, split);
        s = cb_npy_write(path, &x);
    }
    if (s == CB_OK) {
        snprintf(path, sizeof path, "%s/y_%s.npy", out_dir, split);
        s = cb_npy_write(path, &y);
    }
    free(ids);
    free(labels);
    return s;
}

cb_status cb_imdb_prepare(const char *acl_dir, const char *out_dir, const cb_vocab *vocab, int num_words,
                          int maxlen, int64_t *n_train, int64_t *n_test)
{
    cb_vocab built = {0};
    cb_status s = CB_OK;
    if (!vocab) {
        s = cb_imdb_vocab_build(acl_dir, num_words, maxlen, &built);
        vocab = &built;
    }
    cb_dataset tr = {0}, te = {0};
    if (s == CB_OK) s = cb_imdb_load(acl_dir, 1, 0, vocab, &tr);
    if (s == CB_OK) s = cb_imdb_load(acl_dir, 0, 0, vocab, &te);
    if (s == CB_OK) s = write_split(out_dir, "train", &tr);
    if (s == CB_OK) s = write_split(out_dir, "test", &te);
    char path[4096];
    snprintf(path, sizeof path, "%s/vocab.txt", out_dir);
    if (s == CB_OK) s = cb_vocab_save(vocab, path);
    if (s == CB_OK) {
        cb_buf b = {0};
        cb_buf_printf(&b, "IMDb-format data prepared by crossbind data imdb-prepare from %s:\n"
                      "%lld training and %lld test sequences of %d token indices (int64 .npy), labels\n"
                      "1 = pos, 0 = neg; vocabulary of %d words (num_words=%d, index_from=3) in\n"
                      "vocab.txt. Samples in the order of crossbind's aclImdb reader.\n",
                      acl_dir, (long long)tr.n, (long long)te.n, vocab->maxlen, vocab->n_words,
                      vocab->num_words);
        snprintf(path, sizeof path, "%s/README.txt", out_dir);
        s = cb_buf_ok(&b) ? cb_write_file_atomic(path, b.data, b.len) : cb_fail(CB_ERR_NOMEM, "out of memory");
        cb_buf_free(&b);
    }
    if (s == CB_OK) {
        *n_train = tr.n;
        *n_test = te.n;
    }
    cb_dataset_free(&tr);
    cb_dataset_free(&te);
    cb_vocab_free(&built);
    return s;
}

static int file_exists(const char *dir, const char *name)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

int cb_imdb_is_prepared(const char *dir) { return file_exists(dir, "vocab.txt") && file_exists(dir, "x_train.npy"); }

static cb_status load_prepared(const char *dir, int train, int64_t limit, const cb_vocab *v, cb_dataset *out)
{
    const char *split = train ? "train" : "test";
    char path[4096];
    cb_tensor x = {0}, y = {0};
    snprintf(path, sizeof path, "%s/x_%s.npy", dir, split);
    cb_status s = cb_npy_read(path, &x);
    snprintf(path, sizeof path, "%s/y_%s.npy", dir, split);
    if (s == CB_OK) s = cb_npy_read(path, &y);
    if (s == CB_OK && (x.dtype != CB_I64 || x.ndim != 2 || x.shape[1] != v->maxlen || y.dtype != CB_I64 ||
                       y.ndim != 1 || y.shape[0] != x.shape[0]))
        s = cb_fail(CB_ERR_FORMAT, "%s: expected int64 x_%s [n, %d] and y_%s [n]", dir, split, v->maxlen, split);
    int64_t all = s == CB_OK ? x.shape[0] : 0, n = all;
    if (limit > 0 && limit < n) n = limit;
    /* All rows are checked, also those after the limit. */
    const int64_t *ids = x.data, *labels = y.data;
    for (int64_t i = 0; s == CB_OK && i < all * v->maxlen; i++)
        if (ids[i] < 0 || ids[i] >= v->num_words)
            s = cb_fail(CB_ERR_FORMAT, "%s/x_%s.npy: token index %lld outside the vocabulary's [0, %d)", dir,
                        split, (long long)ids[i], v->num_words);
    for (int64_t i = 0; s == CB_OK && i < all; i++)
        if (labels[i] != 0 && labels[i] != 1)
            s = cb_fail(CB_ERR_FORMAT, "%s/y_%s.npy: label %lld is not 0 or 1", dir, split, (long long)labels[i]);
    char source[512];
    snprintf(source, sizeof source, "%s (prepared IMDb format, %s)", dir, split);
    if (s == CB_OK) s = cb_dataset_alloc_text(n, v->maxlen, source, out);
    for (int64_t i = 0; s == CB_OK && i < n * v->maxlen; i++) out->x[i] = (float)ids[i];
    for (int64_t i = 0; s == CB_OK && i < n; i++) out->y[i] = (float)labels[i];
    if (s != CB_OK) cb_dataset_free(out);
    cb_tensor_free(&x);
    cb_tensor_free(&y);
    return s;
}

cb_status cb_text_dataset_load(const char *dir, int train, int64_t limit, const cb_vocab *expect,
                               cb_vocab *used, cb_dataset *out)
{
    memset(out, 0, sizeof *out);
    cb_vocab v = {0};
    cb_status s;
    if (cb_imdb_is_prepared(dir)) {
        char path[4096];
        snprintf(path, sizeof path, "%s/vocab.txt", dir);
        s = cb_vocab_load(path, &v);
        if (s == CB_OK && expect && !cb_vocab_equal(expect, &v))
            s = cb_fail(CB_ERR_FORMAT, "%s was prepared with another vocabulary than the one given "
                        "(%d words, maxlen %d, vs %d words, maxlen %d)", dir, v.n_words, v.maxlen,
                        expect->n_words, expect->maxlen);
        if (s == CB_OK) s = load_prepared(dir, train, limit, &v, out);
    } else if (expect) {
        s = cb_imdb_load(dir, train, limit, expect, out);
    } else {
        s = cb_imdb_vocab_build(dir, CB_IMDB_NUM_WORDS, CB_IMDB_MAXLEN, &v);
        if (s == CB_OK) s = cb_imdb_load(dir, train, limit, &v, out);
    }
    if (s == CB_OK && used && expect) s = cb_vocab_copy(expect, used);
    else if (s == CB_OK && used) { *used = v; memset(&v, 0, sizeof v); }
    if (s != CB_OK) cb_dataset_free(out);
    cb_vocab_free(&v);
    return s;
}
