/* Inline SVG charts, drawn by hand: the report must open anywhere with no
 * script and no network. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "out.h"
#include "svg.h"

/* Colours as numbers: markup formats take no strings (out.h). */
static const unsigned palette[] = {0x1f77b4, 0xd62728, 0x2ca02c, 0xff7f0e, 0x9467bd, 0x8c564b, 0xe377c2, 0x17becf};
#define PAL(i) palette[(i) % 8]

static void open_figure(cb_out *b, const char *id, const char *title, int series, int w, int h)
{
    cb_out_lit(b, "<figure class=\"chart\" id=\"");
    cb_out_text(b, id);
    cb_out_markf(b, "\" data-series=\"%d\"><figcaption>", series);
    cb_out_text(b, title);
    cb_out_markf(b, "</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "viewBox=\"0 0 %d %d\" role=\"img\" font-family=\"sans-serif\" font-size=\"11\">\n", w, h, w, h);
}

static void close_figure(cb_out *b) { cb_out_lit(b, "</svg></figure>\n"); }

static void legend(cb_out *b, int x, int y, const char *name, int i)
{
    cb_out_markf(b, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"#%06x\"/><text x=\"%d\" y=\"%d\">", x, y - 9,
                  PAL(i), x + 14, y);
    cb_out_text(b, name);
    cb_out_lit(b, "</text>");
}

void svg_line_chart(cb_out *b, const char *id, const char *title, const char *xlabel, const char *ylabel,
                    const svg_line *lines, int nlines, double ymin, double ymax)
{
    const int W = 560, H = 300, L = 56, R = 150, T = 14, B = 40, pw = W - L - R, ph = H - T - B;
    double xmin = INFINITY, xmax = -INFINITY;
    for (int s = 0; s < nlines; s++)
        for (int i = 0; i < lines[s].n; i++) {
            if (lines[s].x[i] < xmin) xmin = lines[s].x[i];
            if (lines[s].x[i] > xmax) xmax = lines[s].x[i];
        }
    if (!(xmax > xmin)) { xmin = isfinite(xmin) ? xmin - 1 : 0; xmax = xmin + 2; }
    if (!(ymax > ymin)) ymax = ymin + 1;
    open_figure(b, id, title, nlines, W, H);
    cb_out_markf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", L, T, pw, ph);
    for (int k = 0; k <= 4; k++) {
        double v = ymin + (ymax - ymin) * k / 4;
        double y = T + ph - ph * k / 4.0;
        cb_out_markf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/><text x=\"%d\" y=\"%.1f\" "
                      "text-anchor=\"end\">%.2f</text>\n", L, L + pw, y, y, L - 4, y + 4, v);
    }
    int ticks = (int)(xmax - xmin) < 8 ? (int)(xmax - xmin) : 8;
    if (ticks < 1) ticks = 1;
    for (int k = 0; k <= ticks; k++) {
        double v = xmin + (xmax - xmin) * k / ticks;
        double x = L + pw * k / (double)ticks;
        cb_out_markf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", x, T + ph + 14, round(v * 10) / 10);
    }
    cb_out_markf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", L + pw / 2, H - 6);
    cb_out_text(b, xlabel);
    cb_out_markf(b, "</text><text transform=\"translate(14,%d) rotate(-90)\" text-anchor=\"middle\">", T + ph / 2);
    cb_out_text(b, ylabel);
    cb_out_lit(b, "</text>\n");
    for (int s = 0; s < nlines; s++) {
        cb_out_lit(b, "<g class=\"series\" data-name=\"");
        cb_out_text(b, lines[s].name);
        cb_out_lit(b, "\"><title>");
        cb_out_text(b, lines[s].name);
        cb_out_markf(b, "</title><polyline fill=\"none\" stroke-width=\"2\" stroke=\"#%06x\" points=\"", PAL(s));
        for (int i = 0; i < lines[s].n; i++) {
            double x = L + pw * (lines[s].x[i] - xmin) / (xmax - xmin);
            double y = T + ph - ph * (lines[s].y[i] - ymin) / (ymax - ymin);
            if (i) cb_out_lit(b, " ");
            cb_out_markf(b, "%.1f,%.1f", x, y);
        }
        cb_out_lit(b, "\"/>");
        for (int i = 0; i < lines[s].n; i++) {
            double x = L + pw * (lines[s].x[i] - xmin) / (xmax - xmin);
            double y = T + ph - ph * (lines[s].y[i] - ymin) / (ymax - ymin);
            cb_out_markf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#%06x\"><title>epoch %g: %.4f</title></circle>",
                          x, y, PAL(s), lines[s].x[i], lines[s].y[i]);
        }
        cb_out_lit(b, "</g>\n");
        legend(b, L + pw + 12, T + 14 + 16 * s, lines[s].name, s);
    }
    close_figure(b);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Linear interpolation between order statistics (NumPy's default). */
static double quantile(const double *sorted, int n, double q)
{
    double pos = q * (n - 1);
    int i = (int)floor(pos);
    if (i >= n - 1) return sorted[n - 1];
    return sorted[i] + (sorted[i + 1] - sorted[i]) * (pos - i);
}

void svg_box_plot(cb_out *b, const char *id, const char *title, const char *ylabel, const svg_box *boxes, int nboxes)
{
    const int L = 64, R = 16, T = 14, B = 56, slot = 90, W = L + R + (nboxes ? nboxes : 1) * slot, H = 300;
    const int ph = H - T - B;
    double lo = INFINITY, hi = -INFINITY;
    for (int k = 0; k < nboxes; k++)
        for (int i = 0; i < boxes[k].n; i++)
            if (boxes[k].v[i] > 0) {
                if (boxes[k].v[i] < lo) lo = boxes[k].v[i];
                if (boxes[k].v[i] > hi) hi = boxes[k].v[i];
            }
    if (!isfinite(lo)) { lo = 0.1; hi = 1; }
    double l0 = floor(log10(lo)), l1 = ceil(log10(hi));
    if (l1 <= l0) l1 = l0 + 1;
    open_figure(b, id, title, nboxes, W, H);
#define YPOS(v) (T + ph - ph * (log10(v) - l0) / (l1 - l0))
    cb_out_markf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", L, T,
                  W - L - R, ph);
    for (double e = l0; e <= l1 + 1e-9; e++) {
        double y = YPOS(pow(10, e));
        cb_out_markf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/><text x=\"%d\" y=\"%.1f\" "
                      "text-anchor=\"end\">%g s</text>\n", L, W - R, y, y, L - 4, y + 4, pow(10, e));
    }
    cb_out_markf(b, "<text transform=\"translate(12,%d) rotate(-90)\" text-anchor=\"middle\">", T + ph / 2);
    cb_out_text(b, ylabel);
    cb_out_lit(b, " (log scale)</text>\n");
    for (int k = 0; k < nboxes; k++) {
        int n = boxes[k].n, cx = L + slot * k + slot / 2;
        double *s = malloc((size_t)(n ? n : 1) * sizeof *s);
        int m = 0;
        for (int i = 0; s && i < n; i++) if (boxes[k].v[i] > 0) s[m++] = boxes[k].v[i];
        cb_out_lit(b, "<g class=\"series\" data-name=\"");
        cb_out_text(b, boxes[k].name);
        cb_out_lit(b, "\">");
        if (s && m) {
            qsort(s, (size_t)m, sizeof *s, cmp_d);
            double q1 = quantile(s, m, 0.25), med = quantile(s, m, 0.5), q3 = quantile(s, m, 0.75);
            cb_out_lit(b, "<title>");
            cb_out_text(b, boxes[k].name);
            cb_out_markf(b, ": n=%d, median %.4g s, min %.4g s, max %.4g s</title>", m, med, s[0], s[m - 1]);
            cb_out_markf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>", cx, cx, YPOS(s[0]),
                          YPOS(s[m - 1]));
            double top = YPOS(q3), bottom = YPOS(q1);
            cb_out_markf(b, "<rect x=\"%d\" y=\"%.1f\" width=\"40\" height=\"%.1f\" fill=\"#%06x\" fill-opacity=\"0.5\" "
                          "stroke=\"#444\"/>", cx - 20, top, bottom - top > 1 ? bottom - top : 1, PAL(k));
            cb_out_markf(b, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" stroke-width=\"2\"/>",
                          cx - 20, cx + 20, YPOS(med), YPOS(med));
            for (int i = 0; i < m; i++)
                cb_out_markf(b, "<circle cx=\"%d\" cy=\"%.1f\" r=\"2\" fill=\"#000\"/>", cx + 26, YPOS(s[i]));
        }
        cb_out_markf(b, "</g><text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", cx, T + ph + 16);
        cb_out_text(b, boxes[k].name);
        cb_out_markf(b, "</text><text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#666\">n=%d</text>\n", cx,
                      T + ph + 30, m);
        free(s);
    }
#undef YPOS
    close_figure(b);
}

void svg_heat_map(cb_out *b, const char *id, const char *title, const char *const *rows, int nrows,
                  const char *const *cols, int ncols, const char *const *status, const char *const *text)
{
    const int L = 250, T = 40, cw = 84, ch = 24, H = T + ch * nrows + 40;
    const int W = L + (cw * ncols > 340 ? cw * ncols : 340) + 20; /* room for the legend */
    open_figure(b, id, title, nrows, W, H);
    for (int c = 0; c < ncols; c++) {
        cb_out_markf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-weight=\"bold\">", L + cw * c + cw / 2, T - 8);
        cb_out_text(b, cols[c]);
        cb_out_lit(b, "</text>");
    }
    for (int r = 0; r < nrows; r++) {
        cb_out_lit(b, "<g class=\"series\" data-name=\"");
        cb_out_text(b, rows[r]);
        cb_out_markf(b, "\"><text x=\"%d\" y=\"%d\" text-anchor=\"end\">", L - 6, T + ch * r + 16);
        cb_out_text(b, rows[r]);
        cb_out_lit(b, "</text>");
        for (int c = 0; c < ncols; c++) {
            const char *s = status[r * ncols + c];
            unsigned fill = !s ? 0xf4f4f4 : !strcmp(s, "reproduced") ? 0x4caf50 : !strcmp(s, "failed") ? 0xe53935 : 0xbdbdbd;
            cb_out_markf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#%06x\" stroke=\"#fff\"><title>",
                          L + cw * c, T + ch * r, cw, ch, fill);
            cb_out_text(b, text && text[r * ncols + c] ? text[r * ncols + c] : s ? s : "not measured");
            cb_out_markf(b, "</title></rect><text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#%06x\">",
                          L + cw * c + cw / 2, T + ch * r + 16, s && strcmp(s, "unsupported") ? 0xffffffu : 0x333333u);
            cb_out_text(b, !s ? "–" : !strcmp(s, "reproduced") ? "reproduced" : !strcmp(s, "failed") ? "failed" : "unsupported");
            cb_out_lit(b, "</text>");
        }
        cb_out_lit(b, "</g>\n");
    }
    int y = T + ch * nrows + 24;
    const char *names[3] = {"reproduced", "failed", "unsupported"};
    const unsigned fills[3] = {0x4caf50, 0xe53935, 0xbdbdbd};
    for (int k = 0; k < 3; k++) {
        cb_out_markf(b, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"#%06x\"/><text x=\"%d\" y=\"%d\">",
                     L + 110 * k, y - 9, fills[k], L + 110 * k + 14, y);
        cb_out_text(b, names[k]);
        cb_out_lit(b, "</text>");
    }
    close_figure(b);
}
