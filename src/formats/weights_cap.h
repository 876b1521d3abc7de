/* The most memory one weights file may make crossbind allocate: its tensors
 * as loaded, plus whatever must be inflated or decoded on the way. A small
 * file can declare a huge tensor (a zip bomb, a tensor of 10^12 elements
 * viewing one element), so loaders weigh every declaration against this cap
 * before allocating anything, and refuse a file above it by name.
 *
 * The default is 16 GiB or half of the physical memory, whichever is
 * smaller; the environment variable CROSSBIND_WEIGHTS_MAX_MEMORY (bytes, or
 * a number with a K, M, G or T suffix: 32G) sets another. */
#ifndef CB_FORMATS_WEIGHTS_CAP_H
#define CB_FORMATS_WEIGHTS_CAP_H

#include <stddef.h>
#include <stdint.h>
#include "crossbind/status.h"

#define CB_WEIGHTS_CAP_ENV "CROSSBIND_WEIGHTS_MAX_MEMORY"

/* The cap in bytes; fails (naming the variable) on a malformed setting. */
cb_status cb_weights_cap(uint64_t *out);

/* n bytes for a message: "1.5 GiB", "312 bytes". */
void cb_format_bytes(uint64_t n, char *buf, size_t size);

#endif
