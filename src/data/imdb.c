/* The IMDb data set: the aclImdb directory layout (train|test / pos|neg /
 * <id>_<rating>.txt, UTF-8 reviews) read through the tokeniser and
 * vocabulary of crossbind/text.h, and the prepared form (.npy token
 * matrices plus the vocabulary) that every binding reads. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "crossbind/data.h"
#include "crossbind/formats.h"
#include "../core/file.h"
#include "../core/json.h"
#include "text_data.h"

#define MAX_REVIEW_BYTES (64u << 20)

typedef struct { char *path; long long id; int label; } review;

/* Samples are ordered by the number before '_' in the file name, positive
 * before negative at equal numbers (so aclImdb's 0..12499 in each class
 * interleave), then by name. */
static int review_order(const void *a, const void *b)
{
    const review *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    if (x->label != y->label) return y->label - x->label;
    return strcmp(x->path, y->path);
}

static void free_reviews(review *r, int64_t n)
{
    for (int64_t i = 0; i < n; i++) free(r[i].path);
    free(r);
}

/* Lists the .txt files of <dir>/<split>/pos and .../neg in sample order. */
static cb_status list_reviews(const char *dir, int train, review **out, int64_t *count)
{
    *out = NULL;
    *count = 0;
    review *r = NULL;
    int64_t n = 0, cap = 0;
    cb_status s = CB_OK;
    static const char *const cls[2] = {"neg", "pos"};
    for (int label = 1; s == CB_OK && label >= 0; label--) {
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s/%s", dir, train ? "train" : "test", cls[label]);
        DIR *d = opendir(sub);
        if (!d) {
            s = cb_fail(CB_ERR_IO, "cannot open %s: %s (an aclImdb directory holds train|test/pos|neg/*.txt)",
                        sub, strerror(errno));
            break;
        }
        struct dirent *e;
        while (s == CB_OK && (e = readdir(d))) {
            size_t len = strlen(e->d_name);
            if (len < 5 || strcmp(e->d_name + len - 4, ".txt") != 0) continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 1024;
                review *g = realloc(r, (size_t)cap * sizeof *r);
                if (!g) { s = cb_fail(CB_ERR_NOMEM, "out of memory listing %s", sub); break; }
                r = g;
            }
            char *end;
            long long id = strtoll(e->d_name, &end, 10);
            if (end == e->d_name || (*end != '_' && *end != '.')) id = -1;
            r[n].id = id < 0 ? (1LL << 62) : id;
            r[n].label = label;
            size_t plen = strlen(sub) + len + 2;
            if (!(r[n].path = malloc(plen))) { s = cb_fail(CB_ERR_NOMEM, "out of memory"); break; }
            snprintf(r[n].path, plen, "%s/%s", sub, e->d_name);
            n++;
        }
        closedir(d);
    }
    if (s == CB_OK && n == 0)
        s = cb_fail(CB_ERR_FORMAT, "%s/%s has no pos/*.txt or neg/*.txt reviews", dir, train ? "train" : "test");
    if (s != CB_OK) { free_reviews(r, n); return s; }
    qsort(r, (size_t)n, sizeof *r, review_order);
    *out = r;
    *count = n;
    return CB_OK;
}

/* Reads one review: non-empty, valid UTF-8. The caller frees *text. */
static cb_status read_review(const char *path, char **text, size_t *len)
{
    unsigned char *buf = NULL;
    cb_status s = cb_read_file(path, MAX_REVIEW_BYTES, &buf, len);
    if (s != CB_OK) return s;
    int64_t bad = cb_utf8_invalid_at((const char *)buf, *len);
    if (*len == 0) s = cb_fail(CB_ERR_FORMAT, "%s: empty review", path);
    else if (bad >= 0) s = cb_fail(CB_ERR_FORMAT, "%s: not valid UTF-8 (byte %lld)", path, (long long)bad);
    if (s != CB_OK) { free(buf); return s; }
    *text = (char *)buf;
    return CB_OK;
}

cb_status cb_imdb_vocab_build(const char *dir, int num_words, int maxlen, cb_vocab *out)
{
    memset(out, 0, sizeof *out);
    review *r;
    int64_t n;
    cb_status s = list_reviews(dir, 1, &r, &n);
    if (s != CB_OK) return s;
    cb_word_counter *c = NULL;
    s = cb_word_counter_create(&c);
    for (int64_t i = 0; s == CB_OK && i < n; i++) {
        char *text;
        size_t len;
        s = read_review(r[i].path, &text, &len);
        if (s == CB_OK) {
            s = cb_word_counter_add(c, text, len);
            free(text);
        }
    }
    if (s == CB_OK) s = cb_vocab_from_counts(c, num_words, maxlen, out);
    cb_word_counter_free(c);
    free_reviews(r, n);
    return s;
}

cb_status cb_dataset_alloc_text(int64_t n, int maxlen, const char *source, cb_dataset *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    out->c = out->h = 1;
    out->w = maxlen;
    out->classes = 2;
    snprintf(out->source, sizeof out->source, "%s", source);
    out->x = malloc((size_t)(n ? n : 1) * (size_t)maxlen * sizeof *out->x);
    out->y = malloc((size_t)(n ? n : 1) * sizeof *out->y);
    if (!out->x || !out->y) {
        cb_dataset_free(out);
        return cb_fail(CB_ERR_NOMEM, "out of memory for %lld sequences", (long long)n);
    }
    return CB_OK;
}

cb_status cb_imdb_load(const char *dir, int train, int64_t limit, const cb_vocab *v, cb_dataset *out)
{
    memset(out, 0, sizeof *out);
    review *r;
    int64_t total;
    cb_status s = list_reviews(dir, train, &r, &total);
    if (s != CB_OK) return s;
    int64_t n = limit > 0 && limit < total ? limit : total;
    char source[512];
    snprintf(source, sizeof source, "%s (aclImdb layout, %s)", dir, train ? "train" : "test");
    s = cb_dataset_alloc_text(n, v->maxlen, source, out);
    for (int64_t i = 0; s == CB_OK && i < n; i++) {
        char *text;
        size_t len;
        s = read_review(r[i].path, &text, &len);
        if (s == CB_OK) {
            s = cb_vocab_encode(v, text, len, out->x + (size_t)i * v->maxlen);
            out->y[i] = (float)r[i].label;
            free(text);
        }
    }
    free_reviews(r, total);
    if (s != CB_OK) cb_dataset_free(out);
    return s;
}
