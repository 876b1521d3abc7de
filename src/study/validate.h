/* Checks of everything a runner reports (its eval JSON line, its run.json,
 * its logits file) and of the names that become parts of file paths.
 * Internal to the study harness.
 *
 * A runner is another program: whatever it prints is data to check, never
 * to trust. A value out of range, contradicting another or of the wrong
 * shape makes the measurement "malformed output"; nothing it reported is
 * then stored as a result. */
#ifndef CB_STUDY_VALIDATE_H
#define CB_STUDY_VALIDATE_H

#include <stddef.h>
#include <stdint.h>
#include "../core/json.h"

/* What the harness knows independently of the runner. */
typedef struct cb_runner_expect {
    int64_t total;    /* test samples the runner must have evaluated (the limit, when one applies) */
    int64_t n_train;  /* training samples (training only) */
    int64_t classes;  /* outputs per sample in the logits */
    int repeat;       /* timed passes (evaluation) */
    int epochs;       /* epochs (training) */
    double wall_s;    /* how long the runner's process lived: no time it reports can be longer */
} cb_runner_expect;

/* Each returns 0 when every value is valid, else -1 with `why` naming the
 * key, the value and what was expected. */
int cb_validate_eval(const cb_json *res, const cb_runner_expect *ex, char *why, size_t cap);
int cb_validate_run(const cb_json *run, const cb_runner_expect *ex, char *why, size_t cap);
/* The logits file: a float32 .npy of shape [total, classes]. Non-finite
 * values are what the model computed, not a broken file: they are counted
 * in *nonfinite (the measurement says so) rather than refused. */
int cb_validate_logits(const char *path, const cb_runner_expect *ex, int64_t *nonfinite, char *why, size_t cap);

/* A name that may become one component of a path under the work directory:
 * 1 to CB_NAME_MAX characters of [A-Za-z0-9._-], not starting with '.'
 * (so neither "." nor ".." nor a hidden file). */
#define CB_NAME_MAX 31
int cb_valid_name(const char *s);

#endif
