/* crossbind: status codes and error messages.
 *
 * Every public function that can fail returns a cb_status. On failure a
 * readable, specific message is kept per thread and can be read with
 * cb_last_error() until the next failing call on the same thread. */
#ifndef CROSSBIND_STATUS_H
#define CROSSBIND_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cb_status {
    CB_OK = 0,
    CB_ERR_INVALID_ARG,  /* an argument or option value is out of range */
    CB_ERR_IO,           /* a file could not be opened, read or written */
    CB_ERR_FORMAT,       /* a file's content is not what its format requires */
    CB_ERR_SHAPE,        /* tensor shapes do not fit together */
    CB_ERR_NOMEM,        /* an allocation failed */
    CB_ERR_UNSUPPORTED,  /* a valid request this build cannot serve */
    CB_ERR_NOT_FOUND,    /* a named item (model, tensor, option) does not exist */
    CB_ERR_BUSY          /* in use by another process (a study's store or work directory) */
} cb_status;

/* Short fixed name of a status code ("invalid argument", ...). */
const char *cb_status_name(cb_status s);

/* The detailed message of the last failure on this thread ("" if none). */
const char *cb_last_error(void);

/* The last failure's message followed by " (status name)", the name only
 * once: a message that wraps another one already ending in it (a runner's
 * or a nested call's) is not given it again. Per thread, valid until the
 * next call. */
const char *cb_error_text(cb_status s);

/* Records a failure message and returns `code` (for library code and
 * extensions; printf-style). */
cb_status cb_fail(cb_status code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif
