/* minizip (Debian's libminizip, zlib's contrib/minizip 1.1) reads through
 * file callbacks; these serve a buffer in memory, as crossbind's reader
 * takes one. */
#ifndef MEMUNZ_H
#define MEMUNZ_H
#include <minizip/unzip.h>
#include <string.h>

typedef struct memfile { const unsigned char *buf; size_t len, pos; } memfile;

static voidpf mem_open(voidpf opaque, const void *name, int mode) { (void)name; (void)mode; ((memfile *)opaque)->pos = 0; return opaque; }
static uLong mem_read(voidpf opaque, voidpf stream, void *out, uLong n)
{
    (void)opaque;
    memfile *m = stream;
    if (m->pos >= m->len) return 0;
    if (n > m->len - m->pos) n = (uLong)(m->len - m->pos);
    memcpy(out, m->buf + m->pos, n);
    m->pos += n;
    return n;
}
static uLong mem_write(voidpf o, voidpf s, const void *b, uLong n) { (void)o; (void)s; (void)b; (void)n; return 0; }
static ZPOS64_T mem_tell(voidpf o, voidpf s) { (void)o; return ((memfile *)s)->pos; }
static long mem_seek(voidpf o, voidpf s, ZPOS64_T off, int origin)
{
    (void)o;
    memfile *m = s;
    ZPOS64_T base = origin == ZLIB_FILEFUNC_SEEK_SET ? 0 : origin == ZLIB_FILEFUNC_SEEK_CUR ? m->pos : m->len;
    if (off > m->len || base > m->len - off) return -1;
    m->pos = base + off;
    return 0;
}
static int mem_close(voidpf o, voidpf s) { (void)o; (void)s; return 0; }
static int mem_error(voidpf o, voidpf s) { (void)o; (void)s; return 0; }

static unzFile mem_unzopen(memfile *m)
{
    zlib_filefunc64_def ff = {mem_open, mem_read, mem_write, mem_tell, mem_seek, mem_close, mem_error, m};
    return unzOpen2_64("memory", &ff);
}
#endif
