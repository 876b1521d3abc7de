/* Building and removing paths under the work directory without a shell
 * and without following links. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "paths.h"
#include "validate.h"

/* Checks each '/'-separated component of rel; 0 when all are valid names. */
static cb_status check_rel(const char *rel)
{
    char part[CB_NAME_MAX + 2];
    const char *p = rel;
    if (!*rel) return cb_fail(CB_ERR_INVALID_ARG, "an empty path inside the work directory");
    for (;;) {
        size_t n = strcspn(p, "/");
        if (n > CB_NAME_MAX) n = CB_NAME_MAX + 1; /* too long: refused below */
        memcpy(part, p, n);
        part[n] = 0;
        if (!cb_valid_name(part))
            return cb_fail(CB_ERR_INVALID_ARG, "\"%.*s\" in \"%s\" is not a name a path may be built from (1 to %d of "
                           "A-Z a-z 0-9 . _ -, not starting with . or -)", (int)strcspn(p, "/"), p, rel, CB_NAME_MAX);
        p += strcspn(p, "/");
        if (!*p) return CB_OK;
        p++;
    }
}

cb_status cb_work_path(const char *root, const char *rel, char *out, size_t cap)
{
    cb_status st = check_rel(rel);
    if (st != CB_OK) return st;
    if ((size_t)snprintf(out, cap, "%s/%s", root, rel) >= cap)
        return cb_fail(CB_ERR_INVALID_ARG, "%s/%s: the path is too long", root, rel);
    return CB_OK;
}

/* Removes `name` in the directory dirfd; a directory with its contents. */
static int remove_at(int dirfd, const char *name, int depth)
{
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT) return 0;
    if (errno != EISDIR && errno != EPERM) return -1;
    if (depth >= CB_REMOVE_MAX_DEPTH) { errno = ELOOP; return -1; }
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    DIR *d = fdopendir(fd);
    if (!d) { close(fd); return -1; }
    /* Entries removed while reading may or may not be listed again; read
     * until a pass finds nothing left. */
    int rc = 0, removed;
    do {
        removed = 0;
        rewinddir(d);
        struct dirent *e;
        while (rc == 0 && (e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            rc = remove_at(fd, e->d_name, depth + 1);
            removed++;
        }
    } while (rc == 0 && removed);
    int e = errno;
    closedir(d);
    if (rc != 0) { errno = e; return -1; }
    return unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

cb_status cb_remove_tree(const char *root, const char *rel)
{
    cb_status st = check_rel(rel);
    if (st != CB_OK) return st;
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return CB_OK;
        return cb_fail(CB_ERR_IO, "%s: %s", root, strerror(errno));
    }
    /* Down to the last component's parent, refusing links on the way. */
    char part[CB_NAME_MAX + 1];
    const char *p = rel;
    for (;;) {
        size_t n = strcspn(p, "/");
        memcpy(part, p, n);
        part[n] = 0;
        p += n;
        if (!*p) break;
        p++;
        int next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        close(fd);
        if (next < 0) {
            if (e == ENOENT) return CB_OK;
            return cb_fail(CB_ERR_IO, "%s/%s: cannot enter %s to remove it: %s", root, rel, part,
                           e == ELOOP || e == ENOTDIR ? "not a directory (a link is never followed)" : strerror(e));
        }
        fd = next;
    }
    int rc = remove_at(fd, part, 0);
    int e = errno;
    close(fd);
    if (rc != 0)
        return cb_fail(CB_ERR_IO, "%s/%s: cannot remove it: %s", root, rel,
                       e == ELOOP ? "nested deeper than the limit" : strerror(e));
    return CB_OK;
}
