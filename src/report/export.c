/* crossbind results export: every table of one study as CSV or JSON. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "../core/json.h"
#include "out.h"
#include "report.h"

/* init_weights: schema 2 (a schema-1 store read as it is has none; its study used no shared weights). */
static const char *const tables[] = {"study", "binding", "train_run", "epoch", "inference", "inference_pass",
                                     "init_weights", NULL};

static int skip_table(cb_store *store, const char *table)
{
    return !strcmp(table, "init_weights") && cb_store_schema(store) < 2;
}

static cb_status query(cb_store *store, const char *table, int64_t id, sqlite3_stmt **q)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT * FROM %s WHERE %s=? ORDER BY rowid", table, strcmp(table, "study") ? "study_id" : "id");
    if (sqlite3_prepare_v2(cb_store_db(store), sql, -1, q, NULL) != SQLITE_OK)
        return cb_fail(CB_ERR_IO, "%s: reading the table %s: %s", cb_store_path(store), table,
                       sqlite3_errmsg(cb_store_db(store)));
    if (sqlite3_bind_int64(*q, 1, id) != SQLITE_OK) {
        cb_status st = cb_fail(CB_ERR_IO, "%s: reading the table %s: %s", cb_store_path(store), table,
                               sqlite3_errmsg(cb_store_db(store)));
        sqlite3_finalize(*q);
        return st;
    }
    return CB_OK;
}

/* Anything but the end of the rows is an error of the export, never a shorter table. */
static cb_status query_end(cb_store *store, sqlite3_stmt *q, int rc, const char *table)
{
    cb_status st = rc == SQLITE_DONE ? CB_OK : cb_fail(CB_ERR_IO, "%s: reading the table %s: %s", cb_store_path(store),
                                                       table, sqlite3_errmsg(cb_store_db(store)));
    sqlite3_finalize(q);
    return st;
}

static void csv_value(cb_out *o, sqlite3_stmt *q, int c)
{
    int type = sqlite3_column_type(q, c);
    if (type == SQLITE_NULL) return;
    if (type == SQLITE_INTEGER) cb_out_markf(o, "%lld", (long long)sqlite3_column_int64(q, c));
    else if (type == SQLITE_FLOAT) cb_out_markf(o, "%.17g", sqlite3_column_double(q, c));
    else cb_out_text(o, (const char *)sqlite3_column_text(q, c));
}

static void json_value(cb_buf *b, sqlite3_stmt *q, int c)
{
    int type = sqlite3_column_type(q, c);
    if (type == SQLITE_NULL) cb_buf_printf(b, "null");
    else if (type == SQLITE_INTEGER) cb_buf_printf(b, "%lld", (long long)sqlite3_column_int64(q, c));
    else if (type == SQLITE_FLOAT) cb_buf_json_number(b, sqlite3_column_double(q, c));
    else cb_buf_json_string(b, (const char *)sqlite3_column_text(q, c));
}

cb_status cb_results_export_csv(cb_store *store, int64_t id, const char *dir)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return cb_fail(CB_ERR_IO, "%s: cannot create: %s", dir, strerror(errno));
    for (int t = 0; tables[t]; t++) {
        if (skip_table(store, tables[t])) continue;
        sqlite3_stmt *q;
        cb_status st = query(store, tables[t], id, &q);
        if (st != CB_OK) return st;
        cb_out *o = cb_out_new(CB_OUT_CSV);
        int nc = sqlite3_column_count(q);
        for (int c = 0; c < nc; c++) {
            if (c) cb_out_lit(o, ",");
            cb_out_text(o, sqlite3_column_name(q, c));
        }
        cb_out_lit(o, "\n");
        int rc;
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            for (int c = 0; c < nc; c++) { if (c) cb_out_lit(o, ","); csv_value(o, q, c); }
            cb_out_lit(o, "\n");
        }
        if ((st = query_end(store, q, rc, tables[t])) != CB_OK) { cb_out_free(o); return st; }
        char path[1200];
        snprintf(path, sizeof path, "%s/%s.csv", dir, tables[t]);
        st = cb_out_write(o, path);
        cb_out_free(o);
        if (st != CB_OK) return st;
    }
    return CB_OK;
}

cb_status cb_results_export_json(cb_store *store, int64_t id, const char *path)
{
    cb_buf b = {0};
    cb_buf_printf(&b, "{\"format\": \"crossbind-results/1\", \"study\": %lld", (long long)id);
    for (int t = 0; tables[t]; t++) {
        if (skip_table(store, tables[t])) continue;
        sqlite3_stmt *q;
        cb_status st = query(store, tables[t], id, &q);
        if (st != CB_OK) { cb_buf_free(&b); return st; }
        cb_buf_printf(&b, ",\n \"%s\": [", tables[t]);
        int nc = sqlite3_column_count(q), row = 0, rc;
        while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
            cb_buf_printf(&b, "%s\n  {", row++ ? "," : "");
            for (int c = 0; c < nc; c++) {
                cb_buf_printf(&b, "%s", c ? ", " : "");
                cb_buf_json_string(&b, sqlite3_column_name(q, c));
                cb_buf_printf(&b, ": ");
                json_value(&b, q, c);
            }
            cb_buf_printf(&b, "}");
        }
        if ((st = query_end(store, q, rc, tables[t])) != CB_OK) { cb_buf_free(&b); return st; }
        cb_buf_printf(&b, "]");
    }
    cb_buf_printf(&b, "}\n");
    cb_status st = cb_buf_ok(&b) ? cb_write_file_atomic(path, b.data, b.len) : cb_fail(CB_ERR_NOMEM, "out of memory");
    cb_buf_free(&b);
    return st;
}
