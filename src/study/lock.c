/* The study's exclusive lock: an OFD lock on a small file holding the
 * holder's record. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "lock.h"

struct cb_lock {
    int fd;
    cb_lock_holder self;
};

static struct flock whole_file(short type)
{
    /* l_pid must be 0 for OFD locks. */
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0, .l_pid = 0};
    return fl;
}

static void read_record(int fd, cb_lock_holder *h)
{
    memset(h, 0, sizeof *h);
    char buf[512];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return;
    buf[n] = 0;
    long long study = 0;
    if (sscanf(buf, "pid %ld\nhost %255s\nsince %31s\nstudy %lld", &h->pid, h->host, h->since, &study) < 3)
        h->pid = 0;
    h->study = study;
}

static void write_record(cb_lock *l)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "pid %ld\nhost %s\nsince %s\nstudy %lld\n", l->self.pid, l->self.host,
                     l->self.since, (long long)l->self.study);
    /* Only a description for messages: a failed write loses nothing but the name. */
    if (ftruncate(l->fd, 0) == 0 && pwrite(l->fd, buf, (size_t)n, 0) == n) { /* recorded */ }
}

static void describe(const cb_lock_holder *h, char *out, size_t cap)
{
    if (!h->pid) { snprintf(out, cap, "a process that has not recorded itself yet"); return; }
    int n = snprintf(out, cap, "pid %ld on host %s, since %s", h->pid, h->host, h->since);
    if (h->study && n > 0 && (size_t)n < cap) snprintf(out + n, cap - (size_t)n, ", study %lld", (long long)h->study);
}

cb_status cb_lock_acquire(const char *path, const char *what, int wait, int quiet, cb_lock **out)
{
    *out = NULL;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644); /* runners never inherit it */
    if (fd < 0) return cb_fail(CB_ERR_IO, "%s: cannot open the lock file %s: %s", what, path, strerror(errno));
    struct flock fl = whole_file(F_WRLCK);
    if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
        int e = errno;
        if (e != EAGAIN && e != EACCES) {
            close(fd);
            return cb_fail(CB_ERR_IO, "%s: cannot lock %s: %s", what, path, strerror(e));
        }
        cb_lock_holder h;
        read_record(fd, &h);
        /* The holder writes its record just after it takes the lock: a
         * moment's wait lets the message name it rather than "not recorded". */
        for (int tries = 0; !h.pid && tries < 50; tries++) {
            usleep(10000);
            read_record(fd, &h);
        }
        char who[400];
        describe(&h, who, sizeof who);
        if (!wait) {
            close(fd);
            return cb_fail(CB_ERR_BUSY, "%s is in use by another crossbind study (%s; lock file %s): wait for it to "
                           "finish, or add --wait to start when it has", what, who, path);
        }
        if (!quiet) fprintf(stderr, "[study] waiting for %s: in use by another crossbind study (%s)\n", what, who);
        fl = whole_file(F_WRLCK);
        while (fcntl(fd, F_OFD_SETLKW, &fl) != 0) {
            if (errno == EINTR) continue;
            e = errno;
            close(fd);
            return cb_fail(CB_ERR_IO, "%s: waiting for the lock %s: %s", what, path, strerror(e));
        }
    }
    cb_lock *l = calloc(1, sizeof *l);
    if (!l) { close(fd); return cb_fail(CB_ERR_NOMEM, "out of memory"); }
    l->fd = fd;
    l->self.pid = (long)getpid();
    if (gethostname(l->self.host, sizeof l->self.host - 1) != 0 || !l->self.host[0]) snprintf(l->self.host, 8, "unknown");
    for (char *p = l->self.host; *p; p++) if (*p <= ' ') *p = '_';
    time_t t = time(NULL);
    strftime(l->self.since, sizeof l->self.since, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    write_record(l);
    *out = l;
    return CB_OK;
}

void cb_lock_set_study(cb_lock *l, int64_t study)
{
    if (!l) return;
    l->self.study = study;
    write_record(l);
}

void cb_lock_release(cb_lock *l)
{
    if (!l) return;
    close(l->fd); /* drops the lock; the file stays (removing it would race with a process opening it) */
    free(l);
}

int cb_lock_probe(const char *path, cb_lock_holder *h)
{
    memset(h, 0, sizeof *h);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : -1;
    /* F_OFD_GETLK sees every other open file description's lock, this
     * process's own included, and takes none. */
    struct flock fl = whole_file(F_WRLCK);
    int held = -1;
    if (fcntl(fd, F_OFD_GETLK, &fl) == 0) held = fl.l_type != F_UNLCK;
    if (held == 1) read_record(fd, h);
    close(fd);
    return held;
}
