/* A table written three ways at once: an HTML <table>, a Markdown table
 * and a CSV file. Internal to the report. */
#ifndef CB_REPORT_TABLE_H
#define CB_REPORT_TABLE_H

#include "out.h"
#include "crossbind/status.h"

typedef struct {
    char name[64];      /* the CSV file's stem */
    char **cells;       /* row-major, ncols per row; row 0 the header */
    int ncols, nrows, cap, used;
} rtable;

void rtable_init(rtable *t, const char *name, int ncols, const char *const *header);
/* Appends one row; cells printf-formatted one at a time with rtable_cell. */
void rtable_cell(rtable *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes the table into html and md, and DIR/tables/<name>.csv; every
 * cell, the header's too, is text (escaped for each medium). */
cb_status rtable_emit(rtable *t, cb_out *html, cb_out *md, const char *dir);
void rtable_free(rtable *t);

#endif
