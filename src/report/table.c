/* Report tables: one model of rows, three renderings. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "svg.h"
#include "table.h"

void rtable_init(rtable *t, const char *name, int ncols, const char *const *header)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ncols = ncols;
    for (int c = 0; c < ncols; c++) rtable_cell(t, "%s", header[c]);
}

void rtable_cell(rtable *t, const char *fmt, ...)
{
    if (t->used == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        char **g = realloc(t->cells, (size_t)cap * sizeof *g);
        if (!g) return; /* the cell is dropped; cb_buf reports the allocation failure later */
        t->cells = g;
        t->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    t->cells[t->used++] = s ? s : strdup("");
    t->nrows = (t->used + t->ncols - 1) / t->ncols;
}

static void csv_field(cb_buf *b, const char *s)
{
    if (!strpbrk(s, ",\"\n")) { cb_buf_printf(b, "%s", s); return; }
    cb_buf_printf(b, "\"");
    for (; *s; s++) {
        if (*s == '"') cb_buf_printf(b, "\"\"");
        else cb_buf_append(b, s, 1);
    }
    cb_buf_printf(b, "\"");
}

cb_status rtable_emit(rtable *t, cb_buf *html, cb_buf *md, const char *dir)
{
    cb_buf csv = {0};
    cb_buf_printf(html, "<table id=\"t-%s\">\n", t->name);
    for (int r = 0; r < t->nrows; r++) {
        cb_buf_printf(html, "<tr>");
        cb_buf_printf(md, "|");
        for (int c = 0; c < t->ncols; c++) {
            const char *s = r * t->ncols + c < t->used && t->cells[r * t->ncols + c] ? t->cells[r * t->ncols + c] : "";
            cb_buf_printf(html, r ? "<td>" : "<th>");
            html_escape(html, s);
            cb_buf_printf(html, r ? "</td>" : "</th>");
            cb_buf_printf(md, " ");
            for (const char *p = s; *p; p++) {
                if (*p == '|') cb_buf_printf(md, "\\|");
                else cb_buf_append(md, p, 1);
            }
            cb_buf_printf(md, " |");
            if (c) cb_buf_printf(&csv, ",");
            csv_field(&csv, s);
        }
        cb_buf_printf(html, "</tr>\n");
        cb_buf_printf(md, "\n");
        cb_buf_printf(&csv, "\n");
        if (r == 0) {
            cb_buf_printf(md, "|");
            for (int c = 0; c < t->ncols; c++) cb_buf_printf(md, "---|");
            cb_buf_printf(md, "\n");
        }
    }
    cb_buf_printf(html, "</table>\n");
    cb_buf_printf(md, "\n");
    char path[1200];
    snprintf(path, sizeof path, "%s/tables/%s.csv", dir, t->name);
    cb_status st = cb_buf_ok(&csv) ? cb_write_file_atomic(path, csv.data ? csv.data : "", csv.len)
                                   : cb_fail(CB_ERR_NOMEM, "out of memory");
    cb_buf_free(&csv);
    return st;
}

void rtable_free(rtable *t)
{
    for (int i = 0; i < t->used; i++) free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}
