/* A pickle reader for exactly the subset that PyTorch state dicts use.
 *
 * It interprets the opcodes of pickle protocols 2 to 5 that build plain data
 * (None, bools, ints, floats, strings, tuples, lists, dicts) and knows a
 * fixed list of globals: collections.OrderedDict, torch's tensor rebuild
 * functions and its storage types. Any other global, and any opcode outside
 * the subset, stops the reader with an error naming it: nothing in a file is
 * ever called or imported. Values live in one pool freed at once, so cyclic
 * or shared references are harmless. */
#ifndef CB_FORMATS_PICKLE_H
#define CB_FORMATS_PICKLE_H

#include <stddef.h>
#include <stdint.h>
#include "crossbind/status.h"
#include "crossbind/tensor.h"

typedef enum pk_type {
    PK_NONE, PK_BOOL, PK_INT, PK_FLOAT, PK_STR, PK_TUPLE, PK_LIST, PK_DICT,
    PK_GLOBAL, PK_STORAGE, PK_TENSOR
} pk_type;

/* The globals a state dict may name. */
typedef enum pk_global {
    PK_G_ORDERED_DICT, PK_G_REBUILD_TENSOR_V2, PK_G_REBUILD_PARAMETER, PK_G_STORAGE_TYPE
} pk_global;

/* torch storage element types, as named by torch.<Name>Storage. */
typedef enum pk_storage_type {
    PK_ST_FLOAT, PK_ST_DOUBLE, PK_ST_HALF, PK_ST_BFLOAT16, PK_ST_LONG, PK_ST_INT,
    PK_ST_SHORT, PK_ST_CHAR, PK_ST_BYTE, PK_ST_BOOL
} pk_storage_type;

typedef struct pk_value pk_value;
struct pk_value {
    pk_type type;
    int64_t i;            /* INT, BOOL; GLOBAL: pk_global; STORAGE: numel */
    double f;
    char *s;              /* STR; STORAGE: key */
    pk_value **items;     /* TUPLE, LIST; DICT: key, value, key, value ... */
    int n, cap;
    pk_storage_type st;   /* GLOBAL (storage type), STORAGE */
    /* TENSOR */
    pk_value *storage;
    int64_t offset;
    int ndim;
    int64_t size[CB_MAX_DIMS], stride[CB_MAX_DIMS];
};

typedef struct pk_pool pk_pool;

/* Runs the pickle in buf and returns its result (*out, owned by the pool).
 * pk_load_within allocates at most max_bytes (values, strings and working
 * arrays counted) and refuses the pickle beyond; pk_load sets no limit (its
 * memory grows in proportion to the input's length). */
cb_status pk_load(const unsigned char *buf, size_t len, const char *what, pk_pool **pool, pk_value **out);
cb_status pk_load_within(const unsigned char *buf, size_t len, const char *what, uint64_t max_bytes,
                         pk_pool **pool, pk_value **out);
void pk_pool_free(pk_pool *pool);
/* The bytes the reader allocated for the pool (and its working arrays). */
uint64_t pk_pool_bytes(const pk_pool *pool);

/* Element size of a storage type, and the crossbind dtype it is read into. */
size_t pk_storage_elem_size(pk_storage_type t);

#endif
