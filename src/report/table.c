/* Report tables: one model of rows, three renderings. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

cb_status rtable_emit(rtable *t, cb_out *html, cb_out *md, const char *dir)
{
    cb_out *csv = cb_out_new(CB_OUT_CSV);
    /* The name is the program's own, but it goes through the escaper too. */
    cb_out_lit(html, "<table id=\"t-");
    cb_out_text(html, t->name);
    cb_out_lit(html, "\">\n");
    for (int r = 0; r < t->nrows; r++) {
        cb_out_lit(html, "<tr>");
        cb_out_lit(md, "|");
        for (int c = 0; c < t->ncols; c++) {
            const char *s = r * t->ncols + c < t->used && t->cells[r * t->ncols + c] ? t->cells[r * t->ncols + c] : "";
            if (r) cb_out_lit(html, "<td>"); else cb_out_lit(html, "<th>");
            cb_out_text(html, s);
            if (r) cb_out_lit(html, "</td>"); else cb_out_lit(html, "</th>");
            cb_out_lit(md, " ");
            cb_out_text(md, s);
            cb_out_lit(md, " |");
            if (c) cb_out_lit(csv, ",");
            cb_out_text(csv, s);
        }
        cb_out_lit(html, "</tr>\n");
        cb_out_lit(md, "\n");
        cb_out_lit(csv, "\n");
        if (r == 0) {
            cb_out_lit(md, "|");
            for (int c = 0; c < t->ncols; c++) cb_out_lit(md, "---|");
            cb_out_lit(md, "\n");
        }
    }
    cb_out_lit(html, "</table>\n");
    cb_out_lit(md, "\n");
    char path[1200];
    snprintf(path, sizeof path, "%s/tables/%s.csv", dir, t->name);
    cb_status st = cb_out_write(csv, path);
    cb_out_free(csv);
    return st;
}

void rtable_free(rtable *t)
{
    for (int i = 0; i < t->used; i++) free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}
