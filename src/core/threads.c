/* The single thread knob. The engine parallelises with OpenMP only, and
 * splits matrix products itself (ops/gemm.c); the BLAS library is therefore
 * held at one thread, so that its threads never compete with OpenMP's.
 * OpenBLAS is reached through weak symbols: any other CBLAS links too. */
#include <omp.h>
#include "crossbind/crossbind.h"

extern void openblas_set_num_threads(int n) __attribute__((weak));
extern char *openblas_get_config(void) __attribute__((weak));

static int threads = 1;

cb_status cb_set_threads(int n)
{
    if (n < 1 || n > 1024) return cb_fail(CB_ERR_INVALID_ARG, "thread count must be in [1, 1024], got %d", n);
    threads = n;
    omp_set_num_threads(n);
    if (openblas_set_num_threads) openblas_set_num_threads(1);
    return CB_OK;
}

int cb_get_threads(void) { return threads; }

const char *cb_blas_name(void)
{
    if (openblas_get_config) return openblas_get_config();
    return "cblas";
}
