/* The SQLite results store: schema, checks, and transactional writes. */
#include <ctype.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../core/json.h"
#include "lock.h"
#include "store.h"

struct cb_store {
    sqlite3 *db;
    int readonly, schema;
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

/* Schema 2: with "init": "shared", the one file of initial weights every
 * binding's training of a model and run starts from: where it came from,
 * where it is, its SHA-256. */
static const char schema2_sql[] =
    "CREATE TABLE init_weights(study_id INTEGER NOT NULL REFERENCES study(id), model TEXT NOT NULL,"
    "  run INTEGER NOT NULL, source TEXT NOT NULL, device TEXT NOT NULL, path TEXT NOT NULL, sha256 TEXT NOT NULL,"
    "  bytes INTEGER, created TEXT, PRIMARY KEY(study_id, model, run));";

sqlite3 *cb_store_db(cb_store *s) { return s->db; }
int cb_store_schema(const cb_store *s) { return s->schema; }
const char *cb_store_path(const cb_store *s) { return s->path; }

/* The table a statement reads or writes, for messages ("" when not found). */
static void table_of(const char *sql, char *out, size_t cap)
{
    static const char *const keys[] = {" INTO ", "UPDATE ", " FROM ", " from ", " into "};
    out[0] = 0;
    for (size_t k = 0; k < sizeof keys / sizeof *keys && !out[0]; k++) {
        const char *p = strstr(sql, keys[k]);
        if (!p) continue;
        p += strlen(keys[k]);
        size_t n = 0;
        while (n + 1 < cap && (isalnum((unsigned char)p[n]) || p[n] == '_')) { out[n] = p[n]; n++; }
        out[n] = 0;
    }
}

static cb_status db_fail(cb_store *s, const char *what)
{
    int code = sqlite3_extended_errcode(s->db);
    const char *msg = sqlite3_errmsg(s->db);
    if ((code & 0xff) == SQLITE_FULL)
        return cb_fail(CB_ERR_IO, "%s: %s: the disk is full; everything stored before is kept", s->path, what);
    if ((code & 0xff) == SQLITE_NOTADB)
        return cb_fail(CB_ERR_FORMAT, "%s: not a crossbind results store (not an SQLite database, or its header is "
                       "damaged)", s->path);
    if ((code & 0xff) == SQLITE_CORRUPT)
        return cb_fail(CB_ERR_FORMAT, "%s: %s: the store is damaged (%s); restore it from a copy, or give the study "
                       "a new --store", s->path, what, msg);
    if ((code & 0xff) == SQLITE_READONLY && s->readonly)
        return cb_fail(CB_ERR_IO, "%s: %s: the store is open read-only", s->path, what);
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

static cb_status pragma_int(cb_store *s, const char *sql, const char *what, int64_t *v)
{
    sqlite3_stmt *st;
    *v = 0;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return db_fail(s, what);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *v = sqlite3_column_int64(st, 0);
    cb_status out = rc == SQLITE_ROW || rc == SQLITE_DONE ? CB_OK : db_fail(s, what);
    sqlite3_finalize(st);
    return out;
}

/* What identifies the file: its number of tables, application id and schema version. */
static cb_status read_identity(cb_store *s, int64_t *tables, int64_t *app, int64_t *version)
{
    cb_status st = pragma_int(s, "SELECT count(*) FROM sqlite_master", "reading the schema", tables);
    if (st == CB_OK) st = pragma_int(s, "PRAGMA application_id", "reading the application id", app);
    if (st == CB_OK) st = pragma_int(s, "PRAGMA user_version", "reading the schema version", version);
    return st;
}

/* A new store's schema, made in one immediate transaction that looks again
 * whether the file is still empty once it holds the write lock: of processes
 * creating the same store at once, one makes the schema and the others find
 * it made. */
static cb_status create_schema(cb_store *s)
{
    /* In the rollback journal's mode: the commit writes the file itself, so a
     * process opening it meanwhile never sees an empty file beside a
     * write-ahead log (which SQLite takes for a stale log). WAL comes after. */
    cb_status st = exec_plain(s, "BEGIN IMMEDIATE", "creating the store");
    if (st != CB_OK) return st;
    int64_t tables, app, version;
    st = read_identity(s, &tables, &app, &version);
    if (st == CB_OK && tables == 0 && app == 0) {
        char sql[sizeof schema_sql + sizeof schema2_sql + 200];
        snprintf(sql, sizeof sql, "%s%s PRAGMA application_id=%d; PRAGMA user_version=%d;", schema_sql, schema2_sql,
                 CB_STORE_APP_ID, CB_STORE_SCHEMA);
        st = exec_plain(s, sql, "creating the schema");
    }
    if (st == CB_OK) st = exec_plain(s, "COMMIT", "creating the schema");
    if (st != CB_OK) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return st;
}

/* A schema-1 store opened for writing gets schema 2's table, in one
 * immediate transaction that looks at the version again once it holds the
 * write lock (another process may have done it meanwhile). */
static cb_status upgrade_schema(cb_store *s)
{
    cb_status st = exec_plain(s, "BEGIN IMMEDIATE", "upgrading the store's schema");
    if (st != CB_OK) return st;
    int64_t version = 0;
    st = pragma_int(s, "PRAGMA user_version", "reading the schema version", &version);
    if (st == CB_OK && version == 1) {
        char sql[sizeof schema2_sql + 64];
        snprintf(sql, sizeof sql, "%s PRAGMA user_version=2;", schema2_sql);
        st = exec_plain(s, sql, "upgrading the store's schema to version 2");
    }
    if (st == CB_OK) st = exec_plain(s, "COMMIT", "upgrading the store's schema");
    if (st != CB_OK) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return st;
}

/* The database as this crossbind defines it in schema `version`, to compare a store with. */
static sqlite3 *reference_schema(int version)
{
    sqlite3 *ref = NULL;
    if (sqlite3_open_v2(":memory:", &ref, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK ||
        sqlite3_exec(ref, schema_sql, NULL, NULL, NULL) != SQLITE_OK ||
        (version >= 2 && sqlite3_exec(ref, schema2_sql, NULL, NULL, NULL) != SQLITE_OK)) {
        sqlite3_close(ref);
        return NULL;
    }
    return ref;
}

/* Column i of every row of `sql` (one text parameter), as "a|b|c" lines. */
static int rows_text(sqlite3 *db, const char *sql, const char *arg, cb_buf *out)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) return -1;
    if (sqlite3_bind_text(q, 1, arg, -1, SQLITE_TRANSIENT) != SQLITE_OK) { sqlite3_finalize(q); return -1; }
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(q); c++) {
            const unsigned char *t = sqlite3_column_text(q, c);
            cb_buf_printf(out, "%s%s", c ? "|" : "", t ? (const char *)t : "");
        }
        cb_buf_printf(out, "\n");
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE && cb_buf_ok(out) ? 0 : -1;
}

static const char *find_line(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (!strncmp(p, name, n) && p[n] == '|') return p;
    return NULL;
}

static cb_status schema_fail(cb_store *s, const char *fmt, const char *a, const char *b)
{
    char what[300];
    snprintf(what, sizeof what, fmt, a, b);
    return cb_fail(CB_ERR_FORMAT, "%s: damaged or altered: %s; this crossbind cannot use it: restore the store from "
                   "a copy, or give the study a new --store", s->path, what);
}

/* Every table, column (type, NOT NULL, key) and uniqueness constraint that
 * crossbind relies on, exactly as it defines them. Extra tables are left
 * alone; tables crossbind knows must be exactly as it made them. */
static cb_status verify_schema(cb_store *s, int version)
{
    static const char cols_sql[] = "SELECT name, type, \"notnull\", pk, dflt_value FROM pragma_table_info(?1) ORDER BY cid";
    static const char uniq_sql[] = "SELECT (SELECT group_concat(name, ',') FROM pragma_index_info(l.name)) FROM "
                                   "pragma_index_list(?1) l WHERE l.\"unique\" ORDER BY 1";
    sqlite3 *ref = reference_schema(version);
    if (!ref) return cb_fail(CB_ERR_NOMEM, "out of memory");
    sqlite3_stmt *q;
    cb_status st = CB_OK;
    if (sqlite3_prepare_v2(ref, "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name", -1, &q, NULL) != SQLITE_OK) {
        sqlite3_close(ref);
        return cb_fail(CB_ERR_NOMEM, "out of memory");
    }
    while (st == CB_OK && sqlite3_step(q) == SQLITE_ROW) {
        char table[64];
        snprintf(table, sizeof table, "%s", (const char *)sqlite3_column_text(q, 0));
        cb_buf want = {0}, have = {0}, want_u = {0}, have_u = {0};
        if (rows_text(ref, cols_sql, table, &want) || rows_text(ref, uniq_sql, table, &want_u))
            st = cb_fail(CB_ERR_NOMEM, "out of memory");
        else if (rows_text(s->db, cols_sql, table, &have) || rows_text(s->db, uniq_sql, table, &have_u))
            st = db_fail(s, "reading the definition of a table");
        else if (!have.len)
            st = schema_fail(s, "the table %s is missing%s", table, "");
        else {
            /* Column by column, to name the one that differs. */
            for (const char *w = want.data; st == CB_OK && w && *w; w = strchr(w, '\n') + 1) {
                char col[64];
                size_t n = strcspn(w, "|");
                snprintf(col, sizeof col, "%.*s", (int)(n < 63 ? n : 63), w);
                const char *h = find_line(have.data, col);
                size_t len = strcspn(w, "\n");
                char full[128];
                snprintf(full, sizeof full, "%s.%s", table, col);
                if (!h) st = schema_fail(s, "the table %s has no column %s", table, col);
                else if (strncmp(h, w, len + 1)) st = schema_fail(s, "the column %s is not defined as crossbind defines "
                                                                  "it%s", full, "");
            }
            for (const char *h = have.data; st == CB_OK && h && *h; h = strchr(h, '\n') + 1) {
                char col[64];
                size_t n = strcspn(h, "|");
                snprintf(col, sizeof col, "%.*s", (int)(n < 63 ? n : 63), h);
                if (!find_line(want.data, col)) st = schema_fail(s, "the table %s has a column %s that crossbind does "
                                                                 "not define", table, col);
            }
            if (st == CB_OK && (have_u.len != want_u.len || memcmp(have_u.data, want_u.data, want_u.len)))
                st = schema_fail(s, "the table %s lacks a key or uniqueness constraint crossbind defines%s", table, "");
        }
        cb_buf_free(&want); cb_buf_free(&have); cb_buf_free(&want_u); cb_buf_free(&have_u);
    }
    sqlite3_finalize(q);
    sqlite3_close(ref);
    return st;
}

/* The tables crossbind defines whose rows cannot all be read, as "a, b". */
static void unreadable_tables(cb_store *s, cb_buf *out)
{
    static const char *const tables[] = {"study", "binding", "train_run", "epoch", "inference", "inference_pass",
                                         "init_weights"};
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT * FROM %s", tables[t]);
        sqlite3_stmt *q;
        int rc = sqlite3_prepare_v2(s->db, sql, -1, &q, NULL);
        if (rc != SQLITE_OK && !strcmp(tables[t], "init_weights")) {
            int64_t has = 0; /* a schema-1 store has none */
            if (pragma_int(s, "SELECT count(*) FROM sqlite_master WHERE name='init_weights'", "reading the schema",
                           &has) == CB_OK && !has)
                continue;
        }
        if (rc == SQLITE_OK) {
            while ((rc = sqlite3_step(q)) == SQLITE_ROW) {}
            sqlite3_finalize(q);
        }
        if (rc != SQLITE_DONE) cb_buf_printf(out, "%s%s", out->len ? ", " : "", tables[t]);
    }
}

/* SQLite's check of every page and index of the file; a damaged store is
 * refused naming the tables that cannot be read. */
static cb_status check_integrity(cb_store *s)
{
    sqlite3_stmt *q;
    cb_buf found = {0}, tables = {0};
    int rc = sqlite3_prepare_v2(s->db, "PRAGMA quick_check(3)", -1, &q, NULL);
    if (rc == SQLITE_OK) {
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            const char *line = (const char *)sqlite3_column_text(q, 0);
            if (line && strcmp(line, "ok")) cb_buf_printf(&found, "%s%s", found.len ? "; " : "", line);
        }
        sqlite3_finalize(q);
    }
    if (rc != SQLITE_DONE && !found.len) cb_buf_printf(&found, "%s", sqlite3_errmsg(s->db));
    cb_status st = CB_OK;
    if (found.len) {
        for (char *p = found.data; p && *p; p++) if (*p == '\n') *p = ' ';
        unreadable_tables(s, &tables);
        st = cb_fail(CB_ERR_FORMAT, "%s: the store is damaged (%s%s%s; SQLite's integrity check: %.240s); restore it "
                     "from a copy, or give the study a new --store", s->path, tables.len ? "unreadable: the table(s) " : "",
                     tables.len ? tables.data : "every table reads, an index or free page is damaged",
                     "", found.data ? found.data : "?");
    }
    cb_buf_free(&found);
    cb_buf_free(&tables);
    return st;
}

/* "file:" URI of a path, for the immutable fallback of read-only opening. */
static void path_uri(const char *path, const char *query, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p && n + 4 < cap; p++) {
        if (isalnum(*p) || strchr("/._-~", *p)) out[n++] = (char)*p;
        else n += (size_t)snprintf(out + n, cap - n, "%%%02X", *p);
    }
    snprintf(out + n, cap - n, "?%s", query);
}

/* Write-ahead logging, so that readers never wait for a study. Switching a
 * store that other processes have open needs every other lock gone, and
 * SQLite answers SQLITE_BUSY at once rather than through the busy handler
 * when one is held: many processes opening a new store together met that.
 * A store already in WAL mode (every store after its first open) needs no
 * switch; otherwise the switch is retried for up to 10 s. */
static cb_status use_wal(cb_store *s)
{
    for (int attempt = 0;; attempt++) {
        sqlite3_stmt *q;
        if (sqlite3_prepare_v2(s->db, "PRAGMA journal_mode=WAL", -1, &q, NULL) != SQLITE_OK) return db_fail(s, "setting up");
        int rc = sqlite3_step(q);
        sqlite3_finalize(q);
        /* A row names the mode now in force: "wal", or "memory" for an
         * in-memory store, which has no log to switch to. */
        if (rc == SQLITE_ROW) return exec_plain(s, "PRAGMA synchronous=NORMAL", "setting up");
        if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED) return db_fail(s, "setting up");
        if (attempt >= 1000) return cb_fail(CB_ERR_IO, "%s: setting up: the store stayed locked for 10 s", s->path);
        usleep(10000);
    }
}

static int nonempty_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_size > 0;
}

static cb_status connect(cb_store *s, const char *name, int flags)
{
    if (sqlite3_open_v2(name, &s->db, flags, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(s->db, 10000);
        return CB_OK;
    }
    cb_status st = cb_fail(CB_ERR_IO, "%s: cannot open the results store: %s", s->path,
                           s->db ? sqlite3_errmsg(s->db) : "out of memory");
    sqlite3_close(s->db);
    s->db = NULL;
    return st;
}

cb_status cb_store_open(const char *path, cb_store_mode mode, cb_store **out)
{
    *out = NULL;
    if (mode != CB_STORE_CREATE && access(path, F_OK) != 0)
        return cb_fail(CB_ERR_NOT_FOUND, "%s: no such results store", path);
    cb_store *s = calloc(1, sizeof *s);
    if (!s) return cb_fail(CB_ERR_NOMEM, "out of memory");
    snprintf(s->path, sizeof s->path, "%s", path);
    s->readonly = mode == CB_STORE_READ;
    int flags = s->readonly ? SQLITE_OPEN_READONLY
                            : SQLITE_OPEN_READWRITE | (mode == CB_STORE_CREATE ? SQLITE_OPEN_CREATE : 0);
    cb_status st = connect(s, path, flags);
    int64_t tables = 0, app = 0, version = 0;
    if (st == CB_OK) st = read_identity(s, &tables, &app, &version);
    int code = s->db ? sqlite3_errcode(s->db) & 0xff : 0;
    if (st != CB_OK && s->readonly && (code == SQLITE_CANTOPEN || code == SQLITE_READONLY)) {
        /* A WAL store without its -shm file in a directory this process cannot
         * write: SQLite cannot make the shared index. With no log to apply, the
         * file alone is the whole store, and nobody can be writing it (a writer
         * would need that same directory), so it is read as immutable. */
        char wal[1100];
        snprintf(wal, sizeof wal, "%s-wal", path);
        if (!nonempty_file(wal)) {
            char uri[3400];
            path_uri(path, "immutable=1", uri, sizeof uri);
            sqlite3_close(s->db);
            s->db = NULL;
            st = connect(s, uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
            if (st == CB_OK) st = read_identity(s, &tables, &app, &version);
        } else {
            st = cb_fail(CB_ERR_IO, "%s: cannot be read here: its write-ahead log %s holds changes not yet in the "
                         "store and the directory is not writable: run sqlite3 %s 'PRAGMA wal_checkpoint' where it is "
                         "writable, or copy the store with its -wal file to a writable directory", path, wal, path);
        }
    }
    if (st == CB_OK && tables == 0 && app == 0) {
        if (mode != CB_STORE_CREATE) st = cb_fail(CB_ERR_FORMAT, "%s: an empty file, not a crossbind results store", path);
        else if ((st = create_schema(s)) == CB_OK)
            st = read_identity(s, &tables, &app, &version);
    }
    if (st == CB_OK && app != CB_STORE_APP_ID) {
        st = cb_fail(CB_ERR_FORMAT, "%s: an SQLite database of another application, not a crossbind results store",
                     path);
    } else if (st == CB_OK && version > CB_STORE_SCHEMA) {
        st = cb_fail(CB_ERR_UNSUPPORTED, "%s: written by a newer crossbind (store schema %lld; this one reads up to "
                     "%d): use that version", path, (long long)version, CB_STORE_SCHEMA);
    } else if (st == CB_OK && version < 1) {
        st = cb_fail(CB_ERR_FORMAT, "%s: a crossbind store without a schema version: damaged", path);
    }
    /* Nothing is written before the file is known sound. */
    if (st == CB_OK) st = check_integrity(s);
    if (st == CB_OK) st = verify_schema(s, (int)version);
    if (st == CB_OK && !s->readonly) st = use_wal(s);
    if (st == CB_OK && !s->readonly && version < 2 && (st = upgrade_schema(s)) == CB_OK) {
        st = verify_schema(s, 2);
        version = 2;
    }
    s->schema = (int)version;
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
    if (!s->readonly) {
        /* The log folded into the file and emptied even when a reader still has
         * it open (SQLite only does so on the last close): a store left
         * behind is then readable from a read-only directory. Best effort. */
        sqlite3_busy_timeout(s->db, 2000);
        sqlite3_exec(s->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
    }
    sqlite3_close(s->db);
    free(s);
}

static cb_status bind_and_step(cb_store *s, const char *sql, const char *types, va_list ap, int *has_row)
{
    char table[64], what[100];
    table_of(sql, table, sizeof table);
    snprintf(what, sizeof what, "%s the table %s", strncmp(sql, "SELECT", 6) ? "writing" : "reading",
             table[0] ? table : "?");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return db_fail(s, what);
    if (sqlite3_bind_parameter_count(st) != (int)strlen(types)) { /* a programming error, caught in tests */
        sqlite3_finalize(st);
        return cb_fail(CB_ERR_INVALID_ARG, "store: %d parameters given for %d in: %.60s", (int)strlen(types),
                       sqlite3_bind_parameter_count(st), sql);
    }
    int rc = SQLITE_OK;
    for (int i = 0; types[i] && rc == SQLITE_OK; i++) {
        int k = i + 1;
        if (types[i] == 'i') rc = sqlite3_bind_int64(st, k, va_arg(ap, int64_t));
        else if (types[i] == 'd') {
            double v = va_arg(ap, double);
            rc = isnan(v) ? sqlite3_bind_null(st, k) : sqlite3_bind_double(st, k, v);
        } else {
            const char *t = va_arg(ap, const char *);
            rc = t ? sqlite3_bind_text(st, k, t, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, k);
        }
    }
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (has_row) *has_row = rc == SQLITE_ROW;
    while (rc == SQLITE_ROW && !has_row) rc = sqlite3_step(st);
    cb_status out = CB_OK;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) out = db_fail(s, what);
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

cb_status cb_store_exists(cb_store *s, int *found, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    int row = 0;
    cb_status st = bind_and_step(s, sql, types, ap, &row);
    va_end(ap);
    *found = st == CB_OK && row;
    return st;
}

cb_status cb_store_begin(cb_store *s) { return exec_plain(s, "BEGIN IMMEDIATE", "starting a transaction"); }
cb_status cb_store_commit(cb_store *s) { return exec_plain(s, "COMMIT", "committing"); }
void cb_store_rollback(cb_store *s) { sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL); }

cb_status cb_store_study(cb_store *s, const char *profile, const char *config_json, const char *machine,
                         int64_t *id, int *created)
{
    sqlite3_stmt *st;
    *created = 0;
    /* Found or made in one write transaction: never two rows for one configuration. */
    cb_status e = cb_store_begin(s);
    if (e != CB_OK) return e;
    if (sqlite3_prepare_v2(s->db, "SELECT id FROM study WHERE config = ?", -1, &st, NULL) != SQLITE_OK) {
        e = db_fail(s, "reading the table study");
        cb_store_rollback(s);
        return e;
    }
    int rc = sqlite3_bind_text(st, 1, config_json, -1, SQLITE_TRANSIENT);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) *id = sqlite3_column_int64(st, 0);
    else if (rc != SQLITE_DONE) e = db_fail(s, "reading the table study");
    sqlite3_finalize(st);
    if (e == CB_OK && rc == SQLITE_DONE) {
        char when[32];
        time_t t = time(NULL);
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
        e = cb_store_exec(s, "INSERT INTO study(profile, config, created, machine) VALUES(?, ?, ?, ?)", "tttt",
                          profile, config_json, when, machine);
        if (e == CB_OK) {
            *id = sqlite3_last_insert_rowid(s->db);
            *created = 1;
        }
    }
    if (e == CB_OK) e = cb_store_commit(s);
    if (e != CB_OK) {
        cb_store_rollback(s);
        *created = 0;
    }
    return e;
}

void cb_store_lock_path(const char *store_path, char *out, size_t cap) { snprintf(out, cap, "%s.lock", store_path); }

void cb_store_study_status(const cb_store *s, int64_t id, const char *stored, char *out, size_t cap)
{
    if (strcmp(stored, "running")) { snprintf(out, cap, "%s", stored); return; }
    char lock[1100];
    cb_store_lock_path(s->path, lock, sizeof lock);
    cb_lock_holder h;
    int held = cb_lock_probe(lock, &h);
    if (held < 0) snprintf(out, cap, "running (not verified: %s is unreadable)", lock);
    else if (held && (h.study == id || h.study == 0)) {
        if (h.pid) snprintf(out, cap, "running (pid %ld on host %s, since %s)", h.pid, h.host, h.since);
        else snprintf(out, cap, "running");
    } else
        snprintf(out, cap, "interrupted (no crossbind study holds the store: the last one stopped without finishing; "
                 "the same crossbind study command resumes it)");
}
