/* A table written three ways at once: an HTML <table>, a Markdown table
 * and a CSV file. Internal to the report.
 *
 * A grouped table (the report's per-framework sections) holds the rows of
 * every section: its CSV file has them all, with the section in column 0;
 * each section's page shows its own rows without that column. */
#ifndef CB_REPORT_TABLE_H
#define CB_REPORT_TABLE_H

#include "out.h"
#include "crossbind/status.h"

typedef struct {
    char name[64];      /* the CSV file's stem */
    char **cells;       /* row-major, ncols per row; row 0 the header */
    int *group;         /* per row: its section (-1 for the header and ungrouped rows) */
    int ncols, nrows, cap, used, gcap, cur_group;
} rtable;

void rtable_init(rtable *t, const char *name, int ncols, const char *const *header);
/* The rows begun from now on belong to section g. */
void rtable_group(rtable *t, int g);
/* Appends one row; cells printf-formatted one at a time with rtable_cell. */
void rtable_cell(rtable *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes the table into html and md, and DIR/tables/<name>.csv; every
 * cell, the header's too, is text (escaped for each medium). */
cb_status rtable_emit(rtable *t, cb_out *html, cb_out *md, const char *dir);
/* The rows of section g in html and md (id "t-<name>-<id>"), without the
 * first `skip` columns; returns how many rows it wrote (0: nothing written). */
int rtable_emit_group(const rtable *t, int g, int skip, cb_out *html, cb_out *md, const char *id);
/* DIR/tables/<name>.csv: every row. */
cb_status rtable_write_csv(const rtable *t, const char *dir);
void rtable_free(rtable *t);

#endif
