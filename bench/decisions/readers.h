/* One binary per library (their symbols clash): each defines readers[]. */
#ifndef READERS_H
#define READERS_H
#include <stddef.h>
typedef struct reader { const char *name; long (*parse)(const char *, size_t); } reader;
extern const reader readers[];
extern const int n_readers;
extern char reader_msg[512];
#endif
