/* A small JSON reader (a DOM with depth and size limits, for file headers and
 * configuration) and a string builder for writing JSON. Internal. */
#ifndef CB_JSON_H
#define CB_JSON_H

#include <stddef.h>
#include "crossbind/status.h"

typedef enum { CB_JSON_NULL, CB_JSON_BOOL, CB_JSON_NUM, CB_JSON_STR, CB_JSON_ARR, CB_JSON_OBJ } cb_json_type;

typedef struct cb_json {
    cb_json_type type;
    double num;             /* NUM, BOOL (0/1) */
    char *str;              /* STR (NUL-terminated; embedded NULs are refused) */
    struct cb_json *items;  /* ARR, OBJ */
    char **keys;            /* OBJ */
    int count;
} cb_json;

/* Parses `len` bytes; `what` names the source in error messages. An object
 * with two equal keys is refused (readers disagree on which one counts). */
cb_status cb_json_parse(const char *text, size_t len, const char *what, cb_json *out);
/* The same, refusing a text of more than `max_values` values (every number,
 * string, array and object counts one), so that a large hostile text cannot
 * make the reader allocate far more than its size. */
cb_status cb_json_parse_capped(const char *text, size_t len, const char *what, size_t max_values, cb_json *out);
void cb_json_free(cb_json *v);
const cb_json *cb_json_get(const cb_json *obj, const char *key); /* NULL if absent */

/* Growable string. All appends are no-ops after an allocation failure,
 * which cb_buf_ok() reports once at the end. */
typedef struct cb_buf { char *data; size_t len, cap; int failed; } cb_buf;
void cb_buf_printf(cb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends raw bytes (kept NUL-terminated). */
void cb_buf_append(cb_buf *b, const void *data, size_t n);
void cb_buf_json_string(cb_buf *b, const char *s);   /* quoted and escaped */
void cb_buf_json_number(cb_buf *b, double v);         /* null for NaN/Inf */
/* Appends `s` as one word a POSIX shell reads back unchanged: as it is when
 * it holds only characters no shell treats specially, else single-quoted. */
void cb_buf_shell_word(cb_buf *b, const char *s);
int cb_buf_ok(const cb_buf *b);
void cb_buf_free(cb_buf *b);

/* Writes `len` bytes to `path` atomically (temporary file, fsync, rename). */
cb_status cb_write_file_atomic(const char *path, const void *data, size_t len);

#endif
