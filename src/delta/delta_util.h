/* Small helpers of crossbind delta. Internal. */
#ifndef CB_DELTA_UTIL_H
#define CB_DELTA_UTIL_H

#include <stddef.h>
#include "crossbind/status.h"

/* Replaces in place every character but [A-Za-z0-9._-] by '_' (and a
 * leading '.' too), so a variant key or a value name is a safe file name. */
void delta_safe_name(char *s);
/* The last line of a runner's stderr that says "error:", else its last line. */
void delta_last_error_line(const char *path, char *out, size_t cap);
/* A path from a format, cut at cap - 1 bytes: the experiment's directory
 * is refused past 1024 bytes, so the paths below it always fit. */
void delta_path(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* SHA-256 of a file's bytes, as hex. */
cb_status delta_sha256_file(const char *path, char hex[65]);

#endif
