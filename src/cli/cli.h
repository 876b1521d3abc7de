/* Shared helpers of the crossbind command's subcommands. */
#ifndef CB_CLI_H
#define CB_CLI_H

#include <stdint.h>
#include "crossbind/crossbind.h"

/* `eval`'s exit status for a model file that is sound but uses an operator
 * or layer crossbind lacks: the runner protocol's "cannot evaluate this
 * file" (runners/README.md), which a study stores as unsupported. */
#define CB_EXIT_UNSUPPORTED 3

#define CB_DEFAULT_DATA "/usr/share/datasets/fashion-mnist"


/* Prints "crossbind: error: ..." and returns the exit code 1. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints the status's message and returns 1. */
int cli_status(cb_status s);

/* Option values, range-checked. Return 0, or print an error and return -1. */
int cli_long(const char *opt, const char *v, long min, long max, long *out);
int cli_float(const char *opt, const char *v, double min, double max, float *out);
/* The value of option argv[*i] (advancing *i), or NULL after an error. */
const char *cli_value(int argc, char **argv, int *i);
/* The same for a subcommand `cmd` whose options that take a value are
 * `known` (NULL-terminated): an unknown option is refused as unknown
 * (one line), not as one that lacks a value. */
const char *cli_option_value(const char *cmd, const char *const *known, int argc, char **argv, int *i);
/* The most threads a command accepts: 4 x the online CPUs, at most 1024.
 * More only oversubscribe the cores (slower, and measurements that mean
 * nothing); the command refuses them rather than quietly running fewer. */
long cli_max_threads(void);
/* --threads' value (or another source's, named by `what`), in [1, cli_max_threads()]. */
int cli_threads(const char *what, const char *v, long *out);
/* The built-in models taking data format `format` (all where NULL),
 * separated by `sep`, from the model registry: help texts cannot drift
 * from it. Returns one of four static buffers (used in turn). */
const char *cli_models(const char *format, const char *sep);
/* The default: the online CPUs. */
long cli_default_threads(void);
/* 0 if n is in [1, cli_max_threads()], else prints why not (naming `what`) and returns -1. */
int cli_check_threads(const char *what, long n);

/* Creates `dir` (and parents) and checks that files can be written in it. */
int cli_prepare_out_dir(const char *dir);
/* Loads weights into a built-in model from a file in any supported format
 * (an ONNX file gives its initializers), recognising the format by content. */
cb_status cli_load_weights(cb_model *m, const char *path, int strict);
/* Tells the user when parameters were matched by order rather than name,
 * and which tensors a non-strict load ignored. */
void cli_notice_load(const char *path, const cb_load_info *info);
/* A notice on stderr when an evaluation met non-finite model outputs. */
void cli_notice_nonfinite(const char *model, const char *what, const cb_eval_result *r);
/* Parses "fast" or "reference"; prints an error and returns -1 otherwise. */
int cli_kernels(const char *v, cb_kernels *out);
/* Parses an optimisation level (reference, fast, fused, fastmath: exec.h). */
int cli_level(const char *v, cb_kernels *out);

/* Loads one split of model m's data set. Text (IMDb) data is encoded with
 * `vocab` when given; otherwise with a prepared directory's own, or
 * (training split only) one built from the training reviews. The
 * vocabulary used is copied to `used` (may be NULL) and must fit the
 * model's embedding. */
cb_status cli_load_data(const cb_model *m, const char *format, const char *dir, int train, int64_t limit,
                        const cb_vocab *vocab, cb_vocab *used, cb_dataset *out);

/* This command's own path (runners call it back as the crossbind binding). */
void cli_self_path(const char *argv0, char *out, size_t cap);
/* runners/ beside the build directory (build/crossbind -> ../runners), else ./runners. */
void cli_default_runners(const char *self, char *out, size_t cap);

int cmd_run(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_convert(int argc, char **argv);

int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_data(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_delta(int argc, char **argv);
int cmd_study(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_results(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_bench_worker(int argc, char **argv);

#endif
