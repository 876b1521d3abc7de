/* Whole-file reads for the format parsers, which all parse from memory so
 * that the same code serves files, tests and fuzzers. */
#ifndef CB_CORE_FILE_H
#define CB_CORE_FILE_H

#include <stddef.h>
#include "crossbind/status.h"

/* Reads all of `path` into a malloc'd buffer (*out, caller frees). Files
 * larger than max_bytes are refused rather than read. */
cb_status cb_read_file(const char *path, size_t max_bytes, unsigned char **out, size_t *len);

/* Reads `path` whole and hands it to a from-memory parser (the buffer is
 * freed afterwards): the one way every *_read function works. */
typedef cb_status (*cb_buffer_parser)(const unsigned char *buf, size_t len, const char *what, void *out);
cb_status cb_parse_file(const char *path, size_t max_bytes, cb_buffer_parser parse, void *out);

/* Copies the regular file src to dst (created or truncated); on any
 * failure dst is removed. */
cb_status cb_copy_file(const char *src, const char *dst);

/* Creates a directory and its missing parents (like mkdir -p). */
cb_status cb_mkdirs(const char *path);

#endif
