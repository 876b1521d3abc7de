/* The CPU backend: host memory (large buffers from cb_big_alloc, which
 * asks for transparent huge pages), copies are memcpy, nothing to wait for. */
#include <string.h>
#include "../core/bigmem.h"
#include "backend.h"

static cb_status cpu_open(void **ctx)
{
    *ctx = NULL;
    return CB_OK;
}

static void cpu_close(void *ctx) { (void)ctx; }

static void *cpu_alloc(void *ctx, size_t bytes)
{
    (void)ctx;
    return cb_big_alloc(bytes);
}

static void cpu_release(void *ctx, void *p, size_t bytes)
{
    (void)ctx;
    cb_big_free(p, bytes);
}

static void cpu_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    if (bytes) memcpy(dst, src, bytes);
}

static void cpu_zero(void *ctx, void *p, size_t bytes)
{
    (void)ctx;
    if (bytes) memset(p, 0, bytes);
}

static void cpu_sync(void *ctx) { (void)ctx; }

static const cb_backend cpu = {.name = "cpu", .open = cpu_open, .close = cpu_close, .alloc = cpu_alloc,
                               .release = cpu_release, .copy_in = cpu_copy, .copy_out = cpu_copy,
                               .zero = cpu_zero, .sync = cpu_sync};

const cb_backend *cb_backend_cpu(void) { return &cpu; }

const cb_backend *cb_backend_find(const char *name)
{
    if (!strcmp(name, cpu.name)) return &cpu;
    cb_fail(CB_ERR_NOT_FOUND, "no backend '%s' in this build (there is: cpu)", name);
    return NULL;
}
