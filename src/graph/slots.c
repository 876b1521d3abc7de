/* Greedy interval sharing: time runs over the steps; at each step the
 * items starting there take the smallest free buffer that fits (else the
 * largest free one grows to fit, else a new one), then the items ending
 * there give theirs back. The buffers are separate (the blocked rewrite's,
 * blocked.c) or laid end to end in one arena (the executor's). Not the
 * optimum (that is NP-hard for sizes that differ), but it keeps a few
 * layers' values at a time for chain-like graphs, which is what they need. */
#include <stdlib.h>
#include "slots.h"

typedef struct slot { size_t floats; int free; } slot;

cb_status cb_slots_assign_buffers(int n, const int *start, const int *end, const size_t *floats, int *slot_of,
                                  size_t *slot_floats, int *n_slots)
{
    int steps = 0;
    for (int k = 0; k < n; k++)
        if (start[k] >= 0 && end[k] + 1 > steps) steps = end[k] + 1;
    int *by_start = malloc(((size_t)steps + 1) * sizeof *by_start), *by_end = malloc(((size_t)steps + 1) * sizeof *by_end);
    int *next_start = malloc(((size_t)n + 1) * sizeof *next_start), *next_end = malloc(((size_t)n + 1) * sizeof *next_end);
    slot *slots = calloc((size_t)n + 1, sizeof *slots);
    if (!by_start || !by_end || !next_start || !next_end || !slots) {
        free(by_start), free(by_end), free(next_start), free(next_end), free(slots);
        return cb_fail(CB_ERR_NOMEM, "out of memory planning shared buffers");
    }
    for (int t = 0; t <= steps; t++) by_start[t] = by_end[t] = -1;
    for (int k = n - 1; k >= 0; k--) { /* lists in item order */
        slot_of[k] = -1;
        if (start[k] < 0) continue;
        const int e = end[k] > start[k] ? end[k] : start[k];
        next_start[k] = by_start[start[k]], by_start[start[k]] = k;
        next_end[k] = by_end[e], by_end[e] = k;
    }
    int count = 0;
    for (int t = 0; t < steps; t++) {
        for (int k = by_start[t]; k >= 0; k = next_start[k]) {
            int best = -1, largest = -1;
            for (int s = 0; s < count; s++) {
                if (!slots[s].free) continue;
                if (slots[s].floats >= floats[k] && (best < 0 || slots[s].floats < slots[best].floats)) best = s;
                if (largest < 0 || slots[s].floats > slots[largest].floats) largest = s;
            }
            if (best < 0) best = largest; /* it grows to fit */
            if (best < 0) best = count++;
            if (slots[best].floats < floats[k]) slots[best].floats = floats[k];
            slots[best].free = 0;
            slot_of[k] = best;
        }
        for (int k = by_end[t]; k >= 0; k = next_end[k]) slots[slot_of[k]].free = 1;
    }
    for (int s = 0; s < count; s++) slot_floats[s] = slots[s].floats;
    *n_slots = count;
    free(by_start), free(by_end), free(next_start), free(next_end), free(slots);
    return CB_OK;
}

cb_status cb_slots_assign(int n, const int *start, const int *end, const size_t *floats, size_t *offset,
                          size_t *total)
{
    int *slot_of = malloc(((size_t)n + 1) * sizeof *slot_of), count = 0;
    size_t *at = malloc(((size_t)n + 1) * sizeof *at);
    if (!slot_of || !at) {
        free(slot_of), free(at);
        return cb_fail(CB_ERR_NOMEM, "out of memory planning shared buffers");
    }
    cb_status st = cb_slots_assign_buffers(n, start, end, floats, slot_of, at, &count);
    size_t off = 0;
    for (int s = 0; st == CB_OK && s < count; s++) { /* end to end: each buffer's size becomes its offset */
        const size_t here = off;
        off += at[s];
        at[s] = here;
    }
    for (int k = 0; st == CB_OK && k < n; k++)
        if (slot_of[k] >= 0) offset[k] = at[slot_of[k]];
    if (st == CB_OK) *total = off;
    free(slot_of), free(at);
    return st;
}
