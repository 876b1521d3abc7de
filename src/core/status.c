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
    case CB_ERR_BUSY: return "busy";
    }
    return "unknown status";
}

const char *cb_last_error(void) { return last_error; }

const char *cb_error_text(cb_status s)
{
    static _Thread_local char text[sizeof last_error + 64];
    char tag[64];
    snprintf(tag, sizeof tag, "(%s)", cb_status_name(s));
    /* Strip every trailing " (name)" a wrapped message brought along, then
     * add one. */
    size_t len = strlen(last_error), tl = strlen(tag);
    while (len >= tl && memcmp(last_error + len - tl, tag, tl) == 0) {
        len -= tl;
        while (len && last_error[len - 1] == ' ') len--;
    }
    if (s == CB_OK) snprintf(text, sizeof text, "%.*s", (int)len, last_error);
    else if (len == 0) snprintf(text, sizeof text, "%s", cb_status_name(s));
    else snprintf(text, sizeof text, "%.*s %s", (int)len, last_error, tag);
    return text;
}

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
