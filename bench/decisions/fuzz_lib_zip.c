/* libFuzzer targets for the zip readers, each used the way torch_pt.c uses
 * crossbind's: open an archive held in memory, weigh every entry's declared
 * size, read (inflate, CRC-check) those up to 16 MiB. Build with
 * -DLIB_LIBZIP, -DLIB_MINIZIP or -DLIB_CROSSBIND (json_zip.sh). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#define CAP (16u << 20)

#if defined(LIB_LIBZIP)
#include <zip.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    zip_error_t err;
    zip_error_init(&err);
    zip_source_t *src = zip_source_buffer_create(data, size, 0, &err);
    if (!src) abort();
    zip_t *za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err);
    zip_error_fini(&err);
    if (!za) { zip_source_free(src); return 0; }
    zip_int64_t n = zip_get_num_entries(za, 0);
    for (zip_int64_t i = 0; i < n; i++) {
        zip_stat_t st;
        if (zip_stat_index(za, (zip_uint64_t)i, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE) || st.size > CAP) continue;
        zip_file_t *f = zip_fopen_index(za, (zip_uint64_t)i, 0);
        if (!f) continue;
        unsigned char *buf = malloc(st.size + 1);
        zip_int64_t got = zip_fread(f, buf, st.size);
        if (got == (zip_int64_t)st.size) { char one; (void)zip_fread(f, &one, 1); } /* to the end: the CRC check */
        zip_fclose(f);
        free(buf);
    }
    zip_discard(za);
    return 0;
}
#elif defined(LIB_MINIZIP)
#include "memunz.h"
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    memfile m = {data, size, 0};
    unzFile uf = mem_unzopen(&m);
    if (!uf) return 0;
    for (int rc = unzGoToFirstFile(uf); rc == UNZ_OK; rc = unzGoToNextFile(uf)) {
        unz_file_info64 fi;
        char name[256];
        if (unzGetCurrentFileInfo64(uf, &fi, name, sizeof name, NULL, 0, NULL, 0) != UNZ_OK) break;
        if (fi.uncompressed_size > CAP || unzOpenCurrentFile(uf) != UNZ_OK) continue;
        unsigned char *buf = malloc(fi.uncompressed_size + 1);
        (void)unzReadCurrentFile(uf, buf, (unsigned)fi.uncompressed_size + 1);
        (void)unzCloseCurrentFile(uf); /* UNZ_CRCERROR when the CRC fails */
        free(buf);
    }
    unzClose(uf);
    return 0;
}
#elif defined(LIB_CROSSBIND)
#include "../../src/formats/zip.h"
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cb_zip z;
    if (cb_zip_open(data, size, "fuzz.zip", &z) != CB_OK) return 0;
    for (int i = 0; i < z.count; i++) {
        const unsigned char *d;
        unsigned char *owned;
        if (cb_zip_read(&z, &z.entries[i], CAP, &d, &owned) == CB_OK) free(owned);
    }
    cb_zip_close(&z);
    return 0;
}
#else
#error "define LIB_LIBZIP, LIB_MINIZIP or LIB_CROSSBIND"
#endif
