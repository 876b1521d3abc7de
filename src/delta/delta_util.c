/* Small helpers of crossbind delta (delta_util.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "../core/sha256.h"
#include "delta_util.h"

void delta_safe_name(char *s)
{
    for (char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '_' || (*p == '.' && p != s)))
            *p = '_';
}

void delta_last_error_line(const char *path, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    char line[1024], last[1024] = "", err[1024] = "";
    out[0] = 0;
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0]) continue;
        snprintf(last, sizeof last, "%s", line);
        if (strstr(line, "error:")) snprintf(err, sizeof err, "%s", line);
    }
    fclose(f);
    snprintf(out, cap, "%s", err[0] ? err : last);
}

cb_status delta_sha256_file(const char *path, char hex[65])
{
    FILE *f = fopen(path, "rb");
    if (!f) return cb_fail(CB_ERR_IO, "cannot open %s", path);
    cb_sha256_ctx c;
    unsigned char buf[1 << 16], d[32];
    size_t n;
    cb_sha256_init(&c);
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) cb_sha256_update(&c, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) return cb_fail(CB_ERR_IO, "cannot read %s", path);
    cb_sha256_final(&c, d);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return CB_OK;
}

void delta_path(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, cap, fmt, ap);
    va_end(ap);
}
