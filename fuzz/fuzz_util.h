/* Shared by the fuzz targets whose parsers read files and directories: one
 * scratch directory per process, crossbind-fuzz-NAME-PID in /dev/shm (memory:
 * the atomic writers' fsync costs nothing there) or else /tmp, removed when
 * the fuzzer exits, so that a run leaves nothing behind. scripts/fuzz.sh
 * removes it after a crash too (the name ends in the fuzzer's process id). */
#ifndef CB_FUZZ_UTIL_H
#define CB_FUZZ_UTIL_H

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fz_root[128];

static int fz_remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    remove(path);
    return 0;
}

static void fz_cleanup(void)
{
    if (fz_root[0]) nftw(fz_root, fz_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The scratch directory, made on first use. */
static const char *fz_scratch(const char *name)
{
    if (!fz_root[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(fz_root, sizeof fz_root, "%s/crossbind-fuzz-%s-%d", base, name, (int)getpid());
        fz_cleanup(); /* a stale one from a process with the same id */
        if (mkdir(fz_root, 0700)) abort();
        atexit(fz_cleanup);
    }
    return fz_root;
}

/* scratch/rel, in a static buffer of its own per slot (0-7). */
static const char *fz_path(int slot, const char *rel)
{
    static char paths[8][512];
    snprintf(paths[slot & 7], sizeof paths[0], "%s/%s", fz_root, rel);
    return paths[slot & 7];
}

/* Makes scratch/rel (and its parents). */
static void fz_mkdirs(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", fz_root, rel);
    for (char *s = p + strlen(fz_root) + 1; *s; s++)
        if (*s == '/') { *s = 0; mkdir(p, 0700); *s = '/'; }
    mkdir(p, 0700);
}

/* Writes scratch/rel, replacing it. */
static void fz_put(const char *rel, const void *data, size_t size)
{
    FILE *f = fopen(fz_path(7, rel), "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    if (fclose(f)) abort();
}

/* Removes everything in scratch/rel (the directory stays). */
static void fz_empty(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", fz_root, rel);
    nftw(p, fz_remove_one, 16, FTW_DEPTH | FTW_PHYS);
    mkdir(p, 0700);
}

#endif
