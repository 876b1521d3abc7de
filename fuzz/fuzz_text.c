/* libFuzzer target: the vocabulary file (vocab.txt of a prepared IMDb set,
 * first byte even) and the tokeniser, word counter and encoder on review
 * text (odd). Everything stays in memory: the vocabulary's text goes
 * through fmemopen and open_memstream. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crossbind/text.h"

static void vocab_file(const uint8_t *data, size_t size)
{
    /* The file's text through a stream in memory: cb_vocab_load is fopen
     * and cb_vocab_read, cb_vocab_save cb_vocab_write and an atomic write. */
    FILE *f = size ? fmemopen((void *)data, size, "rb") : fopen("/dev/null", "rb");
    if (!f) abort();
    cb_vocab v, copy;
    cb_status st = cb_vocab_read(f, "vocab.txt", &v);
    fclose(f);
    if (st != CB_OK) return;
    if (v.n_words > v.num_words - CB_TOK_INDEX_FROM - 1) abort();
    for (int i = 0; i < v.n_words; i++)
        if (cb_vocab_lookup(&v, v.words[i], strlen(v.words[i])) != i + CB_TOK_INDEX_FROM + 1) abort();
    if (cb_vocab_copy(&v, &copy) != CB_OK) abort();
    if (!cb_vocab_equal(&v, &copy)) abort();
    /* What is saved reads back the same. */
    char *text = NULL;
    size_t len = 0;
    if (!(f = open_memstream(&text, &len)) || cb_vocab_write(&v, f, "saved.txt") != CB_OK || fclose(f)) abort();
    cb_vocab again;
    if (!(f = fmemopen(text, len, "rb"))) abort();
    if (cb_vocab_read(f, "saved.txt", &again) != CB_OK || !cb_vocab_equal(&v, &again)) abort();
    fclose(f);
    free(text);
    cb_vocab_free(&again);
    cb_vocab_free(&copy);
    cb_vocab_free(&v);
}

static void review_text(const uint8_t *data, size_t size)
{
    if (cb_utf8_invalid_at((const char *)data, size) >= 0) return; /* readers refuse it */
    char *a = malloc(size + 1), *b = malloc(size + 1);
    if (!a || !b) abort();
    memcpy(a, data, size);
    memcpy(b, data, size);
    cb_word_counter *c;
    if (cb_word_counter_create(&c) != CB_OK) abort();
    cb_vocab v;
    if (cb_word_counter_add(c, a, size) == CB_OK && cb_vocab_from_counts(c, 20, 16, &v) == CB_OK) {
        float seq[16];
        if (cb_vocab_encode(&v, b, size, seq) != CB_OK) abort();
        for (int i = 0; i < 16; i++)
            if (!(seq[i] >= 0 && seq[i] < 20)) abort();
        cb_vocab_free(&v);
    }
    cb_word_counter_free(c);
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    if (data[0] & 1) review_text(data + 1, size - 1);
    else vocab_file(data + 1, size - 1);
    return 0;
}
