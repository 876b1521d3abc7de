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
#include "crossbind/image.h"
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
/* The kernel family OpenBLAS chose at load time ("" for another CBLAS). */
const char *cb_blas_core(void);
/* Which kernels large convolutions run on, for reports: "oneDNN 2.6.3"
 * where the build has oneDNN and CROSSBIND_CONV is not "blas", otherwise
 * "im2col + BLAS" with the reason. Small layers always use crossbind's own
 * direct and im2col kernels. */
const char *cb_conv_backend(void);
/* CROSSBIND_CONV is unset, empty, "blas" or "onednn" (the latter only where
 * the build has it); anything else is an error with the reason. */
cb_status cb_conv_backend_check(void);
/* When OpenBLAS fell back to legacy kernels on a processor newer than it
 * knows, the family this processor's instruction sets support ("SkylakeX",
 * "Cooperlake", "Haswell"); NULL when its choice stands. OpenBLAS reads
 * OPENBLAS_CORETYPE only when it loads, so a program acts on this by
 * setting that variable and starting again (the crossbind command does). */
const char *cb_blas_better_core(void);
/* Call first thing in main(): when cb_blas_better_core() names a family,
 * sets OPENBLAS_CORETYPE (and CROSSBIND_BLAS_CORE_FIXED to OpenBLAS's own
 * choice, for reports) and executes the program again with `argv`. Returns
 * when there is nothing to fix, when OPENBLAS_CORETYPE or
 * CROSSBIND_KEEP_BLAS_CORE is already set, or when the restart fails. The
 * variable stays in the environment of every child process. */
void cb_blas_restart_with_better_core(char **argv);

#ifdef __cplusplus
}
#endif
#endif
