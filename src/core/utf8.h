/* UTF-8 validation (RFC 3629: no overlong forms, no surrogates, nothing
 * above U+10FFFF), for the formats that require it. Internal. */
#ifndef CB_UTF8_H
#define CB_UTF8_H

#include <stddef.h>

/* 1 when the n bytes at s are valid UTF-8, else 0 and *bad (if not NULL)
 * is the offset of the first byte that is not. */
int cb_utf8_valid(const void *s, size_t n, size_t *bad);

#endif
