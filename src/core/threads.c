/* The single thread knob. The engine parallelises with OpenMP only, and
 * splits matrix products itself (ops/gemm.c); the BLAS library is therefore
 * held at one thread, so that its threads never compete with OpenMP's.
 * OpenBLAS is reached through weak symbols: any other CBLAS links too. */
#include <omp.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "crossbind/crossbind.h"

extern void openblas_set_num_threads(int n) __attribute__((weak));
extern char *openblas_get_config(void) __attribute__((weak));
extern char *openblas_get_corename(void) __attribute__((weak));

static int threads = 1;

/* Flush-to-zero and denormals-are-zero on the calling thread. Gradients
 * that vanish through 300 recurrent steps become subnormal floats, and
 * every arithmetic instruction on one takes a microcode assist of about a
 * hundred cycles: an LSTM training step ran 20 times slower. Values below
 * 1.2e-38 become 0, far below anything a loss or an accuracy can see. */
static void flush_subnormals(void)
{
#if defined(__SSE__)
    _mm_setcsr(_mm_getcsr() | 0x8040); /* FTZ (bit 15) | DAZ (bit 6) */
#endif
}

cb_status cb_set_threads(int n)
{
    if (n < 1 || n > 1024) return cb_fail(CB_ERR_INVALID_ARG, "thread count must be in [1, 1024], got %d", n);
    threads = n;
    omp_set_num_threads(n);
    flush_subnormals();
#pragma omp parallel
    flush_subnormals(); /* OpenMP keeps its threads: set once, kept for every later region */
    if (openblas_set_num_threads) openblas_set_num_threads(1);
    return CB_OK;
}

int cb_get_threads(void) { return threads; }

const char *cb_blas_name(void)
{
    if (openblas_get_config) return openblas_get_config();
    return "cblas";
}

const char *cb_blas_core(void)
{
    if (openblas_get_corename) return openblas_get_corename();
    return "";
}

/* OpenBLAS (DYNAMIC_ARCH) picks its kernels from the processor's model
 * number; a model newer than the library (0.3.21 does not know Emerald
 * Rapids, model 207) falls back to the 2004 Prescott kernels, 5 to 7 times
 * slower in SGEMM on such a machine. The instruction sets the processor
 * reports decide instead. */
const char *cb_blas_better_core(void)
{
    const char *core = cb_blas_core();
    static const char *const legacy[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Katmai",
                                         "Coppermine", "Northwood", "Banias", NULL};
    int old = 0;
    for (const char *const *l = legacy; *l; l++) old |= strcmp(core, *l) == 0;
    if (!old) return NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        return __builtin_cpu_supports("avx512bf16") ? "Cooperlake" : "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
    return NULL;
}

void cb_blas_restart_with_better_core(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE") || getenv("CROSSBIND_KEEP_BLAS_CORE")) return;
    const char *better = cb_blas_better_core();
    if (!better) return;
    setenv("OPENBLAS_CORETYPE", better, 1);
    setenv("CROSSBIND_BLAS_CORE_FIXED", cb_blas_core(), 1); /* what OpenBLAS had chosen, for reports */
    execv("/proc/self/exe", argv);
    /* exec failed: go on with the slower kernels */
}
