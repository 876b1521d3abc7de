/* Status codes and the per-thread error message behind cb_last_error(). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "crossbind/status.h"

static _Thread_local char last_error[1024];

const char *cb_status_name(cb_status s)
{
    switch (s) {
    case CB_OK: return "ok";
    case CB_ERR_INVALID_ARG: return "invalid argument";
    case CB_ERR_IO: return "i/o error";
    case CB_ERR_FORMAT: return "bad file format";
    case CB_ERR_SHAPE: return "shape mismatch";
    case CB_ERR_NOMEM: return "out of memory";
    case CB_ERR_UNSUPPORTED: return "unsupported";
    case CB_ERR_NOT_FOUND: return "not found";
    }
    return "unknown status";
}

const char *cb_last_error(void) { return last_error; }

cb_status cb_fail(cb_status code, const char *fmt, ...)
{
    /* Format into a scratch buffer first: callers often wrap the previous
     * message ("%s: %s", path, cb_last_error()), which would otherwise be
     * read and written at once. */
    char msg[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(last_error, msg, sizeof msg);
    return code;
}
