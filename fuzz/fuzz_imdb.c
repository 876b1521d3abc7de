/* libFuzzer target: an aclImdb directory (train|test/pos|neg/<id>_<r>.txt).
 * The input is cut at 0xFF bytes (never in UTF-8) into up to four reviews:
 * train/pos, train/neg, test/pos, test/neg in turn; the first byte of each
 * piece picks its file's id. The vocabulary is built from the training
 * reviews, and both splits are encoded with it. */
#include "fuzz_util.h"
#include "crossbind/data.h"

static const char *const dirs[4] = {"acl/train/pos", "acl/train/neg", "acl/test/pos", "acl/test/neg"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The directories are made once; each input removes only the files
     * the last one wrote (one per directory at most). */
    static char written[4][96];
    if (!fz_root[0]) {
        fz_scratch("imdb");
        for (int i = 0; i < 4; i++) fz_mkdirs(dirs[i]);
    }
    for (int k = 0; k < 4; k++)
        if (written[k][0]) { remove(fz_path(0, written[k])); written[k][0] = 0; }
    size_t at = 0;
    for (int k = 0; k < 4 && at < size; k++) {
        size_t end = at;
        while (end < size && data[end] != 0xFF) end++;
        if (end > at) {
            snprintf(written[k], sizeof written[k], "%s/%d_%d.txt", dirs[k], data[at] % 16, k & 1 ? 2 : 8);
            fz_put(written[k], data + at + 1, end - at - 1);
        }
        at = end + 1;
    }
    cb_vocab v;
    cb_dataset d;
    if (cb_text_dataset_load(fz_path(0, "acl"), 1, 0, NULL, &v, &d) != CB_OK) return 0;
    if (d.n < 1 || d.classes != 2 || d.w != v.maxlen) abort();
    cb_dataset_free(&d);
    if (cb_text_dataset_load(fz_path(0, "acl"), 0, 1, &v, NULL, &d) == CB_OK) {
        for (int64_t i = 0; i < d.n * d.w; i++)
            if (!(d.x[i] >= 0 && d.x[i] < v.num_words)) abort();
        cb_dataset_free(&d);
    }
    cb_vocab_free(&v);
    return 0;
}
