/* ONNX external data: a TensorProto whose bytes lie in another file
 * (data_location EXTERNAL, with `location`, `offset` and `length` entries),
 * as exporters write large models and as torch.onnx.export's dynamo path
 * does by default (model.onnx beside model.onnx.data).
 *
 * The location is a path relative to the model file's directory. Because a
 * model may come from anyone, it may not leave that directory: absolute
 * paths, ".." components and backslashes are refused, as is anything but
 * a regular file. A symbolic link inside the directory is followed only
 * while it resolves to a file inside it (the file's path is resolved with
 * realpath and compared with the directory, which the importer resolved
 * once), so a link cannot lead the reader elsewhere. Because a link or a
 * directory on the way may change between that check and the open, the
 * opened file is checked again by the path the kernel holds for it
 * (cb_fd_inside_dir). Only the named range
 * is read (pread), so that a data file holding every weight is not read
 * once per tensor. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "crossbind/status.h"
#include "onnx_util.h"

#define MAX_EXTERNAL_BYTES ((uint64_t)1 << 34) /* 16 GiB, as model files */

/* A non-negative decimal, all of `s`. */
static int parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s) return 0;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10) return 0;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = v;
    return 1;
}

/* A relative path that stays below its directory. */
static const char *unsafe_location(const char *loc)
{
    if (!*loc) return "is empty";
    if (loc[0] == '/') return "is an absolute path";
    if (strchr(loc, '\\')) return "holds a backslash";
    for (const char *p = loc; *p; p++)
        if ((unsigned char)*p < 0x20) return "holds a control character";
    for (const char *p = loc; p; p = strchr(p, '/')) {
        if (*p == '/') p++;
        if (p[0] == '.' && p[1] == '.' && (p[2] == '/' || p[2] == '\0')) return "leaves the model's directory (..)";
    }
    return NULL;
}

/* Whether the resolved `path` lies below the resolved directory `dir`. */
static int inside(const char *dir, const char *path)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/') return path[0] == '/' && path[1] != '\0';
    return strncmp(dir, path, n) == 0 && path[n] == '/';
}

int cb_fd_inside_dir(int fd, const char *dir, char *opened, size_t n)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t len = readlink(link, opened, n - 1);
    if (len < 0 || (size_t)len >= n - 1) return -1; /* no /proc, or a path beyond the buffer */
    opened[len] = '\0';
    return inside(dir, opened);
}

cb_status cb_onnx_tensor_external(const Onnx__TensorProto *t, const char *dir, const char *what, cb_tensor *out)
{
    const char *name = t->name ? t->name : "";
    if (!dir)
        return cb_fail(CB_ERR_UNSUPPORTED, "%s: tensor '%s' keeps its data in an external file, which is read only "
                       "for a model loaded from a file", what, name);
    const char *loc = NULL, *off_s = NULL, *len_s = NULL;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (!e->key || !e->value) continue;
        if (!strcmp(e->key, "location")) loc = e->value;
        else if (!strcmp(e->key, "offset")) off_s = e->value;
        else if (!strcmp(e->key, "length")) len_s = e->value;
    }
    if (!loc) return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s' is external but names no location", what, name);
    const char *bad = unsafe_location(loc);
    if (bad) return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s': its external location '%.200s' %s", what, name, loc, bad);
    uint64_t offset = 0, length = 0;
    if ((off_s && !parse_u64(off_s, &offset)) || (len_s && !parse_u64(len_s, &length)))
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s': external offset or length is not a number", what, name);
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, loc) >= sizeof path)
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s': external path too long", what, name);
    char real_path[PATH_MAX];
    if (!realpath(path, real_path))
        return cb_fail(CB_ERR_IO, "%s: tensor '%s': cannot open its data %s: %s", what, name, path, strerror(errno));
    if (!inside(dir, real_path))
        return cb_fail(CB_ERR_FORMAT, "%s: tensor '%s': its external location '%.200s' is a link that leaves the "
                       "model's directory (to %s)", what, name, loc, real_path);
    int fd = open(real_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cb_fail(CB_ERR_IO, "%s: tensor '%s': cannot open its data %s: %s", what, name, path, strerror(errno));
    cb_status s = CB_OK;
    char opened[PATH_MAX];
    if (cb_fd_inside_dir(fd, dir, opened, sizeof opened) == 0) /* -1: no /proc; the check above stands */
        s = cb_fail(CB_ERR_FORMAT, "%s: tensor '%s': its external location '%.200s' led out of the model's "
                    "directory while it was opened (to %s)", what, name, loc, opened);
    struct stat st;
    if (s == CB_OK && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)))
        s = cb_fail(CB_ERR_FORMAT, "%s: tensor '%s': its data %s is not a regular file", what, name, path);
    const uint64_t size = s == CB_OK ? (uint64_t)st.st_size : 0;
    if (s == CB_OK && !len_s) length = offset <= size ? size - offset : 0;
    if (s == CB_OK && (offset > size || length > size - offset || length > MAX_EXTERNAL_BYTES))
        s = cb_fail(CB_ERR_FORMAT, "%s: tensor '%s': bytes %llu to %llu lie outside %s (%llu bytes)", what, name,
                    (unsigned long long)offset, (unsigned long long)(offset + length), path, (unsigned long long)size);
    unsigned char *bytes = s == CB_OK ? malloc(length ? (size_t)length : 1) : NULL;
    if (s == CB_OK && !bytes) s = cb_fail(CB_ERR_NOMEM, "out of memory reading tensor '%s'", name);
    for (uint64_t got = 0; s == CB_OK && got < length;) {
        ssize_t r = pread(fd, bytes + got, (size_t)(length - got), (off_t)(offset + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) s = cb_fail(CB_ERR_IO, "%s: tensor '%s': reading %s failed", what, name, path);
        else got += (uint64_t)r;
    }
    close(fd);
    if (s == CB_OK) { /* the same tensor with its bytes inline */
        Onnx__TensorProto inline_copy = *t;
        inline_copy.has_data_location = 0;
        inline_copy.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT;
        inline_copy.has_raw_data = 1;
        inline_copy.raw_data.data = bytes;
        inline_copy.raw_data.len = (size_t)length;
        s = cb_onnx_tensor_to_cb(&inline_copy, what, out);
    }
    free(bytes);
    return s;
}
