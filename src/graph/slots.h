/* Buffers shared by lifetime, the one allocator of the executor's value and
 * gradient plans (memplan.c). Internal to the executor. */
#ifndef CROSSBIND_SLOTS_H
#define CROSSBIND_SLOTS_H

#include <stddef.h>
#include "crossbind/crossbind.h"

/* Item k lives over steps [start[k], end[k]] (start < 0: not planned) and
 * needs floats[k]; items whose lives do not overlap may share a buffer.
 * An item starting at step t never takes the buffer of one ending at t
 * (a step's inputs and outputs are distinct). Writes each planned item's
 * offset (in floats from the buffers' start) and *total, their sum. */
cb_status cb_slots_assign(int n, const int *start, const int *end, const size_t *floats, size_t *offset,
                          size_t *total);
/* The same sharing as separate buffers: item k's buffer number (slot_of[k],
 * -1 where not planned), each buffer's floats (slot_floats, room for n) and
 * the number of buffers. */
cb_status cb_slots_assign_buffers(int n, const int *start, const int *end, const size_t *floats, int *slot_of,
                                  size_t *slot_floats, int *n_slots);

#endif
