/* A hash index of names: linear-time duplicate detection and lookup for the
 * name lists that files make long (tensors, JSON keys, graph values). Keyed
 * by a per-process random seed, so that a file cannot be crafted to make its
 * names collide and bring back quadratic time. Internal. */
#ifndef CB_NAMES_H
#define CB_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include "crossbind/status.h"

typedef struct cb_name_slot { const char *name; uint64_t hash; int id; } cb_name_slot;

/* Borrows the names it holds: they must outlive the index and not change. */
typedef struct cb_name_index {
    cb_name_slot *slots; /* NULL name: empty */
    size_t mask, count;
} cb_name_index;

cb_status cb_name_index_init(cb_name_index *ix, size_t expected);
/* Adds `name` with `id` (>= 0). Returns -1 when the name is new, the id
 * already stored when it is not (nothing is changed then), or -2 when out of
 * memory (with cb_last_error set). */
int cb_name_index_add(cb_name_index *ix, const char *name, int id);
/* The id stored under `name`, or -1. */
int cb_name_index_find(const cb_name_index *ix, const char *name);
void cb_name_index_free(cb_name_index *ix);

#endif
