/* The zip readers compared, used the way src/formats/torch_pt.c uses
 * crossbind's: open an archive held in memory, weigh each entry's declared
 * size against a cap before reading it, then read it whole, CRC-checked.
 * Compile with -DLIB_CROSSBIND, -DLIB_LIBZIP or -DLIB_MINIZIP. A reader
 * returns the number of entries read (their bytes added to *bytes), or -1
 * with the library's message in reader_msg. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "readers.h"

char reader_msg[512];
uint64_t zip_bytes;          /* bytes delivered by the last call */
uint64_t zip_cap = 1ull << 40; /* declared sizes above this are refused */

#if defined(LIB_CROSSBIND)
#include "../../src/formats/zip.h"
/* Stored entries are read in place (a pointer into the buffer, CRC-checked);
 * deflated ones are inflated into a buffer of their own. */
static long parse(const char *s, size_t len)
{
    cb_zip z;
    zip_bytes = 0;
    if (cb_zip_open((const unsigned char *)s, len, "input", &z) != CB_OK) { snprintf(reader_msg, sizeof reader_msg, "%s", cb_last_error()); return -1; }
    for (int i = 0; i < z.count; i++) {
        const unsigned char *d;
        unsigned char *owned;
        if (cb_zip_read(&z, &z.entries[i], zip_cap, &d, &owned) != CB_OK) {
            snprintf(reader_msg, sizeof reader_msg, "%s", cb_last_error());
            cb_zip_close(&z);
            return -1;
        }
        zip_bytes += z.entries[i].usize;
        free(owned);
    }
    long n = z.count;
    cb_zip_close(&z);
    return n;
}
const reader readers[] = {{"crossbind", parse}};

#elif defined(LIB_LIBZIP)
#include <zip.h>
/* ZIP_CHECKCONS: libzip's own consistency checks of the local headers
 * against the central directory. Every entry is read into a buffer (libzip
 * has no public call for where an entry's data lies). */
static long parse(const char *s, size_t len)
{
    zip_error_t err;
    zip_error_init(&err);
    zip_bytes = 0;
    zip_source_t *src = zip_source_buffer_create(s, len, 0, &err);
    zip_t *za = src ? zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err) : NULL;
    if (!za) {
        snprintf(reader_msg, sizeof reader_msg, "open: %s", zip_error_strerror(&err));
        zip_error_fini(&err);
        if (src) zip_source_free(src);
        return -1;
    }
    zip_error_fini(&err);
    zip_int64_t n = zip_get_num_entries(za, 0);
    for (zip_int64_t i = 0; i < n; i++) {
        zip_stat_t st;
        if (zip_stat_index(za, (zip_uint64_t)i, 0, &st) != 0) { snprintf(reader_msg, sizeof reader_msg, "stat: %s", zip_strerror(za)); goto fail; }
        if (st.size > zip_cap) { snprintf(reader_msg, sizeof reader_msg, "[caller's check] %s declares %llu bytes", st.name, (unsigned long long)st.size); goto fail; }
        zip_file_t *f = zip_fopen_index(za, (zip_uint64_t)i, 0);
        if (!f) { snprintf(reader_msg, sizeof reader_msg, "fopen %s: %s", st.name, zip_strerror(za)); goto fail; }
        unsigned char *buf = malloc(st.size + 1);
        zip_int64_t got = zip_fread(f, buf, st.size), more = got == (zip_int64_t)st.size ? zip_fread(f, buf, 1) : 0;
        if (got != (zip_int64_t)st.size || more != 0) {
            snprintf(reader_msg, sizeof reader_msg, "read %s: %s", st.name,
                     got < 0 || more < 0 ? zip_file_strerror(f) : more > 0 ? "[caller's check] more bytes than declared" : "[caller's check] fewer bytes than declared");
            free(buf);
            zip_fclose(f);
            goto fail;
        }
        free(buf);
        int rc = zip_fclose(f);
        if (rc) { snprintf(reader_msg, sizeof reader_msg, "close %s: %s", st.name, zip_error_strerror(zip_get_error(za))); goto fail; }
        zip_bytes += st.size;
    }
    zip_discard(za);
    return (long)n;
fail:
    zip_discard(za);
    return -1;
}
const reader readers[] = {{"libzip", parse}};

#elif defined(LIB_MINIZIP)
#include "memunz.h"
/* minizip returns status codes, not messages. */
static long parse(const char *s, size_t len)
{
    memfile m = {(const unsigned char *)s, len, 0};
    zip_bytes = 0;
    unzFile uf = mem_unzopen(&m);
    if (!uf) { snprintf(reader_msg, sizeof reader_msg, "unzOpen2_64 returned NULL"); return -1; }
    long n = 0;
    int rc;
    for (rc = unzGoToFirstFile(uf); rc == UNZ_OK; rc = unzGoToNextFile(uf)) {
        unz_file_info64 fi;
        char name[256];
        if ((rc = unzGetCurrentFileInfo64(uf, &fi, name, sizeof name, NULL, 0, NULL, 0)) != UNZ_OK) break;
        if (fi.uncompressed_size > zip_cap) { snprintf(reader_msg, sizeof reader_msg, "[caller's check] %s declares %llu bytes", name, (unsigned long long)fi.uncompressed_size); unzClose(uf); return -1; }
        if ((rc = unzOpenCurrentFile(uf)) != UNZ_OK) break;
        unsigned char *buf = malloc(fi.uncompressed_size + 1);
        int got = unzReadCurrentFile(uf, buf, (unsigned)fi.uncompressed_size + 1);
        free(buf);
        int crc = unzCloseCurrentFile(uf);
        if (got < 0) { rc = got; break; }
        if ((uint64_t)got != fi.uncompressed_size) {
            snprintf(reader_msg, sizeof reader_msg, "[caller's check] %s: %d bytes read, %llu declared", name, got, (unsigned long long)fi.uncompressed_size);
            unzClose(uf);
            return -1;
        }
        if (crc != UNZ_OK) { rc = crc; break; }
        zip_bytes += fi.uncompressed_size;
        n++;
    }
    unzClose(uf);
    if (rc != UNZ_END_OF_LIST_OF_FILE) {
        snprintf(reader_msg, sizeof reader_msg, "status %d%s", rc, rc == UNZ_CRCERROR ? " (UNZ_CRCERROR)" : rc == UNZ_BADZIPFILE ? " (UNZ_BADZIPFILE)" : rc == Z_DATA_ERROR ? " (Z_DATA_ERROR from inflate)" : "");
        return -1;
    }
    return n;
}
const reader readers[] = {{"minizip", parse}};
#else
#error "define LIB_CROSSBIND, LIB_LIBZIP or LIB_MINIZIP"
#endif
const int n_readers = (int)(sizeof readers / sizeof readers[0]);
