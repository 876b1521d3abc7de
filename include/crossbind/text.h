/* crossbind: text preprocessing for the IMDb models (protocol sections 2
 * and 7), following Keras' IMDb set.
 *
 * Tokeniser (Keras' text_to_word_sequence): the text is lower-cased, every
 * character of !"#$%&()*+,-./:;<=>?@[\]^_`{|}~, tab, newline and carriage
 * return (Python's universal newlines) becomes a space (so does NUL, which
 * no word may hold: words are C strings), and the text is split at spaces (empty pieces dropped). Apostrophes
 * stay inside words. Lower-casing covers ASCII and Latin-1 (U+00C0-U+00DE
 * except U+00D7); other letters are kept as they are.
 *
 * Vocabulary: words of the training texts ranked by count, ties by first
 * appearance. The word of rank r (1 = most frequent) has index r + 3;
 * index 0 pads, 1 starts a sequence, 2 stands for any word whose index would
 * be >= num_words (out of vocabulary), 3 is unused: Keras' reserved indices
 * with index_from = 3. A sequence is [1, word indices...], padded with 0 and
 * truncated at the front to `maxlen`.
 *
 * Ownership: a cb_vocab owns its words; cb_vocab_free releases them. */
#ifndef CROSSBIND_TEXT_H
#define CROSSBIND_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "crossbind/status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { CB_TOK_PAD = 0, CB_TOK_START = 1, CB_TOK_OOV = 2, CB_TOK_INDEX_FROM = 3 };

typedef struct cb_vocab {
    int num_words;   /* indices are < num_words */
    int maxlen;      /* sequence length */
    int n_words;     /* words stored: at most num_words - 4 */
    char **words;    /* words[i] has index i + 4 */
    /* lookup table (open addressing), private */
    int *slots;
    size_t n_slots;
} cb_vocab;

/* Checks that `len` bytes are well-formed UTF-8 (no overlong forms, no
 * surrogates, nothing above U+10FFFF). Returns -1 if they are, else the
 * offset of the first bad byte. */
int64_t cb_utf8_invalid_at(const char *s, size_t len);

/* Splits `text` (valid UTF-8, `len` bytes) into tokens in place: calls
 * `emit` with each token (not NUL-terminated). */
typedef void (*cb_token_fn)(const char *tok, size_t len, void *user);
void cb_tokenize(char *text, size_t len, cb_token_fn emit, void *user);

/* Word counting for building a vocabulary. */
typedef struct cb_word_counter cb_word_counter;
cb_status cb_word_counter_create(cb_word_counter **out);
/* Tokenises and counts one text (modified in place). */
cb_status cb_word_counter_add(cb_word_counter *c, char *text, size_t len);
void cb_word_counter_free(cb_word_counter *c);
/* The vocabulary of the counted texts, ranked as described above. */
cb_status cb_vocab_from_counts(const cb_word_counter *c, int num_words, int maxlen, cb_vocab *out);

/* Index of a word (4 ... num_words-1), or CB_TOK_OOV. */
int cb_vocab_lookup(const cb_vocab *v, const char *word, size_t len);
/* Encodes one text (modified in place) into v->maxlen indices (as floats,
 * the engine's input type). */
cb_status cb_vocab_encode(const cb_vocab *v, char *text, size_t len, float *seq);

/* Text file: a header line "crossbind-vocab 1 num_words=N maxlen=L
 * index_from=3", then one word per line in index order. Written
 * atomically. */
cb_status cb_vocab_save(const cb_vocab *v, const char *path);
cb_status cb_vocab_load(const char *path, cb_vocab *out);
/* The same file's text on a stream (an open file, fmemopen, a pipe);
 * `name` names it in messages. cb_vocab_load and cb_vocab_save use them. */
cb_status cb_vocab_read(FILE *f, const char *name, cb_vocab *out);
cb_status cb_vocab_write(const cb_vocab *v, FILE *f, const char *name);
cb_status cb_vocab_copy(const cb_vocab *v, cb_vocab *out);
/* 1 when both hold the same words, size and length. */
int cb_vocab_equal(const cb_vocab *a, const cb_vocab *b);
void cb_vocab_free(cb_vocab *v);

#ifdef __cplusplus
}
#endif
#endif
