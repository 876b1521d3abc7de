/* libFuzzer target: a prepared IMDb directory (vocab.txt, x_test.npy,
 * y_test.npy as crossbind data imdb-prepare writes them). The first byte
 * picks the file the rest of the input replaces (vocab, x or y); the other
 * two are valid, and so is a vocabulary given to compare with (byte & 4). */
#include "fuzz_util.h"
#include "crossbind/data.h"
#include "crossbind/formats.h"

static cb_vocab expect;

static void write_npy(const char *rel, int ndim, int64_t n, int64_t w, const int64_t *values)
{
    cb_tensor t = {.dtype = CB_I64, .ndim = ndim, .shape = {n, w}, .data = (void *)values};
    if (cb_npy_write(fz_path(2, rel), &t) != CB_OK) abort();
}

/* Writes the valid file number `which` (0-2; -1: all five). */
static void defaults(int which)
{
    static const char vocab[] = "crossbind-vocab 1 num_words=8 maxlen=4 index_from=3\nthe\na\nfilm\ngood\n";
    static const int64_t x[8] = {1, 4, 5, 6, 0, 1, 7, 2}, y[2] = {1, 0};
    if (which <= 0) fz_put("prep/vocab.txt", vocab, sizeof vocab - 1);
    if (which < 0 || which == 1) write_npy("prep/x_test.npy", 2, 2, 4, x);
    if (which < 0 || which == 2) write_npy("prep/y_test.npy", 1, 2, 0, y);
    if (which < 0) {
        write_npy("prep/x_train.npy", 2, 2, 4, x); /* its presence marks the directory as prepared */
        write_npy("prep/y_train.npy", 1, 2, 0, y);
    }
}

static void free_expect(void) { cb_vocab_free(&expect); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const files[3] = {"prep/vocab.txt", "prep/x_test.npy", "prep/y_test.npy"};
    if (!expect.words) {
        fz_scratch("imdbprep");
        fz_mkdirs("prep");
        defaults(-1);
        if (cb_vocab_load(fz_path(0, files[0]), &expect) != CB_OK) abort();
        atexit(free_expect);
    }
    if (size == 0) return 0;
    /* Only the file the last input replaced needs its valid contents back. */
    static int replaced = -1;
    int which = data[0] % 3;
    if (replaced >= 0 && replaced != which) defaults(replaced);
    fz_put(files[which], data + 1, size - 1);
    replaced = which;
    cb_vocab used;
    cb_dataset d;
    if (cb_text_dataset_load(fz_path(0, "prep"), 0, data[0] >> 4, data[0] & 4 ? &expect : NULL, &used, &d) != CB_OK)
        return 0;
    if (d.w != used.maxlen || d.classes != 2) abort();
    for (int64_t i = 0; i < d.n * d.w; i++)
        if (!(d.x[i] >= 0 && d.x[i] < used.num_words)) abort();
    for (int64_t i = 0; i < d.n; i++)
        if (d.y[i] != 0 && d.y[i] != 1) abort();
    cb_dataset_free(&d);
    cb_vocab_free(&used);
    return 0;
}
