/* JSON reading and writing, and the growable string (cb_buf) the writers
 * share, which also writes shell words for the commands reports print. The
 * reader is strict (RFC 8259 grammar), bounds
 * its recursion and refuses what crossbind never needs (NUL in strings), so
 * that a hostile header cannot crash or exhaust the process. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "json.h"
#include "names.h"
#include "utf8.h"

#define MAX_DEPTH 64

typedef struct parser {
    const char *s;
    size_t len, pos;
    const char *what;
    cb_status err;
    size_t values, max_values;
} parser;

static int fail(parser *p, const char *msg)
{
    if (p->err == CB_OK)
        p->err = cb_fail(CB_ERR_FORMAT, "%s: invalid JSON at byte %zu: %s", p->what, p->pos, msg);
    return -1;
}

static void skip_ws(parser *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                               p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
        p->pos++;
}

static int parse_value(parser *p, cb_json *v, int depth);

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int put_utf8(char *out, size_t *n, unsigned cp)
{
    if (cp == 0) return -1;
    if (cp < 0x80) out[(*n)++] = (char)cp;
    else if (cp < 0x800) {
        out[(*n)++] = (char)(0xC0 | (cp >> 6));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*n)++] = (char)(0xE0 | (cp >> 12));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*n)++] = (char)(0xF0 | (cp >> 18));
        out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
    return 0;
}

static int read_hex4(parser *p, unsigned *out)
{
    if (p->pos + 4 > p->len) return fail(p, "truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p->s[p->pos + i]);
        if (h < 0) return fail(p, "bad \\u escape");
        v = v * 16 + (unsigned)h;
    }
    p->pos += 4;
    *out = v;
    return 0;
}

/* The control characters a string may not hold raw (NUL is found by length). */
static const char controls[] = "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10"
                               "\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f";

static int parse_string(parser *p, char **out)
{
    p->pos++; /* opening quote */
    size_t start = p->pos, end;
    /* The closing quote: the first one after an even run of backslashes
     * (memchr finds each candidate without a loop over every byte). */
    for (size_t from = start;;) {
        const char *q = memchr(p->s + from, '"', p->len - from);
        if (!q) { p->pos = p->len; return fail(p, "unterminated string"); }
        end = (size_t)(q - p->s);
        size_t run = 0;
        while (end - run > start && p->s[end - run - 1] == '\\') run++;
        if (run % 2 == 0) break;
        from = end + 1;
    }
    /* Decoded text is never longer than the raw text. */
    char *buf = malloc(end - start + 1);
    if (!buf) return fail(p, "out of memory");
    /* Without escapes, the text is the raw bytes, refused if they hold a
     * control character or NUL (checked by the C library, not byte by byte
     * here). Otherwise, or to name the failure, the loop below decodes. */
    if (!memchr(p->s + start, '\\', end - start)) {
        memcpy(buf, p->s + start, end - start);
        buf[end - start] = 0;
        size_t bad;
        if (strlen(buf) == end - start && !buf[strcspn(buf, controls)]) {
            if (!cb_utf8_valid(buf, end - start, &bad)) {
                free(buf);
                p->pos = start + bad;
                return fail(p, "invalid UTF-8 in string");
            }
            p->pos = end + 1;
            *out = buf;
            return 0;
        }
    }
    size_t n = 0;
    p->pos = start;
    while (p->s[p->pos] != '"') {
        unsigned char c = (unsigned char)p->s[p->pos++];
        if (c < 0x20) { free(buf); return fail(p, "control character in string"); }
        if (c != '\\') { buf[n++] = (char)c; continue; }
        char e = p->s[p->pos++];
        switch (e) {
        case '"': buf[n++] = '"'; break;
        case '\\': buf[n++] = '\\'; break;
        case '/': buf[n++] = '/'; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (read_hex4(p, &cp)) { free(buf); return -1; }
            if (cp >= 0xD800 && cp < 0xDC00) {
                unsigned lo;
                if (p->pos + 2 > p->len || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') {
                    free(buf);
                    return fail(p, "unpaired surrogate");
                }
                p->pos += 2;
                if (read_hex4(p, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                    free(buf);
                    return fail(p, "bad surrogate pair");
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                free(buf);
                return fail(p, "unpaired surrogate");
            }
            if (put_utf8(buf, &n, cp)) { free(buf); return fail(p, "NUL in string"); }
            break;
        }
        default: free(buf); return fail(p, "bad escape");
        }
    }
    /* Escapes decode to valid UTF-8; the raw bytes between them must be too. */
    if (!cb_utf8_valid(buf, n, NULL)) {
        free(buf);
        p->pos = start;
        return fail(p, "invalid UTF-8 in string");
    }
    p->pos++; /* closing quote */
    buf[n] = 0;
    *out = buf;
    return 0;
}

/* RFC 8259's number: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
 * (strtod alone also takes 01, 1. and .5). */
static int number_grammar_ok(const char *s)
{
    if (*s == '-') s++;
    if (*s == '0') s++;
    else if (*s >= '1' && *s <= '9')
        while (*s >= '0' && *s <= '9') s++;
    else return 0;
    if (*s == '.') {
        if (*++s < '0' || *s > '9') return 0;
        while (*s >= '0' && *s <= '9') s++;
    }
    if (*s == 'e' || *s == 'E') {
        if (*++s == '+' || *s == '-') s++;
        if (*s < '0' || *s > '9') return 0;
        while (*s >= '0' && *s <= '9') s++;
    }
    return *s == 0;
}

static int parse_number(parser *p, cb_json *v)
{
    size_t start = p->pos;
    if (p->s[p->pos] == '-') p->pos++;
    if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9') return fail(p, "bad number");
    static const unsigned char number_char[256] = {['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1,
                                                   ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
                                                   ['+'] = 1, ['-'] = 1, ['.'] = 1, ['e'] = 1, ['E'] = 1};
    while (p->pos < p->len && number_char[(unsigned char)p->s[p->pos]]) p->pos++;
    char tmp[64];
    size_t n = p->pos - start;
    if (n >= sizeof tmp) return fail(p, "number too long");
    memcpy(tmp, p->s + start, n);
    tmp[n] = 0;
    char *end;
    v->type = CB_JSON_NUM;
    if (!number_grammar_ok(tmp)) return fail(p, "bad number");
    v->num = strtod(tmp, &end);
    if (*end) return fail(p, "bad number");
    if (!isfinite(v->num)) return fail(p, "number out of range"); /* 1e999: not a double */
    return 0;
}

static int append_item(parser *p, cb_json *v, int *cap)
{
    if (v->count == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        cb_json *items = realloc(v->items, (size_t)nc * sizeof *items);
        if (!items) return fail(p, "out of memory");
        v->items = items;
        if (v->type == CB_JSON_OBJ) {
            char **keys = realloc(v->keys, (size_t)nc * sizeof *keys);
            if (!keys) return fail(p, "out of memory");
            v->keys = keys;
        }
        *cap = nc;
    }
    memset(&v->items[v->count], 0, sizeof v->items[0]);
    return 0;
}

/* Two equal keys in one object mean the first value to one reader and the
 * last to another: refused. Pairwise for small objects, indexed for large
 * ones so that a hostile header stays linear. */
static int check_unique_keys(parser *p, const cb_json *v)
{
    const char *dup = NULL;
    if (v->count <= 8) {
        for (int i = 1; i < v->count && !dup; i++)
            for (int j = 0; j < i && !dup; j++)
                if (strcmp(v->keys[i], v->keys[j]) == 0) dup = v->keys[i];
    } else {
        cb_name_index ix;
        if (cb_name_index_init(&ix, (size_t)v->count) != CB_OK) return fail(p, "out of memory");
        for (int i = 0; i < v->count && !dup; i++) {
            int r = cb_name_index_add(&ix, v->keys[i], i);
            if (r == -2) { cb_name_index_free(&ix); return fail(p, "out of memory"); }
            if (r >= 0) dup = v->keys[i];
        }
        cb_name_index_free(&ix);
    }
    if (!dup) return 0;
    char msg[128];
    snprintf(msg, sizeof msg, "key \"%.80s\" appears twice in one object", dup);
    return fail(p, msg);
}

static int parse_container(parser *p, cb_json *v, int depth, char close)
{
    int cap = 0;
    v->type = close == ']' ? CB_JSON_ARR : CB_JSON_OBJ;
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == close) { p->pos++; return 0; }
    for (;;) {
        skip_ws(p);
        if (append_item(p, v, &cap)) return -1;
        if (v->type == CB_JSON_OBJ) {
            if (p->pos >= p->len || p->s[p->pos] != '"') return fail(p, "expected a key");
            char *key;
            if (parse_string(p, &key)) return -1;
            v->keys[v->count] = key;
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':') {
                v->count++; /* so the key is freed */
                return fail(p, "expected ':'");
            }
            p->pos++;
        }
        int rc = parse_value(p, &v->items[v->count], depth + 1);
        v->count++;
        if (rc) return -1;
        skip_ws(p);
        if (p->pos >= p->len) return fail(p, "unterminated container");
        if (p->s[p->pos] == ',') { p->pos++; continue; }
        if (p->s[p->pos] == close) {
            p->pos++;
            return v->type == CB_JSON_OBJ ? check_unique_keys(p, v) : 0;
        }
        return fail(p, "expected ',' or end of container");
    }
}

static int parse_value(parser *p, cb_json *v, int depth)
{
    memset(v, 0, sizeof *v);
    if (depth > MAX_DEPTH) return fail(p, "nesting too deep");
    if (++p->values > p->max_values) {
        char msg[96];
        snprintf(msg, sizeof msg, "more than %zu values", p->max_values);
        return fail(p, msg);
    }
    skip_ws(p);
    if (p->pos >= p->len) return fail(p, "unexpected end");
    char c = p->s[p->pos];
    if (c == '{') return parse_container(p, v, depth, '}');
    if (c == '[') return parse_container(p, v, depth, ']');
    if (c == '"') { v->type = CB_JSON_STR; return parse_string(p, &v->str); }
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number(p, v);
    static const struct { const char *word; cb_json_type t; double num; } lits[] = {
        {"true", CB_JSON_BOOL, 1}, {"false", CB_JSON_BOOL, 0}, {"null", CB_JSON_NULL, 0}};
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(lits[i].word);
        if (p->len - p->pos >= n && memcmp(p->s + p->pos, lits[i].word, n) == 0) {
            p->pos += n;
            v->type = lits[i].t;
            v->num = lits[i].num;
            return 0;
        }
    }
    return fail(p, "unexpected character");
}

cb_status cb_json_parse(const char *text, size_t len, const char *what, cb_json *out)
{
    return cb_json_parse_capped(text, len, what, SIZE_MAX, out);
}

cb_status cb_json_parse_capped(const char *text, size_t len, const char *what, size_t max_values, cb_json *out)
{
    parser p = {.s = text, .len = len, .what = what, .err = CB_OK, .max_values = max_values};
    if (parse_value(&p, out, 0) == 0) {
        skip_ws(&p);
        if (p.pos != p.len) fail(&p, "trailing characters");
    }
    if (p.err != CB_OK) cb_json_free(out);
    return p.err;
}

void cb_json_free(cb_json *v)
{
    for (int i = 0; i < v->count; i++) {
        cb_json_free(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    memset(v, 0, sizeof *v);
}

const cb_json *cb_json_get(const cb_json *obj, const char *key)
{
    if (obj->type != CB_JSON_OBJ) return NULL;
    for (int i = 0; i < obj->count; i++)
        if (strcmp(obj->keys[i], key) == 0) return &obj->items[i];
    return NULL;
}

/* ------------------------------------------------------------------ writing */

void cb_buf_printf(cb_buf *b, const char *fmt, ...)
{
    if (b->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->data ? b->data + b->len : NULL, b->data ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) { b->failed = 1; return; }
        if (b->data && b->len + (size_t)n < b->cap) { b->len += (size_t)n; return; }
        size_t cap = (b->cap ? b->cap * 2 : 256);
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) { b->failed = 1; return; }
        b->data = d;
        b->cap = cap;
    }
}

void cb_buf_append(cb_buf *b, const void *data, size_t n)
{
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) { b->failed = 1; return; }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = 0;
}

void cb_buf_json_string(cb_buf *b, const char *s)
{
    cb_buf_printf(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') cb_buf_printf(b, "\\%c", c);
        else if (c < 0x20) cb_buf_printf(b, "\\u%04x", c);
        else cb_buf_printf(b, "%c", c);
    }
    cb_buf_printf(b, "\"");
}

void cb_buf_shell_word(cb_buf *b, const char *s)
{
    int plain = *s != 0;
    for (const char *p = s; *p && plain; p++)
        plain = isalnum((unsigned char)*p) || strchr("._/+-:,=@%", *p) != NULL;
    if (plain) {
        cb_buf_printf(b, "%s", s);
        return;
    }
    /* Inside single quotes nothing is special but the quote itself, which
     * closes the quoted part, is written escaped and reopens it: ' -> '\'' */
    cb_buf_printf(b, "'");
    for (; *s; s++)
        if (*s == '\'') cb_buf_printf(b, "'\\''");
        else cb_buf_printf(b, "%c", *s);
    cb_buf_printf(b, "'");
}

void cb_buf_json_number(cb_buf *b, double v)
{
    if (isfinite(v)) cb_buf_printf(b, "%.9g", v);
    else cb_buf_printf(b, "null");
}

int cb_buf_ok(const cb_buf *b) { return !b->failed; }

void cb_buf_free(cb_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

cb_status cb_write_file_atomic(const char *path, const void *data, size_t len)
{
    /* The rename below would replace whatever is there: a device such as
     * /dev/full, a FIFO or a directory is refused instead. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return cb_fail(CB_ERR_IO, "cannot write %s: it exists and is not a regular file", path);
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp)
        return cb_fail(CB_ERR_INVALID_ARG, "path too long: %s", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return cb_fail(CB_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    int ok = fwrite(data, 1, len, f) == len;
    ok = (fflush(f) == 0) && ok;
    ok = (fsync(fileno(f)) == 0) && ok;
    int err = errno;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        if (ok) err = errno;
        remove(tmp);
        return cb_fail(CB_ERR_IO, "cannot write %s: %s", path, strerror(err));
    }
    return CB_OK;
}
