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
    t->cur_group = -1;
    for (int c = 0; c < ncols; c++) rtable_cell(t, "%s", header[c]);
    t->cur_group = -1;
}

void rtable_group(rtable *t, int g) { t->cur_group = g; }

void rtable_cell(rtable *t, const char *fmt, ...)
{
    if (t->used == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        char **g = realloc(t->cells, (size_t)cap * sizeof *g);
        if (!g) return; /* the cell is dropped; cb_buf reports the allocation failure later */
        t->cells = g;
        t->cap = cap;
    }
    int row = t->used / t->ncols;
    if (t->used % t->ncols == 0) {
        if (row >= t->gcap) {
            int cap = t->gcap ? 2 * t->gcap : 16;
            int *g = realloc(t->group, (size_t)cap * sizeof *g);
            if (!g) return;
            t->group = g;
            t->gcap = cap;
        }
        t->group[row] = row ? t->cur_group : -1;
    }
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    t->cells[t->used++] = s ? s : strdup("");
    t->nrows = (t->used + t->ncols - 1) / t->ncols;
}

static const char *cell(const rtable *t, int r, int c)
{
    int i = r * t->ncols + c;
    return i < t->used && t->cells[i] ? t->cells[i] : "";
}

static int group_of(const rtable *t, int r) { return t->group && r < t->gcap ? t->group[r] : -1; }

/* Rows r with group g (all rows when all is set), columns from `skip` on. */
static int pages(const rtable *t, int all, int g, int skip, cb_out *html, cb_out *md, const char *id)
{
    int rows = 0;
    for (int r = 1; r < t->nrows; r++) rows += all || group_of(t, r) == g;
    if (!all && !rows) return 0;
    /* The names are the program's own, but they go through the escaper too. */
    cb_out_lit(html, "<table id=\"t-");
    cb_out_text(html, t->name);
    if (id) { cb_out_lit(html, "-"); cb_out_text(html, id); }
    cb_out_lit(html, "\">\n");
    for (int r = 0; r < t->nrows; r++) {
        if (r && !all && group_of(t, r) != g) continue;
        cb_out_lit(html, "<tr>");
        cb_out_lit(md, "|");
        for (int c = skip; c < t->ncols; c++) {
            if (r) cb_out_lit(html, "<td>"); else cb_out_lit(html, "<th>");
            cb_out_text(html, cell(t, r, c));
            if (r) cb_out_lit(html, "</td>"); else cb_out_lit(html, "</th>");
            cb_out_lit(md, " ");
            cb_out_text(md, cell(t, r, c));
            cb_out_lit(md, " |");
        }
        cb_out_lit(html, "</tr>\n");
        cb_out_lit(md, "\n");
        if (r == 0) {
            cb_out_lit(md, "|");
            for (int c = skip; c < t->ncols; c++) cb_out_lit(md, "---|");
            cb_out_lit(md, "\n");
        }
    }
    cb_out_lit(html, "</table>\n");
    cb_out_lit(md, "\n");
    return rows;
}

cb_status rtable_write_csv(const rtable *t, const char *dir)
{
    cb_out *csv = cb_out_new(CB_OUT_CSV);
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            if (c) cb_out_lit(csv, ",");
            cb_out_text(csv, cell(t, r, c));
        }
        cb_out_lit(csv, "\n");
    }
    char path[1200];
    snprintf(path, sizeof path, "%s/tables/%s.csv", dir, t->name);
    cb_status st = cb_out_write(csv, path);
    cb_out_free(csv);
    return st;
}

cb_status rtable_emit(rtable *t, cb_out *html, cb_out *md, const char *dir)
{
    pages(t, 1, -1, 0, html, md, NULL);
    return rtable_write_csv(t, dir);
}

int rtable_emit_group(const rtable *t, int g, int skip, cb_out *html, cb_out *md, const char *id)
{
    return pages(t, 0, g, skip, html, md, id);
}

void rtable_free(rtable *t)
{
    for (int i = 0; i < t->used; i++) free(t->cells[i]);
    free(t->cells);
    free(t->group);
    memset(t, 0, sizeof *t);
}
