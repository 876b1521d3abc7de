/* Huge-page-backed arenas (see bigmem.h). */
#include <stdlib.h>
#include <sys/mman.h>
#include "bigmem.h"

#define BIG (4u << 20)

void *cb_big_alloc(size_t bytes)
{
    if (bytes < BIG) return calloc(bytes ? bytes : 1, 1);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE); /* advice only: without THP it stays 4 KiB pages */
#endif
    return p;
}

void cb_big_free(void *p, size_t bytes)
{
    if (!p) return;
    if (bytes < BIG) free(p);
    else munmap(p, bytes);
}
