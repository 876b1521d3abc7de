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
    uint64_t data;  /* offset of the entry's (compressed) bytes in the buffer */
    uint64_t csize; /* compressed size; equals usize for stored entries */
    uint64_t usize; /* declared uncompressed size: what cb_zip_read yields */
    uint32_t crc;
    int method;     /* 0 stored, 8 deflated */
} cb_zip_entry;

typedef struct cb_zip {
    const unsigned char *buf;
    size_t len;
    const char *what;
    cb_zip_entry *entries;
    int count;
    int *by_name; /* entry indexes sorted by name, for lookups */
} cb_zip;

/* Indexes an archive held in buf (which must outlive the index) without
 * inflating anything, so that a caller can weigh every entry's declared size
 * before any memory is spent on it. Every offset and size is checked against
 * len, and anything that two zip readers could read differently is refused:
 * a name twice, a local header or data descriptor that disagrees with the
 * central directory, entries that overlap, a directory whose count and size
 * disagree, bytes after the end record. `what` names the file in messages. */
cb_status cb_zip_open(const unsigned char *buf, size_t len, const char *what, cb_zip *out);
void cb_zip_close(cb_zip *z);
/* The entry named `name`, or NULL (a binary search: names are unique). */
const cb_zip_entry *cb_zip_find(const cb_zip *z, const char *name);

/* The contents of e: exactly e->usize bytes, CRC-32 verified. A stored
 * entry is read in place (*data points into the buffer, *owned is NULL); a
 * deflated one is inflated into *owned (caller frees, *data == *owned),
 * stopping as soon as the stream would run past the declared size. An entry
 * declaring more than max_bytes is refused before anything is allocated. */
cb_status cb_zip_read(const cb_zip *z, const cb_zip_entry *e, uint64_t max_bytes, const unsigned char **data,
                      unsigned char **owned);

/* Writer: entries are added in order with their data aligned to 64 bytes
 * (PyTorch memory-maps storages), then finished into one buffer. */
typedef struct cb_zip_writer cb_zip_writer;
cb_status cb_zip_writer_create(cb_zip_writer **out);
cb_status cb_zip_writer_add(cb_zip_writer *w, const char *name, const void *data, size_t size);
/* Hands over the finished archive (*buf, caller frees) and frees the writer. */
cb_status cb_zip_writer_finish(cb_zip_writer *w, unsigned char **buf, size_t *len);
void cb_zip_writer_free(cb_zip_writer *w);

#endif
