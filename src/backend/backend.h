/* A backend: where an executor's buffers live and how they are reached,
 * with the kernels that run on it named in its kernel lists
 * (src/ops/conv_kernels.c: each kernel says its backend). The executor
 * allocates, clears and copies through this interface only, so a device
 * backend (CUDA) brings its own buffers and kernels without changing the
 * executor's steps. The CPU is the first implementation (cpu.c).
 * Not part of the public API. */
#ifndef CROSSBIND_BACKEND_H
#define CROSSBIND_BACKEND_H

#include <stddef.h>
#include "crossbind/status.h"

typedef struct cb_backend {
    const char *name; /* "cpu": what kernel lists name */
    cb_status (*open)(void **ctx);      /* the backend's state for one executor (device, streams) */
    void (*close)(void *ctx);
    void *(*alloc)(void *ctx, size_t bytes); /* zero-filled; NULL when out of memory */
    void (*release)(void *ctx, void *p, size_t bytes);
    void (*copy_in)(void *ctx, void *dst, const void *host, size_t bytes);
    void (*copy_out)(void *ctx, void *host, const void *src, size_t bytes);
    void (*zero)(void *ctx, void *p, size_t bytes);
    void (*sync)(void *ctx); /* everything queued has finished */
} cb_backend;

const cb_backend *cb_backend_cpu(void);
/* The backend of that name in this build, or NULL (with the names there
 * are in cb_last_error()). */
const cb_backend *cb_backend_find(const char *name);

#endif
