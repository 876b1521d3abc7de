/* Large zeroed allocations backed by transparent huge pages. Internal. */
#ifndef CB_CORE_BIGMEM_H
#define CB_CORE_BIGMEM_H

#include <stddef.h>

/* Zero-filled memory of `bytes` (NULL on failure), freed with cb_big_free
 * and the same size. Blocks of 4 MiB and more are mapped directly and
 * advised to use 2 MiB pages: an executor's arena of several GiB is
 * otherwise first touched one 4 KiB page fault at a time, which cost more
 * system time than the compute of a short training run. */
void *cb_big_alloc(size_t bytes);
void cb_big_free(void *p, size_t bytes);

#endif
