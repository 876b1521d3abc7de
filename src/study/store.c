/* The SQLite results store: schema, checks, and transactional writes. */
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "store.h"

struct cb_store {
    sqlite3 *db;
    char path[1024];
};

static const char schema_sql[] =
    "CREATE TABLE study(id INTEGER PRIMARY KEY, profile TEXT NOT NULL, config TEXT NOT NULL UNIQUE,"
    "  created TEXT NOT NULL, machine TEXT, status TEXT NOT NULL DEFAULT 'running', finished TEXT,"
    "  data TEXT, wall_s REAL);"
    /* One row per binding taking part: what its manifest declares and the versions it reported. */
    "CREATE TABLE binding(study_id INTEGER NOT NULL REFERENCES study(id), name TEXT NOT NULL,"
    "  framework TEXT, language TEXT, version TEXT, manifest TEXT, PRIMARY KEY(study_id, name));"
    /* RQ1 and RQ3: one row per training run (complete or failed, with the error). */
    "CREATE TABLE train_run(study_id INTEGER NOT NULL REFERENCES study(id), binding TEXT NOT NULL,"
    "  model TEXT NOT NULL, run INTEGER NOT NULL, device TEXT NOT NULL, seed INTEGER, status TEXT NOT NULL,"
    "  error TEXT, epochs INTEGER, n_train INTEGER, n_test INTEGER, training_time_s REAL, eval_time_s REAL,"
    "  total_time_s REAL, test_accuracy REAL, test_correct INTEGER, f1_macro REAL, auc_macro REAL,"
    "  load_s REAL, forward_s REAL, backward_s REAL, wall_s REAL, dir TEXT, finished TEXT,"
    "  PRIMARY KEY(study_id, binding, model, run, device));"
    "CREATE TABLE epoch(study_id INTEGER NOT NULL, binding TEXT NOT NULL, model TEXT NOT NULL,"
    "  run INTEGER NOT NULL, device TEXT NOT NULL, epoch INTEGER NOT NULL, train_acc REAL, test_acc REAL,"
    "  train_loss REAL, test_loss REAL, train_time_s REAL, eval_time_s REAL,"
    "  PRIMARY KEY(study_id, binding, model, run, device, epoch));"
    /* RQ2 and RQ4: one row per (trained model, binding, format, device). */
    "CREATE TABLE inference(study_id INTEGER NOT NULL, trainer TEXT NOT NULL, binding TEXT NOT NULL,"
    "  model TEXT NOT NULL, run INTEGER NOT NULL, device TEXT NOT NULL, format TEXT NOT NULL,"
    "  load_mode TEXT NOT NULL, status TEXT NOT NULL, error TEXT, correct INTEGER, total INTEGER,"
    "  reference_correct INTEGER, accuracy REAL, f1_macro REAL, auc_macro REAL, mean_time_s REAL,"
    "  stable INTEGER, label_agreement REAL, max_abs_logit_diff REAL, wall_s REAL, finished TEXT,"
    "  PRIMARY KEY(study_id, trainer, binding, model, run, device, format));"
    "CREATE TABLE inference_pass(study_id INTEGER NOT NULL, trainer TEXT NOT NULL, binding TEXT NOT NULL,"
    "  model TEXT NOT NULL, run INTEGER NOT NULL, device TEXT NOT NULL, format TEXT NOT NULL,"
    "  pass INTEGER NOT NULL, time_s REAL, correct INTEGER,"
    "  PRIMARY KEY(study_id, trainer, binding, model, run, device, format, pass));";

sqlite3 *cb_store_db(cb_store *s) { return s->db; }

static cb_status db_fail(cb_store *s, const char *what)
{
    int code = sqlite3_extended_errcode(s->db);
    const char *msg = sqlite3_errmsg(s->db);
    if ((code & 0xff) == SQLITE_FULL)
        return cb_fail(CB_ERR_IO, "%s: %s: the disk is full; everything stored before is kept", s->path, what);
    if ((code & 0xff) == SQLITE_NOTADB)
        return cb_fail(CB_ERR_FORMAT, "%s: not a crossbind results store (not an SQLite database)", s->path);
    return cb_fail(CB_ERR_IO, "%s: %s: %s", s->path, what, msg);
}

static cb_status exec_plain(cb_store *s, const char *sql, const char *what)
{
    char *err = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &err) != SQLITE_OK) {
        sqlite3_free(err);
        return db_fail(s, what);
    }
    return CB_OK;
}

static int64_t pragma_int(cb_store *s, const char *sql, int *ok)
{
    sqlite3_stmt *st;
    *ok = 0;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return 0;
    int64_t v = 0;
    if (sqlite3_step(st) == SQLITE_ROW) { v = sqlite3_column_int64(st, 0); *ok = 1; }
    sqlite3_finalize(st);
    return v;
}

cb_status cb_store_open(const char *path, int create, cb_store **out)
{
    *out = NULL;
    if (!create && access(path, F_OK) != 0) return cb_fail(CB_ERR_NOT_FOUND, "%s: no such results store", path);
    cb_store *s = calloc(1, sizeof *s);
    if (!s) return cb_fail(CB_ERR_NOMEM, "out of memory");
    snprintf(s->path, sizeof s->path, "%s", path);
    int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        cb_status st = cb_fail(CB_ERR_IO, "%s: cannot open the results store: %s", path,
                               s->db ? sqlite3_errmsg(s->db) : "out of memory");
        sqlite3_close(s->db);
        free(s);
        return st;
    }
    sqlite3_busy_timeout(s->db, 10000);
    int ok;
    int64_t tables = pragma_int(s, "SELECT count(*) FROM sqlite_master", &ok);
    cb_status st = CB_OK;
    if (!ok) st = db_fail(s, "reading the schema");
    int64_t app = ok ? pragma_int(s, "PRAGMA application_id", &ok) : 0;
    int64_t version = ok ? pragma_int(s, "PRAGMA user_version", &ok) : 0;
    if (st == CB_OK && tables == 0 && app == 0) {
        if (!create) st = cb_fail(CB_ERR_FORMAT, "%s: an empty file, not a crossbind results store", path);
        else {
            char sql[sizeof schema_sql + 200];
            snprintf(sql, sizeof sql, "PRAGMA journal_mode=WAL; BEGIN; %s PRAGMA application_id=%d; "
                     "PRAGMA user_version=%d; COMMIT;", schema_sql, CB_STORE_APP_ID, CB_STORE_SCHEMA);
            st = exec_plain(s, sql, "creating the schema");
        }
    } else if (st == CB_OK && app != CB_STORE_APP_ID) {
        st = cb_fail(CB_ERR_FORMAT, "%s: an SQLite database of another application, not a crossbind results store",
                     path);
    } else if (st == CB_OK && version > CB_STORE_SCHEMA) {
        st = cb_fail(CB_ERR_UNSUPPORTED, "%s: written by a newer crossbind (store schema %lld; this one reads up to "
                     "%d): use that version", path, (long long)version, CB_STORE_SCHEMA);
    } else if (st == CB_OK && version < 1) {
        st = cb_fail(CB_ERR_FORMAT, "%s: a crossbind store without a schema version: damaged", path);
    }
    if (st == CB_OK) st = exec_plain(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL", "setting up");
    if (st != CB_OK) {
        sqlite3_close(s->db);
        free(s);
        return st;
    }
    *out = s;
    return CB_OK;
}

void cb_store_close(cb_store *s)
{
    if (!s) return;
    sqlite3_close(s->db);
    free(s);
}

static cb_status bind_and_step(cb_store *s, const char *sql, const char *types, va_list ap, int *has_row)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return db_fail(s, "preparing a statement");
    if (sqlite3_bind_parameter_count(st) != (int)strlen(types)) { /* a programming error, caught in tests */
        sqlite3_finalize(st);
        return cb_fail(CB_ERR_INVALID_ARG, "store: %d parameters given for %d in: %.60s", (int)strlen(types),
                       sqlite3_bind_parameter_count(st), sql);
    }
    for (int i = 0; types[i]; i++) {
        int k = i + 1;
        if (types[i] == 'i') sqlite3_bind_int64(st, k, va_arg(ap, int64_t));
        else if (types[i] == 'd') {
            double v = va_arg(ap, double);
            if (isnan(v)) sqlite3_bind_null(st, k);
            else sqlite3_bind_double(st, k, v);
        } else {
            const char *t = va_arg(ap, const char *);
            if (t) sqlite3_bind_text(st, k, t, -1, SQLITE_TRANSIENT);
            else sqlite3_bind_null(st, k);
        }
    }
    int rc = sqlite3_step(st);
    if (has_row) *has_row = rc == SQLITE_ROW;
    while (rc == SQLITE_ROW && !has_row) rc = sqlite3_step(st);
    cb_status out = CB_OK;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) out = db_fail(s, "writing");
    sqlite3_finalize(st);
    return out;
}

cb_status cb_store_exec(cb_store *s, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    cb_status st = bind_and_step(s, sql, types, ap, NULL);
    va_end(ap);
    return st;
}

int cb_store_exists(cb_store *s, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    int row = 0;
    cb_status st = bind_and_step(s, sql, types, ap, &row);
    va_end(ap);
    return st == CB_OK && row;
}

cb_status cb_store_begin(cb_store *s) { return exec_plain(s, "BEGIN IMMEDIATE", "starting a transaction"); }
cb_status cb_store_commit(cb_store *s) { return exec_plain(s, "COMMIT", "committing"); }
void cb_store_rollback(cb_store *s) { sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL); }

cb_status cb_store_study(cb_store *s, const char *profile, const char *config_json, const char *machine,
                         int64_t *id, int *created)
{
    sqlite3_stmt *st;
    *created = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT id FROM study WHERE config = ?", -1, &st, NULL) != SQLITE_OK)
        return db_fail(s, "reading studies");
    sqlite3_bind_text(st, 1, config_json, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *id = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return CB_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return db_fail(s, "reading studies");
    char when[32];
    time_t t = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    cb_status e = cb_store_exec(s, "INSERT INTO study(profile, config, created, machine) VALUES(?, ?, ?, ?)", "tttt",
                                profile, config_json, when, machine);
    if (e != CB_OK) return e;
    *id = sqlite3_last_insert_rowid(s->db);
    *created = 1;
    return CB_OK;
}
