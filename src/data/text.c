/* Tokeniser, word counting and vocabulary (see crossbind/text.h for the
 * rules, which follow Keras' IMDb preprocessing). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/text.h"
#include "../core/json.h"

int64_t cb_utf8_invalid_at(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        if (c < 0x80) { i++; continue; }
        int n;
        unsigned cp;
        if (c >= 0xC2 && c <= 0xDF) { n = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { n = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { n = 3; cp = c & 0x07; }
        else return (int64_t)i;
        if (i + (size_t)n >= len) return (int64_t)i; /* truncated sequence */
        for (int k = 1; k <= n; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return (int64_t)i;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        /* overlong three- and four-byte forms, surrogates, beyond U+10FFFF */
        if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return (int64_t)i;
        i += (size_t)n + 1;
    }
    return -1;
}

/* Keras' default filters (which include tab and newline), and carriage
 * return: Python reads text files with universal newlines, turning every
 * \r and \r\n into \n before Keras sees them. NUL separates too: words
 * are C strings, and a word holding a NUL would be stored cut short. */
static const unsigned char is_filter[256] = {
    [0] = 1,    ['\t'] = 1, ['\n'] = 1, ['\r'] = 1, ['!'] = 1, ['"'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1,
    ['&'] = 1, ['('] = 1,  [')'] = 1,  ['*'] = 1,  ['+'] = 1, [','] = 1, ['-'] = 1, ['.'] = 1, ['/'] = 1,
    [':'] = 1, [';'] = 1,  ['<'] = 1,  ['='] = 1,  ['>'] = 1, ['?'] = 1, ['@'] = 1, ['['] = 1, ['\\'] = 1,
    [']'] = 1, ['^'] = 1,  ['_'] = 1,  ['`'] = 1,  ['{'] = 1, ['|'] = 1, ['}'] = 1, ['~'] = 1,
};

void cb_tokenize(char *text, size_t len, cb_token_fn emit, void *user)
{
    unsigned char *p = (unsigned char *)text;
    for (size_t i = 0; i < len; i++) {
        if (p[i] >= 'A' && p[i] <= 'Z') p[i] = (unsigned char)(p[i] + 32);
        /* U+00C0-U+00DE (not U+00D7) are C3 80-C3 9E; their lower case is 0x20 higher */
        else if (p[i] == 0xC3 && i + 1 < len && p[i + 1] >= 0x80 && p[i + 1] <= 0x9E && p[i + 1] != 0x97)
        {
            i++;
            p[i] = (unsigned char)(p[i] + 0x20);
        }
        else if (is_filter[p[i]]) p[i] = ' ';
    }
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || p[i] == ' ') {
            if (i > start) emit(text + start, i - start, user);
            start = i + 1;
        }
    }
}

/* ---- a string hash table shared by the counter and the vocabulary ---- */

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/* Finds the slot of word (s, n) among `words` through `slots` (-1 = empty).
 * A stored word matches only if it is exactly n bytes long: s may hold a
 * NUL (a caller's text), where a stored word would end early, and no byte
 * past a stored word's end is read. */
static size_t find_slot(const int *slots, size_t n_slots, char *const *words, const char *s, size_t n)
{
    size_t i = hash_bytes(s, n) & (n_slots - 1);
    while (slots[i] >= 0) {
        const char *w = words[slots[i]];
        if (strnlen(w, n + 1) == n && memcmp(w, s, n) == 0) break;
        i = (i + 1) & (n_slots - 1);
    }
    return i;
}

static cb_status build_slots(char *const *words, int count, int **slots, size_t *n_slots)
{
    size_t n = 16;
    while (n < (size_t)count * 2 + 2) n <<= 1;
    int *t = malloc(n * sizeof *t);
    if (!t) return cb_fail(CB_ERR_NOMEM, "out of memory for a word table");
    memset(t, 0xff, n * sizeof *t);
    for (int i = 0; i < count; i++) {
        size_t len = strlen(words[i]);
        t[find_slot(t, n, words, words[i], len)] = i;
    }
    free(*slots);
    *slots = t;
    *n_slots = n;
    return CB_OK;
}

/* ---- counting ---- */

struct cb_word_counter {
    char **words;      /* in order of first appearance */
    int64_t *counts;
    int count, cap;
    int *slots;
    size_t n_slots;
    cb_status err;     /* first failure inside a tokeniser callback */
};

cb_status cb_word_counter_create(cb_word_counter **out)
{
    *out = calloc(1, sizeof **out);
    if (!*out) return cb_fail(CB_ERR_NOMEM, "out of memory for a word counter");
    return build_slots(NULL, 0, &(*out)->slots, &(*out)->n_slots);
}

void cb_word_counter_free(cb_word_counter *c)
{
    if (!c) return;
    for (int i = 0; i < c->count; i++) free(c->words[i]);
    free(c->words);
    free(c->counts);
    free(c->slots);
    free(c);
}

static void count_token(const char *tok, size_t len, void *user)
{
    cb_word_counter *c = user;
    if (c->err != CB_OK) return;
    size_t slot = find_slot(c->slots, c->n_slots, c->words, tok, len);
    if (c->slots[slot] >= 0) { c->counts[c->slots[slot]]++; return; }
    if (c->count == c->cap) {
        int cap = c->cap ? c->cap * 2 : 1024;
        char **w = realloc(c->words, (size_t)cap * sizeof *w);
        if (w) c->words = w;
        int64_t *k = w ? realloc(c->counts, (size_t)cap * sizeof *k) : NULL;
        if (!k) { c->err = cb_fail(CB_ERR_NOMEM, "out of memory counting words"); return; }
        c->counts = k;
        c->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy) { c->err = cb_fail(CB_ERR_NOMEM, "out of memory counting words"); return; }
    memcpy(copy, tok, len);
    copy[len] = 0;
    c->words[c->count] = copy;
    c->counts[c->count] = 1;
    c->slots[slot] = c->count++;
    if ((size_t)c->count * 2 > c->n_slots) c->err = build_slots(c->words, c->count, &c->slots, &c->n_slots);
}

cb_status cb_word_counter_add(cb_word_counter *c, char *text, size_t len)
{
    cb_tokenize(text, len, count_token, c);
    return c->err;
}

/* Rank order: count descending, then first appearance. */
static int by_rank(const void *a, const void *b, void *counts_)
{
    const int64_t *counts = counts_;
    int i = *(const int *)a, j = *(const int *)b;
    if (counts[i] != counts[j]) return counts[i] > counts[j] ? -1 : 1;
    return (i > j) - (i < j);
}

cb_status cb_vocab_from_counts(const cb_word_counter *c, int num_words, int maxlen, cb_vocab *out)
{
    memset(out, 0, sizeof *out);
    if (num_words <= CB_TOK_INDEX_FROM + 1 || maxlen < 1)
        return cb_fail(CB_ERR_INVALID_ARG, "vocabulary needs num_words > 4 and maxlen >= 1 (got %d, %d)",
                       num_words, maxlen);
    int *order = malloc(((size_t)c->count + 1) * sizeof *order);
    if (!order) return cb_fail(CB_ERR_NOMEM, "out of memory ranking words");
    for (int i = 0; i < c->count; i++) order[i] = i;
    qsort_r(order, (size_t)c->count, sizeof *order, by_rank, c->counts); /* no global: callers may run in threads */
    int keep = num_words - CB_TOK_INDEX_FROM - 1;
    if (keep > c->count) keep = c->count;
    out->num_words = num_words;
    out->maxlen = maxlen;
    cb_status s = CB_OK;
    if (!(out->words = calloc((size_t)keep + 1, sizeof *out->words))) s = cb_fail(CB_ERR_NOMEM, "out of memory");
    for (int r = 0; s == CB_OK && r < keep; r++) {
        if (!(out->words[r] = strdup(c->words[order[r]]))) s = cb_fail(CB_ERR_NOMEM, "out of memory");
        else out->n_words = r + 1;
    }
    free(order);
    if (s == CB_OK) s = build_slots(out->words, out->n_words, &out->slots, &out->n_slots);
    if (s != CB_OK) cb_vocab_free(out);
    return s;
}

void cb_vocab_free(cb_vocab *v)
{
    for (int i = 0; i < v->n_words; i++) free(v->words[i]);
    free(v->words);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

int cb_vocab_lookup(const cb_vocab *v, const char *word, size_t len)
{
    size_t slot = find_slot(v->slots, v->n_slots, v->words, word, len);
    return v->slots[slot] >= 0 ? v->slots[slot] + CB_TOK_INDEX_FROM + 1 : CB_TOK_OOV;
}

/* Encoding keeps the last maxlen indices in a ring, so no text is too long. */
typedef struct { const cb_vocab *v; int *ring; int64_t n; } encoder;

static void encode_token(const char *tok, size_t len, void *user)
{
    encoder *e = user;
    e->ring[e->n++ % e->v->maxlen] = cb_vocab_lookup(e->v, tok, len);
}

cb_status cb_vocab_encode(const cb_vocab *v, char *text, size_t len, float *seq)
{
    int *ring = malloc((size_t)v->maxlen * sizeof *ring);
    if (!ring) return cb_fail(CB_ERR_NOMEM, "out of memory encoding a text");
    ring[0] = CB_TOK_START;
    encoder e = {v, ring, 1};
    cb_tokenize(text, len, encode_token, &e);
    int64_t keep = e.n < v->maxlen ? e.n : v->maxlen;
    int64_t pad = v->maxlen - keep;
    for (int64_t i = 0; i < pad; i++) seq[i] = CB_TOK_PAD;
    for (int64_t i = 0; i < keep; i++) seq[pad + i] = (float)ring[(e.n - keep + i) % v->maxlen];
    free(ring);
    return CB_OK;
}

cb_status cb_vocab_write(const cb_vocab *v, FILE *f, const char *name)
{
    fprintf(f, "crossbind-vocab 1 num_words=%d maxlen=%d index_from=%d\n", v->num_words, v->maxlen, CB_TOK_INDEX_FROM);
    for (int i = 0; i < v->n_words; i++) {
        fputs(v->words[i], f);
        fputc('\n', f);
    }
    return fflush(f) == 0 && !ferror(f) ? CB_OK : cb_fail(CB_ERR_IO, "cannot write %s", name);
}

cb_status cb_vocab_save(const cb_vocab *v, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return cb_fail(CB_ERR_NOMEM, "out of memory writing %s", path);
    cb_status s = cb_vocab_write(v, f, path);
    if (fclose(f) != 0 && s == CB_OK) s = cb_fail(CB_ERR_NOMEM, "out of memory writing %s", path);
    if (s == CB_OK) s = cb_write_file_atomic(path, text, len);
    free(text);
    return s;
}

cb_status cb_vocab_load(const char *path, cb_vocab *out)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return cb_fail(CB_ERR_IO, "cannot open vocabulary %s", path);
    cb_status s = cb_vocab_read(f, path, out);
    fclose(f);
    return s;
}

cb_status cb_vocab_read(FILE *f, const char *path, cb_vocab *out)
{
    memset(out, 0, sizeof *out);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, f);
    int version = 0, index_from = -1;
    cb_status s = CB_OK;
    if (n <= 0 || sscanf(line, "crossbind-vocab %d num_words=%d maxlen=%d index_from=%d", &version,
                         &out->num_words, &out->maxlen, &index_from) != 4)
        s = cb_fail(CB_ERR_FORMAT, "%s is not a crossbind vocabulary (no 'crossbind-vocab' header)", path);
    else if (version != 1 || index_from != CB_TOK_INDEX_FROM || out->num_words <= CB_TOK_INDEX_FROM + 1 ||
             out->num_words > (1 << 24) || out->maxlen < 1 || out->maxlen > (1 << 20))
        s = cb_fail(CB_ERR_FORMAT, "%s: unsupported vocabulary header (version %d, num_words %d, maxlen %d, "
                    "index_from %d)", path, version, out->num_words, out->maxlen, index_from);
    /* The word list grows as words arrive: num_words (up to 2^24) is a
     * bound on the file, not a size to allocate before reading a word. */
    int cap_words = out->num_words - CB_TOK_INDEX_FROM - 1, have = 0;
    while (s == CB_OK && (n = getline(&line, &cap, f)) > 0) {
        if (out->n_words + 1 >= have) {
            int grown = have ? have * 2 : 64;
            char **w = realloc(out->words, (size_t)grown * sizeof *w);
            if (!w) { s = cb_fail(CB_ERR_NOMEM, "out of memory reading %s", path); break; }
            memset(w + have, 0, (size_t)(grown - have) * sizeof *w);
            out->words = w;
            have = grown;
        }
        if (line[n - 1] != '\n') { s = cb_fail(CB_ERR_FORMAT, "%s: truncated (last line unterminated)", path); break; }
        line[n - 1] = 0;
        /* A NUL would cut the word short (and a space could never be read back as one word). */
        if (n == 1 || memchr(line, 0, (size_t)n - 1) || strchr(line, ' ') || cb_utf8_invalid_at(line, (size_t)n - 1) >= 0)
            s = cb_fail(CB_ERR_FORMAT, "%s: line %d is not a word", path, out->n_words + 2);
        else if (out->n_words == cap_words)
            s = cb_fail(CB_ERR_FORMAT, "%s: more words than num_words=%d allows", path, out->num_words);
        else if (!(out->words[out->n_words] = strdup(line))) s = cb_fail(CB_ERR_NOMEM, "out of memory");
        else out->n_words++;
    }
    free(line);
    if (s == CB_OK && !out->words && !(out->words = calloc(1, sizeof *out->words)))
        s = cb_fail(CB_ERR_NOMEM, "out of memory reading %s", path);
    if (s == CB_OK) s = build_slots(out->words, out->n_words, &out->slots, &out->n_slots);
    for (int i = 0; s == CB_OK && i < out->n_words; i++)
        if (cb_vocab_lookup(out, out->words[i], strlen(out->words[i])) != i + CB_TOK_INDEX_FROM + 1)
            s = cb_fail(CB_ERR_FORMAT, "%s: word '%s' appears twice", path, out->words[i]);
    if (s != CB_OK) cb_vocab_free(out);
    return s;
}

cb_status cb_vocab_copy(const cb_vocab *v, cb_vocab *out)
{
    memset(out, 0, sizeof *out);
    out->num_words = v->num_words;
    out->maxlen = v->maxlen;
    cb_status s = CB_OK;
    if (!(out->words = calloc((size_t)v->n_words + 1, sizeof *out->words))) s = cb_fail(CB_ERR_NOMEM, "out of memory");
    for (int i = 0; s == CB_OK && i < v->n_words; i++) {
        if (!(out->words[i] = strdup(v->words[i]))) s = cb_fail(CB_ERR_NOMEM, "out of memory");
        else out->n_words = i + 1;
    }
    if (s == CB_OK) s = build_slots(out->words, out->n_words, &out->slots, &out->n_slots);
    if (s != CB_OK) cb_vocab_free(out);
    return s;
}

int cb_vocab_equal(const cb_vocab *a, const cb_vocab *b)
{
    if (a->num_words != b->num_words || a->maxlen != b->maxlen || a->n_words != b->n_words) return 0;
    for (int i = 0; i < a->n_words; i++)
        if (strcmp(a->words[i], b->words[i])) return 0;
    return 1;
}
