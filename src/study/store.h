/* The results store: one SQLite file holding every study, run, epoch,
 * timing and prediction summary. Internal to the study harness, the report
 * and `crossbind results`.
 *
 * Every unit of work (a training run with its epochs; an evaluation with its
 * timed passes) is written in one transaction, so a study stopped at any
 * point (Ctrl-C, SIGKILL, power loss) leaves only whole measurements, and
 * rerunning the same command skips exactly those. The file is in WAL mode:
 * readers (the report) work while a study writes; they open it read-only.
 * One study at a time writes it: see lock.h. */
#ifndef CB_STUDY_STORE_H
#define CB_STUDY_STORE_H

#include <sqlite3.h>
#include <stdint.h>
#include "crossbind/status.h"

/* Schema 2 added the table init_weights (the study's shared initial
 * weights); a schema-1 store gets it when opened for writing, and is read
 * as it is. */
#define CB_STORE_SCHEMA 2
#define CB_STORE_APP_ID 0x43425354 /* "CBST": tells a crossbind store from any other SQLite file */

typedef struct cb_store cb_store;

typedef enum {
    CB_STORE_READ = 0,    /* read-only (report, export): also in a read-only directory */
    CB_STORE_CREATE = 1,  /* read-write, created when missing */
    CB_STORE_WRITE = 2    /* read-write, must exist */
} cb_store_mode;

/* Opens a store. Refuses a file that is not SQLite, a SQLite file of another
 * application, a newer schema, and a damaged or altered store (SQLite's
 * integrity check, then every table, column and key crossbind defines),
 * before anything is written. A new store's schema is made in one
 * transaction, so processes creating the same store at once all succeed. */
cb_status cb_store_open(const char *path, cb_store_mode mode, cb_store **out);
void cb_store_close(cb_store *s);
sqlite3 *cb_store_db(cb_store *s);
/* The store's schema version (1 or 2): a schema-1 store opened read-only
 * has no table init_weights. */
int cb_store_schema(const cb_store *s);
const char *cb_store_path(const cb_store *s);

/* Runs `sql` with parameters bound from `types` ('i' int64, 'd' double with
 * NaN as NULL, 't' text with NULL as NULL), stepping it to completion. */
cb_status cb_store_exec(cb_store *s, const char *sql, const char *types, ...);
cb_status cb_store_begin(cb_store *s);
cb_status cb_store_commit(cb_store *s);
void cb_store_rollback(cb_store *s);

/* The id of the study with this exact configuration, creating it when new. */
cb_status cb_store_study(cb_store *s, const char *profile, const char *config_json, const char *machine,
                         int64_t *id, int *created);
/* *found = 1 when the query (one int64 parameter per 'i', text per 't')
 * yields a row; an error of the database is an error, never "no row". */
cb_status cb_store_exists(cb_store *s, int *found, const char *sql, const char *types, ...);

/* The lock file of the study writing a store: STORE.lock (see lock.h). */
void cb_store_lock_path(const char *store_path, char *out, size_t cap);
/* A study's status for people: the stored one, except that a study stored as
 * running whose process no longer holds the store's lock is "interrupted". */
void cb_store_study_status(const cb_store *s, int64_t id, const char *stored, char *out, size_t cap);

#endif
