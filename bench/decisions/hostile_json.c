/* crossbind's hostile JSON cases through one binary's readers
 * (json_readers.c). Prints tab-separated rows: case, reader, outcome
 * ("accepted", or "refused: " and the reader's message).
 * Usage: hostile_json CORPUS_DIR   (fuzz/corpus/json, for the deep seeds) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_common.h"
#include "readers.h"

#define T(name, text) {name, text, sizeof text - 1}
static const struct { const char *name, *text; size_t len; } cases[] = {
    T("truncated object", "{\"a\": [1, 2"),
    T("truncated string", "{\"a\": \"abc"),
    T("empty input", ""),
    T("trailing characters", "[1] x"),
    T("trailing comma", "[1,]"),
    T("leading zero", "[01]"),
    T("negative leading zero", "[-01]"),
    T("number ending in a point", "[1.]"),
    T("NaN literal", "[NaN]"),
    T("comment", "[1 /* c */]"),
    T("single quotes", "['a']"),
    T("raw tab in string", "[\"a\tb\"]"),
    T("raw NUL in string", "[\"a\0b\"]"),
    T("NUL after number", "[1\0]"),
    T("\\u0000 escape", "[\"a\\u0000b\"]"),
    T("lone surrogate escape", "[\"\\ud800\"]"),
    T("invalid UTF-8 byte", "[\"\xff\"]"),
    T("overlong UTF-8", "[\"\xc0\xaf\"]"),
    T("UTF-8-encoded surrogate", "[\"\xed\xa0\x80\"]"),
    T("duplicate key", "{\"a\": 1, \"a\": 2}"),
    T("duplicate key, nested", "{\"x\": {\"b\": 1, \"c\": 2, \"b\": 3}}"),
    T("number 1e999", "[1e999]"),
    T("integer beyond int64", "[123456789012345678901234567890]"),
};

static void report(const char *name, const char *text, size_t len)
{
    for (int r = 0; r < n_readers; r++) {
        long n = readers[r].parse(text, len);
        if (n >= 0) printf("%s\t%s\taccepted\n", name, readers[r].name);
        else printf("%s\t%s\trefused: %s\n", name, readers[r].name, reader_msg);
    }
}

int main(int argc, char **argv)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) report(cases[i].name, cases[i].text, cases[i].len);
    static const char *deep[] = {"gen-deep-array-64", "gen-deep-array-65", "gen-deep-array-200", "gen-deep-array-5000",
                                 "gen-deep-object-5000", "gen-deep-unclosed"};
    for (size_t i = 0; argc > 1 && i < sizeof deep / sizeof deep[0]; i++) {
        char path[1024];
        size_t len;
        snprintf(path, sizeof path, "%s/%s", argv[1], deep[i]);
        char *t = (char *)slurp(path, &len);
        report(deep[i], t, len);
        free(t);
    }
    /* Nesting far beyond the corpus: 100,000 arrays deep. */
    size_t n = 100000;
    char *t = malloc(2 * n + 1);
    memset(t, '[', n);
    memset(t + n, ']', n);
    t[2 * n] = 0; /* json-c's reader is given the text's NUL (json_readers.c) */
    report("100000 arrays deep", t, 2 * n);
    free(t);
    return 0;
}
