/* crossbind delta's store (store.h says what it holds and why). */
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store.h"

#define DELTA_APP_ID 0x4342444c /* "CBDL" */
#define DELTA_SCHEMA 1

struct delta_store {
    sqlite3 *db;
    char path[4096];
    char *fingerprint;
};

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS file(role TEXT PRIMARY KEY, path TEXT NOT NULL, sha256 TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS input(idx INTEGER PRIMARY KEY, name TEXT NOT NULL, sha256 TEXT NOT NULL, sha256_keras TEXT,"
    " label INTEGER);"
    "CREATE TABLE IF NOT EXISTS variant(key TEXT PRIMARY KEY, status TEXT NOT NULL, manifest TEXT NOT NULL,"
    " error TEXT, n_inputs INTEGER, classes INTEGER, reps INTEGER, first_call_s REAL, outputs BLOB,"
    " outputs_sha256 TEXT, measured TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')));"
    "CREATE TABLE IF NOT EXISTS timing(variant TEXT NOT NULL, input INTEGER NOT NULL, rep INTEGER NOT NULL,"
    " seconds REAL NOT NULL, PRIMARY KEY(variant, input, rep));"
    "CREATE TABLE IF NOT EXISTS output_hash(variant TEXT NOT NULL, input INTEGER NOT NULL, sha256 TEXT NOT NULL,"
    " PRIMARY KEY(variant, input));"
    "CREATE TABLE IF NOT EXISTS localisation(a TEXT NOT NULL, b TEXT NOT NULL, result TEXT NOT NULL,"
    " PRIMARY KEY(a, b));";

static cb_status db_fail(delta_store *s, const char *doing)
{
    return cb_fail(CB_ERR_IO, "%s: %s: %s", s->path, doing, sqlite3_errmsg(s->db));
}

static cb_status run(delta_store *s, const char *sql, const char *doing)
{
    char *err = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &err) == SQLITE_OK) return CB_OK;
    cb_status st = cb_fail(CB_ERR_IO, "%s: %s: %s", s->path, doing, err ? err : sqlite3_errmsg(s->db));
    sqlite3_free(err);
    return st;
}

static int pragma_int(delta_store *s, const char *sql)
{
    sqlite3_stmt *q;
    int v = -1;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK) return -1;
    if (sqlite3_step(q) == SQLITE_ROW) v = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    return v;
}

static char *meta_get(delta_store *s, const char *key)
{
    sqlite3_stmt *q;
    char *v = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key = ?", -1, &q, NULL) != SQLITE_OK) return NULL;
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(q) == SQLITE_ROW) v = strdup((const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    return v;
}

static cb_status open_db(const char *path, int flags, delta_store **out)
{
    *out = NULL;
    delta_store *s = calloc(1, sizeof *s);
    if (!s) return cb_fail(CB_ERR_NOMEM, "out of memory opening %s", path);
    snprintf(s->path, sizeof s->path, "%s", path);
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        cb_status st = cb_fail(CB_ERR_IO, "cannot open the store %s: %s", path, s->db ? sqlite3_errmsg(s->db) : "no memory");
        delta_store_close(s);
        return st;
    }
    sqlite3_busy_timeout(s->db, 10000);
    int app = pragma_int(s, "PRAGMA application_id"), tables = pragma_int(s, "SELECT count(*) FROM sqlite_master");
    if (app < 0 || tables < 0) {
        cb_status st = cb_fail(CB_ERR_FORMAT, "%s is not a crossbind delta store (not an SQLite file)", path);
        delta_store_close(s);
        return st;
    }
    if (!(tables == 0 && app == 0) && app != DELTA_APP_ID) {
        cb_status st = cb_fail(CB_ERR_FORMAT, "%s is an SQLite file of another application, not a crossbind delta store", path);
        delta_store_close(s);
        return st;
    }
    if (tables > 0 && pragma_int(s, "PRAGMA user_version") > DELTA_SCHEMA) {
        cb_status st = cb_fail(CB_ERR_UNSUPPORTED, "%s was written by a newer crossbind (schema %d)", path,
                               pragma_int(s, "PRAGMA user_version"));
        delta_store_close(s);
        return st;
    }
    *out = s;
    return CB_OK;
}

cb_status delta_store_open(const char *path, const char *fingerprint, delta_store **out)
{
    delta_store *s;
    cb_status st = open_db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &s);
    if (st != CB_OK) return st;
    char sql[2048];
    snprintf(sql, sizeof sql, "BEGIN IMMEDIATE; %s PRAGMA application_id=%d; PRAGMA user_version=%d;", schema,
             DELTA_APP_ID, DELTA_SCHEMA);
    if ((st = run(s, sql, "creating the tables")) == CB_OK) {
        sqlite3_stmt *q;
        if (sqlite3_prepare_v2(s->db, "INSERT OR IGNORE INTO meta(key, value) VALUES ('fingerprint', ?)", -1, &q,
                               NULL) != SQLITE_OK)
            st = db_fail(s, "writing the fingerprint");
        else {
            sqlite3_bind_text(q, 1, fingerprint, -1, SQLITE_STATIC);
            if (sqlite3_step(q) != SQLITE_DONE) st = db_fail(s, "writing the fingerprint");
            sqlite3_finalize(q);
        }
    }
    if (st == CB_OK) st = run(s, "COMMIT", "committing");
    else sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    if (st == CB_OK) st = run(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", "setting up");
    if (st == CB_OK && (!(s->fingerprint = meta_get(s, "fingerprint")) || strcmp(s->fingerprint, fingerprint)))
        st = cb_fail(CB_ERR_INVALID_ARG, "%s holds another experiment (%s); give another --store, or remove it",
                     path, s->fingerprint ? s->fingerprint : "no fingerprint");
    if (st != CB_OK) {
        delta_store_close(s);
        return st;
    }
    *out = s;
    return CB_OK;
}

void delta_store_close(delta_store *s)
{
    if (!s) return;
    sqlite3_close(s->db);
    free(s->fingerprint);
    free(s);
}

/* Binds text (t), int (i), double (d) or blob (b: pointer then byte count) parameters in order. */
static cb_status step(delta_store *s, const char *sql, const char *types, ...)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK) return db_fail(s, "preparing a statement");
    va_list ap;
    va_start(ap, types);
    for (int i = 0; types[i]; i++) {
        if (types[i] == 't') sqlite3_bind_text(q, i + 1, va_arg(ap, const char *), -1, SQLITE_TRANSIENT);
        else if (types[i] == 'i') sqlite3_bind_int64(q, i + 1, va_arg(ap, long long));
        else if (types[i] == 'd') sqlite3_bind_double(q, i + 1, va_arg(ap, double));
        else {
            const void *p = va_arg(ap, const void *);
            size_t n = va_arg(ap, size_t);
            sqlite3_bind_blob64(q, i + 1, p, n, SQLITE_TRANSIENT);
        }
    }
    va_end(ap);
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    return rc == SQLITE_DONE ? CB_OK : db_fail(s, "writing");
}

cb_status delta_store_put_file(delta_store *s, const char *role, const char *path, const char *sha256)
{
    return step(s, "INSERT OR REPLACE INTO file(role, path, sha256) VALUES (?, ?, ?)", "ttt", role, path, sha256);
}

cb_status delta_store_put_inputs(delta_store *s, int n, const char *const *names, const char *const *sha256,
                                 const char *const *keras, const int *labels)
{
    cb_status st = run(s, "BEGIN IMMEDIATE; DELETE FROM input;", "writing the inputs");
    for (int i = 0; st == CB_OK && i < n; i++)
        st = labels ? step(s, "INSERT INTO input(idx, name, sha256, sha256_keras, label) VALUES (?, ?, ?, ?, ?)", "ittti",
                           (long long)i, names[i], sha256[i], keras ? keras[i] : NULL, (long long)labels[i])
                    : step(s, "INSERT INTO input(idx, name, sha256, sha256_keras) VALUES (?, ?, ?, ?)", "ittt",
                           (long long)i, names[i], sha256[i], keras ? keras[i] : NULL);
    if (st == CB_OK) return run(s, "COMMIT", "committing the inputs");
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return st;
}

void delta_result_free(delta_result *r)
{
    free(r->manifest);
    free(r->error);
    free(r->outputs);
    free(r->times);
    free(r->input_sha256);
    memset(r, 0, sizeof *r);
}

cb_status delta_store_put_result(delta_store *s, const delta_result *r)
{
    cb_status st = run(s, "BEGIN IMMEDIATE", "starting a transaction");
    if (st != CB_OK) return st;
    st = step(s, "DELETE FROM timing WHERE variant = ?", "t", r->key);
    if (st == CB_OK) st = step(s, "DELETE FROM output_hash WHERE variant = ?", "t", r->key);
    size_t bytes = r->outputs ? (size_t)r->n_inputs * (size_t)r->classes * sizeof(float) : 0;
    if (st == CB_OK)
        st = step(s, "INSERT OR REPLACE INTO variant(key, status, manifest, error, n_inputs, classes, reps, first_call_s,"
                     " outputs, outputs_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", "ttttiiidbt", r->key, r->status,
                  r->manifest ? r->manifest : "{}", r->error, (long long)r->n_inputs, (long long)r->classes,
                  (long long)r->reps, r->first_call_s, (const void *)r->outputs, bytes, r->outputs_sha256);
    for (int i = 0; st == CB_OK && r->times && i < r->n_inputs; i++)
        for (int k = 0; st == CB_OK && k < r->reps; k++)
            st = step(s, "INSERT INTO timing(variant, input, rep, seconds) VALUES (?, ?, ?, ?)", "tiid", r->key,
                      (long long)i, (long long)k, r->times[(size_t)i * (size_t)r->reps + (size_t)k]);
    for (int i = 0; st == CB_OK && r->input_sha256 && i < r->n_inputs; i++)
        st = step(s, "INSERT INTO output_hash(variant, input, sha256) VALUES (?, ?, ?)", "tit", r->key, (long long)i,
                  r->input_sha256[i]);
    if (st == CB_OK) return run(s, "COMMIT", "committing a variant");
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return st;
}

static char *column_dup(sqlite3_stmt *q, int c)
{
    const unsigned char *t = sqlite3_column_text(q, c);
    return t ? strdup((const char *)t) : NULL;
}

cb_status delta_store_get_result(delta_store *s, const char *key, delta_result *r, int *found)
{
    sqlite3_stmt *q;
    memset(r, 0, sizeof *r);
    *found = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT status, manifest, error, n_inputs, classes, reps, first_call_s, outputs,"
                                  " outputs_sha256 FROM variant WHERE key = ?", -1, &q, NULL) != SQLITE_OK)
        return db_fail(s, "reading a variant");
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    cb_status st = CB_OK;
    if (sqlite3_step(q) == SQLITE_ROW) {
        *found = 1;
        snprintf(r->key, sizeof r->key, "%s", key);
        snprintf(r->status, sizeof r->status, "%s", sqlite3_column_text(q, 0));
        r->manifest = column_dup(q, 1);
        r->error = column_dup(q, 2);
        r->n_inputs = sqlite3_column_int(q, 3);
        r->classes = sqlite3_column_int(q, 4);
        r->reps = sqlite3_column_int(q, 5);
        r->first_call_s = sqlite3_column_double(q, 6);
        size_t bytes = (size_t)sqlite3_column_bytes(q, 7), want = (size_t)r->n_inputs * (size_t)r->classes * sizeof(float);
        if (want && bytes != want) st = cb_fail(CB_ERR_FORMAT, "%s: the outputs of %s are damaged", s->path, key);
        else if (want && !(r->outputs = malloc(want))) st = cb_fail(CB_ERR_NOMEM, "out of memory");
        else if (want) memcpy(r->outputs, sqlite3_column_blob(q, 7), want);
        const unsigned char *h = sqlite3_column_text(q, 8);
        snprintf(r->outputs_sha256, sizeof r->outputs_sha256, "%s", h ? (const char *)h : "");
    }
    sqlite3_finalize(q);
    if (st != CB_OK || !*found || !r->n_inputs || !r->reps) return st;
    if (!(r->times = calloc((size_t)r->n_inputs * (size_t)r->reps, sizeof *r->times)))
        return cb_fail(CB_ERR_NOMEM, "out of memory");
    if (sqlite3_prepare_v2(s->db, "SELECT input, rep, seconds FROM timing WHERE variant = ?", -1, &q, NULL) != SQLITE_OK)
        return db_fail(s, "reading times");
    sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
    while (sqlite3_step(q) == SQLITE_ROW) {
        int i = sqlite3_column_int(q, 0), k = sqlite3_column_int(q, 1);
        if (i >= 0 && i < r->n_inputs && k >= 0 && k < r->reps)
            r->times[(size_t)i * (size_t)r->reps + (size_t)k] = sqlite3_column_double(q, 2);
    }
    sqlite3_finalize(q);
    return CB_OK;
}

cb_status delta_store_put_localisation(delta_store *s, const char *a, const char *b, const char *json)
{
    return step(s, "INSERT OR REPLACE INTO localisation(a, b, result) VALUES (?, ?, ?)", "ttt", a, b, json);
}

cb_status delta_store_get_localisation(delta_store *s, const char *a, const char *b, char **json, int *found)
{
    sqlite3_stmt *q;
    *json = NULL, *found = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT result FROM localisation WHERE a = ? AND b = ?", -1, &q, NULL) != SQLITE_OK)
        return db_fail(s, "reading a localisation");
    sqlite3_bind_text(q, 1, a, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, b, -1, SQLITE_STATIC);
    if (sqlite3_step(q) == SQLITE_ROW) *found = 1, *json = column_dup(q, 0);
    sqlite3_finalize(q);
    return CB_OK;
}
