/* Whole-file reads (see file.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "file.h"

/* Opens `path` for reading if it is a regular file (its status in *st);
 * NULL with the reason recorded otherwise. */
static FILE *open_regular(const char *path, struct stat *st)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        cb_fail(CB_ERR_IO, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fileno(f), st) != 0 || !S_ISREG(st->st_mode)) {
        fclose(f);
        cb_fail(CB_ERR_IO, "%s is not a regular file", path);
        return NULL;
    }
    return f;
}

cb_status cb_read_file(const char *path, size_t max_bytes, unsigned char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    struct stat st;
    FILE *f = open_regular(path, &st);
    if (!f) return CB_ERR_IO;
    if ((unsigned long long)st.st_size > max_bytes) {
        fclose(f);
        return cb_fail(CB_ERR_FORMAT, "%s is %lld bytes, more than the %zu this reader accepts", path,
                       (long long)st.st_size, max_bytes);
    }
    size_t size = (size_t)st.st_size;
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) {
        fclose(f);
        return cb_fail(CB_ERR_NOMEM, "out of memory reading %s (%zu bytes)", path, size);
    }
    size_t got = fread(buf, 1, size, f);
    int err = ferror(f);
    fclose(f);
    if (got != size || err) {
        free(buf);
        return cb_fail(CB_ERR_IO, "error reading %s", path);
    }
    *out = buf;
    *len = size;
    return CB_OK;
}

cb_status cb_parse_file(const char *path, size_t max_bytes, cb_buffer_parser parse, void *out)
{
    unsigned char *buf;
    size_t len;
    cb_status s = cb_read_file(path, max_bytes, &buf, &len);
    if (s != CB_OK) return s;
    s = parse(buf, len, path, out);
    free(buf);
    return s;
}

cb_status cb_mkdirs(const char *path)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s", path) >= sizeof tmp) return cb_fail(CB_ERR_INVALID_ARG, "path too long: %s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return cb_fail(CB_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
            *p = '/';
        }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return cb_fail(CB_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    return CB_OK;
}

cb_status cb_copy_file(const char *src, const char *dst)
{
    struct stat st;
    FILE *in = open_regular(src, &st);
    if (!in) return CB_ERR_IO;
    FILE *out = fopen(dst, "wb");
    if (!out) {
        fclose(in);
        return cb_fail(CB_ERR_IO, "cannot create %s: %s", dst, strerror(errno));
    }
    unsigned char buf[1 << 16];
    size_t n;
    int ok = 1;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
    ok = ok && !ferror(in);
    fclose(in);
    if (fclose(out) != 0) ok = 0;
    if (!ok) {
        remove(dst); /* never a partial copy left to be read */
        return cb_fail(CB_ERR_IO, "error copying %s to %s", src, dst);
    }
    return CB_OK;
}
