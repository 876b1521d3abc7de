/* The exclusive lock of a study: one process at a time writes a results
 * store and its work directory. Two studies on one store would plan the same
 * measurements, train into the same directories, remove each other's files
 * and store times measured under each other's load.
 *
 * The lock is an open-file-description lock (Linux F_OFD_SETLK) on a lock
 * file beside what it guards: the kernel drops it when its holder dies, so a
 * killed study never leaves a stale lock behind, and a reader can ask
 * whether it is held without taking it. The file records the holder (pid,
 * host, start time, study id) only to name it in messages. Internal. */
#ifndef CB_STUDY_LOCK_H
#define CB_STUDY_LOCK_H

#include <stdint.h>
#include "crossbind/status.h"

typedef struct cb_lock cb_lock;

typedef struct cb_lock_holder {
    long pid;           /* 0 when the record is not (yet) readable */
    char host[256];
    char since[32];     /* UTC, ISO 8601 */
    int64_t study;      /* 0 until the holder knows its study */
} cb_lock_holder;

/* Takes the lock at `path` (created when missing). When another process holds
 * it: with `wait`, blocks until it is released (saying so on stderr unless
 * quiet); without, refuses with CB_ERR_IO and a message naming `what`, the
 * holder and --wait. */
cb_status cb_lock_acquire(const char *path, const char *what, int wait, int quiet, cb_lock **out);
/* Records the study the holder works on, for readers of the lock file. */
void cb_lock_set_study(cb_lock *l, int64_t study);
void cb_lock_release(cb_lock *l);

/* 1 when some process (this one included) holds the lock at `path`, with its
 * record in *h; 0 when nobody does (or the file is missing); -1 when that
 * cannot be told (the file is unreadable). Takes nothing. */
int cb_lock_probe(const char *path, cb_lock_holder *h);

#endif
