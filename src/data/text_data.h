/* Internal: allocation shared by the IMDb readers. */
#ifndef CB_TEXT_DATA_H
#define CB_TEXT_DATA_H
#include "crossbind/data.h"
/* A data set of n sequences of maxlen token indices (c = h = 1, w = maxlen). */
cb_status cb_dataset_alloc_text(int64_t n, int maxlen, const char *source, cb_dataset *out);
#endif
