/* SVG figures for the report: line charts, box plots and a heat map, each
 * a <figure> whose data-series attribute counts its <g class="series">
 * elements (the browser test checks both). Every name, title and label
 * is written escaped (out.h). Internal. */
#ifndef CB_REPORT_SVG_H
#define CB_REPORT_SVG_H

#include "out.h"

typedef struct { const char *name; const double *x, *y; int n; } svg_line;
/* A line chart with a legend; y in [ymin, ymax]. */
void svg_line_chart(cb_out *b, const char *id, const char *title, const char *xlabel, const char *ylabel,
                    const svg_line *lines, int nlines, double ymin, double ymax);

typedef struct { const char *name; const double *v; int n; } svg_box;
/* Box plots (median, quartiles, whiskers at min and max, every value as a
 * dot) on a log10 axis. */
void svg_box_plot(cb_out *b, const char *id, const char *title, const char *ylabel, const svg_box *boxes, int nboxes);

/* A heat map of labelled cells: status[r * ncols + c] is one of
 * "reproduced", "failed", "unsupported" or NULL (not measured); `text`
 * (may be NULL) holds each cell's tooltip. */
void svg_heat_map(cb_out *b, const char *id, const char *title, const char *const *rows, int nrows,
                  const char *const *cols, int ncols, const char *const *status, const char *const *text);

#endif
