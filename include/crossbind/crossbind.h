/* crossbind: the umbrella header of the public C API.
 *
 * Conventions: every name starts with cb_; functions that can fail return a
 * cb_status and leave a readable message in cb_last_error(); whoever calls a
 * *_create or *_load function owns the result and releases it with the
 * matching *_free. */
#ifndef CROSSBIND_H
#define CROSSBIND_H

#include "crossbind/status.h"
#include "crossbind/tensor.h"
#include "crossbind/rng.h"
#include "crossbind/graph.h"
#include "crossbind/exec.h"
#include "crossbind/model.h"
#include "crossbind/optim.h"
#include "crossbind/data.h"
#include "crossbind/stats.h"
#include "crossbind/train.h"

#define CB_VERSION "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

/* The one thread knob: sets OpenMP's and the BLAS library's thread counts
 * together (n >= 1), so that the two never oversubscribe the cores. */
cb_status cb_set_threads(int n);
int cb_get_threads(void);
/* The BLAS library in use, for reports ("OpenBLAS 0.3.21 ..." or "cblas"). */
const char *cb_blas_name(void);

#ifdef __cplusplus
}
#endif
#endif
