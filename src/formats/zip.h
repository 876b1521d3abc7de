/* The zip container of PyTorch's .pt files: a reader over a buffer in
 * memory and a writer of stored (uncompressed) archives. Only what .pt files
 * use: stored or deflated entries, with or without zip64 records. */
#ifndef CB_FORMATS_ZIP_H
#define CB_FORMATS_ZIP_H

#include <stddef.h>
#include <stdint.h>
#include "crossbind/status.h"

typedef struct cb_zip_entry {
    char name[256];
    const unsigned char *data; /* stored entries: into the buffer; deflated: owned copy */
    size_t size;
    int owned;
} cb_zip_entry;

typedef struct cb_zip {
    cb_zip_entry *entries;
    int count;
} cb_zip;

/* Indexes an archive held in buf (which must outlive the index). Every
 * offset and size is checked against len, and each entry's CRC-32 is
 * verified. `what` names the file in messages. */
cb_status cb_zip_open(const unsigned char *buf, size_t len, const char *what, cb_zip *out);
void cb_zip_close(cb_zip *z);
const cb_zip_entry *cb_zip_find(const cb_zip *z, const char *name);

/* Writer: entries are added in order with their data aligned to 64 bytes
 * (PyTorch memory-maps storages), then finished into one buffer. */
typedef struct cb_zip_writer cb_zip_writer;
cb_status cb_zip_writer_create(cb_zip_writer **out);
cb_status cb_zip_writer_add(cb_zip_writer *w, const char *name, const void *data, size_t size);
/* Hands over the finished archive (*buf, caller frees) and frees the writer. */
cb_status cb_zip_writer_finish(cb_zip_writer *w, unsigned char **buf, size_t *len);
void cb_zip_writer_free(cb_zip_writer *w);

#endif
