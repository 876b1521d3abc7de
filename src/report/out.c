/* The escaping writer of the report and the benchmark pages (out.h). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../core/json.h"
#include "out.h"

struct cb_out {
    cb_buf buf;
    cb_out_mode mode;
    int refused; /* a markup format asked for a string */
};

cb_out *cb_out_new(cb_out_mode mode)
{
    cb_out *o = calloc(1, sizeof *o);
    if (o) o->mode = mode;
    return o;
}

void cb_out_free(cb_out *o)
{
    if (!o) return;
    cb_buf_free(&o->buf);
    free(o);
}

static void put(cb_out *o, const char *s, size_t n) { cb_buf_append(&o->buf, s, n); }
static void puts_(cb_out *o, const char *s) { put(o, s, strlen(s)); }

static void html_text(cb_out *o, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': puts_(o, "&lt;"); break;
        case '>': puts_(o, "&gt;"); break;
        case '&': puts_(o, "&amp;"); break;
        case '"': puts_(o, "&quot;"); break;
        case '\'': puts_(o, "&#39;"); break;
        default: put(o, s, 1);
        }
    }
}

/* CommonMark (and GitHub's tables, strikethrough and math) give meaning to
 * these anywhere in a line. Escaping [ and ] is what rules out links and
 * images; < and & become entities, so no raw HTML, autolink or entity of
 * the data's own survives. */
static int md_inline_special(char c) { return c && strchr("\\`*_[]|~$", c) != NULL; }

static void md_text(cb_out *o, const char *s)
{
    /* A run may be written at the start of a line (a list item, a heading):
     * there a leading space, #, -, + or "1." / "1)" would start a block. */
    const char *p = s;
    while (*p == ' ') { puts_(o, "&#32;"); p++; }
    if (*p == '#' || *p == '-' || *p == '+' || *p == '=') { put(o, "\\", 1); put(o, p++, 1); }
    else if (*p >= '0' && *p <= '9') {
        const char *q = p;
        while (*q >= '0' && *q <= '9') q++;
        if ((*q == '.' || *q == ')') && (q[1] == 0 || q[1] == ' ' || (unsigned char)q[1] < 0x20)) {
            put(o, p, (size_t)(q - p));
            put(o, "\\", 1);
            p = q;
        }
    }
    for (; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f) put(o, " ", 1); /* a newline would end the table row or the item */
        else if (c == '<') puts_(o, "&lt;");
        else if (c == '>') puts_(o, "&gt;");
        else if (c == '&') puts_(o, "&amp;");
        else if (c == '_' && p > s && isalnum((unsigned char)p[-1]) && isalnum((unsigned char)p[1]))
            put(o, p, 1); /* inside a word (x86_64) an underscore emphasises nothing */
        else if (md_inline_special(*p)) { put(o, "\\", 1); put(o, p, 1); }
        else put(o, p, 1);
    }
}

static void csv_text(cb_out *o, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) { puts_(o, s); return; }
    put(o, "\"", 1);
    for (; *s; s++) {
        if (*s == '"') put(o, "\"\"", 2);
        else put(o, s, 1);
    }
    put(o, "\"", 1);
}

void cb_out_text(cb_out *o, const char *s)
{
    if (!o) return;
    if (!s) s = "";
    switch (o->mode) {
    case CB_OUT_HTML: html_text(o, s); break;
    case CB_OUT_MD: md_text(o, s); break;
    case CB_OUT_CSV: csv_text(o, s); break;
    }
}

void cb_out_textf(cb_out *o, const char *fmt, ...)
{
    if (!o) return;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    if (!s) { o->buf.failed = 1; return; }
    cb_out_text(o, s);
    free(s);
}

void cb_out_lit_(cb_out *o, const char *literal)
{
    if (o) puts_(o, literal);
}

/* 1 when every conversion of fmt formats a number (or is %%). */
static int numbers_only(const char *fmt)
{
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') continue;
        p++;
        if (*p == '%') continue;
        p += strspn(p, "-+ #0123456789.*'");
        p += strspn(p, "hlLqjzt");
        if (!*p || !strchr("diouxXeEfFgGaA", *p)) return 0;
    }
    return 1;
}

void cb_out_markf_(cb_out *o, const char *literal_fmt, ...)
{
    if (!o) return;
    if (!numbers_only(literal_fmt)) { o->refused = 1; return; }
    va_list ap;
    va_start(ap, literal_fmt);
    char *s = NULL;
    if (vasprintf(&s, literal_fmt, ap) < 0) s = NULL;
    va_end(ap);
    if (!s) { o->buf.failed = 1; return; }
    puts_(o, s);
    free(s);
}

const char *cb_out_data(const cb_out *o, size_t *len)
{
    if (len) *len = o ? o->buf.len : 0;
    return o && o->buf.data ? o->buf.data : "";
}

cb_status cb_out_write(const cb_out *o, const char *path)
{
    if (!o || !cb_buf_ok(&o->buf)) return cb_fail(CB_ERR_NOMEM, "%s: out of memory while writing it", path);
    if (o->refused)
        return cb_fail(CB_ERR_INVALID_ARG, "%s: not written: a markup format of this program asked for a string", path);
    return cb_write_file_atomic(path, o->buf.data ? o->buf.data : "", o->buf.len);
}
