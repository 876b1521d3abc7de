/* libFuzzer target: the vocabulary file (vocab.txt of a prepared IMDb set,
 * first byte even) and the tokeniser, word counter and encoder on review
 * text (odd). */
#include "fuzz_util.h"
#include "crossbind/text.h"

static void vocab_file(const uint8_t *data, size_t size)
{
    fz_put("vocab.txt", data, size);
    cb_vocab v, copy;
    if (cb_vocab_load(fz_path(0, "vocab.txt"), &v) != CB_OK) return;
    if (v.n_words > v.num_words - CB_TOK_INDEX_FROM - 1) abort();
    for (int i = 0; i < v.n_words; i++)
        if (cb_vocab_lookup(&v, v.words[i], strlen(v.words[i])) != i + CB_TOK_INDEX_FROM + 1) abort();
    if (cb_vocab_copy(&v, &copy) != CB_OK) abort();
    if (!cb_vocab_equal(&v, &copy)) abort();
    /* What is saved reads back the same. */
    if (cb_vocab_save(&v, fz_path(1, "saved.txt")) != CB_OK) abort();
    cb_vocab again;
    if (cb_vocab_load(fz_path(1, "saved.txt"), &again) != CB_OK || !cb_vocab_equal(&v, &again)) abort();
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
    fz_scratch("text");
    if (size == 0) return 0;
    if (data[0] & 1) review_text(data + 1, size - 1);
    else vocab_file(data + 1, size - 1);
    return 0;
}
