/* A table written three ways at once: an HTML <table>, a Markdown table
 * and a CSV file. Internal to the report. */
#ifndef CB_REPORT_TABLE_H
#define CB_REPORT_TABLE_H

#include "../core/json.h"
#include "crossbind/status.h"

typedef struct {
    char name[64];      /* the CSV file's stem */
    char **cells;       /* row-major, ncols per row; row 0 the header */
    int ncols, nrows, cap, used;
} rtable;

void rtable_init(rtable *t, const char *name, int ncols, const char *const *header);
/* Appends one row; cells printf-formatted one at a time with rtable_cell. */
void rtable_cell(rtable *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes the table into html and md, and DIR/tables/<name>.csv. */
cb_status rtable_emit(rtable *t, cb_buf *html, cb_buf *md, const char *dir);
void rtable_free(rtable *t);

#endif
