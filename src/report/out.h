/* The one writer of the report's and the benchmark pages' HTML, Markdown
 * and CSV. Every string that comes from a store, a manifest, a runner or a
 * file goes through cb_out_text, which always escapes it for the medium;
 * markup can only come from string literals in this program's source:
 * cb_out_lit and cb_out_markf accept nothing but a literal (the macros
 * fail to compile otherwise), and cb_out_markf's arguments can only be
 * numbers (a %s, %c, %p or %n in its format fails the whole output). The
 * buffer is opaque, so page code has no other way to write. Internal. */
#ifndef CB_REPORT_OUT_H
#define CB_REPORT_OUT_H

#include <stddef.h>
#include "crossbind/status.h"

/* The pages' Content-Security-Policy: they need no script and load
 * nothing, so they allow neither (inline styles and SVG only). */
#define CB_PAGE_CSP "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

typedef enum { CB_OUT_HTML, CB_OUT_MD, CB_OUT_CSV } cb_out_mode;
typedef struct cb_out cb_out;

/* NULL when out of memory; every function below accepts NULL (and
 * cb_out_write then reports the allocation failure). */
cb_out *cb_out_new(cb_out_mode mode);
void cb_out_free(cb_out *o);

/* Untrusted text, escaped. HTML: & < > " ' as entities (safe in element
 * text and quoted attributes). Markdown: one inline run that cannot
 * start a block, a link, an image, raw HTML, code or a table cell (control
 * characters become spaces). CSV: one field, quoted where it must be. */
void cb_out_text(cb_out *o, const char *s);
/* printf into a string, then cb_out_text of the result. */
void cb_out_textf(cb_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Markup from the source only. */
#define cb_out_lit(o, s) cb_out_lit_((o), "" s "")
#define cb_out_markf(o, fmt, ...) cb_out_markf_((o), "" fmt "", __VA_ARGS__)
void cb_out_lit_(cb_out *o, const char *literal);
void cb_out_markf_(cb_out *o, const char *literal_fmt, ...) __attribute__((format(printf, 2, 3)));

/* The text written so far (tests) and its length. */
const char *cb_out_data(const cb_out *o, size_t *len);
/* Writes the output atomically to path; fails (writing nothing) when an
 * allocation failed or a markup format was refused. */
cb_status cb_out_write(const cb_out *o, const char *path);

#endif
